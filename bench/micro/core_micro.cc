// core_micro: the host-side hot path of a U-Net endpoint, with no device — Google Benchmark for
// time, and a fixed-count mode for instructions under callgrind (bench/micro/instructions.sh).
//
// Each operation is one [[gnu::noinline]] function so that callgrind can attribute its
// instructions exactly; the benchmarks and the count mode call the same functions.
//   ring_push_pop      one descriptor through a DescriptorRing: reserve, compose, commit, pop
//   compose_inline     an 8-byte send composed inside a descriptor (send_inline's work)
//   compose_buffer     a send naming a segment buffer (send's work)
//   buffer_cycle       a buffer's ownership round: take, queue for send, sent, back to spare
//   lookup_rc          channel lookup by an RC tag (local QP number), 64 channels
//   lookup_ud          channel lookup by a UD tag (sender QPN + GID), 64 channels
//   cache_hit          registration-cache acquire that hits, and its lease released, 64 entries
//                      in turn
//   cache_hit_last     the same on the entry acquired last (one buffer again and again)
//   clock_read         a timer's clock read: the cycle counter, converted to nanoseconds
//   copy_bytes         core::copy_bytes of 4 KiB and 64 KiB (memcpy in pieces of up to 4 KiB
//                      above 128 bytes): the stream's copies, in bytes per second (time only)
//   copy_memcpy        the same bytes by one memcpy (time only)
//   copy_rep_movsb     the same bytes by `rep movsb`, which glibc's memcpy uses above a
//                      threshold (x86-64; time only): slow under QEMU's TCG (ulp/README.md)
//
//   core_micro [google benchmark flags]      time per operation
//   core_micro --count N                     each operation N times, no output (for callgrind)
#include <benchmark/benchmark.h>
#include <gflags/gflags.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "program_flags.h"
#include "registration_cache.h"  // private to core: from core/src
#include "unet/core/buffer_table.h"
#include "unet/core/channel_table.h"
#include "unet/core/cycle_clock.h"
#include "unet/core/descriptor.h"
#include "unet/core/descriptor_ring.h"

DEFINE_uint64(count, 0,
              "run each operation this many times, with no output (for callgrind); 0: time "
              "them with Google Benchmark");

namespace unet::core {
namespace {

// A registrar that pins nothing: the cache's own bookkeeping is what is measured.
struct NullRegistrar {
  using Handle = std::uint32_t;
  Handle next = 1;
  Handle register_region(void*, std::size_t) { return next++; }
  void deregister(Handle) noexcept {}
  std::uint32_t lkey(const Handle& h) const { return h; }
  std::uint32_t rkey(const Handle& h) const { return h; }
};

constexpr std::uint32_t kChannels = 64;
constexpr std::size_t kPage = 4096;

struct World {
  DescriptorRing<Descriptor> ring{256};
  BufferTable buffers{256};
  ChannelTable tags{kChannels};
  NullRegistrar registrar;
  RegistrationCache<NullRegistrar> cache{registrar, 64 * kPage* kChannels};
  std::vector<std::byte> memory = std::vector<std::byte>(64 * kPage * kChannels);
  std::array<UdTag, kChannels> ud_tags{};
  std::byte payload[8] = {};
  World() {
    for (std::uint32_t i = 0; i < kChannels; ++i) {
      (void)tags.add(0x1000 + 7 * i, i);
      ud_tags[i].qpn = 0x2000 + i;
      ud_tags[i].gid.raw[10] = 0xff;
      ud_tags[i].gid.raw[11] = 0xff;
      ud_tags[i].gid.raw[15] = static_cast<std::uint8_t>(i);
      (void)tags.add(ud_tags[i], i);
      RegistrationCache<NullRegistrar>::Lease l;
      (void)cache.acquire(memory.data() + i * 64 * kPage, 64 * kPage,
                          l);  // warm: later acquires hit
    }
  }
};

[[gnu::noinline]] std::uint32_t ring_push_pop(World& w, std::uint32_t i) {
  Descriptor* d = w.ring.reserve();
  compose_inline(*d, i % kChannels, w.payload, 0, 0);
  w.ring.commit();
  Descriptor out;
  (void)w.ring.pop_into(out);
  return out.length;
}

[[gnu::noinline]] std::uint32_t compose_inline_op(World& w, Descriptor& d, std::uint32_t i) {
  compose_inline(d, i % kChannels, w.payload, 0, 0);
  return d.length;
}

[[gnu::noinline]] std::uint32_t clock_read(const CycleClock& c) {
  return static_cast<std::uint32_t>(c.to_ns(CycleClock::now()).count());
}

[[gnu::noinline]] std::uint32_t compose_buffer_op(Descriptor& d, std::uint32_t i) {
  compose_buffer(d, i % kChannels, i % 256, 4096, 0, 0);
  return d.buffer;
}

[[gnu::noinline]] std::uint32_t buffer_cycle(World& w) {
  BufferId b = kNoBuffer;
  (void)w.buffers.take_spare(b);
  (void)w.buffers.queue_send(b);
  (void)w.buffers.send_done(b);
  return b;
}

[[gnu::noinline]] ChannelId lookup_rc(World& w, std::uint32_t i) {
  return w.tags.find(0x1000 + 7 * (i % kChannels));
}

[[gnu::noinline]] ChannelId lookup_ud(World& w, std::uint32_t i) {
  return w.tags.find(w.ud_tags[i % kChannels]);
}

[[gnu::noinline]] std::uint32_t cache_hit(World& w, std::uint32_t i) {
  RegistrationCache<NullRegistrar>::Lease l;
  const std::byte* at = w.memory.data() + (i % kChannels) * 64 * kPage + (i % 61) * 64;
  if (w.cache.acquire(at, 4096, l) != Status::kOk) std::abort();
  return l.lkey();
}

[[gnu::noinline]] std::uint32_t cache_hit_last(World& w, std::uint32_t i) {
  RegistrationCache<NullRegistrar>::Lease l;
  if (w.cache.acquire(w.memory.data() + (i % 61) * 64, 4096, l) != Status::kOk) std::abort();
  return l.lkey();
}

World& world() {
  static World w;
  return w;
}

void BM_ring_push_pop(benchmark::State& s) {
  World& w = world();
  std::uint32_t i = 0;
  for (auto _ : s) benchmark::DoNotOptimize(ring_push_pop(w, i++));
}
void BM_compose_inline(benchmark::State& s) {
  World& w = world();
  Descriptor d;
  std::uint32_t i = 0;
  for (auto _ : s) benchmark::DoNotOptimize(compose_inline_op(w, d, i++));
}
void BM_compose_buffer(benchmark::State& s) {
  Descriptor d;
  std::uint32_t i = 0;
  for (auto _ : s) benchmark::DoNotOptimize(compose_buffer_op(d, i++));
}
void BM_buffer_cycle(benchmark::State& s) {
  World& w = world();
  for (auto _ : s) benchmark::DoNotOptimize(buffer_cycle(w));
}
void BM_lookup_rc(benchmark::State& s) {
  World& w = world();
  std::uint32_t i = 0;
  for (auto _ : s) benchmark::DoNotOptimize(lookup_rc(w, i++));
}
void BM_lookup_ud(benchmark::State& s) {
  World& w = world();
  std::uint32_t i = 0;
  for (auto _ : s) benchmark::DoNotOptimize(lookup_ud(w, i++));
}
void BM_cache_hit(benchmark::State& s) {
  World& w = world();
  std::uint32_t i = 0;
  for (auto _ : s) benchmark::DoNotOptimize(cache_hit(w, i++));
}
void BM_cache_hit_last(benchmark::State& s) {
  World& w = world();
  std::uint32_t i = 0;
  for (auto _ : s) benchmark::DoNotOptimize(cache_hit_last(w, i++));
}
void BM_clock_read(benchmark::State& s) {
  const CycleClock& c = CycleClock::process();
  for (auto _ : s) benchmark::DoNotOptimize(clock_read(c));
}
void BM_copy_bytes(benchmark::State& s) {
  const auto n = static_cast<std::size_t>(s.range(0));
  std::vector<std::byte> from(n, std::byte{1}), to(n);
  for (auto _ : s) {
    copy_bytes(to.data(), from.data(), n);
    benchmark::ClobberMemory();
  }
  s.SetBytesProcessed(static_cast<std::int64_t>(s.iterations() * n));
}
void BM_copy_memcpy(benchmark::State& s) {
  const auto n = static_cast<std::size_t>(s.range(0));
  std::vector<std::byte> from(n, std::byte{1}), to(n);
  for (auto _ : s) {
    std::memcpy(to.data(), from.data(), n);
    benchmark::ClobberMemory();
  }
  s.SetBytesProcessed(static_cast<std::int64_t>(s.iterations() * n));
}
BENCHMARK(BM_copy_memcpy)->Arg(4096)->Arg(65536);
#if defined(__x86_64__)
void BM_copy_rep_movsb(benchmark::State& s) {
  const auto n = static_cast<std::size_t>(s.range(0));
  std::vector<std::byte> from(n, std::byte{1}), to(n);
  for (auto _ : s) {
    void* d = to.data();
    const void* f = from.data();
    std::size_t c = n;
    asm volatile("rep movsb" : "+D"(d), "+S"(f), "+c"(c) : : "memory");
  }
  s.SetBytesProcessed(static_cast<std::int64_t>(s.iterations() * n));
}
BENCHMARK(BM_copy_rep_movsb)->Arg(4096)->Arg(65536);
#endif
BENCHMARK(BM_copy_bytes)->Arg(4096)->Arg(65536);
BENCHMARK(BM_ring_push_pop);
BENCHMARK(BM_compose_inline);
BENCHMARK(BM_compose_buffer);
BENCHMARK(BM_buffer_cycle);
BENCHMARK(BM_lookup_rc);
BENCHMARK(BM_lookup_ud);
BENCHMARK(BM_cache_hit);
BENCHMARK(BM_cache_hit_last);
BENCHMARK(BM_clock_read);

// --count N: every operation N times, results folded into the exit path so nothing is elided.
int run_counted(long n) {
  World& w = world();
  Descriptor d;
  const CycleClock& c = CycleClock::process();
  std::uint64_t sink = 0;
  for (long k = 0; k < n; ++k) {
    const auto i = static_cast<std::uint32_t>(k);
    sink += ring_push_pop(w, i) + compose_inline_op(w, d, i) + compose_buffer_op(d, i) +
            buffer_cycle(w) + lookup_rc(w, i) + lookup_ud(w, i) + cache_hit(w, i) + clock_read(c);
  }
  // Alone: in the loop above cache_hit's acquire of another entry would come between.
  for (long k = 0; k < n; ++k) sink += cache_hit_last(w, static_cast<std::uint32_t>(k));
  return sink == 0 ? 1 : 0;
}

}  // namespace
}  // namespace unet::core

int main(int argc, char** argv) {
  const char* usage = "the host-side hot path, no device: time per operation, or --count N runs";
  // --help: this program's flags, then Google Benchmark's (its Initialize prints them and exits).
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "--help" || std::string_view(argv[i]) == "-h") {
      int n = 2;
      char help[] = "--help";
      char* args[] = {argv[0], help, nullptr};
      char** a = args;
      (void)unet::cli::parse_flags(&n, &a, usage);
      std::printf("\nGoogle Benchmark's flags:\n");
      std::fflush(stdout);
      n = 2;
      args[1] = help;
      benchmark::Initialize(&n, args);
      return 0;
    }
  benchmark::Initialize(&argc, argv);  // takes its --benchmark_* flags
  if (!unet::cli::parse_flags(&argc, &argv, usage)) return 0;
  if (argc > 1) {
    std::fprintf(stderr, "core_micro: takes flags only, not '%s'\n", argv[1]);
    return 2;
  }
  if (FLAGS_count > 0)
    return unet::core::run_counted(
        static_cast<long>(std::min<std::uint64_t>(FLAGS_count, LONG_MAX)));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
