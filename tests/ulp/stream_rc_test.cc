// StreamEndpoint over RC endpoints (label device): the same protocol on a reliable transport.
// Segments are as large as a buffer, not the path MTU; bytes both ways are checked and no receiver
// ever sees a gap; a peer that dies fails its connection (or a connect to it) through the RC
// channel's failure, long before the dead-peer (or connect) timeout, while a connection over
// another channel keeps moving bytes.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <vector>

#include "device_env.h"
#include "stream_support.h"

namespace unet::ulp {
namespace {

using namespace std::chrono_literals;
using test::Pair;
using test::rc_config;
using test::stream_config;
using test::transfer;

TEST(StreamRc, SegmentsPastThePathMtuCarryBytesBothWaysAndClose) {
  UNET_REQUIRE_DEVICE();
  StreamConfig cfg = stream_config();
  cfg.send_buffer = cfg.recv_buffer = 256 * 1024;
  Pair p(cfg, rc_config());
  ASSERT_EQ(p.a->mss(), rc_config().buffer_bytes - kSegmentHeaderBytes);
  ASSERT_GT(p.a->mss(), 4096u) << "past any path MTU";
  auto [ca, cb] = p.connect();
  // a sends 8 MiB while b sends 1 MiB back; every byte checked.
  constexpr std::uint64_t kAtoB = 8u << 20, kBtoA = 1u << 20;
  transfer(p, ca, cb, kAtoB, kBtoA);
  const std::optional<StreamStats> sa = p.a->stats(ca), sb = p.b->stats(cb);
  ASSERT_TRUE(sa && sb);
  EXPECT_EQ(sa->bytes_sent, kAtoB);
  EXPECT_EQ(sa->bytes_received, kBtoA);
  // RC delivers in order and loses nothing: neither receiver ever saw a gap or dropped a segment
  // (a timer that fired early, at the 2 ms RTO floor under emulation, only sends duplicates).
  EXPECT_EQ(sa->held_out_of_order + sb->held_out_of_order, 0u);
  EXPECT_EQ(sa->out_of_order_drops + sb->out_of_order_drops, 0u);
  EXPECT_EQ(sa->window_drops + sb->window_drops, 0u);
  std::printf(
      "[ info ] segments a->b %llu, resent %llu (timeouts %llu)\n",
      static_cast<unsigned long long>(sa->segments_sent),
      static_cast<unsigned long long>(sa->retransmitted_segments + sb->retransmitted_segments),
      static_cast<unsigned long long>(sa->timeouts + sb->timeouts));
  EXPECT_LT(sa->segments_sent, kAtoB / 4096) << "segments larger than the path MTU";
  // Orderly close: a's FIN, then b's.
  ASSERT_EQ(p.a->shutdown(ca), Status::kOk);
  std::vector<std::byte> buf(16);
  std::size_t n = 0;
  ASSERT_TRUE(p.pump([&] { return p.b->recv(cb, buf, n) == Status::kClosed; }));
  ASSERT_EQ(p.b->close(cb), Status::kOk);
  StreamState st;
  ASSERT_TRUE(p.pump([&] {
    return p.a->recv(ca, buf, n) == Status::kClosed && p.a->state(ca, st) == Status::kOk &&
           st == StreamState::kClosed;
  }));
  EXPECT_EQ(p.a->close(ca), Status::kOk);
  EXPECT_EQ(p.a->stats().malformed + p.b->stats().malformed, 0u);
}

// The dead-peer timeout is 30 s here: what fails the connection is its RC channel (the device's
// retries to a vanished QP run out, about 0.5 s), reported as kClosed.
TEST(StreamRc, ADeadPeerFailsTheConnectionThroughItsChannelOthersUnaffected) {
  UNET_REQUIRE_DEVICE();
  StreamConfig cfg = stream_config();
  cfg.dead_peer_timeout = 30s;
  Pair p(cfg, rc_config()), q(cfg, rc_config());
  auto [ca, cb] = p.connect();
  auto [qa, qb] = q.connect();
  const test::PeerDeath d = test::kill_peer_mid_stream(p, ca, q, qa, qb, 15s);
  EXPECT_EQ(d.status, Status::kClosed);
  EXPECT_LT(d.waited, 10s) << "well before the 30 s dead-peer timeout";
  EXPECT_EQ(p.a->net().channel_status(p.ab), Status::kClosed);
  StreamState st;
  ASSERT_EQ(p.a->state(ca, st), Status::kOk);
  EXPECT_EQ(st, StreamState::kClosed);
  EXPECT_GT(d.healthy_bytes, 0u);
  ASSERT_EQ(q.a->state(qa, st), Status::kOk);
  EXPECT_EQ(st, StreamState::kEstablished);
}

// A connect to a peer that died after its channel was made: the SYN's channel fails with the
// QP's retries and the connect with it, long before the 30 s connect timeout.
TEST(StreamRc, AConnectToADeadPeerFailsWithItsChannel) {
  UNET_REQUIRE_DEVICE();
  StreamConfig cfg = stream_config();
  cfg.connect_timeout = 30s;
  Pair p(cfg, rc_config());
  ASSERT_EQ(p.b->listen(80), Status::kOk);
  p.b.reset();
  ConnId c = kNoConn;
  ASSERT_EQ(p.a->connect(p.ab, 80, c), Status::kOk);
  StreamState st = StreamState::kSynSent;
  const auto t0 = std::chrono::steady_clock::now();
  while (st == StreamState::kSynSent && std::chrono::steady_clock::now() - t0 < 40s) {
    ASSERT_GE(p.a->poll(), 0);
    ASSERT_EQ(p.a->state(c, st), Status::kOk);
  }
  EXPECT_EQ(st, StreamState::kClosed);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
  std::byte buf[8];
  std::size_t n = 0;
  EXPECT_EQ(p.a->recv(c, buf, n), Status::kClosed);
  EXPECT_EQ(p.a->connect(p.ab, 80, c), Status::kClosed) << "the channel is gone";
}

}  // namespace
}  // namespace unet::ulp
