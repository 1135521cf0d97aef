// unet_idle_poll: what an idle poll() costs an endpoint with N ring channels — the measure of
// ring polling's scale (bench/ring/poll_instructions.sh runs it under callgrind).
//
// Opens two endpoints on the device, N channels between them (ring channels, or plain ones with
// --noring), checks one message both ways on every channel, then calls the receiving endpoint's
// poll() --polls times with nothing on the way. Prints the polls' mean time; under callgrind,
// two --polls counts give the instructions of one poll, its provider's poll_cq included.
#include <gflags/gflags.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <vector>

#include "bench_endpoint.h"
#include "program_flags.h"
#include "unet/core/endpoint.h"

DEFINE_string(d, "", "RDMA device (default: the first)");
DEFINE_int32(x, -1, "GID index (default: chosen like perftest)");
DEFINE_uint32(channels, 64, "channels between the two endpoints");
DEFINE_uint64(polls, 100000, "idle polls timed");
DEFINE_bool(ring, true, "ring channels (--noring: SEND/RECV only)");
DEFINE_uint32(slots, 64, "slots per ring (EndpointConfig::ring_slots)");
DEFINE_uint32(slot_bytes, 1024, "bytes per slot (EndpointConfig::ring_slot_bytes)");

using namespace unet;
using namespace unet::core;

[[gnu::noinline]] int idle_polls(Endpoint& ep, std::uint64_t n) {
  int work = 0;
  for (std::uint64_t i = 0; i < n; ++i) work += ep.poll();
  return work;
}

int main(int argc, char** argv) {
  if (!cli::parse_flags(&argc, &argv,
                        "unet_idle_poll [--channels N] [--polls K] [--noring]: "
                        "the cost of an idle poll()"))
    return 0;
  try {
    EndpointConfig c = bench::ring_bench_config(FLAGS_d, FLAGS_x, 16);
    c.max_channels = std::max(FLAGS_channels, 1u);
    c.max_rings = c.max_channels;
    c.ring_slots = FLAGS_slots;
    c.ring_slot_bytes = FLAGS_slot_bytes;
    Endpoint a(c), b(c);
    std::vector<ChannelId> ab, ba;
    for (std::uint32_t i = 0; i < FLAGS_channels; ++i) {
      const auto [x, y] = bench::join(a, b, FLAGS_ring);
      ab.push_back(x);
      ba.push_back(y);
    }
    // One message each way on every channel, so every ring has been written and read once.
    for (std::uint32_t i = 0; i < FLAGS_channels; ++i)
      for (auto [from, to, ch] : {std::tuple{&a, &b, ab[i]}, std::tuple{&b, &a, ba[i]}}) {
        std::byte m[8];
        std::memcpy(m, &i, sizeof i);
        if (from->send_inline(ch, m) != Status::kOk) throw std::runtime_error("send refused");
        Descriptor d;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (to->receive(d) != Status::kOk) {
          if (from->poll() < 0 || to->poll() < 0 || std::chrono::steady_clock::now() > deadline)
            throw std::runtime_error("a message did not arrive");
        }
        if (std::memcmp(d.data, m, sizeof m) != 0)
          throw std::runtime_error("a message arrived corrupt");
      }
    for (int i = 0; i < 1000; ++i)
      (void)a.poll();  // a's last sends completed, b's buffers reposted
    for (int i = 0; i < 1000; ++i) (void)b.poll();
    const auto t0 = std::chrono::steady_clock::now();
    const int work = idle_polls(b, FLAGS_polls);
    const double ns =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    std::printf("channels %u (%s): %llu idle polls, %.1f ns each, work %d, rings %u\n",
                FLAGS_channels, FLAGS_ring ? "ring" : "plain",
                static_cast<unsigned long long>(FLAGS_polls), ns / static_cast<double>(FLAGS_polls),
                work, b.rings());
    return work == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unet_idle_poll: %s\n", e.what());
    return 1;
  }
}
