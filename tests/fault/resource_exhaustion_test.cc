// Resource exhaustion (label fault): every queue of an endpoint driven to its limit on a real
// device — the completion queue near full, the free queue empty (RC: RNR back-pressure, no loss;
// UD: the surplus dropped by the device and counted there), the free queue's own bound, the send
// queue full. The registration cache's bound and the device's object limit are in
// resource_limits_test.cc; what both files share, in exhaustion_support.h. Each case asserts the
// named outcome — a Status, or for set-up an exception naming the call — that a refusal changed
// nothing, and that everything accepted arrives intact and in order once the resource comes back.
// Every wait is bounded.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "exhaustion_support.h"
#include "unet/verbs/error.h"

namespace unet::test::exhaustion {
namespace {

using namespace std::chrono_literals;

// --- 1. completion queue near full -----------------------------------------------------------

// The receiver's CQ is sized for its free queue plus its send queue (free_queue_depth +
// send_queue_depth * max_channels = 29 + 2 = 31: exactly what rxe grants, as it rounds a CQ to
// 2^k - 1). The receiver keeps as many sends in flight as it may (each signaled: with a send
// queue of 2 the signal interval is 1), then stops polling while the sender floods it: its CQ
// fills with those 2 send completions and one arrival per posted buffer, 31 of 31 entries, and
// the rest of the flood waits in RNR. Then both drain: every message arrives intact and in order,
// nothing dropped, no send failed, both channels still open.
TEST(ResourceExhaustion, CompletionQueueNearFullLosesNothing) {
  UNET_REQUIRE_DEVICE();
  EndpointConfig rc = endpoint_config(Transport::kRc, 64);
  rc.free_queue_depth = 29;
  rc.send_queue_depth = 2;
  rc.max_channels = 1;
  Endpoint s(endpoint_config(Transport::kRc, 128)), r(rc);
  auto [sr, rs] = connect_endpoints(s, r);

  // The receiver: sends until its device send queue is full, without reaping a completion.
  std::uint32_t r_pushed = 0;
  for (int round = 0; round < 64; ++round) {
    while (push_message(r, rs, 1000 + r_pushed) == Status::kOk) ++r_pushed;
    if (r.flush() <= 0) break;
  }
  const std::uint32_t r_queued = std::bit_ceil(rc.send_queue_depth) - r.send_queue_space();
  const std::uint32_t r_in_flight = r_pushed - r_queued;
  EXPECT_EQ(r_in_flight, rc.send_queue_depth)
      << "more sends in flight than the endpoint sized its CQ for (" << r_queued
      << " still queued)";

  // The sender floods: twice the receiver's free queue, while the receiver does not poll.
  constexpr std::uint32_t kMessages = 2 * 29;
  ASSERT_TRUE(send_messages(s, sr, 0, kMessages, {&s}));
  ASSERT_TRUE(pump({&s}, [&] { return s.stats().sent == kMessages; }));
  ASSERT_TRUE(pump_for({&s}, 300ms));  // retries against the full receiver
  EXPECT_EQ(s.stats().send_errors, 0u);

  // Drain: all of it, in order, intact.
  for (std::uint32_t m = 0; m < kMessages; ++m) ASSERT_EQ(expect_message(r, rs, m, {&s, &r}), "");
  for (std::uint32_t m = 0; m < r_pushed; ++m)
    ASSERT_EQ(expect_message(s, sr, 1000 + m, {&s, &r}), "");
  ASSERT_TRUE(
      pump({&s, &r}, [&] { return r.stats().sent == r_pushed && s.spare_buffers() == 64; }));
  EXPECT_EQ(r.stats().received, kMessages);
  EXPECT_EQ(s.stats().received, r_pushed);
  for (Endpoint* e : {&s, &r}) {
    EXPECT_EQ(e->stats().send_errors, 0u);
    EXPECT_EQ(e->stats().recv_overflow_drops, 0u);
    EXPECT_EQ(e->stats().unknown_tag_drops, 0u);
    EXPECT_EQ(e->stats().completion_drops, 0u);
  }
  EXPECT_EQ(s.channel_status(sr), Status::kOk);
  EXPECT_EQ(r.channel_status(rs), Status::kOk);
  std::printf(
      "CQ near full: %u sends in flight + %u arrivals held in a CQ sized %u; %u + %u messages "
      "delivered\n",
      r_in_flight, rc.free_queue_depth, rc.free_queue_depth + rc.send_queue_depth, kMessages,
      r_pushed);
}

// --- 2. free queue empty, RC -------------------------------------------------------------------

// The receiver takes its arrivals but keeps every buffer: after free_queue_depth of them nothing
// is posted, and RC holds the sender back (RNR, retried forever with rnr_retry 7) — no error, no
// loss. Once the receiver releases, every message arrives, in order, intact.
TEST(ResourceExhaustion, EmptyFreeQueueBacksPressureOnRcWithoutLoss) {
  UNET_REQUIRE_DEVICE();
  EndpointConfig rc = endpoint_config(Transport::kRc, 64);
  rc.free_queue_depth = 16;
  Endpoint s(endpoint_config(Transport::kRc, 128)), r(rc);
  auto [sr, rs] = connect_endpoints(s, r, {.ring = false});  // SENDs: a ring takes no free buffer
  const std::string dev = device_sysfs_name();
  const long rnr0 = hw_counter(dev, "rcvd_rnr_err");
  constexpr std::uint32_t kMessages = 48;
  ASSERT_TRUE(send_messages(s, sr, 0, kMessages, {&s, &r}));
  std::vector<BufferId> held;
  for (std::uint32_t m = 0; m < 16; ++m) ASSERT_EQ(expect_message(r, rs, m, {&s, &r}, &held), "");
  ASSERT_TRUE(pump({&s, &r}, [&] { return s.stats().sent == kMessages; }));
  ASSERT_TRUE(pump_for({&s, &r}, 300ms));
  EXPECT_EQ(r.stats().received, 16u) << "an arrival without a posted buffer";
  Descriptor d;
  EXPECT_EQ(r.receive(d), Status::kNoResource);
  EXPECT_EQ(s.stats().send_errors, 0u);
  EXPECT_EQ(s.channel_status(sr), Status::kOk) << "back-pressure failed the channel";
  const long rnr = rnr0 < 0 ? -1 : hw_counter(dev, "rcvd_rnr_err") - rnr0;
  if (rnr0 >= 0) {
    EXPECT_GT(rnr, 0) << "the sender's device saw no RNR NAK";
  }

  for (BufferId b : held) ASSERT_EQ(r.release(b), Status::kOk);
  for (std::uint32_t m = 16; m < kMessages; ++m) ASSERT_EQ(expect_message(r, rs, m, {&s, &r}), "");
  EXPECT_EQ(r.stats().received, kMessages);
  EXPECT_EQ(r.stats().recv_overflow_drops, 0u);
  EXPECT_EQ(r.stats().unknown_tag_drops, 0u);
  EXPECT_EQ(s.stats().send_errors, 0u);
  EXPECT_EQ(s.channel_status(sr), Status::kOk);
  std::printf(
      "RC free queue empty: %u of %u delivered while held (%ld RNR NAKs), the rest after release; "
      "0 lost\n",
      16u, kMessages, rnr);
}

// --- 3. free queue empty, UD -------------------------------------------------------------------

// UD has no back-pressure: with the receiver holding every buffer, the device drops what finds no
// posted receive. Core never sees those datagrams (no completion, so no core counter can), and
// rxe has no counter for this drop (its responder just discards the message), so the count is
// rcvd_pkts - delivered. Asserted: the device's rcvd_pkts went up by exactly the datagrams sent
// (this test is the only traffic), exactly free_queue_depth were delivered (the first ones, in
// order, intact), so sent == delivered + dropped with dropped == sent - free_queue_depth, and
// core counted nothing (the drop was not its receive queue's). Afterwards the endpoint works:
// released buffers take the next messages.
TEST(ResourceExhaustion, EmptyFreeQueueDropsUdSurplusCountedByTheDevice) {
  UNET_REQUIRE_DEVICE();
  const std::string dev = device_sysfs_name();
  if (hw_counter(dev, "rcvd_pkts") < 0) GTEST_SKIP() << dev << " has no rcvd_pkts counter";
  EndpointConfig uc = endpoint_config(Transport::kUd, 64);
  uc.free_queue_depth = 16;
  Endpoint s(endpoint_config(Transport::kUd, 128)), r(uc);
  auto [sr, rs] = connect_endpoints(s, r);
  constexpr std::uint32_t kMessages = 40;
  ASSERT_GE(s.max_message(), 999u) << "every message must fit one datagram";

  const long rcvd0 = hw_counter(dev, "rcvd_pkts");
  ASSERT_TRUE(send_messages(s, sr, 0, kMessages, {&s}));
  // Every send completed (their buffers are spare again), then time for stragglers.
  ASSERT_TRUE(pump({&s}, [&] { return s.stats().sent == kMessages && s.spare_buffers() == 64; }));
  std::vector<BufferId> held;
  for (std::uint32_t m = 0; m < 16; ++m) ASSERT_EQ(expect_message(r, rs, m, {&s, &r}, &held), "");
  ASSERT_TRUE(pump_for({&s, &r}, 200ms));
  const long rcvd = hw_counter(dev, "rcvd_pkts") - rcvd0;
  EXPECT_EQ(rcvd, kMessages) << "the device did not see every datagram (or saw other traffic)";
  EXPECT_EQ(r.stats().received, 16u) << "delivered beyond the posted buffers";
  const long dropped = rcvd - static_cast<long>(r.stats().received);
  EXPECT_EQ(dropped, kMessages - 16);
  EXPECT_EQ(s.stats().sent, r.stats().received + static_cast<std::uint64_t>(dropped));
  EXPECT_EQ(r.stats().recv_overflow_drops, 0u)
      << "the drops were the device's, not the receive queue's";
  EXPECT_EQ(r.stats().unknown_tag_drops, 0u);
  EXPECT_EQ(s.stats().send_errors, 0u);

  for (BufferId b : held) ASSERT_EQ(r.release(b), Status::kOk);
  ASSERT_TRUE(pump_for({&r}, 10ms));  // reposted
  ASSERT_TRUE(send_messages(s, sr, 100, 16, {&s, &r}));
  for (std::uint32_t m = 100; m < 116; ++m) ASSERT_EQ(expect_message(r, rs, m, {&s, &r}), "");
  EXPECT_EQ(r.stats().received, 32u);
  std::printf(
      "UD free queue empty: %u sent, %ld seen by %s (rcvd_pkts), %llu delivered, %ld dropped\n",
      kMessages, rcvd, dev.c_str(), 16ull, dropped);
}

// --- 3b. the free queue's bound: buffers given back unsent --------------------------------------

// An application that acquires buffers and gives them back unsent (a send it gave up on) must not
// overfill the free queue: the device's receive queue holds free_queue_depth receives, and the
// CQ is sized for that many arrivals. The endpoint keeps working — poll() never reports a device
// error, every acquired buffer is spare again, and messages still arrive once each, intact.
TEST(ResourceExhaustion, BuffersReleasedUnsentNeverOverfillTheFreeQueue) {
  UNET_REQUIRE_DEVICE();
  for (Transport t : {Transport::kRc, Transport::kUd}) {
    SCOPED_TRACE(t == Transport::kRc ? "RC" : "UD");
    Endpoint s(endpoint_config(t, 128)), r(endpoint_config(t, 128));
    auto [sr, rs] = connect_endpoints(s, r);
    const std::uint32_t spare = r.spare_buffers();
    ASSERT_EQ(spare, 64u);
    std::vector<BufferId> taken(spare);
    for (BufferId& b : taken) ASSERT_EQ(r.acquire_buffer(b), Status::kOk);
    for (BufferId b : taken) ASSERT_EQ(r.release(b), Status::kOk);
    ASSERT_GE(r.poll(), 0) << "reposting the given-back buffers failed on the device";
    EXPECT_EQ(r.spare_buffers(), spare) << "buffers given back unsent are spare again";
    // UD: paced one at a time, so no datagram finds the receiver without a posted buffer.
    for (std::uint32_t m = 0; m < 3 * spare; ++m) {
      ASSERT_TRUE(send_messages(s, sr, m, 1, {&s, &r}));
      ASSERT_EQ(expect_message(r, rs, m, {&s, &r}), "");
    }
    ASSERT_GE(r.poll(), 0);
    Descriptor d;
    EXPECT_EQ(r.receive(d), Status::kNoResource) << "an arrival delivered twice";
    EXPECT_EQ(r.stats().received, 3 * spare);
    EXPECT_EQ(s.stats().send_errors, 0u);
  }
}

// --- 4. send queue full ------------------------------------------------------------------------

// Pushing without progress fills the send queue: exactly send_queue_space() pushes succeed, the
// next (inline or from a buffer) is kNoResource and changes nothing — counters, queue space,
// spare buffers, the refused buffer still the application's. After poll() the same push succeeds,
// and every message accepted arrives once, in order.
TEST(ResourceExhaustion, FullSendQueueRefusesThenAcceptsAfterProgress) {
  UNET_REQUIRE_DEVICE();
  Endpoint s(endpoint_config(Transport::kRc, 256)), r(endpoint_config(Transport::kRc, 256));
  auto [sr, rs] = connect_endpoints(s, r);
  const std::uint32_t space = s.send_queue_space();
  ASSERT_EQ(space, 64u);
  std::uint32_t pushed = 0;
  while (pushed < 2 * space && push_message(s, sr, pushed) == Status::kOk) ++pushed;
  EXPECT_EQ(pushed, space);
  EXPECT_EQ(s.send_queue_space(), 0u);

  BufferId b = core::kNoBuffer;
  ASSERT_EQ(s.acquire_buffer(b), Status::kOk);
  const std::uint32_t len = length_of(pushed);
  for (std::uint32_t i = 0; i < len; ++i) s.buffer(b)[i] = pattern(pushed, i);
  const core::EndpointStats before = s.stats();
  const std::uint32_t spare = s.spare_buffers();
  const std::byte small[8] = {};
  EXPECT_EQ(s.send(sr, b, len), Status::kNoResource);
  EXPECT_EQ(s.send_inline(sr, small), Status::kNoResource);
  EXPECT_EQ(std::memcmp(&before, &s.stats(), sizeof before), 0)
      << "a refused push changed a counter";
  EXPECT_EQ(s.send_queue_space(), 0u);
  EXPECT_EQ(s.spare_buffers(), spare);
  EXPECT_EQ(r.stats().received, 0u);

  ASSERT_GT(s.poll(), 0);
  EXPECT_EQ(s.send(sr, b, len), Status::kOk) << "the same buffer after progress";
  ++pushed;
  for (std::uint32_t m = 0; m < pushed; ++m) ASSERT_EQ(expect_message(r, rs, m, {&s, &r}), "");
  ASSERT_TRUE(pump({&s, &r}, [&] { return s.stats().sent == pushed; }));
  EXPECT_EQ(r.stats().received, pushed);
  EXPECT_EQ(s.stats().send_errors, 0u);
  Descriptor d;
  EXPECT_EQ(r.receive(d), Status::kNoResource) << "a message arrived twice";
  std::printf(
      "send queue full: %u pushed, the next refused with kNoResource, %u delivered after poll()\n",
      pushed - 1, pushed);
}

}  // namespace
}  // namespace unet::test::exhaustion
