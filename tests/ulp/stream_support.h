// Stream device tests' shared pieces: the test configuration, a pattern of bytes, a pair of
// stream endpoints joined by a channel (UD, or RC with rc_config()), pumped by one thread, bytes
// moved both ways and checked, and a peer that dies mid-stream.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

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

inline std::byte byte_at(std::uint64_t i, std::uint32_t seed) {
  return static_cast<std::byte>((i * 7 + (i >> 9) + seed) & 0xFF);
}

struct Pair {
  std::unique_ptr<StreamEndpoint> a, b;
  ChannelId ab = 0, ba = 0;
  explicit Pair(const StreamConfig& cfg = stream_config(),
                const core::EndpointConfig& net = ud_config())
      : Pair(cfg, net, net) {}
  Pair(const StreamConfig& cfg, const core::EndpointConfig& net_a,
       const core::EndpointConfig& net_b)
      : a(std::make_unique<StreamEndpoint>(net_a, cfg)),
        b(std::make_unique<StreamEndpoint>(net_b, cfg)) {
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
    EXPECT_TRUE(
        pump([&] { return a->state(ca, s) == Status::kOk && s == StreamState::kEstablished; }));
    return {ca, cb};
  }
};

// One direction of transfer(): `total` bytes of pattern `seed` from `from` (conn cf) to `to` (ct).
struct Flow {
  StreamEndpoint& from;
  ConnId cf;
  StreamEndpoint& to;
  ConnId ct;
  std::uint64_t total;
  std::uint32_t seed;
  std::uint64_t sent = 0, got = 0, bad = 0;
  std::vector<std::byte> buf = std::vector<std::byte>(64 * 1024);

  // Sends what the send buffer takes; false after a send error (reported as a test failure).
  bool push() {
    while (sent < total) {
      const std::size_t n = std::min<std::uint64_t>(buf.size(), total - sent);
      for (std::size_t i = 0; i < n; ++i) buf[i] = byte_at(sent + i, seed);
      std::size_t took = 0;
      const Status s = from.send(cf, std::span(buf).first(n), took);
      if (s != Status::kOk && s != Status::kNoResource) {
        ADD_FAILURE() << "send: " << s;
        return false;
      }
      sent += took;
      if (took < n) break;
    }
    return true;
  }
  // Receives what has arrived, checking every byte.
  void pull() {
    std::size_t n = 0;
    while (to.recv(ct, buf, n) == Status::kOk) {
      for (std::size_t i = 0; i < n; ++i) bad += buf[i] != byte_at(got + i, seed);
      got += n;
    }
  }
};

// Moves `a_to_b` bytes from p.a (conn ca) to p.b (conn cb) and `b_to_a` back at the same time,
// every byte checked; fails the test unless all of them arrive intact within 60 s.
inline void transfer(Pair& p, ConnId ca, ConnId cb, std::uint64_t a_to_b, std::uint64_t b_to_a,
                     std::uint32_t seed = 1) {
  Flow f[2] = {{*p.a, ca, *p.b, cb, a_to_b, seed}, {*p.b, cb, *p.a, ca, b_to_a, seed + 1}};
  ASSERT_TRUE(p.pump(
      [&] {
        for (Flow& x : f) {
          if (!x.push()) return true;
          x.pull();
        }
        return f[0].got >= f[0].total && f[1].got >= f[1].total;
      },
      60s))
      << "a->b " << f[0].got << " of " << f[0].total << ", b->a " << f[1].got << " of "
      << f[1].total;
  for (const Flow& x : f) {
    EXPECT_EQ(x.got, x.total);
    EXPECT_EQ(x.bad, 0u);
  }
}

// What a sender saw after its peer died: the first send status other than ok or no-resource
// (kOk: none came), when, and the bytes a healthy pair moved meanwhile.
struct PeerDeath {
  Status status = Status::kOk;
  std::chrono::steady_clock::duration waited{};
  std::uint64_t healthy_bytes = 0;
};

// p.b dies while p.a sends on `ca`; until p.a's sends fail or `limit` passes, pair q keeps its
// connection (qa to qb) moving bytes.
inline PeerDeath kill_peer_mid_stream(Pair& p, ConnId ca, Pair& q, ConnId qa, ConnId qb,
                                      std::chrono::milliseconds limit) {
  std::vector<std::byte> chunk(4096, std::byte{1}), in(65536);
  std::size_t took = 0, n = 0;
  PeerDeath r;
  EXPECT_EQ(p.a->send(ca, chunk, took), Status::kOk);
  p.b.reset();  // the peer is gone mid-stream
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < limit) {
    if (p.a->poll() < 0 || q.a->poll() < 0 || q.b->poll() < 0) {
      ADD_FAILURE() << "poll failed";
      break;
    }
    (void)q.a->send(qa, chunk, took);
    while (q.b->recv(qb, in, n) == Status::kOk) r.healthy_bytes += n;
    r.status = p.a->send(ca, chunk, took);
    if (r.status != Status::kOk && r.status != Status::kNoResource) break;
  }
  r.waited = std::chrono::steady_clock::now() - t0;
  return r;
}

}  // namespace unet::ulp::test
