// StreamEndpoint on a real device (label device): handshake, bytes both ways checked, orderly and
// simultaneous close, flow control by the receiver's window, bulk data in whole segments, connect
// to nothing, abort, a dead peer detected in time with another connection unaffected, bad input.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

#include "device_env.h"
#include "stream_support.h"

namespace unet::ulp {
namespace {

using namespace std::chrono_literals;
using test::Pair;
using test::stream_config;
using test::transfer;

// accept() with a timeout: kTimeout when nobody connects (after about the timeout), kNotFound
// without a listener, and the connection when a peer, served by another thread, connects.
TEST(Stream, AcceptWaitsForAConnectionUpToItsTimeout) {
  UNET_REQUIRE_DEVICE();
  Pair p;
  ConnId cb = kNoConn, ca = kNoConn;
  EXPECT_EQ(p.b->accept(80, cb, 10ms), Status::kNotFound);
  ASSERT_EQ(p.b->listen(80), Status::kOk);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(p.b->accept(80, cb, 100ms), Status::kTimeout);
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, 100ms);
  EXPECT_LT(waited, 2s);
  EXPECT_EQ(cb, kNoConn);  // untouched
  std::atomic<bool> stop{false};
  std::thread peer([&] {  // a's own thread: it connects and keeps its endpoint polled
    if (p.a->connect(p.ab, 80, ca) != Status::kOk) return;
    while (!stop) (void)p.a->poll();
  });
  const Status s = p.b->accept(80, cb, 10s);
  stop = true;
  peer.join();
  ASSERT_EQ(s, Status::kOk);
  StreamState st;
  ASSERT_EQ(p.b->state(cb, st), Status::kOk);
  EXPECT_EQ(st, StreamState::kEstablished);
}

// Each connection's segments fit what its peer takes (core's per-channel limit): b's buffers are
// half a's, so a's segments are b's buffer less the header, and every byte arrives both ways
// without a receive error at b (a segment of a's own size would fail there every time).
TEST(Stream, SegmentsFitThePeersSmallerBuffers) {
  UNET_REQUIRE_DEVICE();
  core::EndpointConfig big = test::ud_config(), small = test::ud_config();
  small.buffer_bytes = 512;
  Pair p(stream_config(), big, small);
  auto [ca, cb] = p.connect();
  ASSERT_EQ(p.a->stats(ca)->mss, 512u - kSegmentHeaderBytes);
  EXPECT_EQ(p.b->stats(cb)->mss, p.b->mss());
  EXPECT_GT(p.a->mss(), p.a->stats(ca)->mss) << "a's own segments would be larger";
  transfer(p, ca, cb, 300 * 1024, 100 * 1024);
  EXPECT_EQ(p.b->net().stats().recv_errors, 0u);
  EXPECT_EQ(p.a->net().stats().recv_errors, 0u);
}

// A bulk transfer goes in whole segments when the send buffer is larger than the peer's window
// (StreamConfig::send_buffer): when an ack opens the window, the next bytes already wait. With
// the two equal, each send() refills what an ack freed and its last bytes leave as a short
// segment; and without silly window avoidance, a window that opens by less than a segment sends
// a short one. Either way 4 MiB took 30 (path MTU 1 KiB) or 59 (4 KiB) segments more.
TEST(Stream, ASendBufferLargerThanThePeersWindowSendsWholeSegments) {
  UNET_REQUIRE_DEVICE();
  StreamConfig cfg = stream_config();
  cfg.send_buffer = 4 * cfg.recv_buffer;
  Pair p(cfg);
  auto [ca, cb] = p.connect();
  constexpr std::uint64_t kBytes = 4 << 20;
  transfer(p, ca, cb, kBytes, 0);
  const StreamStats st = *p.a->stats(ca);
  ASSERT_EQ(st.bytes_sent, kBytes);
  const std::uint64_t fewest = (kBytes + st.mss - 1) / st.mss;
  // Beside the data: the SYN and the handshake's ACK, and room for a keepalive or two.
  EXPECT_LE(st.segments_sent - st.retransmitted_segments, fewest + 4) << "mss " << st.mss;
}

// A peer whose buffers cannot hold a segment with a full set of SACK blocks (52 bytes) is refused
// at accept_peer, its channel closed; one that can is taken.
TEST(Stream, APeerTooSmallForASegmentIsRefused) {
  UNET_REQUIRE_DEVICE();
  StreamEndpoint a(test::ud_config(), stream_config());
  for (const std::uint32_t bytes : {48u, 52u}) {
    SCOPED_TRACE(bytes);
    core::EndpointConfig tiny = test::ud_config();
    tiny.buffer_bytes = bytes;
    core::Endpoint peer(tiny);
    const core::ChannelOffer oa = a.offer_peer();
    if (bytes < 52) {
      EXPECT_THROW((void)a.accept_peer(oa, peer.offer_channel().local), std::length_error);
      EXPECT_EQ(a.net().channel_status(oa.slot), Status::kClosed);
    } else {
      EXPECT_EQ(a.accept_peer(oa, peer.offer_channel().local), oa.slot);
      EXPECT_EQ(a.net().max_message(oa.slot), 52u);
    }
  }
}

// Large in-order arrivals stay in their segment buffers until recv() copies them out (one copy
// fewer than through the receive buffer). Over UD and RC, 2 MiB read in pieces of 1 to 9000
// bytes, which end inside kept arrivals and cross into the receive buffer and back: every byte
// in order, and most arrivals were read in place.
class StreamKept : public ::testing::TestWithParam<core::Transport> {};

TEST_P(StreamKept, LargeArrivalsAreReadFromTheirBuffersInOrder) {
  UNET_REQUIRE_DEVICE();
  const core::EndpointConfig net =
      GetParam() == core::Transport::kRc ? test::rc_config() : test::ud_config();
  Pair p(stream_config(), net);
  auto [ca, cb] = p.connect();
  constexpr std::uint64_t kBytes = 2u << 20;
  test::Flow f{*p.a, ca, *p.b, cb, kBytes, 5};
  std::vector<std::byte> in(9000);
  std::uint64_t reads = 0;
  ASSERT_TRUE(p.pump(
      [&] {
        if (!f.push()) return true;
        std::size_t n = 0;
        const std::size_t want = 1 + (reads * 7919) % in.size();  // 1..9000, varied
        if (p.b->recv(cb, std::span(in).first(want), n) == Status::kOk) {
          ++reads;
          for (std::size_t i = 0; i < n; ++i) f.bad += in[i] != test::byte_at(f.got + i, 5);
          f.got += n;
        }
        return f.got >= kBytes;
      },
      60s))
      << "received " << f.got << " of " << kBytes;
  EXPECT_EQ(f.got, kBytes);
  EXPECT_EQ(f.bad, 0u);
  const StreamStats s = *p.b->stats(cb);
  EXPECT_EQ(s.bytes_received, kBytes);
  EXPECT_GT(s.kept_segments, s.segments_received / 4)
      << "of " << s.segments_received << " arrivals";
}

INSTANTIATE_TEST_SUITE_P(Transports, StreamKept,
                         ::testing::Values(core::Transport::kRc, core::Transport::kUd),
                         [](const auto& p) {
                           return p.param == core::Transport::kRc ? "RC" : "UD";
                         });

// A connection keeps at most 16 arrivals, and the endpoint a quarter of its free queue (16 of
// 64 here); what arrives past them is copied in behind them and read after them, in order; an
// aborted connection gives its unread ones back, so the next connection may keep again.
TEST(Stream, KeptArrivalsAreBoundedReadInOrderAndGivenBackWithTheirConnection) {
  UNET_REQUIRE_DEVICE();
  core::EndpointConfig net = test::ud_config();
  net.free_queue_depth = 64;
  Pair p(stream_config(), net);
  for (std::uint32_t round = 0; round < 2; ++round) {
    SCOPED_TRACE(round);
    auto [ca, cb] = p.connect(static_cast<std::uint16_t>(80 + round));
    // b reads nothing yet: a's 64 KiB come as far as b's window lets them.
    std::vector<std::byte> out(64 * 1024), in(1000);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = test::byte_at(i, round);
    std::size_t took = 0;
    ASSERT_EQ(p.a->send(ca, out, took), Status::kOk);
    ASSERT_TRUE(p.pump([&] { return p.b->stats(cb)->bytes_received >= 24 * 1024; }, 30s));
    const StreamStats s = *p.b->stats(cb);
    EXPECT_EQ(s.kept_segments, 16u) << "of " << s.segments_received << " arrivals";
    std::uint64_t got = 0, bad = 0;
    while (got < 20000) {  // past the 16 kept ones, into what was copied in
      std::size_t n = 0;
      ASSERT_EQ(p.b->recv(cb, in, n), Status::kOk) << "at " << got;
      for (std::size_t i = 0; i < n; ++i) bad += in[i] != test::byte_at(got + i, round);
      got += n;
    }
    EXPECT_EQ(bad, 0u);
    // Read past them, the next arrivals are kept again; b aborts with those unread.
    std::size_t more = 0;
    ASSERT_TRUE(p.pump(
        [&] {
          if (more == 0) {
            EXPECT_NE(p.a->send(ca, std::span(out).first(32 * 1024), more), Status::kInvalidState);
          }
          return p.b->stats(cb)->kept_segments > 16;
        },
        30s));
    EXPECT_EQ(p.b->abort(cb), Status::kOk);
    EXPECT_EQ(p.a->abort(ca), Status::kOk);
    ASSERT_TRUE(p.pump([] { return true; }));
  }
}

TEST(Stream, HandshakeBytesBothWaysAndOrderlyClose) {
  UNET_REQUIRE_DEVICE();
  Pair p;
  auto [ca, cb] = p.connect();
  transfer(p, ca, cb, 2u << 20, 0);
  transfer(p, ca, cb, 0, 1u << 20);
  const std::optional<StreamStats> st = p.a->stats(ca);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->bytes_sent, 2u << 20);
  EXPECT_EQ(st->bytes_received, 1u << 20);
  EXPECT_GT(st->srtt.count(), 0);
  EXPECT_GT(st->cwnd, 0u);
  // a shuts down: b reads the end of the stream, may still send, then closes too.
  ASSERT_EQ(p.a->shutdown(ca), Status::kOk);
  std::vector<std::byte> buf(100);
  std::size_t n = 0;
  ASSERT_TRUE(p.pump([&] { return p.b->recv(cb, buf, n) == Status::kClosed; }));
  EXPECT_EQ(n, 0u);
  std::size_t took = 0;
  ASSERT_EQ(p.b->send(cb, std::span(buf).first(10), took),
            Status::kOk);  // half-close: b still sends
  EXPECT_EQ(took, 10u);
  ASSERT_TRUE(p.pump([&] { return p.a->recv(ca, buf, n) == Status::kOk && n == 10; }));
  ASSERT_EQ(p.b->close(cb), Status::kOk);
  ASSERT_TRUE(p.pump([&] { return p.a->recv(ca, buf, n) == Status::kClosed; }));
  StreamState s;
  ASSERT_TRUE(
      p.pump([&] { return p.a->state(ca, s) == Status::kOk && s == StreamState::kClosed; }));
  EXPECT_EQ(p.a->close(ca), Status::kOk);
  EXPECT_FALSE(p.a->stats(ca).has_value());  // given back
}

TEST(Stream, SimultaneousCloseReachesClosedOnBothSides) {
  UNET_REQUIRE_DEVICE();
  Pair p;
  auto [ca, cb] = p.connect();
  ASSERT_EQ(p.a->shutdown(ca), Status::kOk);
  ASSERT_EQ(p.b->shutdown(cb), Status::kOk);
  StreamState sa, sb;
  ASSERT_TRUE(p.pump([&] {
    return p.a->state(ca, sa) == Status::kOk && p.b->state(cb, sb) == Status::kOk &&
           sa == StreamState::kClosed && sb == StreamState::kClosed;
  }));
  std::vector<std::byte> buf(10);
  std::size_t n;
  EXPECT_EQ(p.a->recv(ca, buf, n), Status::kClosed);
  EXPECT_EQ(p.b->recv(cb, buf, n), Status::kClosed);
}

// The receiver does not read: the sender stops at its buffer plus the peer's window, and resumes
// when the receiver reads.
TEST(Stream, ReceiverWindowStopsAndResumesTheSender) {
  UNET_REQUIRE_DEVICE();
  Pair p;
  auto [ca, cb] = p.connect();
  std::vector<std::byte> chunk(8192, std::byte{0x5A});
  std::uint64_t sent = 0;
  for (int round = 0; round < 2000; ++round) {
    std::size_t took = 0;
    const Status s = p.a->send(ca, chunk, took);
    ASSERT_TRUE(s == Status::kOk || s == Status::kNoResource);
    sent += took;
    ASSERT_GE(p.a->poll(), 0);
    ASSERT_GE(p.b->poll(), 0);
  }
  // 64 KiB in b's receive buffer and 64 KiB in a's send buffer, no more.
  EXPECT_EQ(sent, 128u * 1024);
  EXPECT_EQ(p.a->stats(ca)->peer_window, 0u);
  std::vector<std::byte> in(1 << 20);
  std::uint64_t got = 0;
  std::size_t n = 0;
  ASSERT_TRUE(p.pump([&] {
    while (p.b->recv(cb, in, n) == Status::kOk) got += n;
    return got == sent;
  }));
  std::size_t took = 0;
  EXPECT_EQ(p.a->send(ca, chunk, took), Status::kOk);
  EXPECT_EQ(took, chunk.size());
}

TEST(Stream, ConnectToNothingFailsClearly) {
  UNET_REQUIRE_DEVICE();
  Pair p;
  // No listener on the port: refused by an RST, at once.
  ConnId c;
  ASSERT_EQ(p.a->connect(p.ab, 81, c), Status::kOk);
  std::vector<std::byte> buf(10);
  std::size_t n;
  ASSERT_TRUE(p.pump([&] { return p.a->recv(c, buf, n) == Status::kClosed; }, 2s));
  // No peer at all: the connect times out (connect_timeout 1 s).
  p.b.reset();
  ASSERT_EQ(p.a->connect(p.ab, 80, c), Status::kOk);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(p.pump([&] { return p.a->recv(c, buf, n) == Status::kTimeout; }, 5s));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
}

TEST(Stream, AbortResetsThePeer) {
  UNET_REQUIRE_DEVICE();
  Pair p;
  auto [ca, cb] = p.connect();
  ASSERT_EQ(p.a->abort(ca), Status::kOk);
  std::vector<std::byte> buf(10);
  std::size_t n;
  ASSERT_TRUE(p.pump([&] { return p.b->recv(cb, buf, n) == Status::kClosed; }, 2s));
  std::size_t took;
  EXPECT_EQ(p.b->send(cb, buf, took), Status::kClosed);
  EXPECT_EQ(p.a->send(ca, buf, took), Status::kNotFound);
}

// The peer disappears mid-stream: the survivor's connection fails with kTimeout within the
// dead-peer time (1 s), while a second connection to a live peer keeps moving bytes.
TEST(Stream, DeadPeerIsDetectedInTimeOthersUnaffected) {
  UNET_REQUIRE_DEVICE();
  Pair p, q;
  auto [ca, cb] = p.connect();
  auto [qa, qb] = q.connect();
  const test::PeerDeath d = test::kill_peer_mid_stream(p, ca, q, qa, qb, 5s);
  EXPECT_EQ(d.status, Status::kTimeout);
  EXPECT_LT(d.waited, 2s);
  EXPECT_GT(d.healthy_bytes, 0u);
  StreamState st;
  ASSERT_EQ(q.a->state(qa, st), Status::kOk);
  EXPECT_EQ(st, StreamState::kEstablished);
}

TEST(Stream, BadInputIsRefused) {
  UNET_REQUIRE_DEVICE();
  Pair p;
  std::vector<std::byte> buf(10);
  std::size_t n;
  ConnId c;
  EXPECT_EQ(p.a->send(7, buf, n), Status::kNotFound);
  EXPECT_EQ(p.a->recv(7, buf, n), Status::kNotFound);
  EXPECT_EQ(p.a->listen(0), Status::kInvalidArgument);
  ASSERT_EQ(p.a->listen(5), Status::kOk);
  EXPECT_EQ(p.a->listen(5), Status::kInvalidState);
  EXPECT_EQ(p.a->accept(6, c), Status::kNotFound);
  EXPECT_EQ(p.a->accept(5, c), Status::kNoResource);
  EXPECT_EQ(p.a->connect(p.ab + 9, 5, c), Status::kNotFound);
  EXPECT_EQ(p.a->connect(p.ab, 0, c), Status::kInvalidArgument);
  ASSERT_EQ(p.a->connect(p.ab, 5, c), Status::kOk);
  EXPECT_EQ(p.a->send(c, buf, n), Status::kInvalidState);  // not established yet
  StreamConfig no_acks = stream_config();
  no_acks.ack_every = 0;
  EXPECT_THROW(StreamEndpoint(test::ud_config(), no_acks), std::invalid_argument);
  StreamConfig late_acks = stream_config();
  late_acks.ack_delay =
      std::chrono::duration_cast<std::chrono::microseconds>(late_acks.rtt.min_rto);
  EXPECT_THROW(StreamEndpoint(test::ud_config(), late_acks), std::invalid_argument);
}

// Delayed acks: one in-order segment is not acknowledged at once — an answer within ack_delay
// carries the ack (one segment each way, no pure ack) — and alone it is acknowledged after
// ack_delay; a second segment is acknowledged at once (ack_every = 2).
TEST(Stream, DelayedAcksRideOnAnswersAndComeWithinTheDelay) {
  UNET_REQUIRE_DEVICE();
  StreamConfig cfg = stream_config();
  cfg.ack_delay = 50ms;         // far above a poll loop's turn, even under emulation
  cfg.dead_peer_timeout = 10s;  // no keepalive (every 2.5 s when idle) within the test
  cfg.rtt.min_rto = cfg.rtt.initial_rto = 500ms;  // above ack_delay, as the endpoint requires
  Pair p(cfg);
  auto [ca, cb] = p.connect();
  std::vector<std::byte> msg(64, std::byte{7}), in(256);
  std::size_t took = 0, got = 0;
  auto sent = [](StreamEndpoint& ep, ConnId c) { return ep.stats(c)->segments_sent; };
  // A request and its answer: b's only segment is the answer, which acknowledges the request.
  const std::uint64_t a0 = sent(*p.a, ca), b0 = sent(*p.b, cb);
  ASSERT_EQ(p.a->send(ca, msg, took), Status::kOk);
  ASSERT_TRUE(p.pump([&] { return p.b->recv(cb, in, got) == Status::kOk; }));
  EXPECT_EQ(sent(*p.b, cb), b0) << "b acknowledged at once instead of waiting for its answer";
  ASSERT_EQ(p.b->send(cb, std::span(in).first(got), took), Status::kOk);
  ASSERT_TRUE(p.pump([&] { return p.a->recv(ca, in, got) == Status::kOk; }));
  EXPECT_EQ(sent(*p.b, cb), b0 + 1) << "the answer should carry the ack: no pure ack";
  // Alone, a segment is acknowledged after ack_delay, not before.
  const std::uint64_t b1 = sent(*p.b, cb);
  ASSERT_EQ(p.a->send(ca, msg, took), Status::kOk);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(p.pump([&] { return sent(*p.b, cb) > b1; }, 5s));
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, 45ms);
  EXPECT_LT(waited, 2s);
  (void)p.pump([] { return false; }, 10ms);  // the ack reaches a
  // Two segments: acknowledged at once, by one ack.
  const std::uint64_t b2 = sent(*p.b, cb);
  std::vector<std::byte> two(2 * p.a->mss(), std::byte{9});
  ASSERT_EQ(p.a->send(ca, two, took), Status::kOk);
  ASSERT_EQ(took, two.size());
  const auto t1 = std::chrono::steady_clock::now();
  ASSERT_TRUE(p.pump([&] { return sent(*p.b, cb) > b2; }, 5s));
  EXPECT_LT(std::chrono::steady_clock::now() - t1, 40ms) << "two segments waited for the delay";
  (void)p.pump([] { return false; }, 10ms);
  EXPECT_EQ(sent(*p.b, cb), b2 + 1);
  EXPECT_EQ(sent(*p.a, ca), a0 + 4)
      << "a sent 4 data segments and no ack (it received only the answer)";
}

}  // namespace
}  // namespace unet::ulp
