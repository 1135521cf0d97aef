// Datagrams and streams against misuse and hostile input (label device; issue 25): waits and
// accepts with any timeout, configured timeouts of milliseconds::max(), empty packets from a raw
// peer, every arrival landing in a counter, and buffers too small for a header.
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <vector>

#include "layer_channel.h"
#include "stream_support.h"
#include "unet/ulp/datagram_endpoint.h"
#include "unet/ulp/segment_header.h"
#include "unet/ulp/stream_endpoint.h"

namespace unet::ulp {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

std::vector<std::byte> bytes(std::size_t n, std::uint32_t seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = test::byte_at(i, seed);
  return v;
}

template <class Layer>
using RawChannel = unet::test::RawChannel<Layer>;

// The datagram layer's accounting: every fragment received is in exactly one counter.
std::uint64_t accounted(DatagramEndpoint& ep) {
  const DatagramStats& s = ep.stats();
  const ReassemblyStats& r = ep.reassembly_stats();
  return s.malformed + s.unbound_drops + s.delivered + s.queue_full_drops + r.held + r.duplicates +
         r.inconsistent + r.no_slot;
}

TEST(UlpMisuse, DatagramWaitTakesAnyTimeout) {
  UNET_REQUIRE_DEVICE();
  DatagramEndpoint a(unet::test::ud_config()), b(unet::test::ud_config());
  const core::ChannelOffer oa = a.offer_peer(), ob = b.offer_peer();
  const ChannelId ab = a.accept_peer(oa, ob.local);
  (void)b.accept_peer(ob, oa.local);
  ASSERT_EQ(a.bind(1), Status::kOk);
  ASSERT_EQ(b.bind(2), Status::kOk);
  for (const milliseconds t : {milliseconds::min(), -1ms, 0ms})
    EXPECT_EQ(b.wait(2, t), Status::kTimeout);
  const auto d = bytes(3000, 1);  // fragments
  ASSERT_EQ(a.send_to(1, ab, 2, d), Status::kOk);
  ASSERT_EQ(b.wait(2, milliseconds::max()), Status::kOk);
  std::vector<std::byte> out(kMaxDatagram);
  DatagramInfo info;
  ASSERT_EQ(b.recv_from(2, out, info), Status::kOk);
  out.resize(info.length);
  EXPECT_EQ(out, d);
  EXPECT_EQ(b.stats().fragments_received, accounted(b));
}

// Every wait and accept of the stream takes any timeout, and so do its configured timers.
TEST(UlpMisuse, StreamWaitsAndTimersTakeAnyTimeout) {
  UNET_REQUIRE_DEVICE();
  StreamConfig cfg = test::stream_config();
  cfg.connect_timeout = cfg.dead_peer_timeout = cfg.time_wait = milliseconds::max();
  test::Pair p(cfg);
  ASSERT_EQ(p.b->listen(80), Status::kOk);
  ConnId ca = kNoConn, cb = kNoConn;
  for (const milliseconds t : {milliseconds::min(), -1ms, 0ms})
    EXPECT_EQ(p.b->accept(80, cb, t), Status::kTimeout);
  ASSERT_EQ(p.a->connect(p.ab, 80, ca), Status::kOk);
  StreamState s;
  ASSERT_TRUE(
      p.pump([&] { return p.a->state(ca, s) == Status::kOk && s == StreamState::kEstablished; }));
  ASSERT_EQ(p.b->accept(80, cb, milliseconds::max()), Status::kOk);  // a's ACK is on its way
  EXPECT_GE(p.a->next_timer_ms(), 0);  // the keepalive, a quarter century away, fits an int
  // Within the initial window, so the sender needs no ack to send it all: each side's wait alone
  // sees it through.
  const auto d = bytes(3000, 2);
  std::size_t took = 0;
  ASSERT_EQ(p.a->send(ca, d, took), Status::kOk);
  ASSERT_EQ(took, d.size());
  std::vector<std::byte> got;
  while (got.size() < d.size()) {
    ASSERT_EQ(p.b->wait(cb, milliseconds::max()), Status::kOk);
    std::vector<std::byte> buf(8192);
    std::size_t n = 0;
    if (p.b->recv(cb, buf, n) == Status::kOk) got.insert(got.end(), buf.begin(), buf.begin() + n);
  }
  EXPECT_EQ(got, d);
}

// Empty packets reach the datagram layer and are counted as malformed, as is every fragment for a
// port nobody bound (each one, not only a datagram's first).
TEST(UlpMisuse, DatagramCountsEmptyPacketsAndEveryUnboundFragment) {
  UNET_REQUIRE_DEVICE();
  RawChannel<DatagramEndpoint> rc(unet::test::ud_config());
  ASSERT_EQ(rc.raw.send({}), Status::kOk);
  ASSERT_EQ(rc.raw.send({}, 5), Status::kOk);
  ASSERT_TRUE(rc.pump([&] { return rc.ep.stats().fragments_received == 2; }));
  EXPECT_EQ(rc.ep.stats().malformed, 2u);
  // A three-fragment datagram for port 9, which nobody bound.
  DatagramHeader h;
  h.src_port = 1;
  h.dst_port = 9;
  h.stride = 100;
  h.length = 250;
  h.count = 3;
  for (std::uint16_t i = 0; i < h.count; ++i) {
    h.index = i;
    std::vector<std::byte> m(kDatagramHeaderBytes + h.fragment_bytes());
    ASSERT_EQ(encode(h, h.fragment_bytes(), m), Status::kOk);
    ASSERT_EQ(rc.raw.send(m), Status::kOk);
  }
  ASSERT_TRUE(rc.pump([&] { return rc.ep.stats().fragments_received == 5; }));
  EXPECT_EQ(rc.ep.stats().unbound_drops, 3u);
  EXPECT_EQ(rc.ep.stats().fragments_received, accounted(rc.ep));
}

// The stream counts empty packets as malformed (over RC an empty RDMA WRITE with immediate data
// too), and every segment lands in one of its counters.
TEST(UlpMisuse, StreamCountsEveryArrival) {
  UNET_REQUIRE_DEVICE();
  for (const core::Transport t : {core::Transport::kUd, core::Transport::kRc}) {
    SCOPED_TRACE(t == core::Transport::kRc ? "RC" : "UD");
    RawChannel<StreamEndpoint> rc(t == core::Transport::kRc ? test::rc_config()
                                                            : unet::test::ud_config());
    ASSERT_EQ(rc.ep.listen(80), Status::kOk);
    ASSERT_EQ(rc.raw.send({}), Status::kOk);
    std::uint64_t empties = 1;
    if (t == core::Transport::kRc) {
      ASSERT_EQ(rc.raw.write_imm(1), Status::kOk);
      ++empties;
    }
    // A stray ACK and a SYN for a port nobody listens on: each answered with RST, counted.
    SegmentHeader h;
    h.flags = kAck;
    h.src_port = 5;
    h.dst_port = 80;
    std::vector<std::byte> m(kSegmentHeaderBytes);
    ASSERT_EQ(encode(h, 0, m), Status::kOk);
    ASSERT_EQ(rc.raw.send(m), Status::kOk);
    h.flags = kSyn;
    h.dst_port = 81;
    ASSERT_EQ(encode(h, 0, m), Status::kOk);
    ASSERT_EQ(rc.raw.send(m), Status::kOk);
    const StreamEndpointStats& s = rc.ep.stats();
    ASSERT_TRUE(rc.pump([&] { return rc.ep.net().stats().upcalls == empties + 2; }));
    EXPECT_EQ(s.malformed, empties);
    EXPECT_EQ(s.stray, 1u);
    EXPECT_EQ(s.refused_syn, 1u);
    EXPECT_EQ(s.segments + s.malformed + s.stray + s.refused_syn, rc.ep.net().stats().upcalls);
  }
}

// Buffers too small for a header (or a stream segment's acknowledgement blocks) are refused at
// construction, before any send could write past them.
TEST(UlpMisuse, BuffersMustHoldAHeader) {
  UNET_REQUIRE_DEVICE();
  core::EndpointConfig tiny = unet::test::ud_config();
  tiny.buffer_bytes = 32;
  EXPECT_THROW(DatagramEndpoint{tiny}, std::invalid_argument);
  EXPECT_THROW(StreamEndpoint{tiny}, std::invalid_argument);
  core::EndpointConfig rc = test::rc_config();
  rc.buffer_bytes = 32;
  EXPECT_THROW(StreamEndpoint{rc}, std::invalid_argument);
}

}  // namespace
}  // namespace unet::ulp
