// unet_consumer_pingpong [N]: what a program of unet's users looks like, built against an
// installed unet only (see CMakeLists.txt beside it). Two endpoints of this process open an RC
// channel by swapping their out-of-band halves directly (as tests/support/endpoint_support.h
// does), then bounce N messages (default 1000) of mixed sizes; every byte of every ping and echo
// is checked, and so are the endpoints' counters.
//
// Exit status: 0 when all N round trips were checked; 1 on any failure; 77 (skip) when there is
// no RDMA device — unless UNET_REQUIRE_DEVICE=1, which makes that a failure, the rule of
// tests/support/device_env.h. UNET_DEVICE picks the device, UNET_GID_INDEX forces a GID index.
#include <unet/core/endpoint.h>
#include <unet/verbs/device.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <span>
#include <string>
#include <vector>

namespace {

using namespace unet;
using namespace unet::core;

constexpr int kSkip = 77;
constexpr auto kPatience = std::chrono::seconds(10);  // for any one send or arrival

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

// Why this process cannot run: no device, or not the one UNET_DEVICE names; empty if it can.
std::string missing_device() {
  const std::vector<std::string> names = verbs::device_names();
  if (names.empty()) return "no RDMA device (ibv_get_device_list found none)";
  if (const char* want = env("UNET_DEVICE");
      want && std::find(names.begin(), names.end(), want) == names.end())
    return std::string("UNET_DEVICE=") + want + " is not present";
  return {};
}

std::byte pattern(std::uint32_t msg, std::uint32_t i, bool echo) {
  return static_cast<std::byte>(msg * 131 + i * 7 + (echo ? 59 : 0));
}

struct Failure {
  std::string what;
};

// One endpoint and its end of the channel.
struct Side {
  Endpoint& ep;
  ChannelId ch;
};

// Sends message `m` of `len` bytes from `from` (inline when small), polling `other` too while the
// send queue or the free buffers are exhausted.
void send(Side from, Endpoint& other, std::uint32_t m, std::uint32_t len, bool echo) {
  const auto deadline = std::chrono::steady_clock::now() + kPatience;
  std::byte small[Descriptor::kInlineBytes];
  for (;;) {
    Status s;
    if (len <= from.ep.inline_threshold()) {
      for (std::uint32_t i = 0; i < len; ++i) small[i] = pattern(m, i, echo);
      s = from.ep.send_inline(from.ch, std::span<const std::byte>(small, len));
    } else {
      BufferId b = kNoBuffer;
      s = from.ep.acquire_buffer(b);
      if (s == Status::kOk) {
        std::span<std::byte> bytes = from.ep.buffer(b);
        for (std::uint32_t i = 0; i < len; ++i) bytes[i] = pattern(m, i, echo);
        s = from.ep.send(from.ch, b, len);  // the endpoint owns b until the send completes
      }
    }
    if (s == Status::kOk) return;
    if (s != Status::kNoResource)
      throw Failure{"send of message " + std::to_string(m) + ": " + std::string(to_string(s))};
    if (std::chrono::steady_clock::now() > deadline) throw Failure{"back-pressure never cleared"};
    if (from.ep.poll() < 0 || other.poll() < 0) throw Failure{"device error while polling"};
  }
}

// Waits for message `m` at `to`, checks its channel, length and every byte, and releases it.
void expect(Endpoint& from, Side to, std::uint32_t m, std::uint32_t len, bool echo) {
  const auto deadline = std::chrono::steady_clock::now() + kPatience;
  Descriptor d;
  while (to.ep.receive(d) != Status::kOk) {
    if (std::chrono::steady_clock::now() > deadline)
      throw Failure{"message " + std::to_string(m) + (echo ? " (echo)" : "") + " did not arrive"};
    if (from.poll() < 0 || to.ep.poll() < 0) throw Failure{"device error while polling"};
  }
  const std::string which = "message " + std::to_string(m) + (echo ? " (echo)" : "");
  if (d.channel != to.ch) throw Failure{which + " arrived on another channel"};
  if (d.length != len)
    throw Failure{which + ": " + std::to_string(d.length) + " bytes, not " + std::to_string(len)};
  std::span<const std::byte> bytes =
      d.is_inline() ? d.inline_payload()
                    : std::span<const std::byte>(to.ep.buffer(d.buffer).first(len));
  for (std::uint32_t i = 0; i < len; ++i)
    if (bytes[i] != pattern(m, i, echo))
      throw Failure{which + " differs at byte " + std::to_string(i)};
  if (!d.is_inline() && to.ep.release(d.buffer) != Status::kOk) throw Failure{"release refused"};
}

int run(std::uint32_t n) {
  EndpointConfig cfg;
  if (const char* dev = env("UNET_DEVICE")) cfg.device = dev;
  if (const char* gid = env("UNET_GID_INDEX"))
    cfg.gid_index = static_cast<std::uint32_t>(std::strtoul(gid, nullptr, 10));
  cfg.transport = Transport::kRc;
  cfg.buffers = 64;
  cfg.free_queue_depth = 32;
  cfg.send_queue_depth = 64;
  cfg.recv_queue_depth = 64;
  Endpoint a(cfg), b(cfg);

  // The out-of-band exchange, without a socket: each endpoint accepts the other's half.
  ChannelOffer oa = a.offer_channel(), ob = b.offer_channel();
  Side sa{a, a.accept_offer(oa, ob.local)}, sb{b, b.accept_offer(ob, oa.local)};

  // Inline sizes and segment-buffer sizes, up to the largest message the endpoints allow.
  const std::uint32_t big = std::min<std::uint32_t>(a.max_message(), 4000);
  const std::uint32_t small = std::clamp<std::uint32_t>(a.inline_threshold(), 1, big - 1);
  const std::uint32_t sizes[] = {1, small, small + 1, std::min(1000u, big), big};
  for (std::uint32_t m = 0; m < n; ++m) {
    const std::uint32_t len = sizes[m % std::size(sizes)];
    send(sa, b, m, len, false);
    expect(a, sb, m, len, false);
    send(sb, a, m, len, true);
    expect(b, sa, m, len, true);
  }
  if (a.stats().received != n || b.stats().received != n)
    throw Failure{"endpoint counters: a received " + std::to_string(a.stats().received) +
                  ", b received " + std::to_string(b.stats().received) + ", expected " +
                  std::to_string(n) + " each"};
  std::printf("unet_consumer_pingpong: %u round trips on %s, every byte checked\n", n,
              env("UNET_DEVICE") ? env("UNET_DEVICE") : "the first device");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 1000;
  if (argc > 2 || n <= 0 || n > 10'000'000) {
    std::fprintf(stderr, "usage: unet_consumer_pingpong [N]  (N round trips, default 1000)\n");
    return 1;
  }
  try {
    if (std::string why = missing_device(); !why.empty()) {
      const char* req = env("UNET_REQUIRE_DEVICE");
      if (req && std::string(req) == "1") {
        std::fprintf(stderr, "unet_consumer_pingpong: FAIL: UNET_REQUIRE_DEVICE=1 but %s\n",
                     why.c_str());
        return 1;
      }
      std::printf("unet_consumer_pingpong: skipped: %s\n", why.c_str());
      return kSkip;
    }
    return run(static_cast<std::uint32_t>(n));
  } catch (const Failure& f) {
    std::fprintf(stderr, "unet_consumer_pingpong: FAIL: %s\n", f.what.c_str());
  } catch (const std::exception& e) {  // set-up: a unet::verbs::Error names the failing call
    std::fprintf(stderr, "unet_consumer_pingpong: FAIL: %s\n", e.what());
  }
  return 1;
}
