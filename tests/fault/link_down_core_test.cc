// Link down, core RC (label fault): the set-up, and what rxe does, are in link_down.h.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "link_down.h"
#include "unet/core/remote_token.h"
#include "unet/verbs/error.h"

namespace unet::test {
namespace {

using namespace std::chrono_literals;
using core::ChannelId;

// One end of the broken RC pair: RDMA WRITEs into the other end's window, kInFlight at a time.
struct Writer {
  static constexpr std::uint64_t kChunk = 4096, kInFlight = 16, kWindow = 1 << 20;
  core::Endpoint& ep;
  ChannelId ch;
  core::RemoteToken window;
  std::vector<std::byte> src = std::vector<std::byte>(kChunk, std::byte{0x5a});
  std::uint64_t issued = 0, ok = 0, failed = 0;
  Status first_error = Status::kOk;
  double done_ms = -1;  // when the last outstanding write completed, after the link-down

  std::uint64_t outstanding() const { return issued - ok - failed; }
  void issue() {
    while (outstanding() < kInFlight) {
      const std::uint64_t off = (issued % (kWindow / kChunk)) * kChunk;
      if (ep.write(ch, src.data(), kChunk, window, off, issued) != Status::kOk) return;
      ++issued;
    }
  }
  void take() {
    core::OpCompletion c;
    while (ep.completion(c) == Status::kOk) {
      if (c.status == Status::kOk) {
        ++ok;
      } else {
        ++failed;
        if (first_error == Status::kOk) first_error = c.status;
      }
    }
  }
};

TEST_F(LinkDown, CoreRcOutstandingWritesFailInBoundAndAHealthyPairKeepsWorking) {
  core::EndpointConfig cfg = endpoint_config(core::Transport::kRc);
  cfg.mode = core::Mode::kDirectAccess;
  core::Endpoint x(on(broken_[0], cfg)), y(on(broken_[1], cfg));
  const auto [xy, yx] = connect_endpoints(x, y);
  std::vector<std::byte> wx(Writer::kWindow), wy(Writer::kWindow);
  core::RemoteToken tx, ty;
  ASSERT_EQ(x.grant(wx.data(), wx.size(), core::kRemoteWrite, tx), Status::kOk);
  ASSERT_EQ(y.grant(wy.data(), wy.size(), core::kRemoteWrite, ty), Status::kOk);
  Writer w[2] = {{x, xy, ty}, {y, yx, tx}};  // each end writes into the other's window
  HealthyCorePair healthy(on(healthy_[0], endpoint_config(core::Transport::kRc)),
                          on(healthy_[1], endpoint_config(core::Transport::kRc)));
  // See the top of the file: the end that loses its carrier waits for neighbour resolution on
  // every try; 100 ms between ARP probes instead of 1 s keeps the test short.
  NeighbourRetrans fast_arp({netdev_, peer_netdev_}, 100);
  ASSERT_TRUE(fast_arp.ok()) << "cannot set retrans_time_ms on " << netdev_ << " and "
                             << peer_netdev_;
  LinkGuard link(netdev_, {broken_[0], broken_[1]});

  auto progress = [&] {
    for (Writer& s : w) {
      if (s.ep.poll() < 0) return false;
      s.take();
    }
    return healthy.step();
  };
  const auto start = Clock::now();
  while ((w[0].ok < 500 || w[1].ok < 500) && Clock::now() - start < 60s) {
    for (Writer& s : w) s.issue();
    ASSERT_TRUE(progress());
  }
  ASSERT_GE(w[0].ok, 500u) << "no traffic before the link-down";
  ASSERT_GE(w[1].ok, 500u) << "no traffic before the link-down";
  // Drain first: a write in flight at the link-down may have been acked just before it, and an
  // end with a full window would then issue nothing across the dead link.
  const auto drain = Clock::now();
  while ((w[0].outstanding() > 0 || w[1].outstanding() > 0) && Clock::now() - drain < 30s)
    ASSERT_TRUE(progress());
  ASSERT_EQ(w[0].outstanding() + w[1].outstanding(), 0u) << "writes outstanding before the down";
  const std::uint64_t healthy_before = healthy.delivered;
  ASSERT_TRUE(link.down()) << "cannot take " << netdev_ << " down (not root?)";
  const auto downed = Clock::now();
  // A full window issued now is outstanding across a dead link for certain.
  std::uint64_t at_down[2];
  for (int i = 0; i < 2; ++i) {
    w[i].issue();
    at_down[i] = w[i].outstanding();
  }
  while ((w[0].outstanding() > 0 || w[1].outstanding() > 0) && Clock::now() - downed < 30s) {
    ASSERT_TRUE(progress());
    for (Writer& s : w)
      if (s.outstanding() == 0 && s.done_ms < 0) s.done_ms = ms_since(downed);
  }
  for (Writer& s : w)
    if (s.done_ms < 0) s.done_ms = ms_since(downed);
  // The end whose netdev went down has no route: its QP fails at the next packet it sends. The
  // other end loses only its carrier: its packets wait in the neighbour queue while the kernel
  // tries to resolve the lost peer, and are dropped when that fails; each of the retry_count + 1
  // tries may wait that long on top of its ack timeout.
  const std::chrono::milliseconds bounds[2] = {
      rc_bound(cfg), rc_bound(cfg) + (cfg.retry_count + 1) * neighbour_hold(peer_netdev_)};
  const Status expected[2] = {Status::kLocalQpOperationError, Status::kRetryExceeded};
  for (int i = 0; i < 2; ++i) {
    Writer& s = w[i];
    const auto bound = bounds[i];
    std::printf(
        "link down, core RC %s->%s: %llu writes outstanding after the link-down; all %llu issued "
        "completed (%llu ok, %llu failed, first error: %s) %.0f ms after it (bound %lld ms)\n",
        broken_[i].c_str(), broken_[1 - i].c_str(), static_cast<unsigned long long>(at_down[i]),
        static_cast<unsigned long long>(s.issued), static_cast<unsigned long long>(s.ok),
        static_cast<unsigned long long>(s.failed), std::string(to_string(s.first_error)).c_str(),
        s.done_ms, static_cast<long long>(bound.count()));
    EXPECT_EQ(s.ok + s.failed, s.issued) << broken_[i];  // each exactly once
    EXPECT_EQ(at_down[i], Writer::kInFlight) << broken_[i];
    EXPECT_GE(s.failed, at_down[i]) << broken_[i];  // at least the window issued after it
    EXPECT_EQ(s.first_error, expected[i]) << broken_[i];
    EXPECT_LE(s.done_ms, static_cast<double>(bound.count())) << broken_[i];
    EXPECT_NE(s.ep.channel_status(s.ch), Status::kOk) << broken_[i];
    // Later operations fail at once.
    EXPECT_NE(s.ep.write(s.ch, s.src.data(), Writer::kChunk, s.window, 0, s.issued), Status::kOk);
    EXPECT_NE(s.ep.send_inline(s.ch, std::as_bytes(std::span(&s.issued, 1))), Status::kOk);
  }
  std::printf("link down, core RC: healthy pair %s->%s carried %llu messages meanwhile\n",
              healthy_[0].c_str(), healthy_[1].c_str(),
              static_cast<unsigned long long>(healthy.delivered - healthy_before));
  expect_port_states();
  // A new channel while the link is down: moving its QP to RTR needs a route to the peer.
  try {
    (void)connect_endpoints(x, y);
    ADD_FAILURE() << "a channel opened across the downed link";
  } catch (const verbs::Error& e) {
    std::printf("link down, core RC: a new channel while down: %s\n", e.what());
    EXPECT_EQ(e.error_number(), ENETUNREACH) << e.what();
  }
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(healthy.step());
  EXPECT_GT(healthy.delivered, healthy_before);
  EXPECT_EQ(x.close_channel(xy), Status::kOk);
  EXPECT_EQ(y.close_channel(yx), Status::kOk);
  // The link back: a new channel between the same endpoints carries a checked message.
  ASSERT_TRUE(link.up());
  const auto [nx, ny] = connect_endpoints(x, y);
  const std::uint64_t v = 0x600dULL;
  ASSERT_EQ(x.send_inline(nx, std::as_bytes(std::span(&v, 1))), Status::kOk);
  core::Descriptor d;
  ASSERT_TRUE(wait_receive(x, y, d));
  std::uint64_t got = 0;
  std::memcpy(&got, d.inline_payload().data(), sizeof got);
  EXPECT_EQ(d.channel, ny);
  EXPECT_EQ(got, v);
}

}  // namespace
}  // namespace unet::test
