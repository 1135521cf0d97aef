// Device: core endpoints against misuse and hostile input (issue 25) — waits with any timeout,
// arrivals the device fails (a datagram longer than the buffer), sends past max_message(), and
// offers accepted by an endpoint that did not make them. Each test checks bytes and counters.
#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "endpoint_support.h"
#include "unet/core/endpoint.h"
#include "unet/verbs/error.h"

namespace unet::core {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;
using test::connect_endpoints;
using test::pattern;
using test::send_bytes;
using test::take;

// Polls until poll() reports no work twice in a row: every freed buffer is posted again.
void settle(Endpoint& ep) {
  for (int idle = 0, i = 0; idle < 2 && i < 100000; ++i) idle = ep.poll() == 0 ? idle + 1 : 0;
}

// Polls `ep` (and `other`, to post its sends) until `done` or 10 s.
template <class Done>
bool pump(Endpoint& ep, Endpoint& other, Done&& done) {
  const auto end = std::chrono::steady_clock::now() + 10s;
  while (!done()) {
    if (ep.poll() < 0 || other.poll() < 0 || std::chrono::steady_clock::now() > end) return false;
  }
  return true;
}

// `line` without the buffer size core's offers end with: a peer that does not say what it takes
// (an older one, or one that means harm), so that a sender may send it an oversize message.
std::string without_buffer_size(std::string line) {
  const std::size_t at = line.rfind(" buf=");
  if (at != std::string::npos) line.erase(at, line.size() - 1 - at);
  return line;
}

// Channels between `a` and `b` on which `a` takes b's buffers to be as large as its own.
std::pair<ChannelId, ChannelId> connect_unbounded(Endpoint& a, Endpoint& b,
                                                  const ChannelOptions& options = {}) {
  const ChannelOffer oa = a.offer_channel(options), ob = b.offer_channel(options);
  return {a.accept_offer(oa, without_buffer_size(ob.local)), b.accept_offer(ob, oa.local)};
}

// What a refused call must leave alone.
std::string fingerprint(const Endpoint& ep) {
  std::string f(reinterpret_cast<const char*>(&ep.stats()), sizeof(EndpointStats));
  const std::uint32_t room[2] = {ep.send_queue_space(), ep.spare_buffers()};
  f.append(reinterpret_cast<const char*>(room), sizeof room);
  return f;
}

class Misuse : public ::testing::TestWithParam<Transport> {
 protected:
  void SetUp() override { UNET_REQUIRE_DEVICE(); }
};

// A wait takes any timeout: the shortest ones return at once, the longest waits until the arrival
// (it is on its way) instead of overflowing its deadline.
TEST_P(Misuse, WaitTakesAnyTimeout) {
  Endpoint a(test::endpoint_config(GetParam())), b(test::endpoint_config(GetParam()));
  const auto [ab, ba] = connect_endpoints(a, b);
  for (const milliseconds t : {milliseconds::min(), -1ms, 0ms}) {
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(b.wait(t), Status::kTimeout) << t.count();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  }
  const auto m = pattern(8, 1);
  ASSERT_EQ(a.send_inline(ab, m), Status::kOk);
  ASSERT_EQ(a.flush(), 1);
  ASSERT_EQ(b.wait(milliseconds::max()), Status::kOk);
  Descriptor d;
  ASSERT_EQ(b.receive(d), Status::kOk);
  EXPECT_EQ(d.channel, ba);
  EXPECT_EQ(take(b, d), m);
}

// A datagram longer than the receiver's buffer fails at the receiver's device (a local length
// error, which leaves rxe's UD QP in ERROR). It is counted, and poll() alone — the receiver never
// sends — brings the QP back; a stranger's oversize datagram does the same. Every buffer is
// posted again: a burst of exactly free_queue_depth datagrams from a healthy peer, sent while the
// receiver does not poll, all arrive intact.
// The oversize senders do not know r's buffer size (its offers' buf field is cut): a peer that
// states it is refused an oversize send locally (AChannelSendsNoMoreThanThePeersBuffersHold).
TEST(MisuseUd, OversizeArrivalsAreCountedAndTheEndpointKeepsHearing) {
  UNET_REQUIRE_DEVICE();
  EndpointConfig small = test::endpoint_config(Transport::kUd, 64);
  small.buffer_bytes = 256;
  small.free_queue_depth = 32;
  Endpoint r(small), healthy(small);
  Endpoint big(test::endpoint_config(Transport::kUd)),
      stranger(test::endpoint_config(Transport::kUd));
  ASSERT_GT(big.max_message(), 512u) << "needs a path MTU above 512";
  const ChannelId big_r = connect_unbounded(big, r).first;
  const auto [hr, rh] = connect_endpoints(healthy, r);
  // The stranger has a channel to r; r has none to it.
  const ChannelOffer so = stranger.offer_channel();
  const ChannelId stranger_r =
      stranger.accept_offer(so, without_buffer_size(r.offer_channel().local));
  settle(r);
  std::uint64_t received = 0;
  for (int round = 1; round <= 2; ++round) {
    Endpoint& bad = round == 1 ? big : stranger;
    ASSERT_EQ(send_bytes(bad, round == 1 ? big_r : stranger_r, pattern(600, round)), Status::kOk);
    ASSERT_TRUE(pump(r, bad, [&] { return r.stats().qp_recoveries == std::uint64_t(round); }))
        << "recv_errors " << r.stats().recv_errors << ", recoveries " << r.stats().qp_recoveries;
    EXPECT_EQ(r.stats().recv_errors, std::uint64_t(round));
    EXPECT_EQ(r.stats().unknown_tag_drops, 0u);  // the failed one was not delivered
    settle(r);
    for (std::uint32_t i = 0; i < small.free_queue_depth; ++i)
      ASSERT_EQ(send_bytes(healthy, hr, pattern(200, 100 * round + i)), Status::kOk) << i;
    settle(healthy);
    Descriptor d;
    for (std::uint32_t i = 0; i < small.free_queue_depth; ++i) {
      ASSERT_TRUE(pump(r, healthy, [&] { return r.receive(d) == Status::kOk; })) << "arrival " << i;
      EXPECT_EQ(d.channel, rh);
      EXPECT_EQ(take(r, d), pattern(200, 100 * round + i));
      ++received;
    }
  }
  EXPECT_EQ(r.stats().received, received);
  EXPECT_EQ(r.stats().sent, 0u);  // it never sent: poll() alone recovered it
  EXPECT_EQ(r.stats().recv_errors, 2u);
}

// RC: a message longer than the buffer fails the receiver's QP for that channel (the sender's
// send fails with it); it is counted, its SRQ buffer goes back, and the other channel on the same
// shared receive queue carries exactly free_queue_depth messages from a sender that tolerates no
// receiver-not-ready wait (rnr_retry 0) while the receiver does not poll.
TEST(MisuseRc, OversizeArrivalFailsItsChannelAndTheBufferIsPostedAgain) {
  UNET_REQUIRE_DEVICE();
  EndpointConfig small = test::endpoint_config(Transport::kRc, 64);
  small.buffer_bytes = 512;
  small.free_queue_depth = 32;
  EndpointConfig strict = small;
  strict.rnr_retry = 0;
  Endpoint r(small), healthy(strict), big(test::endpoint_config(Transport::kRc));
  // SEND/RECV channels: what is tested is a receive buffer too small, and its reposting.
  const auto [big_r, r_big] = connect_unbounded(big, r, {.ring = false});
  const auto [hr, rh] = connect_endpoints(healthy, r, {.ring = false});
  settle(r);
  ASSERT_EQ(send_bytes(big, big_r, pattern(1000, 1)), Status::kOk);
  ASSERT_TRUE(
      pump(r, big, [&] { return r.stats().recv_errors == 1 && big.stats().send_errors == 1; }));
  EXPECT_EQ(r.channel_status(r_big), Status::kClosed);
  EXPECT_EQ(big.channel_status(big_r), Status::kClosed);
  EXPECT_EQ(r.channel_status(rh), Status::kOk);
  settle(r);
  for (std::uint32_t i = 0; i < small.free_queue_depth; ++i)
    ASSERT_EQ(send_bytes(healthy, hr, pattern(300, i)), Status::kOk);
  const auto end = std::chrono::steady_clock::now() + 10s;
  while (healthy.spare_buffers() < healthy.config().buffers - healthy.config().free_queue_depth &&
         std::chrono::steady_clock::now() < end)
    ASSERT_GE(healthy.poll(), 0);  // every send completed (their buffers are spare again)
  EXPECT_EQ(healthy.stats().send_errors, 0u);
  EXPECT_EQ(healthy.channel_status(hr), Status::kOk);
  Descriptor d;
  for (std::uint32_t i = 0; i < small.free_queue_depth; ++i) {
    ASSERT_TRUE(pump(r, healthy, [&] { return r.receive(d) == Status::kOk; })) << "arrival " << i;
    EXPECT_EQ(d.channel, rh);
    EXPECT_EQ(take(r, d), pattern(300, i));
  }
  EXPECT_EQ(r.stats().recv_errors, 1u);
}

// Every send path refuses a message longer than max_message() and changes nothing — inline
// sends too, on an endpoint whose buffers are smaller than a descriptor's inline bytes.
TEST_P(Misuse, NoSendPathTakesMoreThanMaxMessage) {
  EndpointConfig tiny = test::endpoint_config(GetParam());
  tiny.buffer_bytes = 32;
  Endpoint a(tiny), b(tiny);
  const auto [ab, ba] = connect_endpoints(a, b);
  ASSERT_EQ(a.max_message(), 32u);
  EXPECT_LE(a.inline_threshold(), a.max_message());
  const auto over = pattern(a.max_message() + 1, 3), most = pattern(a.max_message(), 4);
  BufferId own = kNoBuffer;
  ASSERT_EQ(a.acquire_buffer(own), Status::kOk);
  const std::string before = fingerprint(a);
  EXPECT_EQ(a.send_inline(ab, over), Status::kInvalidArgument);
  EXPECT_EQ(a.send_inline(ab, over, 7), Status::kInvalidArgument);
  EXPECT_EQ(a.send(ab, own, a.max_message() + 1), Status::kInvalidArgument);
  EXPECT_EQ(a.send(ab, own, a.max_message() + 1, 7), Status::kInvalidArgument);
  EXPECT_TRUE(fingerprint(a) == before);
  EXPECT_EQ(a.poll(), 0);  // nothing was queued
  // The largest message each way arrives whole.
  std::memcpy(a.buffer(own).data(), most.data(), most.size());
  ASSERT_EQ(a.send(ab, own, a.max_message()), Status::kOk);
  const bool inline_too = a.inline_threshold() == a.max_message();
  if (inline_too) {
    ASSERT_EQ(a.send_inline(ab, most), Status::kOk);
  }
  Descriptor d;
  for (int i = 0; i < 1 + inline_too; ++i) {
    ASSERT_TRUE(test::wait_receive(a, b, d));
    EXPECT_EQ(d.channel, ba);
    EXPECT_EQ(take(b, d), most);
  }
  EXPECT_EQ(b.stats().recv_errors, 0u);
}

// Zero-copy sends (direct access) count their head: head + payload past max_message() is refused
// even when the head alone is longer than max_message() (no unsigned wrap-around).
TEST(MisuseRc, ZeroCopySendsCountTheirHead) {
  UNET_REQUIRE_DEVICE();
  EndpointConfig tiny = test::endpoint_config(Transport::kRc);
  tiny.buffer_bytes = 32;
  tiny.mode = Mode::kDirectAccess;
  Endpoint a(tiny), b(tiny);
  const auto [ab, ba] = connect_endpoints(a, b);
  const auto head = pattern(48, 5), body = pattern(64, 6);
  const std::string before = fingerprint(a);
  EXPECT_EQ(a.send_from(ab, head, body.data(), 1, 1), Status::kInvalidArgument);
  EXPECT_EQ(a.send_from(ab, std::span(head).first(16), body.data(), 17, 2),
            Status::kInvalidArgument);
  EXPECT_EQ(a.send_from(ab, body.data(), 33, 3), Status::kInvalidArgument);
  EXPECT_TRUE(fingerprint(a) == before);
  OpCompletion c;
  EXPECT_EQ(a.completion(c), Status::kNoResource);
  // 16 + 16 fits: it arrives as one 32-byte message.
  ASSERT_EQ(a.send_from(ab, std::span(head).first(16), body.data(), 16, 4), Status::kOk);
  Descriptor d;
  ASSERT_TRUE(test::wait_receive(a, b, d));
  std::vector<std::byte> want(head.begin(), head.begin() + 16);
  want.insert(want.end(), body.begin(), body.begin() + 16);
  EXPECT_EQ(take(b, d), want);
}

// An offer is accepted only by the endpoint that made it: another endpoint's offer with a slot
// number of its own is refused, and both real offers still complete into working channels.
TEST_P(Misuse, OnlyTheOfferingEndpointAcceptsItsOffer) {
  Endpoint a(test::endpoint_config(GetParam())), b(test::endpoint_config(GetParam()));
  const ChannelOffer oa = a.offer_channel(), ob = b.offer_channel();
  ASSERT_EQ(oa.slot, ob.slot);  // both slot 0: the case a slot number alone cannot tell apart
  const std::string before = fingerprint(b);
  for (const ChannelOffer& forged :
       {oa, ChannelOffer{}, ChannelOffer{ob.local, ob.slot + 1, ob.nonce}}) {
    try {
      (void)b.accept_offer(forged, oa.local);
      FAIL() << "took an offer it did not make (slot " << forged.slot << ")";
    } catch (const verbs::Error& e) {
      EXPECT_EQ(e.error_number(), EINVAL) << e.what();
    }
  }
  EXPECT_TRUE(fingerprint(b) == before);
  const ChannelId ab = a.accept_offer(oa, ob.local), ba = b.accept_offer(ob, oa.local);
  EXPECT_THROW((void)a.accept_offer(oa, ob.local), verbs::Error);  // used up
  const auto m1 = pattern(20, 7), m2 = pattern(30, 8);
  ASSERT_EQ(a.send_inline(ab, m1), Status::kOk);
  Descriptor d;
  ASSERT_TRUE(test::wait_receive(a, b, d));
  EXPECT_EQ(d.channel, ba);
  EXPECT_EQ(take(b, d), m1);
  ASSERT_EQ(b.send_inline(ba, m2), Status::kOk);
  ASSERT_TRUE(test::wait_receive(b, a, d));
  EXPECT_EQ(d.channel, ab);
  EXPECT_EQ(take(a, d), m2);
}

INSTANTIATE_TEST_SUITE_P(Transports, Misuse, ::testing::Values(Transport::kRc, Transport::kUd),
                         [](const auto& p) { return p.param == Transport::kRc ? "RC" : "UD"; });

// Making an endpoint of `c` throws verbs::Error with `err`.
void expect_refused(const EndpointConfig& c, int err) {
  try {
    Endpoint e(c);
    ADD_FAILURE() << "an endpoint was made";
  } catch (const verbs::Error& e) {
    EXPECT_EQ(e.error_number(), err) << e.what();
  }
}

// A configuration with no RDMA READ in flight allowed, or a service level past 15, is refused
// before any device is opened.
TEST(MisuseConfig, NoReadsInFlightOrAServiceLevelPast15IsRefused) {
  EndpointConfig no_reads = test::endpoint_config(Transport::kRc);
  no_reads.max_reads = 0;
  EndpointConfig sl16 = test::endpoint_config(Transport::kUd);
  sl16.service_level = 16;
  expect_refused(no_reads, EINVAL);
  expect_refused(sl16, EINVAL);
}

// A channel sends no more than the peer's buffers hold (its offer says their size): one byte more
// is refused at the sender with nothing changed, where it would fail at the receiver (a local
// length error, a receive error counted there); the most the peer takes arrives intact.
TEST_P(Misuse, AChannelSendsNoMoreThanThePeersBuffersHold) {
  EndpointConfig big = test::endpoint_config(GetParam()), small = big;
  big.buffer_bytes = 4096;
  small.buffer_bytes = 512;
  Endpoint a(big), b(small);
  const auto [ab, ba] = connect_endpoints(a, b);
  EXPECT_EQ(a.max_message(ab), 512u);
  EXPECT_EQ(b.max_message(ba), b.max_message()) << "b's own limit is the smaller";
  EXPECT_EQ(a.max_message(ab + 7), 0u) << "no such channel";
  settle(a);
  const std::string before = fingerprint(a);
  EXPECT_EQ(send_bytes(a, ab, pattern(513, 3)), Status::kInvalidArgument);
  EXPECT_TRUE(fingerprint(a) == before);
  const auto m = pattern(512, 4);
  ASSERT_EQ(send_bytes(a, ab, m), Status::kOk);
  Descriptor d;
  ASSERT_TRUE(test::wait_receive(a, b, d));
  EXPECT_EQ(take(b, d), m);
  EXPECT_EQ(b.stats().recv_errors, 0u);
}

// An inline send is bound by the peer's buffers too: one that fits our inline threshold but not
// the peer's 32-byte buffers is refused with nothing changed; the largest the peer takes arrives.
TEST_P(Misuse, AnInlineSendIsBoundByThePeersBuffersToo) {
  EndpointConfig ours = test::endpoint_config(GetParam()), tiny = ours;
  tiny.buffer_bytes = 32;
  Endpoint a(ours), b(tiny);
  const auto [ab, ba] = connect_endpoints(a, b);
  (void)ba;
  ASSERT_GT(a.inline_threshold(), 33u);
  EXPECT_EQ(a.max_message(ab), 32u);
  settle(a);
  const std::string before = fingerprint(a);
  EXPECT_EQ(a.send_inline(ab, pattern(33, 5)), Status::kInvalidArgument);
  EXPECT_TRUE(fingerprint(a) == before);
  const auto m = pattern(32, 6);
  ASSERT_EQ(a.send_inline(ab, m), Status::kOk);
  Descriptor d;
  ASSERT_TRUE(test::wait_receive(a, b, d));
  EXPECT_EQ(take(b, d), m);
  EXPECT_EQ(b.stats().recv_errors, 0u);
}

// A netdev that does not exist is a named error (ENODEV) when the endpoint is made.
TEST_P(Misuse, AGidNetdevThatDoesNotExistIsRefused) {
  EndpointConfig c = test::endpoint_config(GetParam());
  c.netdev = "no_such_if9";
  expect_refused(c, ENODEV);
}

// Endpoints with a service level and traffic class set talk as any others, RC and UD.
TEST_P(Misuse, AServiceLevelAndTrafficClassChangeNothingButTheirMarking) {
  EndpointConfig c = test::endpoint_config(GetParam());
  c.service_level = 3;
  c.traffic_class = 106;
  Endpoint a(c), b(c);
  const auto [ab, ba] = test::connect_endpoints(a, b);
  (void)ba;
  const auto m = pattern(40, 9);
  ASSERT_EQ(a.send_inline(ab, m), Status::kOk);
  Descriptor d;
  ASSERT_TRUE(test::wait_receive(a, b, d));
  EXPECT_EQ(take(b, d), m);
}

}  // namespace
}  // namespace unet::core
