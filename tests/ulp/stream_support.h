// Stream device tests' shared pieces: the test configuration, a pattern of bytes, and a pair of
// stream endpoints joined by a channel (UD, or RC with rc_config()), pumped by one thread.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>

#include "endpoint_support.h"
#include "unet/ulp/stream_endpoint.h"

namespace unet::ulp::test {

using namespace std::chrono_literals;
using unet::test::ud_config;

inline StreamConfig stream_config() {
  StreamConfig s;
  s.send_buffer = 64 * 1024;
  s.recv_buffer = 64 * 1024;
  s.dead_peer_timeout = 1000ms;
  s.connect_timeout = 1000ms;
  return s;
}

// An RC endpoint for the stream: 32 KiB buffers (a segment well past the path MTU: the device
// splits it), 64 of 128 on the free queue.
inline core::EndpointConfig rc_config() {
  core::EndpointConfig c = unet::test::endpoint_config(core::Transport::kRc, 128);
  c.buffer_bytes = 32 * 1024;
  c.send_queue_depth = 128;
  return c;
}

inline std::byte byte_at(std::uint64_t i, std::uint32_t seed) { return static_cast<std::byte>((i * 7 + (i >> 9) + seed) & 0xFF); }

struct Pair {
  std::unique_ptr<StreamEndpoint> a, b;
  ChannelId ab = 0, ba = 0;
  explicit Pair(const StreamConfig& cfg = stream_config(), const core::EndpointConfig& net = ud_config())
      : a(std::make_unique<StreamEndpoint>(net, cfg)), b(std::make_unique<StreamEndpoint>(net, cfg)) {
    core::ChannelOffer oa = a->offer_peer(), ob = b->offer_peer();
    ab = a->accept_peer(oa, ob.local);
    ba = b->accept_peer(ob, oa.local);
  }
  bool pump(const std::function<bool()>& done, std::chrono::milliseconds timeout = 20s) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    do {
      if ((a && a->poll() < 0) || (b && b->poll() < 0)) return false;
      if (std::chrono::steady_clock::now() > end) return false;
    } while (!done());
    return true;
  }
  // a connects to b's `port`; returns (a's, b's) connection.
  std::pair<ConnId, ConnId> connect(std::uint16_t port = 80) {
    ConnId ca = kNoConn, cb = kNoConn;
    EXPECT_EQ(b->listen(port), Status::kOk);
    EXPECT_EQ(a->connect(ab, port, ca), Status::kOk);
    EXPECT_TRUE(pump([&] { return b->accept(port, cb) == Status::kOk; }));
    StreamState s;
    EXPECT_TRUE(pump([&] { return a->state(ca, s) == Status::kOk && s == StreamState::kEstablished; }));
    return {ca, cb};
  }
};

}  // namespace unet::ulp::test
