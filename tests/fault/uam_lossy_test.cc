// Fault: U-Net Active Messages over UD between two rxe devices across a veth pair with netem loss,
// duplication and reordering in both directions (ci/rxe-vm --two-dev). Both sides send requests
// of mixed sizes, some answered with replies; every handler must run exactly once, in order per
// channel, with intact payloads, and every request must complete with kOk: 0 lost, 0 duplicated,
// 0 corrupted, counters equal on both sides. The qdiscs must really have dropped packets.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "netem.h"
#include "unet/uam/endpoint.h"

namespace unet::test {
namespace {

using namespace std::chrono_literals;
using core::ChannelId;
using uam::Disposition;
using uam::Message;
using uam::Token;

constexpr uam::HandlerId kCheck = 1, kCheckReply = 2;
std::byte pattern_byte(std::uint64_t seed, std::size_t i) {
  return static_cast<std::byte>((seed * 131 + i * 7) & 0xFF);
}

class UamLossyLink : public NetemTest {};

// One side's view: what it sent, what it handled, and what came back.
struct Side {
  uam::Endpoint* ep = nullptr;
  ChannelId ch = 0;
  std::uint64_t next_send = 0;      // requests sent
  std::uint64_t next_expected = 0;  // the peer's next request, in order
  std::uint64_t handled = 0, out_of_order = 0, corrupt = 0;
  std::uint64_t replies = 0, bad_replies = 0, ok = 0, errors = 0;
};

// Requests per side: 50000 (100k in all), or fewer when a (slower) sanitizer build sets
// UNET_UAM_FAULT_REQUESTS (in all), whichever is less; a multiple of 4 (every 4th is answered).
std::uint64_t requests_per_side() {
  const std::uint64_t n =
      std::min<std::uint64_t>(50000, env_amount("UNET_UAM_FAULT_REQUESTS", 100000) / 2);
  return std::max<std::uint64_t>(4, n / 4 * 4);
}

TEST_F(UamLossyLink, UdRunsEveryHandlerOnceInOrderUnderLossAndReordering) {
  const std::uint64_t per_side = requests_per_side();
  uam::Config cfg;
  cfg.window = 16;
  uam::Endpoint a(lossy_ud_config("rxe0"), cfg), b(lossy_ud_config("rxe1"), cfg);
  core::ChannelOffer oa = a.offer_channel(), ob = b.offer_channel();
  Side s[2];
  s[0].ep = &a;
  s[1].ep = &b;
  s[0].ch = a.accept_offer(oa, ob.local);
  s[1].ch = b.accept_offer(ob, oa.local);
  const std::uint32_t max_body = std::min(a.max_payload(1), b.max_payload(1));
  const std::size_t sizes[] = {0, 3, 20, 100, 512, max_body};
  for (int i = 0; i < 2; ++i) {
    Side& me = s[i];
    ASSERT_EQ(
        me.ep->on_request(kCheck,
                          [&me](Token& t, const Message& m) {
                            const std::uint64_t n = m.args[0];
                            if (n != me.next_expected) ++me.out_of_order;
                            me.next_expected = n + 1;
                            ++me.handled;
                            for (std::size_t k = 0; k < m.payload.size(); ++k)
                              if (m.payload[k] != pattern_byte(n, k)) {
                                ++me.corrupt;
                                break;
                              }
                            if (n % 4 == 0 && me.ep->reply(t, kCheckReply, m.args) != Status::kOk)
                              ++me.corrupt;
                            return Disposition::kDone;
                          }),
        Status::kOk);
    ASSERT_EQ(me.ep->on_reply(kCheckReply,
                              [&me](const Message& m) {
                                ++(m.args.size() == 1 && m.args[0] == m.cookie ? me.replies
                                                                               : me.bad_replies);
                                return Disposition::kDone;
                              }),
              Status::kOk);
    me.ep->on_completion(
        [&me](ChannelId, std::uint64_t, Status st) { ++(st == Status::kOk ? me.ok : me.errors); });
  }
  const long drops_before = drops();
  std::vector<std::byte> body(max_body);
  const auto t0 = std::chrono::steady_clock::now();
  const auto deadline = t0 + 150s;
  while ((s[0].ok + s[0].errors < per_side || s[1].ok + s[1].errors < per_side) &&
         std::chrono::steady_clock::now() < deadline) {
    for (Side& me : s) {
      while (me.next_send < per_side) {
        const std::uint64_t n = me.next_send;
        const std::size_t len = sizes[n % std::size(sizes)];
        for (std::size_t k = 0; k < len; ++k) body[k] = pattern_byte(n, k);
        const Status st =
            me.ep->request(me.ch, kCheck, std::span(&n, 1), std::span(body.data(), len), n);
        if (st == Status::kNoResource) break;
        ASSERT_EQ(st, Status::kOk) << "request " << n;
        ++me.next_send;
      }
      ASSERT_GE(me.ep->poll(), 0);
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const long dropped_now = drops() - drops_before;
  for (int i = 0; i < 2; ++i) {
    const Side& me = s[i];
    const Side& peer = s[1 - i];
    SCOPED_TRACE(i);
    EXPECT_EQ(me.next_send, per_side);
    EXPECT_EQ(me.ok, per_side) << "requests completed";
    EXPECT_EQ(me.errors, 0u);
    EXPECT_EQ(peer.handled, per_side) << "handlers run at the peer";
    EXPECT_EQ(peer.out_of_order, 0u);
    EXPECT_EQ(peer.corrupt, 0u);
    EXPECT_EQ(me.replies, per_side / 4);
    EXPECT_EQ(me.bad_replies, 0u);
    const uam::Stats& st = me.ep->stats();
    EXPECT_EQ(st.protocol_errors(), 0u)
        << "bad credits " << st.bad_credits << ", overruns " << st.overruns << ", stray replies "
        << st.stray_replies << ", bad acks " << st.bad_acks;
    EXPECT_EQ(me.ep->stats().malformed, 0u);
  }
  const uam::Stats& sa = a.stats();
  const uam::Stats& sb = b.stats();
  EXPECT_GT(dropped_now, 0) << "netem dropped nothing: the traffic did not cross the veths";
  EXPECT_GT(sa.retransmitted + sb.retransmitted, 0u);
  EXPECT_GT(sa.coalesced + sb.coalesced, 0u) << "no coalesced packet crossed the lossy link";
  std::printf(
      "uam UD lossy link (%s, both ways): %llu requests, %llu replies in %.1f s; netem dropped %ld "
      "packets; "
      "resent %llu, duplicates dropped %llu, credit messages %llu, messages coalesced %llu; lost "
      "0, duplicated 0, "
      "corrupted 0\n",
      netem().c_str(), static_cast<unsigned long long>(s[0].ok + s[1].ok),
      static_cast<unsigned long long>(s[0].replies + s[1].replies), secs, dropped_now,
      static_cast<unsigned long long>(sa.retransmitted + sb.retransmitted),
      static_cast<unsigned long long>(sa.duplicates + sb.duplicates),
      static_cast<unsigned long long>(sa.credit_messages + sb.credit_messages),
      static_cast<unsigned long long>(sa.coalesced + sb.coalesced));
}

}  // namespace
}  // namespace unet::test
