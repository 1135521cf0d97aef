// unet_message_path: the instructions one small message costs a core endpoint, phase by phase,
// without the idle polls a ping-pong adds (bench/ring/path_instructions.sh runs it under
// callgrind). Two endpoints of one process, one channel (a ring channel, or --noring a plain
// one); for each of --count messages, each way in turn:
//   send_path     the sender's send_inline() (or acquire_buffer + send) and the poll() that posts
//   it arrive_path   the receiver's one poll() that finds it, called once it has had time to land
//   receive_path  receive() and, for a buffer, release()
// Each phase is one noinline function, so callgrind's inclusive cost per call is the phase's.
#include <gflags/gflags.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <thread>

#include "bench_endpoint.h"
#include "program_flags.h"
#include "unet/core/endpoint.h"

DEFINE_string(d, "", "RDMA device (default: the first)");
DEFINE_int32(x, -1, "GID index (default: chosen like perftest)");
DEFINE_uint32(s, 8, "message size in bytes");
DEFINE_uint64(count, 2000, "messages each way");
DEFINE_bool(ring, true, "a ring channel (--noring: SEND/RECV only)");

using namespace unet;
using namespace unet::core;

namespace {

std::byte payload[Descriptor::kInlineBytes] = {};

[[gnu::noinline]] Status send_path(Endpoint& ep, ChannelId ch, std::uint32_t len) {
  Status s;
  if (len <= ep.inline_threshold()) {
    s = ep.send_inline(ch, {payload, len});
  } else {
    BufferId b = kNoBuffer;
    if ((s = ep.acquire_buffer(b)) != Status::kOk) return s;
    std::memset(ep.buffer(b).data(), 0x5a, len);
    s = ep.send(ch, b, len);
  }
  return s == Status::kOk && ep.poll() < 0 ? Status::kDeviceError : s;
}

[[gnu::noinline]] int arrive_path(Endpoint& ep) { return ep.poll(); }

[[gnu::noinline]] bool receive_path(Endpoint& ep, Descriptor& d) {
  if (ep.receive(d) != Status::kOk) return false;
  return d.is_inline() || ep.release(d.buffer) == Status::kOk;
}

}  // namespace

int main(int argc, char** argv) {
  if (!cli::parse_flags(&argc, &argv,
                        "unet_message_path [-s BYTES] [--count N] [--noring]: "
                        "instructions per message phase"))
    return 0;
  try {
    const EndpointConfig c = bench::ring_bench_config(FLAGS_d, FLAGS_x, 64);
    Endpoint a(c), b(c);
    const auto [ab, ba] = bench::join(a, b, FLAGS_ring);
    std::uint64_t late = 0;
    for (std::uint64_t i = 0; i < 2 * FLAGS_count; ++i) {
      auto [from, to, ch] = i % 2 == 0 ? std::tuple{&a, &b, ab} : std::tuple{&b, &a, ba};
      if (send_path(*from, ch, FLAGS_s) != Status::kOk) throw std::runtime_error("send failed");
      std::this_thread::sleep_for(std::chrono::microseconds(300));  // time to land
      if (arrive_path(*to) <= 0) ++late;
      Descriptor d;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (!receive_path(*to, d)) {
        if (to->poll() < 0 || from->poll() < 0 || std::chrono::steady_clock::now() > deadline)
          throw std::runtime_error("a message did not arrive");
      }
      if (d.length != FLAGS_s) throw std::runtime_error("a message arrived with the wrong length");
    }
    std::printf("%llu messages of %u bytes (%s), %llu found late (not on the first poll)\n",
                static_cast<unsigned long long>(2 * FLAGS_count), FLAGS_s,
                FLAGS_ring ? "ring" : "plain", static_cast<unsigned long long>(late));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unet_message_path: %s\n", e.what());
    return 1;
  }
}
