// uam::Endpoint on a real device (label device): request/reply, implicit acks, credits under a
// flood with rnr_retry 0, unknown handlers, kept buffers, bulk store/get, peer failure, bad input.
#include "unet/uam/endpoint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <vector>

#include "device_env.h"
#include "endpoint_support.h"
#include "uam_pair.h"

namespace unet::uam {
namespace {

using namespace std::chrono_literals;
using core::ChannelId;
using test::net_config;
using Pair = test::UamPair;
using test::pattern;

constexpr HandlerId kEcho = 1, kEchoReply = 2, kSink = 3, kStored = 4, kGot = 5, kKeep = 6;

// `survivor` with `requests` to kSink outstanding on channel `ch` to `doomed`, a peer that never
// polls (so never answers) and that the test destroys when it likes; `errors` counts the
// requests completed with an error.
struct DoomedPeer {
  Endpoint survivor;
  std::unique_ptr<Endpoint> doomed;
  ChannelId ch = 0;
  int errors = 0;
  DoomedPeer(const core::EndpointConfig& c, int requests)
      : survivor(c), doomed(std::make_unique<Endpoint>(c)) {
    core::ChannelOffer oa = survivor.offer_channel(), ob = doomed->offer_channel();
    ch = survivor.accept_offer(oa, ob.local);
    (void)doomed->accept_offer(ob, oa.local);
    survivor.on_completion(
        [this](ChannelId, std::uint64_t, Status s) { errors += s != Status::kOk; });
    for (int i = 0; i < requests; ++i) EXPECT_EQ(survivor.request(ch, kSink, {}), Status::kOk);
    EXPECT_GE(survivor.poll(), 0);  // posted
  }
};

class UamTransport : public ::testing::TestWithParam<core::Transport> {};

// Registers kSink at `ep`: each request carries one word, the number of requests before it, and
// the payload want(word); `handled` counts them.
void sink_in_order(Endpoint& ep, std::uint64_t& handled,
                   std::function<std::vector<std::byte>(std::uint64_t)> want) {
  ASSERT_EQ(ep.on_request(kSink,
                          [&handled, want = std::move(want)](Token&, const Message& m) {
                            EXPECT_EQ(m.args.size(), 1u);
                            if (m.args.size() == 1) {
                              EXPECT_EQ(m.args[0], handled) << "out of order";
                              const auto bytes = want(m.args[0]);
                              EXPECT_TRUE(std::equal(m.payload.begin(), m.payload.end(),
                                                     bytes.begin(), bytes.end()))
                                  << m.args[0];
                            }
                            ++handled;
                            return Disposition::kDone;
                          }),
            Status::kOk);
}

// Requests with 0..4 words and short or medium payloads; each echoed back through a reply, its
// words and bytes checked at both ends; every request completes once with kOk.
TEST_P(UamTransport, RequestReplyRoundTrips) {
  UNET_REQUIRE_DEVICE();
  Pair p(net_config(GetParam()), net_config(GetParam()));
  std::uint64_t handled = 0, replies = 0, ok = 0, bad = 0;
  ASSERT_EQ(p.b.on_request(kEcho,
                           [&](Token& t, const Message& m) {
                             ++handled;
                             EXPECT_EQ(p.b.reply(t, kEchoReply, m.args, m.payload), Status::kOk);
                             EXPECT_EQ(p.b.reply(t, kEchoReply, m.args, m.payload),
                                       Status::kInvalidState);  // reply once
                             return Disposition::kDone;
                           }),
            Status::kOk);
  std::vector<std::vector<std::byte>> sent;
  ASSERT_EQ(p.a.on_reply(kEchoReply,
                         [&](const Message& m) {
                           const auto& want = sent.at(m.cookie);
                           if (m.payload.size() != want.size() ||
                               !std::equal(want.begin(), want.end(), m.payload.begin()) ||
                               m.args.size() != m.cookie % 5 ||
                               (!m.args.empty() && m.args[0] != m.cookie * 3))
                             ++bad;
                           ++replies;
                           return Disposition::kDone;
                         }),
            Status::kOk);
  p.a.on_completion([&](ChannelId ch, std::uint64_t, Status s) {
    EXPECT_EQ(ch, p.ab);
    ok += s == Status::kOk;
  });
  const std::uint32_t medium = p.a.max_payload(4);
  ASSERT_GE(medium, 900u);
  const std::size_t sizes[] = {0, 1, 4, 12, 20, 28, 100, 900, medium};
  constexpr std::uint64_t kCount = 600;
  for (std::uint64_t i = 0; i < kCount; ++i) {
    sent.push_back(pattern(sizes[i % std::size(sizes)], i));
    std::vector<std::uint64_t> args(i % 5, i * 3);
    Status s;
    while ((s = p.a.request(p.ab, kEcho, args, sent.back(), i)) == Status::kNoResource)
      ASSERT_TRUE(p.step());
    ASSERT_EQ(s, Status::kOk) << "request " << i;
  }
  ASSERT_TRUE(p.pump([&] { return ok == kCount; })) << "completed " << ok;
  EXPECT_EQ(handled, kCount);
  EXPECT_EQ(replies, kCount);
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(p.a.outstanding(p.ab), 0u);
  EXPECT_EQ(p.a.stats().requests_sent, kCount);
  EXPECT_EQ(p.b.stats().replies_sent, kCount);
  EXPECT_EQ(p.a.stats().completed_error, 0u);
  EXPECT_EQ(p.a.stats().protocol_errors() + p.b.stats().protocol_errors(), 0u);
}

// A handler that does not reply is acknowledged implicitly: the request completes with kOk.
TEST_P(UamTransport, RequestWithoutReplyCompletesImplicitly) {
  UNET_REQUIRE_DEVICE();
  Pair p(net_config(GetParam()), net_config(GetParam()));
  std::uint64_t sum = 0, ok = 0;
  ASSERT_EQ(p.b.on_request(kSink,
                           [&](Token& t, const Message& m) {
                             sum += m.args[0];
                             EXPECT_FALSE(t.replied());
                             return Disposition::kDone;
                           }),
            Status::kOk);
  p.a.on_completion([&](ChannelId, std::uint64_t, Status s) { ok += s == Status::kOk; });
  const std::uint64_t word = 7;
  ASSERT_EQ(p.a.request(p.ab, kSink, std::span(&word, 1)), Status::kOk);
  EXPECT_EQ(p.a.outstanding(p.ab), 1u);
  ASSERT_TRUE(p.pump([&] { return ok == 1; }, 5s));  // within the delayed-ack time
  EXPECT_EQ(sum, 7u);
  EXPECT_EQ(p.a.outstanding(p.ab), 0u);
}

// An unknown handler id is counted at the receiver and reported to the sender (kNotFound).
TEST_P(UamTransport, UnknownHandlerIsAnErrorReply) {
  UNET_REQUIRE_DEVICE();
  Pair p(net_config(GetParam()), net_config(GetParam()));
  Status got = Status::kOk;
  std::uint64_t cookie_seen = 0;
  int calls = 0;
  p.a.on_completion([&](ChannelId, std::uint64_t cookie, Status s) {
    cookie_seen = cookie;
    got = s;
    ++calls;
  });
  ASSERT_EQ(p.a.request(p.ab, 200, {}, {}, 99), Status::kOk);
  ASSERT_TRUE(p.pump([&] { return calls == 1; }));
  EXPECT_EQ(got, Status::kNotFound);
  EXPECT_EQ(cookie_seen, 99u);
  EXPECT_EQ(p.b.stats().unknown_handler, 1u);
  EXPECT_EQ(p.a.stats().completed_error, 1u);
  // The channel still works.
  ASSERT_EQ(p.b.on_request(kSink, [](Token&, const Message&) { return Disposition::kDone; }),
            Status::kOk);
  ASSERT_EQ(p.a.request(p.ab, kSink, {}), Status::kOk);
  ASSERT_TRUE(p.pump([&] { return calls == 2; }));
  EXPECT_EQ(got, Status::kOk);
}

// With the receiver not polling, exactly W requests go out; the next is kNoResource and changes
// nothing. Once the receiver runs, credits come back and all complete.
TEST_P(UamTransport, CreditWindowBoundsRequests) {
  UNET_REQUIRE_DEVICE();
  Config cfg;
  cfg.window = 8;
  Pair p(net_config(GetParam()), net_config(GetParam()), cfg);
  int handled = 0, ok = 0;
  ASSERT_EQ(p.b.on_request(kSink,
                           [&](Token&, const Message&) {
                             ++handled;
                             return Disposition::kDone;
                           }),
            Status::kOk);
  p.a.on_completion([&](ChannelId, std::uint64_t, Status s) { ok += s == Status::kOk; });
  for (int i = 0; i < 8; ++i) ASSERT_EQ(p.a.request(p.ab, kSink, {}), Status::kOk) << i;
  EXPECT_EQ(p.a.request(p.ab, kSink, {}), Status::kNoResource);
  for (int i = 0; i < 50; ++i) ASSERT_GE(p.a.poll(), 0);
  EXPECT_EQ(p.a.request(p.ab, kSink, {}), Status::kNoResource);
  EXPECT_EQ(p.a.stats().requests_sent, 8u);
  ASSERT_TRUE(p.pump([&] { return ok == 8; }));
  EXPECT_EQ(handled, 8);
  EXPECT_EQ(p.a.request(p.ab, kSink, {}), Status::kOk);
}

// A handler may keep a medium payload's buffer; its sender's credit returns only on release().
// (One message per packet here; KeptMessagesOfOnePacketShareItsBufferAndCredit coalesces.)
TEST_P(UamTransport, KeptBufferHoldsItsCredit) {
  UNET_REQUIRE_DEVICE();
  Config cfg;
  cfg.window = 2;
  cfg.coalesce = false;
  Pair p(net_config(GetParam()), net_config(GetParam()), cfg);
  std::vector<BufferId> kept;
  std::vector<std::byte> seen;
  ASSERT_EQ(p.b.on_request(kKeep,
                           [&](Token&, const Message& m) {
                             EXPECT_NE(m.buffer, core::kNoBuffer);
                             kept.push_back(m.buffer);
                             seen.assign(m.payload.begin(), m.payload.end());
                             return Disposition::kKept;
                           }),
            Status::kOk);
  const auto body = pattern(500, 5);
  ASSERT_EQ(p.a.request(p.ab, kKeep, {}, body), Status::kOk);
  ASSERT_EQ(p.a.request(p.ab, kKeep, {}, body), Status::kOk);
  ASSERT_TRUE(p.pump([&] { return kept.size() == 2; }));
  EXPECT_EQ(seen, body);
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(p.step());
  EXPECT_EQ(p.a.request(p.ab, kKeep, {}, body), Status::kNoResource);  // both credits held
  EXPECT_EQ(p.b.release(kept[0]), Status::kOk);
  EXPECT_EQ(p.b.release(kept[0]), Status::kInvalidState);  // released twice
  Status s = Status::kNoResource;
  ASSERT_TRUE(
      p.pump([&] { return (s = p.a.request(p.ab, kKeep, {}, body)) != Status::kNoResource; }));
  EXPECT_EQ(s, Status::kOk);
}

// Coalescing: a burst of medium requests queued between two polls leaves in fewer packets than
// messages; every handler runs once, in order, with its words and bytes intact, and every request
// completes. With coalescing off, one packet per message.
TEST_P(UamTransport, CoalescedBurstArrivesWholeAndInOrder) {
  UNET_REQUIRE_DEVICE();
  for (const bool coalesce : {true, false}) {
    SCOPED_TRACE(coalesce ? "coalescing" : "one message per packet");
    Config cfg;
    cfg.window = 16;
    cfg.coalesce = coalesce;
    Pair p(net_config(GetParam()), net_config(GetParam()), cfg);
    constexpr std::uint64_t kBurst = 16;
    std::uint64_t handled = 0, ok = 0;
    sink_in_order(p.b, handled, [](std::uint64_t i) { return pattern(100 + i, i); });
    p.a.on_completion([&](ChannelId, std::uint64_t cookie, Status s) {
      EXPECT_EQ(cookie, ok);
      ok += s == Status::kOk;
    });
    // Packets a sent that were messages sent for the first time: a slow host (sanitizers under
    // TCG) can outlast UD's RTO or RC's keepalive, and a resend, a credit message or a probe is
    // a packet of its own.
    const auto first_sends = [&] {
      return p.a.net().stats().sent - p.a.net().stats().probes - p.a.stats().retransmitted -
             p.a.stats().credit_messages;
    };
    const std::uint64_t before = first_sends();
    for (std::uint64_t i = 0; i < kBurst; ++i) {
      const auto body = pattern(100 + i, i);
      ASSERT_EQ(p.a.request(p.ab, kSink, std::span(&i, 1), body, i), Status::kOk) << i;
    }
    ASSERT_TRUE(p.pump([&] { return ok == kBurst; }));
    EXPECT_EQ(handled, kBurst);
    const std::uint64_t packets = first_sends() - before;
    if (coalesce) {
      EXPECT_GT(p.a.stats().coalesced, 0u);
      EXPECT_LT(packets, kBurst) << "16 messages of 108..123 bytes share packets";
    } else {
      EXPECT_EQ(p.a.stats().coalesced, 0u);
      EXPECT_GE(packets, kBurst);
    }
    EXPECT_EQ(p.b.stats().malformed, 0u);
    EXPECT_EQ(p.b.stats().protocol_errors(), 0u);
  }
}

// A peer with smaller buffers bounds the channel: max_payload(ch, n) says how much, more is
// refused with nothing sent, the largest arrives intact, and a coalesced burst never builds a
// packet the peer cannot take (one of our own 4 KiB would fail the channel).
TEST_P(UamTransport, AChannelCarriesNoMoreThanThePeersBuffersHold) {
  UNET_REQUIRE_DEVICE();
  core::EndpointConfig small = net_config(GetParam());
  small.buffer_bytes = 512;
  Config cfg;
  cfg.window = 16;
  cfg.coalesce = true;
  Pair p(net_config(GetParam()), small, cfg);
  const std::uint32_t most = 512 - static_cast<std::uint32_t>(header_bytes(1));
  EXPECT_EQ(p.a.max_payload(p.ab, 1), most);
  EXPECT_EQ(p.b.max_payload(p.ba, 1), most);
  EXPECT_EQ(p.a.max_payload(p.ab + 7, 1), 0u) << "no such channel";
  const std::uint64_t word = 99;
  EXPECT_EQ(p.a.request(p.ab, kSink, std::span(&word, 1), pattern(most + 1, 1)),
            Status::kInvalidArgument);
  EXPECT_EQ(p.a.stats().requests_sent, 0u);
  std::uint64_t handled = 0, ok = 0;
  sink_in_order(p.b, handled,
                [&](std::uint64_t i) { return i == 0 ? pattern(most, 2) : pattern(100 + i, i); });
  p.a.on_completion([&](ChannelId, std::uint64_t, Status s) { ok += s == Status::kOk; });
  constexpr std::uint64_t kBurst = 16;
  for (std::uint64_t i = 0; i < kBurst; ++i) {
    const auto body = i == 0 ? pattern(most, 2) : pattern(100 + i, i);
    ASSERT_EQ(p.a.request(p.ab, kSink, std::span(&i, 1), body, i), Status::kOk) << i;
  }
  ASSERT_TRUE(p.pump([&] { return ok == kBurst; })) << ok << " of " << kBurst << " completed";
  EXPECT_EQ(handled, kBurst);
  EXPECT_GT(p.a.stats().coalesced, 0u);
  EXPECT_EQ(p.b.net().stats().recv_errors, 0u);
  EXPECT_EQ(p.a.net().stats().send_errors, 0u);
  EXPECT_EQ(p.b.stats().protocol_errors(), 0u);
}

// Handlers that keep messages of one coalesced packet share its buffer, which holds one credit
// (the packet took one receive buffer): each releases it once, it goes back with the last
// release, and only then does its credit.
TEST_P(UamTransport, KeptMessagesOfOnePacketShareItsBufferAndCredit) {
  UNET_REQUIRE_DEVICE();
  Config cfg;
  cfg.window = 2;
  Pair p(net_config(GetParam()), net_config(GetParam()), cfg);
  std::vector<BufferId> kept;
  ASSERT_EQ(p.b.on_request(kKeep,
                           [&](Token&, const Message& m) {
                             EXPECT_EQ(m.payload.size(), 300u);
                             kept.push_back(m.buffer);
                             return Disposition::kKept;
                           }),
            Status::kOk);
  const auto body = pattern(300, 9);
  ASSERT_EQ(p.a.request(p.ab, kKeep, {}, body), Status::kOk);
  ASSERT_EQ(p.a.request(p.ab, kKeep, {}, body), Status::kOk);
  ASSERT_TRUE(p.pump([&] { return kept.size() == 2; }));
  // The second joined the first's packet (over UD the probe the empty window provokes may too).
  ASSERT_GE(p.a.stats().coalesced, 1u);
  ASSERT_EQ(kept[0], kept[1]) << "one packet, one buffer";
  // The second request's credit came back at once: a third request goes, in its own packet.
  Status s = Status::kNoResource;
  ASSERT_TRUE(
      p.pump([&] { return (s = p.a.request(p.ab, kKeep, {}, body)) != Status::kNoResource; }));
  ASSERT_EQ(s, Status::kOk);
  ASSERT_TRUE(p.pump([&] { return kept.size() == 3; }));
  EXPECT_NE(kept[2], kept[0]);
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(p.step());
  EXPECT_EQ(p.a.request(p.ab, kKeep, {}, body), Status::kNoResource);  // both credits held
  EXPECT_EQ(p.b.release(kept[0]), Status::kOk);
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(p.step());
  EXPECT_EQ(p.a.request(p.ab, kKeep, {}, body), Status::kNoResource)
      << "one message still keeps it";
  EXPECT_EQ(p.b.release(kept[1]), Status::kOk);
  EXPECT_EQ(p.b.release(kept[1]), Status::kInvalidState) << "released once per message, not more";
  ASSERT_TRUE(
      p.pump([&] { return (s = p.a.request(p.ab, kKeep, {}, body)) != Status::kNoResource; }));
  EXPECT_EQ(s, Status::kOk);
  EXPECT_EQ(p.b.release(kept[2]), Status::kOk);
}

// Bad input: a clear status and nothing sent.
TEST_P(UamTransport, BadInputIsRefused) {
  UNET_REQUIRE_DEVICE();
  Pair p(net_config(GetParam()), net_config(GetParam()));
  const std::uint64_t five[5] = {};
  EXPECT_EQ(p.a.request(p.ab, kSink, std::span(five, 5)), Status::kInvalidArgument);
  std::vector<std::byte> big(p.a.max_payload(0) + 1);
  EXPECT_EQ(p.a.request(p.ab, kSink, {}, big), Status::kInvalidArgument);
  EXPECT_EQ(p.a.request(p.ab + 7, kSink, {}), Status::kNotFound);
  EXPECT_EQ(p.a.on_request(kSink, [](Token&, const Message&) { return Disposition::kDone; }),
            Status::kOk);
  EXPECT_EQ(p.a.on_request(kSink, [](Token&, const Message&) { return Disposition::kDone; }),
            Status::kInvalidState);
  EXPECT_EQ(p.a.on_reply(kSink, [](const Message&) { return Disposition::kDone; }),
            Status::kInvalidState);
  EXPECT_EQ(p.a.on_request(kEcho, nullptr), Status::kInvalidArgument);
  EXPECT_EQ(p.a.release(3), Status::kInvalidState);  // not a kept buffer
  EXPECT_EQ(p.a.stats().requests_sent, 0u);
  EXPECT_EQ(p.a.close_channel(p.ab), Status::kOk);
  EXPECT_EQ(p.a.request(p.ab, kSink, {}), Status::kClosed);
  EXPECT_EQ(p.a.channel_status(p.ab), Status::kClosed);
}

// The flow-control proof: both sides flood each other with requests of mixed sizes (each also
// answered with a reply) over RC with rnr_retry 0 and a small free queue. A single receive
// overrun would fail the channel with kRnrRetryExceeded.
TEST(UamRc, FloodNeverOverrunsWithRnrRetryZero) {
  UNET_REQUIRE_DEVICE();
  core::EndpointConfig c = net_config(core::Transport::kRc, 32);  // budget: 22 + repost batch 4
  c.rnr_retry = 0;
  Pair p(c, c);
  constexpr std::uint64_t kCount = 20000;
  std::uint64_t handled[2] = {}, replies[2] = {}, ok[2] = {}, errors = 0, corrupt = 0;
  Endpoint* eps[2] = {&p.a, &p.b};
  const ChannelId chs[2] = {p.ab, p.ba};
  for (int s = 0; s < 2; ++s) {
    Endpoint& e = *eps[s];
    ASSERT_EQ(e.on_request(kEcho,
                           [&, s](Token& t, const Message& m) {
                             ++handled[s];
                             const auto want = pattern(m.payload.size(), m.args[0]);
                             if (!std::equal(want.begin(), want.end(), m.payload.begin(),
                                             m.payload.end()))
                               ++corrupt;
                             const std::uint64_t w = m.args[0];
                             EXPECT_EQ(eps[s]->reply(t, kEchoReply, std::span(&w, 1)), Status::kOk);
                             return Disposition::kDone;
                           }),
              Status::kOk);
    ASSERT_EQ(e.on_reply(kEchoReply,
                         [&, s](const Message& m) {
                           replies[s] += m.args[0] == m.cookie;
                           return Disposition::kDone;
                         }),
              Status::kOk);
    e.on_completion(
        [&, s](ChannelId, std::uint64_t, Status st) { st == Status::kOk ? ++ok[s] : ++errors; });
  }
  std::uint64_t next[2] = {};
  const std::size_t sizes[] = {0, 8, 28, 200, 1500, 4000};
  const auto end = std::chrono::steady_clock::now() + 60s;
  while ((ok[0] < kCount || ok[1] < kCount) && errors == 0 &&
         std::chrono::steady_clock::now() < end) {
    for (int s = 0; s < 2; ++s) {
      while (next[s] < kCount) {
        const std::uint64_t i = next[s];
        const auto body = pattern(sizes[i % std::size(sizes)], i);
        const Status st = eps[s]->request(chs[s], kEcho, std::span(&i, 1), body, i);
        if (st == Status::kNoResource) break;
        ASSERT_EQ(st, Status::kOk);
        ++next[s];
      }
      ASSERT_GE(eps[s]->poll(), 0);
    }
  }
  EXPECT_EQ(errors, 0u);
  EXPECT_EQ(corrupt, 0u);
  for (int s = 0; s < 2; ++s) {
    EXPECT_EQ(ok[s], kCount);
    EXPECT_EQ(handled[1 - s], kCount);
    EXPECT_EQ(replies[s], kCount);
    EXPECT_EQ(eps[s]->channel_status(chs[s]), Status::kOk);
    EXPECT_EQ(eps[s]->stats().protocol_errors(), 0u);
    EXPECT_EQ(eps[s]->net().stats().send_errors, 0u);
  }
}

// A live peer that does not poll for a while is probed every keepalive and is none the worse:
// RC probes (core's zero-byte RDMA WRITE) take none of its receive buffers, so with rnr_retry 0,
// where a single overrun of its free queue would fail the channel, the channel stays up.
TEST(UamRc, ASlowPeerIsProbedEveryKeepaliveWithoutTakingItsBuffers) {
  UNET_REQUIRE_DEVICE();
  core::EndpointConfig c = net_config(core::Transport::kRc, 32);
  c.rnr_retry = 0;
  Config cfg;
  cfg.keepalive = 5ms;
  Pair p(c, c, cfg);
  int ok = 0;
  ASSERT_EQ(p.b.on_request(kSink, [](Token&, const Message&) { return Disposition::kDone; }),
            Status::kOk);
  p.a.on_completion([&](ChannelId, std::uint64_t, Status s) { ok += s == Status::kOk; });
  ASSERT_EQ(p.a.request(p.ab, kSink, {}), Status::kOk);
  const auto end = std::chrono::steady_clock::now() + 500ms;  // b is silent: 100 keepalive periods
  while (std::chrono::steady_clock::now() < end) ASSERT_GE(p.a.poll(), 0);
  EXPECT_GT(p.a.stats().probes, 10u) << "one per keepalive while b is silent";
  EXPECT_GT(p.a.stats().probes, 32u) << "more than b has receive buffers";
  EXPECT_EQ(p.a.net().stats().probes, p.a.stats().probes);
  ASSERT_TRUE(p.pump([&] { return ok == 1; }));
  EXPECT_EQ(p.a.channel_status(p.ab), Status::kOk);
  EXPECT_EQ(p.a.net().stats().send_errors, 0u);
}

// The receive-buffer budget is enforced at channel set-up: no configuration can overrun.
TEST(UamRc, ChannelsBeyondTheBufferBudgetAreRefused) {
  UNET_REQUIRE_DEVICE();
  core::EndpointConfig c = net_config(core::Transport::kRc, 32);  // room for one channel of W=8
  Endpoint a(c), b(c);
  core::ChannelOffer oa = a.offer_channel(), ob = b.offer_channel();
  (void)a.accept_offer(oa, ob.local);
  (void)b.accept_offer(ob, oa.local);
  EXPECT_THROW((void)a.offer_channel(), std::length_error);
}

// Bulk store and get up to 16 MiB between direct-access endpoints: the store handler runs at the
// receiver with the data in place (checked byte for byte there); the get handler runs here with
// the data read back.
// Up to 16 MiB, or the port's largest message when that is less (rxe says 8 MiB); one byte more
// is refused with nothing sent.
TEST(UamRc, StoreAndGetMoveBlocksUpToTheLargestMessage) {
  UNET_REQUIRE_DEVICE();
  core::EndpointConfig c = net_config(core::Transport::kRc);
  c.mode = core::Mode::kDirectAccess;
  c.max_pinned_bytes = 64u << 20;
  Pair p(c, c);
  // What the handlers check, for the size being moved.
  std::size_t len = 0;
  const std::vector<std::byte>* src = nullptr;
  std::vector<std::byte> window;
  bool intact = false, got = false;
  int completions = 0;
  ASSERT_EQ(p.b.on_request(kStored,
                           [&](Token&, const Message& m) {
                             intact = m.bulk_offset == 64 && m.bulk_length == len &&
                                      m.args.size() == 2 && m.args[1] == len &&
                                      std::memcmp(window.data() + 64, src->data(), len) == 0;
                             return Disposition::kDone;
                           }),
            Status::kOk);
  ASSERT_EQ(p.a.on_reply(kGot,
                         [&](const Message& m) {
                           got = m.status == Status::kOk && m.payload.size() == len &&
                                 m.args.size() == 1 && m.args[0] == 9;
                           return Disposition::kDone;
                         }),
            Status::kOk);
  p.a.on_completion([&](ChannelId, std::uint64_t, Status s) { completions += s == Status::kOk; });
  const auto largest =
      static_cast<std::size_t>(std::min<std::uint64_t>(16u << 20, p.a.net().max_rdma()));
  for (std::size_t n : {std::size_t{1}, std::size_t{4096}, std::size_t{1} << 20, largest}) {
    SCOPED_TRACE(n);
    len = n;
    const auto data = pattern(n, n);
    src = &data;
    window.assign(n + 64, std::byte{0});
    std::vector<std::byte> back(n);
    intact = got = false;
    completions = 0;
    core::RemoteToken token;
    ASSERT_EQ(p.b.net().grant(window.data(), window.size(), core::kRemoteRead | core::kRemoteWrite,
                              token),
              Status::kOk);
    const std::uint64_t args[2] = {1, n};
    ASSERT_EQ(p.a.store(p.ab, data.data(), n, token, 64, kStored, args, 1), Status::kOk);
    ASSERT_TRUE(p.pump([&] { return completions == 1; }, 60s));
    EXPECT_TRUE(intact);
    const std::uint64_t nine = 9;
    ASSERT_EQ(p.a.get(p.ab, token, 64, back.data(), n, kGot, std::span(&nine, 1), 2), Status::kOk);
    ASSERT_TRUE(p.pump([&] { return completions == 2; }, 60s));
    EXPECT_TRUE(got);
    EXPECT_TRUE(back == data);
    EXPECT_EQ(p.b.net().revoke(token), Status::kOk);
  }
  EXPECT_EQ(p.a.stats().stores_sent, 4u);
  EXPECT_EQ(p.a.stats().gets_issued, 4u);
  EXPECT_EQ(p.b.stats().requests_handled, 4u);

  std::vector<std::byte> small(64);
  core::RemoteToken huge;
  ASSERT_EQ(p.b.net().grant(window.data(), 4096, core::kRemoteRead | core::kRemoteWrite, huge),
            Status::kOk);
  huge.length = p.a.net().max_rdma() + 4096;  // refused locally: the length is never used
  const std::uint64_t args[2] = {1, 0};
  EXPECT_EQ(p.a.store(p.ab, small.data(), p.a.net().max_rdma() + 1, huge, 0, kStored, args, 3),
            Status::kInvalidArgument);
  EXPECT_EQ(p.a.get(p.ab, huge, 0, small.data(), p.a.net().max_rdma() + 1, kGot, {}, 4),
            Status::kInvalidArgument);
  EXPECT_EQ(p.a.stats().stores_sent, 4u);
  EXPECT_EQ(p.a.stats().gets_issued, 4u);
  EXPECT_EQ(p.a.net().stats().send_errors, 0u);
}

// An open coalesced packet keeps its send-queue slot: gets issued behind it, until the send
// queue says no, leave that slot to it, so the packet still goes out at the next poll and the
// request in it runs (over RC a lost packet would never come back).
TEST(UamRc, GetsLeaveTheOpenPacketItsSendSlot) {
  UNET_REQUIRE_DEVICE();
  core::EndpointConfig c = net_config(core::Transport::kRc);
  c.mode = core::Mode::kDirectAccess;
  Pair p(c, c);
  std::vector<std::byte> window(64, std::byte{7});
  core::RemoteToken token;
  ASSERT_EQ(p.b.net().grant(window.data(), window.size(), core::kRemoteRead, token), Status::kOk);
  int handled = 0, got = 0, completions = 0;
  ASSERT_EQ(p.b.on_request(kSink,
                           [&](Token&, const Message& m) {
                             handled += m.payload.size() == 300;
                             return Disposition::kDone;
                           }),
            Status::kOk);
  ASSERT_EQ(p.a.on_reply(kGot,
                         [&](const Message& m) {
                           got += m.status == Status::kOk && m.payload.size() == 8 &&
                                  m.payload[0] == std::byte{7};
                           return Disposition::kDone;
                         }),
            Status::kOk);
  p.a.on_completion([&](ChannelId, std::uint64_t, Status s) { completions += s == Status::kOk; });
  const auto body = pattern(300, 3);
  ASSERT_EQ(p.a.request(p.ab, kSink, {}, body), Status::kOk);  // opens the channel's packet
  std::vector<std::byte> into(8 * c.send_queue_depth);
  int gets = 0;
  for (; gets < static_cast<int>(c.send_queue_depth); ++gets)
    if (p.a.get(p.ab, token, 0, into.data() + 8 * gets, 8, kGot, {}) != Status::kOk) break;
  EXPECT_EQ(gets, static_cast<int>(c.send_queue_depth) - 1) << "every slot but the packet's";
  ASSERT_TRUE(p.pump([&] { return handled == 1 && got == gets && completions == gets + 1; }))
      << "handled " << handled << ", gets back " << got << " of " << gets;
}

// A peer that disappears: every outstanding request completes with an error within the bound
// (RC: keepalive + transport retries, about 0.5 s; UD: retransmission with backoff, about
// 0.3 s), later requests fail fast, and a second pair in the same process is unharmed.
TEST_P(UamTransport, PeerFailureCompletesOutstandingRequests) {
  UNET_REQUIRE_DEVICE();
  auto c = net_config(GetParam());
  Pair healthy(c, c);
  int healthy_ok = 0;
  healthy.a.on_completion(
      [&](ChannelId, std::uint64_t, Status s) { healthy_ok += s == Status::kOk; });
  ASSERT_EQ(healthy.b.on_request(kSink, [](Token&, const Message&) { return Disposition::kDone; }),
            Status::kOk);
  DoomedPeer d(c, 5);
  Endpoint& survivor = d.survivor;
  const ChannelId ch = d.ch;
  d.doomed.reset();  // the peer goes away with its QP
  const auto t0 = std::chrono::steady_clock::now();
  while (d.errors < 5 && std::chrono::steady_clock::now() - t0 < 10s) {
    ASSERT_GE(survivor.poll(), 0);
    ASSERT_GE(healthy.a.poll(), 0);
    ASSERT_GE(healthy.b.poll(), 0);
    if (healthy.a.outstanding(healthy.ab) == 0) {
      ASSERT_EQ(healthy.a.request(healthy.ab, kSink, {}), Status::kOk);
    }
  }
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(d.errors, 5);
  EXPECT_LT(took, 3s);
  EXPECT_EQ(survivor.request(ch, kSink, {}), Status::kClosed);
  EXPECT_EQ(survivor.outstanding(ch), 0u);
  EXPECT_GT(healthy_ok, 0);
  EXPECT_EQ(healthy.a.channel_status(healthy.ab), Status::kOk);
}

// RC: the peer is alive when the first keepalive goes out (its QP acknowledges it, but it never
// polls, so it never answers) and dies afterwards. The survivor must keep probing and find out,
// not wait forever on one unanswered keepalive (uam/README.md, "Failure").
TEST(UamRc, APeerThatDiesAfterAnUnansweredKeepaliveIsStillFound) {
  UNET_REQUIRE_DEVICE();
  DoomedPeer d(net_config(core::Transport::kRc), 3);
  Endpoint& survivor = d.survivor;
  const ChannelId ch = d.ch;
  // Past a keepalive of silence with the peer alive: probes go out and its QP takes them.
  const auto alive_until = std::chrono::steady_clock::now() + 300ms;
  while (std::chrono::steady_clock::now() < alive_until) ASSERT_GE(survivor.poll(), 0);
  EXPECT_GT(survivor.stats().probes, 0u);
  EXPECT_EQ(survivor.channel_status(ch), Status::kOk);
  d.doomed.reset();
  const auto t0 = std::chrono::steady_clock::now();
  while (d.errors < 3 && std::chrono::steady_clock::now() - t0 < 10s) ASSERT_GE(survivor.poll(), 0);
  EXPECT_EQ(d.errors, 3);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
  EXPECT_EQ(survivor.channel_status(ch), Status::kClosed);
}

// wait(): returns once a handler ran, and kTimeout (after about the timeout) when nothing came.
TEST_P(UamTransport, WaitWakesForAHandlerAndTimesOut) {
  UNET_REQUIRE_DEVICE();
  Pair p(net_config(GetParam()), net_config(GetParam()));
  int handled = 0;
  ASSERT_EQ(p.b.on_request(kSink,
                           [&](Token&, const Message&) {
                             ++handled;
                             return Disposition::kDone;
                           }),
            Status::kOk);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(p.b.wait(50ms), Status::kTimeout);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 50ms);
  ASSERT_EQ(p.a.request(p.ab, kSink, {}), Status::kOk);
  ASSERT_GE(p.a.poll(), 0);  // posts it
  EXPECT_EQ(p.b.wait(5s), Status::kOk);
  EXPECT_EQ(handled, 1);
}

INSTANTIATE_TEST_SUITE_P(Transports, UamTransport,
                         ::testing::Values(core::Transport::kRc, core::Transport::kUd),
                         [](const auto& param) {
                           return param.param == core::Transport::kRc ? "Rc" : "Ud";
                         });

}  // namespace
}  // namespace unet::uam
