// Link down, uam over UD (label fault): the set-up, and what rxe does, are in link_down.h.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "link_down.h"
#include "peer_protocol.h"
#include "unet/uam/endpoint.h"

namespace unet::test {
namespace {

using namespace std::chrono_literals;
using core::ChannelId;

// One end of the broken uam pair: requests to the other end, which echoes them.
struct Requester {
  uam::Endpoint& ep;
  ChannelId ch;
  std::uint64_t issued = 0, ok = 0, failed = 0, replies = 0;
  Status first_error = Status::kOk;
  double failed_ms = -1;  // when the channel reported the failure, after the link-down

  void issue() {
    for (std::uint64_t k = issued; ep.request(ch, kEcho, std::span(&k, 1)) == Status::kOk;
         k = ++issued) {
    }
  }
};

// uam over UD: requests outstanding across the dead link, from both ends, all complete with an
// error within uam's retransmission bound; a healthy uam UD pair keeps answering.
TEST_F(LinkDown, UamUdOutstandingRequestsFailInBoundAndAHealthyPairKeepsAnswering) {
  const core::EndpointConfig cfg = uam_config(core::Transport::kUd);
  uam::Endpoint x(on(broken_[0], cfg)), y(on(broken_[1], cfg)), ha(on(healthy_[0], cfg)),
      hb(on(healthy_[1], cfg));
  core::ChannelOffer ox = x.offer_channel(), oy = y.offer_channel();
  Requester r[2] = {{x, x.accept_offer(ox, oy.local)}, {y, y.accept_offer(oy, ox.local)}};
  core::ChannelOffer oa = ha.offer_channel(), ob = hb.offer_channel();
  const ChannelId hab = ha.accept_offer(oa, ob.local);
  (void)hb.accept_offer(ob, oa.local);
  for (uam::Endpoint* e : {&x, &y, &hb})
    ASSERT_EQ(e->on_request(kEcho,
                            [e](uam::Token& tok, const uam::Message& m) {
                              (void)e->reply(tok, kEchoReply, m.args, {});
                              return uam::Disposition::kDone;
                            }),
              Status::kOk);
  std::uint64_t healthy_replies = 0, healthy_done = 0, healthy_next = 0, healthy_bad = 0;
  for (Requester& s : r) {
    ASSERT_EQ(s.ep.on_reply(kEchoReply,
                            [&s](const uam::Message&) {
                              ++s.replies;
                              return uam::Disposition::kDone;
                            }),
              Status::kOk);
    s.ep.on_completion([&s](ChannelId, std::uint64_t, Status st) {
      if (st == Status::kOk) {
        ++s.ok;
      } else {
        ++s.failed;
        if (s.first_error == Status::kOk) s.first_error = st;
      }
    });
  }
  ASSERT_EQ(ha.on_reply(kEchoReply,
                        [&](const uam::Message& m) {  // checked: the echo of the word sent
                          healthy_bad += m.args.size() != 1 || m.args[0] != healthy_replies;
                          ++healthy_replies;
                          return uam::Disposition::kDone;
                        }),
            Status::kOk);
  ha.on_completion([&](ChannelId, std::uint64_t, Status st) { healthy_done += st == Status::kOk; });
  auto healthy_step = [&] {
    if (ha.outstanding(hab) == 0) {
      const std::uint64_t k = healthy_next;
      if (ha.request(hab, kEcho, std::span(&k, 1)) == Status::kOk) ++healthy_next;
    }
    return ha.poll() >= 0 && hb.poll() >= 0;
  };
  LinkGuard link(netdev_, {broken_[0], broken_[1]});

  const auto start = Clock::now();
  while ((r[0].ok < 500 || r[1].ok < 500) && Clock::now() - start < 60s) {
    for (Requester& s : r) {
      s.issue();
      ASSERT_GE(s.ep.poll(), 0);
    }
    ASSERT_TRUE(healthy_step());
  }
  ASSERT_GE(r[0].ok, 500u) << "no traffic before the link-down";
  ASSERT_GE(r[1].ok, 500u) << "no traffic before the link-down";
  const std::uint64_t healthy_before = healthy_done;
  ASSERT_TRUE(link.down()) << "cannot take " << netdev_ << " down (not root?)";
  const auto downed = Clock::now();
  // Both ends keep sending, as an application would, until their channel reports the failure.
  for (;;) {
    bool all_failed = true;
    for (Requester& s : r) {
      s.issue();
      ASSERT_GE(s.ep.poll(), 0);
      const bool done = s.ep.channel_status(s.ch) != Status::kOk && s.issued == s.ok + s.failed;
      if (done && s.failed_ms < 0) s.failed_ms = ms_since(downed);
      all_failed = all_failed && done;
    }
    ASSERT_TRUE(healthy_step());
    if (all_failed || Clock::now() - downed > 30s) break;
  }
  const auto bound = uam_ud_bound(x.config().reliability);
  for (int i = 0; i < 2; ++i) {
    Requester& s = r[i];
    std::printf(
        "link down, uam UD %s->%s: all %llu requests issued completed (%llu ok, %llu failed, first "
        "error: %s) and the channel failed %.0f ms after the link-down (bound %lld ms)\n",
        broken_[i].c_str(), broken_[1 - i].c_str(), static_cast<unsigned long long>(s.issued),
        static_cast<unsigned long long>(s.ok), static_cast<unsigned long long>(s.failed),
        std::string(to_string(s.first_error)).c_str(), s.failed_ms,
        static_cast<long long>(bound.count()));
    EXPECT_EQ(s.ok + s.failed, s.issued) << broken_[i];
    EXPECT_EQ(s.replies, s.ok)
        << broken_[i];  // every request that completed well had its reply run
    EXPECT_GE(s.failed, 1u) << broken_[i];
    EXPECT_GE(s.failed_ms, 0) << broken_[i] << ": the channel did not fail within 30 s";
    EXPECT_LE(s.failed_ms, static_cast<double>(bound.count())) << broken_[i];
    EXPECT_EQ(s.ep.outstanding(s.ch), 0u) << broken_[i];
    EXPECT_EQ(s.first_error, Status::kRetryExceeded) << broken_[i];
    EXPECT_EQ(s.ep.request(s.ch, kEcho, {}), Status::kClosed) << broken_[i];  // fails at once
  }
  std::printf("link down, uam UD: healthy pair %s->%s answered %llu requests meanwhile\n",
              healthy_[0].c_str(), healthy_[1].c_str(),
              static_cast<unsigned long long>(healthy_done - healthy_before));
  expect_port_states();
  const std::uint64_t healthy_at = healthy_done;
  const auto again = Clock::now();
  while (healthy_done < healthy_at + 100 && Clock::now() - again < 20s) ASSERT_TRUE(healthy_step());
  EXPECT_GT(healthy_at, healthy_before);
  EXPECT_GE(healthy_done, healthy_at + 100);
  EXPECT_EQ(ha.channel_status(hab), Status::kOk);
  EXPECT_EQ(healthy_replies, healthy_done);
  EXPECT_EQ(healthy_bad, 0u);
  for (Requester& s : r) EXPECT_EQ(s.ep.close_channel(s.ch), Status::kOk);
  // The end on the netdev taken down had sends fail at the device (no route), which put its one
  // UD QP in the error state; core reset it and moved it back to RTS. So once the link is back, a
  // new channel between the same two endpoints carries requests both ways.
  std::printf("link down, uam UD: core send errors %s %llu, %s %llu; QP recoveries %llu, %llu\n",
              broken_[0].c_str(), static_cast<unsigned long long>(x.net().stats().send_errors),
              broken_[1].c_str(), static_cast<unsigned long long>(y.net().stats().send_errors),
              static_cast<unsigned long long>(x.net().stats().qp_recoveries),
              static_cast<unsigned long long>(y.net().stats().qp_recoveries));
  EXPECT_GT(x.net().stats().send_errors, 0u);
  EXPECT_GT(x.net().stats().qp_recoveries, 0u);
  ASSERT_TRUE(link.up());
  core::ChannelOffer o2x = x.offer_channel(), o2y = y.offer_channel();
  const ChannelId c2[2] = {x.accept_offer(o2x, o2y.local), y.accept_offer(o2y, o2x.local)};
  for (int i = 0; i < 2; ++i) {
    Requester& s = r[i];
    const std::uint64_t ok = s.ok, replies = s.replies, k = 42;
    ASSERT_EQ(s.ep.request(c2[i], kEcho, std::span(&k, 1)), Status::kOk) << broken_[i];
    const auto t0 = Clock::now();
    while (s.ok == ok && Clock::now() - t0 < 10s) {
      ASSERT_GE(x.poll(), 0);
      ASSERT_GE(y.poll(), 0);
    }
    EXPECT_EQ(s.ok, ok + 1) << "no answer on a new channel from " << broken_[i]
                            << " after the link came back";
    EXPECT_EQ(s.replies, replies + 1) << broken_[i];
  }
}

}  // namespace
}  // namespace unet::test
