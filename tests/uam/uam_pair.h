// The uam device tests' shared pieces: an endpoint configuration, a pair of uam endpoints
// joined by a channel and pumped by one thread, and a pattern of bytes.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "endpoint_support.h"
#include "unet/uam/endpoint.h"

namespace unet::test {

using namespace std::chrono_literals;

inline core::EndpointConfig net_config(core::Transport t, std::uint32_t free_depth = 64) {
  core::EndpointConfig c = endpoint_config(t, 256);
  c.free_queue_depth = free_depth;
  c.send_queue_depth = 128;
  return c;
}

struct UamPair {
  uam::Endpoint a, b;
  core::ChannelId ab = 0, ba = 0;
  UamPair(const core::EndpointConfig& ca, const core::EndpointConfig& cb,
          const uam::Config& cfg = {})
      : a(ca, cfg), b(cb, cfg) {
    core::ChannelOffer oa = a.offer_channel(), ob = b.offer_channel();
    ab = a.accept_offer(oa, ob.local);
    ba = b.accept_offer(ob, oa.local);
  }
  // Polls both (at least once) until `done` holds, for at most `timeout`.
  bool pump(const std::function<bool()>& done, std::chrono::milliseconds timeout = 20s) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    do {
      if (a.poll() < 0 || b.poll() < 0) return false;
      if (std::chrono::steady_clock::now() > end) return false;
    } while (!done());
    return true;
  }
  bool step() {
    return pump([] { return true; });
  }
};

}  // namespace unet::test
