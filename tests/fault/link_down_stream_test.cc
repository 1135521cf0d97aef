// Link down, the ulp stream (label fault): the set-up, and what rxe does, are in link_down.h.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "link_down.h"
#include "peer_protocol.h"
#include "unet/ulp/stream_endpoint.h"

namespace unet::test {
namespace {

using namespace std::chrono_literals;
using core::ChannelId;

// The ulp stream over UD: a connection in both directions across the dead link fails at both
// ends with kTimeout within dead_peer_timeout; send and recv then return that error; a healthy
// stream on the other pair moves on, checked.
TEST_F(LinkDown, StreamFailsWithinTheDeadPeerTimeoutAndAHealthyStreamMovesOn) {
  const ulp::StreamConfig sc = stream_peer_config();
  ulp::StreamEndpoint x(on(broken_[0], ud_config()), sc), y(on(broken_[1], ud_config()), sc);
  core::ChannelOffer ox = x.offer_peer(), oy = y.offer_peer();
  const ChannelId xy = x.accept_peer(ox, oy.local);
  (void)y.accept_peer(oy, ox.local);
  ASSERT_EQ(y.listen(kStreamPort), Status::kOk);
  ulp::ConnId cx;
  ASSERT_EQ(x.connect(xy, kStreamPort, cx), Status::kOk);
  HealthyStreamPair healthy(sc, on(healthy_[0], ud_config()), on(healthy_[1], ud_config()));
  LinkGuard link(netdev_, {broken_[0], broken_[1]});

  // Each end sends its own byte pattern and checks the other's.
  struct End {
    ulp::StreamEndpoint& ep;
    ulp::ConnId conn;
    std::uint8_t seed;
    std::uint64_t sent = 0, got = 0;
    bool established = false;
    Status error = Status::kOk;
    double failed_ms = -1;
  };
  End e[2] = {{x, cx, 13}, {y, ulp::kNoConn, 29}};
  std::vector<std::byte> out(4096), in(4096);
  auto byte = [](std::uint8_t seed, std::uint64_t i) {
    return static_cast<std::byte>(i * seed + (i >> 9));
  };
  // One step of one end: false on a wrong byte; a failed connection is recorded, not false.
  auto step = [&](End& me, const End& peer) {
    if (me.ep.poll() < 0) return false;
    if (me.conn == ulp::kNoConn && me.ep.accept(kStreamPort, me.conn) != Status::kOk) return true;
    ulp::StreamState st;
    if (!me.established)
      me.established =
          me.ep.state(me.conn, st) == Status::kOk && st == ulp::StreamState::kEstablished;
    if (!me.established || me.error != Status::kOk) return true;
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = byte(me.seed, me.sent + i);
    std::size_t took = 0, got = 0;
    Status s = me.ep.send(me.conn, out, took);
    me.sent += took;
    if (s == Status::kOk || s == Status::kNoResource) s = me.ep.recv(me.conn, in, got);
    for (std::size_t i = 0; i < got; ++i)
      if (in[i] != byte(peer.seed, me.got + i)) return false;
    me.got += got;
    if (s != Status::kOk && s != Status::kNoResource) me.error = s;
    return true;
  };
  const auto start = Clock::now();
  while ((e[0].got < (512u << 10) || e[1].got < (512u << 10)) && Clock::now() - start < 60s) {
    ASSERT_TRUE(step(e[0], e[1]));
    ASSERT_TRUE(step(e[1], e[0]));
    ASSERT_TRUE(healthy.step());
  }
  ASSERT_EQ(e[0].error, Status::kOk);
  ASSERT_EQ(e[1].error, Status::kOk);
  ASSERT_GE(e[0].got, 512u << 10) << "no stream traffic before the link-down";
  ASSERT_GE(e[1].got, 512u << 10) << "no stream traffic before the link-down";
  const std::uint64_t healthy_before = healthy.got;
  ASSERT_TRUE(link.down()) << "cannot take " << netdev_ << " down (not root?)";
  const auto downed = Clock::now();
  while ((e[0].error == Status::kOk || e[1].error == Status::kOk) && Clock::now() - downed < 30s) {
    for (int i = 0; i < 2; ++i) {  // both keep sending, as an application would
      ASSERT_TRUE(step(e[i], e[1 - i]));
      if (e[i].error != Status::kOk && e[i].failed_ms < 0) e[i].failed_ms = ms_since(downed);
    }
    ASSERT_TRUE(healthy.step());
  }
  const auto bound = sc.dead_peer_timeout + kSlack;
  for (int i = 0; i < 2; ++i) {
    End& me = e[i];
    std::printf(
        "link down, stream %s->%s: failed with %s %.0f ms after the link-down (bound %lld ms)\n",
        broken_[i].c_str(), broken_[1 - i].c_str(), std::string(to_string(me.error)).c_str(),
        me.failed_ms, static_cast<long long>(bound.count()));
    EXPECT_EQ(me.error, Status::kTimeout) << broken_[i];
    EXPECT_GE(me.failed_ms, 0) << broken_[i];
    EXPECT_LE(me.failed_ms, static_cast<double>(bound.count())) << broken_[i];
    std::size_t n = 0;
    Status r;
    while ((r = me.ep.recv(me.conn, in, n)) == Status::kOk && n > 0) {  // bytes that came in before
    }
    EXPECT_EQ(r, Status::kTimeout) << broken_[i];  // then the error, at once
    EXPECT_EQ(me.ep.send(me.conn, out, n), Status::kTimeout) << broken_[i];
    EXPECT_EQ(me.ep.close(me.conn), Status::kOk) << broken_[i];
  }
  std::printf("link down, stream: the healthy stream %s->%s moved %llu bytes meanwhile\n",
              healthy_[0].c_str(), healthy_[1].c_str(),
              static_cast<unsigned long long>(healthy.got - healthy_before));
  expect_port_states();
  const std::uint64_t healthy_at = healthy.got;
  const auto again = Clock::now();
  while (healthy.got < healthy_at + (1u << 20) && Clock::now() - again < 30s)
    ASSERT_TRUE(healthy.step());
  EXPECT_GT(healthy_at, healthy_before);
  EXPECT_GE(healthy.got, healthy_at + (1u << 20));
  ASSERT_TRUE(link.up());
}

}  // namespace
}  // namespace unet::test
