// uam::Endpoint against misuse and hostile input (label device; issue 25): waits with any
// timeout, empty packets and packets for a failed channel from a raw peer (counted, never
// silent), reply-once for every copy of a token and after its handler, and endpoints whose
// buffers cannot hold a header.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <vector>

#include "layer_channel.h"
#include "uam_pair.h"
#include "unet/uam/endpoint.h"
#include "unet/uam/wire_header.h"

namespace unet::uam {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;
using test::net_config;
using Pair = test::UamPair;
using test::pattern;

constexpr HandlerId kEcho = 1, kEchoReply = 2, kSink = 3;

class UamMisuse : public ::testing::TestWithParam<core::Transport> {
 protected:
  void SetUp() override { UNET_REQUIRE_DEVICE(); }
};

using RawChannel = test::RawChannel<Endpoint>;

// The bytes of one well-formed request: the first message a channel sends (seq 0, nothing acked).
std::vector<std::byte> first_request(std::uint64_t word) {
  Header h;
  h.kind = Kind::kRequest;
  h.handler = kSink;
  h.arg_count = 1;
  h.args[0] = word;
  std::vector<std::byte> out(header_bytes(1));
  EXPECT_EQ(encode(h, out), Status::kOk);
  return out;
}

// Every wait takes any timeout: none at all returns at once, forever returns when a handler ran.
TEST_P(UamMisuse, WaitTakesAnyTimeout) {
  Config cfg;
  cfg.keepalive = milliseconds::max();  // never probe: a timer that must not overflow either
  Pair p(net_config(GetParam()), net_config(GetParam()), cfg);
  std::vector<std::uint64_t> got;
  ASSERT_EQ(p.b.on_request(kEcho,
                           [&](Token& t, const Message& m) {
                             EXPECT_EQ(p.b.reply(t, kEchoReply, m.args, m.payload), Status::kOk);
                             return Disposition::kDone;
                           }),
            Status::kOk);
  ASSERT_EQ(p.a.on_reply(kEchoReply,
                         [&](const Message& m) {
                           got.assign(m.args.begin(), m.args.end());
                           return Disposition::kDone;
                         }),
            Status::kOk);
  for (const milliseconds t : {milliseconds::min(), -1ms, 0ms}) {
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(p.b.wait(t), Status::kTimeout);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  }
  const std::uint64_t words[2] = {0xfeed, 0xbeef};
  ASSERT_EQ(p.a.request(p.ab, kEcho, words), Status::kOk);
  ASSERT_GE(p.a.flush(), 1);
  ASSERT_EQ(p.b.wait(milliseconds::max()), Status::kOk);  // the handler ran and replied
  ASSERT_EQ(p.a.wait(milliseconds::max()), Status::kOk);  // the reply handler ran
  EXPECT_EQ(got, std::vector<std::uint64_t>(words, words + 2));
}

// An empty packet (and, over RC, an empty RDMA WRITE with immediate data, which takes a receive
// too) is counted as malformed and changes nothing: the next real request runs as the first.
TEST_P(UamMisuse, EmptyPacketsAreCountedAsMalformed) {
  RawChannel rc(net_config(GetParam()));
  std::vector<std::uint64_t> words;
  ASSERT_EQ(rc.ep.on_request(kSink,
                             [&](Token&, const Message& m) {
                               words.push_back(m.args[0]);
                               return Disposition::kDone;
                             }),
            Status::kOk);
  ASSERT_EQ(rc.raw.send({}), Status::kOk);
  ASSERT_EQ(rc.raw.send({}, 99), Status::kOk);
  std::uint64_t empties = 2;
  if (GetParam() == core::Transport::kRc) {
    ASSERT_EQ(rc.raw.write_imm(7), Status::kOk);
    ++empties;
  }
  ASSERT_TRUE(rc.pump([&] { return rc.ep.stats().malformed == empties; }))
      << rc.ep.stats().malformed << " of " << empties;
  EXPECT_EQ(rc.ep.net().stats().upcalls, empties);  // each reached uam: none dropped below it
  EXPECT_EQ(rc.ep.stats().requests_handled, 0u);
  EXPECT_EQ(rc.ep.channel_status(rc.ch), Status::kOk);
  ASSERT_EQ(rc.raw.send(first_request(42)), Status::kOk);
  ASSERT_TRUE(rc.pump([&] { return !words.empty(); }));
  EXPECT_EQ(words, std::vector<std::uint64_t>{42});
  EXPECT_EQ(rc.ep.stats().malformed, empties);
  EXPECT_EQ(rc.ep.stats().protocol_errors(), 0u);
}

// UD: a channel whose peer stopped answering fails (retries exhausted) while core's channel stays
// open; what that peer sends afterwards is dropped and counted, not run.
TEST(UamMisuseUd, PacketsForAFailedChannelAreCounted) {
  UNET_REQUIRE_DEVICE();
  Config cfg;
  cfg.reliability.max_retries = 1;
  RawChannel rc(net_config(core::Transport::kUd), cfg);
  int handled = 0;
  Status completion = Status::kOk;
  ASSERT_EQ(rc.ep.on_request(kSink,
                             [&](Token&, const Message&) {
                               ++handled;
                               return Disposition::kDone;
                             }),
            Status::kOk);
  rc.ep.on_completion([&](ChannelId, std::uint64_t, Status s) { completion = s; });
  ASSERT_EQ(rc.ep.request(rc.ch, kSink, {}), Status::kOk);  // the raw peer never acknowledges it
  ASSERT_TRUE(rc.pump([&] { return rc.ep.channel_status(rc.ch) == Status::kClosed; }));
  EXPECT_EQ(completion, Status::kRetryExceeded);
  EXPECT_EQ(rc.ep.net().channel_status(rc.ch), Status::kOk);  // core still delivers its packets
  ASSERT_EQ(rc.raw.send(first_request(1)), Status::kOk);
  ASSERT_EQ(rc.raw.send({}), Status::kOk);
  ASSERT_TRUE(rc.pump([&] { return rc.ep.stats().closed_drops == 2; }));
  EXPECT_EQ(handled, 0);
  EXPECT_EQ(rc.ep.stats().malformed, 0u);
}

// Reply-once holds for every copy of a token, and ends with the handler: a copy that answered
// makes the original refuse, copies kept past the handler refuse, and nothing they tried reached
// the wire — the requester sees exactly one reply per request and no stray one.
TEST_P(UamMisuse, ReplyOnceHoldsForCopiesAndAfterTheHandler) {
  Pair p(net_config(GetParam()), net_config(GetParam()));
  std::vector<Token> kept;
  int refused_inside = 0;
  ASSERT_EQ(p.b.on_request(kEcho,
                           [&](Token& t, const Message& m) {
                             Token copy = t;
                             kept.push_back(t);
                             // A token kept from an earlier request cannot answer this one's
                             // handler run either.
                             if (kept.size() > 1)
                               refused_inside += p.b.reply(kept.front(), kEchoReply, m.args) ==
                                                 Status::kInvalidState;
                             EXPECT_EQ(p.b.reply(copy, kEchoReply, m.args, m.payload), Status::kOk);
                             EXPECT_TRUE(copy.replied());
                             EXPECT_EQ(p.b.reply(t, kEchoReply, m.args), Status::kInvalidState);
                             EXPECT_EQ(p.b.reply(copy, kEchoReply, m.args), Status::kInvalidState);
                             return Disposition::kDone;
                           }),
            Status::kOk);
  ASSERT_EQ(p.b.on_request(kSink,
                           [&](Token& t, const Message&) {
                             kept.push_back(t);  // no reply: acknowledged implicitly
                             return Disposition::kDone;
                           }),
            Status::kOk);
  std::vector<std::uint64_t> replies;
  ASSERT_EQ(p.a.on_reply(kEchoReply,
                         [&](const Message& m) {
                           replies.push_back(m.args[0]);
                           return Disposition::kDone;
                         }),
            Status::kOk);
  int done = 0;
  p.a.on_completion([&](ChannelId, std::uint64_t, Status s) { done += s == Status::kOk; });
  constexpr int kRequests = 6;
  for (std::uint64_t i = 0; i < kRequests; ++i) {
    ASSERT_EQ(p.a.request(p.ab, i % 2 ? kSink : kEcho, std::span(&i, 1), pattern(10, i)),
              Status::kOk);
    ASSERT_TRUE(p.pump([&] { return done == static_cast<int>(i) + 1; }));
  }
  EXPECT_EQ(refused_inside, kRequests / 2 - 1);
  // After their handlers: every kept token refuses, and nothing goes out.
  const std::uint64_t sent = p.b.net().stats().sent;
  const std::uint64_t w = 9;
  for (Token& t : kept)
    EXPECT_EQ(p.b.reply(t, kEchoReply, std::span(&w, 1)), Status::kInvalidState);
  EXPECT_EQ(p.b.flush(), 0);
  EXPECT_EQ(p.b.net().stats().sent, sent) << "a refused reply reached the wire";
  (void)p.pump([] { return false; }, 200ms);  // a reply on its way would arrive in here
  EXPECT_EQ(replies, (std::vector<std::uint64_t>{0, 2, 4}));
  EXPECT_EQ(p.b.stats().replies_sent, 3u);
  EXPECT_EQ(p.a.stats().stray_replies, 0u);
  EXPECT_EQ(p.a.stats().replies_handled, 3u);
}

// Buffers too small for a message header with four words are refused at construction; just
// large enough, max_payload() is 0 with four words and a request past it is refused.
TEST_P(UamMisuse, BuffersMustHoldAHeader) {
  core::EndpointConfig tiny = net_config(GetParam());
  tiny.buffer_bytes = static_cast<std::uint32_t>(header_bytes(kMaxArgs)) - 1;
  EXPECT_THROW(Endpoint{tiny}, std::invalid_argument);
  tiny.buffer_bytes = static_cast<std::uint32_t>(header_bytes(kMaxArgs));
  Pair p(tiny, tiny);
  EXPECT_EQ(p.a.max_payload(4), 0u);
  EXPECT_EQ(p.a.max_payload(0), tiny.buffer_bytes - kFixedHeaderBytes);
  const std::uint64_t four[4] = {1, 2, 3, 4};
  const auto one = pattern(1, 1);
  EXPECT_EQ(p.a.request(p.ab, kSink, four, one), Status::kInvalidArgument);
  int handled = 0;
  ASSERT_EQ(p.b.on_request(kSink,
                           [&](Token&, const Message& m) {
                             handled += m.args.size() == 4 && m.args[3] == 4;
                             return Disposition::kDone;
                           }),
            Status::kOk);
  ASSERT_EQ(p.a.request(p.ab, kSink, four), Status::kOk);
  ASSERT_TRUE(p.pump([&] { return handled == 1; }));
  EXPECT_EQ(p.a.stats().requests_sent, 1u);
}

INSTANTIATE_TEST_SUITE_P(Transports, UamMisuse,
                         ::testing::Values(core::Transport::kRc, core::Transport::kUd),
                         [](const auto& param) {
                           return param.param == core::Transport::kRc ? "Rc" : "Ud";
                         });

}  // namespace
}  // namespace unet::uam
