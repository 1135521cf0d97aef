// Device: U-Net endpoints on rxe, over RC and UD, base-level. Every test checks delivered bytes
// and the endpoint's counters.
#include "unet/core/endpoint.h"

#include <gtest/gtest.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "endpoint_support.h"
#include "unet/verbs/error.h"

namespace unet::core {
namespace {

using test::connect_endpoints;
using test::wait_receive;
EndpointConfig config(Transport t) { return test::endpoint_config(t); }

using namespace std::chrono_literals;

std::byte pattern(std::uint32_t msg, std::uint32_t i) {
  return static_cast<std::byte>(msg * 131 + i * 7);
}

class EndpointTest : public ::testing::TestWithParam<Transport> {
 protected:
  void SetUp() override {
    UNET_REQUIRE_DEVICE();
    a_ = std::make_unique<Endpoint>(config(GetParam()));
    b_ = std::make_unique<Endpoint>(config(GetParam()));
    std::tie(ab_, ba_) = connect_endpoints(*a_, *b_);
  }
  // Sends message `m` of `len` bytes from a_ to b_ (inline when small), retrying on back-pressure.
  void send(std::uint32_t m, std::uint32_t len) {
    std::byte tmp[Descriptor::kInlineBytes];
    auto deadline = std::chrono::steady_clock::now() + 10s;
    for (;;) {
      Status s;
      if (len <= a_->inline_threshold()) {
        for (std::uint32_t i = 0; i < len; ++i) tmp[i] = pattern(m, i);
        s = a_->send_inline(ab_, {tmp, len});
      } else {
        BufferId buf = kNoBuffer;
        s = a_->acquire_buffer(buf);
        if (s == Status::kOk) {
          auto bytes = a_->buffer(buf);
          for (std::uint32_t i = 0; i < len; ++i) bytes[i] = pattern(m, i);
          s = a_->send(ab_, buf, len);
          ASSERT_EQ(s, Status::kOk);
        }
      }
      if (s == Status::kOk) return;
      ASSERT_EQ(s, Status::kNoResource);
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "back-pressure never cleared";
      (void)a_->poll();
      (void)b_->poll();
    }
  }
  // Receives message `m` of `len` bytes at b_ in a segment buffer, checks its bytes and releases
  // it. Callers wrap it in ASSERT_NO_FATAL_FAILURE.
  void receive_buffer(std::uint32_t m, std::uint32_t len) {
    Descriptor d;
    ASSERT_TRUE(wait_receive(*a_, *b_, d, 10s)) << "message " << m;
    ASSERT_EQ(d.length, len);
    const std::byte* p = b_->buffer(d.buffer).data();
    for (std::uint32_t i = 0; i < len; ++i)
      ASSERT_EQ(p[i], pattern(m, i)) << "message " << m << " byte " << i;
    ASSERT_EQ(b_->release(d.buffer), Status::kOk);
  }
  std::unique_ptr<Endpoint> a_, b_;
  ChannelId ab_ = kNoChannel, ba_ = kNoChannel;
};

TEST_P(EndpointTest, MixedSizesArriveInOrderIntactWithInlineCounted) {
  const std::uint32_t max = a_->max_message();
  const std::uint32_t sizes[] = {
      1, 7, a_->inline_threshold(), a_->inline_threshold() + 1, 100, 1000, max - 1, max};
  constexpr std::uint32_t kMessages = 400;
  std::uint32_t expected_inline = 0, expected_inline_posts = 0, received = 0;
  for (std::uint32_t m = 0; m < kMessages; ++m) {
    std::uint32_t len = sizes[m % std::size(sizes)];
    expected_inline += len <= a_->inline_threshold();
    expected_inline_posts += len <= std::max(a_->inline_threshold(), a_->inline_post_limit());
    send(m, len);
    // UD is unreliable: keep at most a few messages in flight so none is dropped for lack of a
    // posted buffer; RC gets the same pacing for symmetry.
    Descriptor d;
    while (received <= m && wait_receive(*a_, *b_, d, 10s)) {
      std::uint32_t want = sizes[received % std::size(sizes)];
      ASSERT_EQ(d.channel, ba_);
      ASSERT_EQ(d.length, want) << "message " << received;
      const std::byte* p = d.is_inline() ? d.data : b_->buffer(d.buffer).data();
      for (std::uint32_t i = 0; i < want; ++i)
        ASSERT_EQ(p[i], pattern(received, i)) << "message " << received << " byte " << i;
      EXPECT_EQ(d.is_inline(), want <= b_->inline_threshold());
      if (!d.is_inline()) {
        ASSERT_EQ(b_->release(d.buffer), Status::kOk);
      }
      ++received;
    }
    ASSERT_EQ(received, m + 1) << "message " << m << " did not arrive";
  }
  EXPECT_EQ(a_->stats().inline_sent, expected_inline_posts);
  EXPECT_EQ(b_->stats().inline_received, expected_inline);
  EXPECT_EQ(b_->stats().received, kMessages);
  EXPECT_EQ(b_->stats().unknown_tag_drops, 0u);
  EXPECT_EQ(a_->stats().send_errors, 0u);
}

// Buffer sends up to inline_post_limit() go with IBV_SEND_INLINE: the device copied them at the
// post, so their buffers are spare again at once, before any send completion.
TEST_P(EndpointTest, SmallBufferSendsAreSpareAgainOncePosted) {
  const std::uint32_t len = std::min(a_->inline_post_limit(), a_->max_message());
  ASSERT_GT(len, a_->inline_threshold())
      << "the device takes no inline send beyond a descriptor's payload";
  std::vector<BufferId> held;
  for (BufferId b = kNoBuffer; a_->acquire_buffer(b) == Status::kOk;) held.push_back(b);
  const auto spare = static_cast<std::uint32_t>(held.size());
  ASSERT_GT(spare, 0u);
  for (std::uint32_t m = 0; m < spare; ++m) {
    auto bytes = a_->buffer(held[m]);
    for (std::uint32_t i = 0; i < len; ++i) bytes[i] = pattern(m, i);
    ASSERT_EQ(a_->send(ab_, held[m], len), Status::kOk);
  }
  EXPECT_EQ(a_->acquire_buffer(held[0]), Status::kNoResource) << "all buffers are queued";
  ASSERT_GE(a_->poll(), static_cast<int>(spare));  // posts every one
  std::uint32_t again = 0;
  for (BufferId b = kNoBuffer; a_->acquire_buffer(b) == Status::kOk;) ++again;
  EXPECT_EQ(again, spare) << "buffers posted inline must be spare once posted";
  EXPECT_EQ(a_->stats().inline_sent, spare);
  for (std::uint32_t m = 0; m < spare; ++m) ASSERT_NO_FATAL_FAILURE(receive_buffer(m, len));
  EXPECT_EQ(a_->stats().send_errors, 0u);
}

// A buffer send above inline_post_limit() is posted from the segment. Alone on the send queue it
// takes post_lone, which must signal it as the post-list loop does: no later send comes to carry
// a completion, and without one its buffer would never be spare again.
TEST_P(EndpointTest, ALoneBufferSendPostedFromTheSegmentComesBackWithNothingAfterIt) {
  const std::uint32_t len = std::min(a_->inline_post_limit() + 64, a_->max_message());
  ASSERT_GT(len, a_->inline_post_limit()) << "no buffer send beyond the inline limit here";
  for (int i = 0; i < 4; ++i) {  // reposts done before counting
    ASSERT_GE(a_->poll(), 0);
    ASSERT_GE(b_->poll(), 0);
  }
  const std::uint32_t spare = a_->spare_buffers();
  const std::uint64_t copied = a_->stats().inline_sent, sent = a_->stats().sent;
  for (std::uint32_t m = 0; m < 3; ++m) {  // one at a time: each is the only send
    const std::uint64_t doorbells = a_->stats().doorbells;
    send(m, len);
    ASSERT_GE(a_->poll(), 1) << "message " << m;
    EXPECT_EQ(a_->stats().doorbells - doorbells, 1u) << "message " << m << " posted by itself";
    ASSERT_NO_FATAL_FAILURE(receive_buffer(m, len));
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (a_->spare_buffers() < spare && std::chrono::steady_clock::now() < deadline)
      ASSERT_GE(a_->poll(), 0);
    ASSERT_GE(a_->spare_buffers(), spare) << "message " << m << "'s buffer never came back";
  }
  EXPECT_EQ(a_->stats().inline_sent, copied) << "posted from the segment, not copied";
  EXPECT_EQ(a_->stats().sent - sent, 3u);
  EXPECT_EQ(a_->stats().send_errors, 0u);
}

TEST_P(EndpointTest, DoorbellBatchingPostsManyDescriptorsWithOneCall) {
  constexpr std::uint32_t kN = 16;
  std::byte msg[8] = {};
  for (std::uint32_t m = 0; m < kN; ++m) {
    msg[0] = static_cast<std::byte>(m);
    ASSERT_EQ(a_->send_inline(ab_, msg), Status::kOk);
  }
  std::uint64_t before = a_->stats().doorbells;
  ASSERT_GE(a_->poll(), static_cast<int>(kN));
  EXPECT_EQ(a_->stats().doorbells - before, 1u)
      << "16 queued descriptors should take one post_send";
  EXPECT_EQ(a_->stats().sent, kN);
  for (std::uint32_t m = 0; m < kN; ++m) {
    Descriptor d;
    ASSERT_TRUE(wait_receive(*a_, *b_, d))
        << "message " << m << ": b dropped " << b_->stats().unknown_tag_drops
        << " as unknown, received " << b_->stats().received << ", a sent " << a_->stats().sent
        << ", send errors " << a_->stats().send_errors;
    EXPECT_EQ(d.data[0], static_cast<std::byte>(m));
  }
}

TEST_P(EndpointTest, BadInputIsRefusedAndChangesNothing) {
  BufferId own = kNoBuffer;
  ASSERT_EQ(a_->acquire_buffer(own), Status::kOk);
  EndpointStats before = a_->stats();
  std::byte small[4] = {};
  std::byte big[Descriptor::kInlineBytes + 1] = {};
  EXPECT_EQ(a_->send(ab_ + 100, own, 10), Status::kNotFound);
  EXPECT_EQ(a_->send_inline(ab_ + 100, small), Status::kNotFound);
  EXPECT_EQ(a_->send(ab_, own, 0), Status::kInvalidArgument);
  EXPECT_EQ(a_->send(ab_, own, a_->max_message() + 1), Status::kInvalidArgument);
  EXPECT_EQ(a_->send(ab_, 100000, 10), Status::kInvalidArgument);
  EXPECT_EQ(a_->send_inline(ab_, big), Status::kInvalidArgument);
  EXPECT_EQ(a_->send_inline(ab_, {}), Status::kInvalidArgument);
  // A buffer the application does not own: the other spare one it never took, and a receive buffer.
  BufferId other = own == 0 ? 1 : 0;
  EXPECT_EQ(a_->send(ab_, other, 10), Status::kInvalidState);
  EXPECT_EQ(a_->release(other), Status::kInvalidState);
  EXPECT_EQ(a_->release(100000), Status::kInvalidArgument);
  Descriptor d;
  EXPECT_EQ(a_->receive(d), Status::kNoResource);
  EXPECT_TRUE(a_->buffer(100000).empty());
  EXPECT_EQ(a_->poll(), 0) << "a refused call queued something";
  EXPECT_EQ(a_->stats().sent, before.sent);
  // Sending the owned buffer, then releasing or sending it again, is refused: the endpoint owns it.
  ASSERT_EQ(a_->send(ab_, own, 10), Status::kOk);
  EXPECT_EQ(a_->send(ab_, own, 10), Status::kInvalidState);
  EXPECT_EQ(a_->release(own), Status::kInvalidState);
  EXPECT_TRUE(wait_receive(*a_, *b_, d));
}

TEST_P(EndpointTest, ReceivedBufferIsTheApplicationsUntilReleasedOnce) {
  BufferId buf = kNoBuffer;
  ASSERT_EQ(a_->acquire_buffer(buf), Status::kOk);
  std::memset(a_->buffer(buf).data(), 0x5c, 1000);
  ASSERT_EQ(a_->send(ab_, buf, 1000), Status::kOk);
  Descriptor d;
  ASSERT_TRUE(wait_receive(*a_, *b_, d));
  ASSERT_FALSE(d.is_inline());
  EXPECT_EQ(b_->buffer(d.buffer)[999], std::byte{0x5c});
  ASSERT_EQ(b_->release(d.buffer), Status::kOk);
  EXPECT_EQ(b_->release(d.buffer), Status::kInvalidState) << "double release";
  // The sender's buffer comes back once the send completes.
  auto deadline = std::chrono::steady_clock::now() + 5s;
  BufferId again = kNoBuffer;
  while (std::chrono::steady_clock::now() < deadline && again != buf) {
    (void)a_->poll();
    for (BufferId tmp; a_->acquire_buffer(tmp) == Status::kOk;)
      if (tmp == buf) again = tmp;
  }
  EXPECT_EQ(again, buf) << "the sent buffer never returned to the spare pool";
}

// Released buffers wait on the free queue. While polls bring arrivals they go back in batches of
// repost_batch() (free_queue_depth / 8, here 8), one post list per batch; a poll that brings none
// reposts whatever waits, in time the endpoint would spend idle. Each arrival here is a small
// message, whose buffer goes back to the free queue inside the poll that reaps it, and is on b's
// completion queue before that poll (b's notify fd turned readable), so each poll below reaps it.
// The messages go by SEND: RC on a channel without a ring (a ring arrival takes no buffer).
TEST_P(EndpointTest, FreedBuffersGoBackInBatchesWhileBusyAndAtOnceWhenIdle) {
  if (GetParam() == Transport::kRc)
    std::tie(ab_, ba_) = connect_endpoints(*a_, *b_, {.ring = false});
  ASSERT_FALSE(a_->ring_channel(ab_));
  ASSERT_EQ(b_->repost_batch(), 8u);
  (void)b_->poll();  // idle: whatever set-up left waiting goes back now
  const std::uint64_t reposts = b_->stats().reposts;
  auto arrive = [&](std::uint32_t m) {
    ASSERT_EQ(b_->arm(), Status::kOk);
    send(m, 8);
    ASSERT_GT(a_->poll(), 0);  // posts it
    pollfd p{b_->notify_fd(), POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 10000), 1) << "message " << m << ": no completion event within 10 s";
    const std::uint64_t received = b_->stats().inline_received;
    ASSERT_GT(b_->poll(), 0);
    ASSERT_EQ(b_->stats().inline_received, received + 1) << "message " << m << " was not reaped";
    Descriptor d;
    ASSERT_EQ(b_->receive(d), Status::kOk);
    ASSERT_TRUE(d.is_inline());
    for (std::uint32_t i = 0; i < 8; ++i) ASSERT_EQ(d.data[i], pattern(m, i)) << "message " << m;
  };
  for (std::uint32_t m = 0; m < 7; ++m) {
    arrive(m);
    if (HasFatalFailure()) return;
    EXPECT_EQ(b_->stats().reposts, reposts) << m + 1 << " freed buffers went back before a batch";
  }
  arrive(7);
  if (HasFatalFailure()) return;
  EXPECT_EQ(b_->stats().reposts, reposts + 1)
      << "eight freed buffers should go back with one post list";
  arrive(8);
  if (HasFatalFailure()) return;
  EXPECT_EQ(b_->stats().reposts, reposts + 1) << "a ninth freed buffer went back alone while busy";
  EXPECT_EQ(b_->poll(), 1)
      << "an idle poll should repost the one buffer waiting, and do nothing else";
  EXPECT_EQ(b_->stats().reposts, reposts + 2);
  EXPECT_EQ(b_->poll(), 0) << "nothing left to do";
}

TEST_P(EndpointTest, ClosedChannelRefusesSends) {
  const std::uint64_t changes = a_->channel_changes();
  ASSERT_EQ(a_->close_channel(ab_), Status::kOk);
  EXPECT_EQ(a_->channel_status(ab_), Status::kClosed);
  EXPECT_EQ(a_->channel_changes(), changes + 1) << "a close is a change of a channel";
  std::byte msg[4] = {};
  EXPECT_EQ(a_->send_inline(ab_, msg), Status::kClosed);
  EXPECT_EQ(a_->close_channel(ab_), Status::kClosed);
  EXPECT_EQ(a_->close_channel(ab_ + 50), Status::kNotFound);
  EXPECT_EQ(a_->channel_changes(), changes + 1) << "refused closes change nothing";
}

INSTANTIATE_TEST_SUITE_P(Transports, EndpointTest,
                         ::testing::Values(Transport::kRc, Transport::kUd),
                         [](const auto& p) { return p.param == Transport::kRc ? "RC" : "UD"; });

// UD tag protection: a datagram from a QP that is no channel of the receiver is dropped and
// counted, never delivered.
TEST(EndpointUd, UnknownTagIsDroppedAndCounted) {
  UNET_REQUIRE_DEVICE();
  Endpoint a(config(Transport::kUd)), b(config(Transport::kUd)), stranger(config(Transport::kUd));
  auto [ab, ba] = connect_endpoints(a, b);
  // The stranger learns b's address (a UD endpoint's offer is its QP) but b never accepts it.
  ChannelOffer ob = b.offer_channel();
  ChannelOffer os = stranger.offer_channel();
  ChannelId sb = stranger.accept_offer(os, ob.local);
  std::byte msg[8] = {std::byte{1}};
  ASSERT_EQ(stranger.send_inline(sb, msg), Status::kOk);
  auto deadline = std::chrono::steady_clock::now() + 5s;
  Descriptor d;
  while (b.stats().unknown_tag_drops == 0 && std::chrono::steady_clock::now() < deadline) {
    (void)stranger.poll();
    (void)b.poll();
  }
  EXPECT_EQ(b.stats().unknown_tag_drops, 1u);
  EXPECT_EQ(b.receive(d), Status::kNoResource) << "a stranger's datagram was delivered";
  // The real channel still works.
  msg[0] = std::byte{2};
  ASSERT_EQ(a.send_inline(ab, msg), Status::kOk);
  ASSERT_TRUE(wait_receive(a, b, d));
  EXPECT_EQ(d.channel, ba);
  EXPECT_EQ(d.data[0], std::byte{2});
}

// RC: arrivals on two channels of one endpoint are told apart by their QP number (the tag).
TEST(EndpointRc, TwoChannelsShareOneFreeQueueAndAreDemultiplexed) {
  UNET_REQUIRE_DEVICE();
  Endpoint hub(config(Transport::kRc)), x(config(Transport::kRc)), y(config(Transport::kRc));
  auto [hx, xh] = connect_endpoints(hub, x);
  auto [hy, yh] = connect_endpoints(hub, y);
  ASSERT_NE(hx, hy);
  std::byte mx[4] = {std::byte{'x'}}, my[4] = {std::byte{'y'}};
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(x.send_inline(xh, mx), Status::kOk);
    ASSERT_EQ(y.send_inline(yh, my), Status::kOk);
  }
  int from_x = 0, from_y = 0;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (from_x + from_y < 20 && std::chrono::steady_clock::now() < deadline) {
    (void)x.poll();
    (void)y.poll();
    (void)hub.poll();
    for (Descriptor d; hub.receive(d) == Status::kOk;) {
      if (d.channel == hx) {
        EXPECT_EQ(d.data[0], std::byte{'x'});
        ++from_x;
      } else {
        EXPECT_EQ(d.channel, hy);
        EXPECT_EQ(d.data[0], std::byte{'y'});
        ++from_y;
      }
    }
  }
  EXPECT_EQ(from_x, 10);
  EXPECT_EQ(from_y, 10);
}

// RC peer failure: when a peer endpoint disappears, its channel fails with the transport's error,
// the outstanding sends complete with that error, and the endpoint's other channels keep working.
TEST(EndpointRc, PeerFailureFailsOnlyItsChannel) {
  UNET_REQUIRE_DEVICE();
  EndpointConfig c = config(Transport::kRc);
  Endpoint hub(c), y(c);
  auto x = std::make_unique<Endpoint>(c);
  auto [hx, xh] = connect_endpoints(hub, *x);
  auto [hy, yh] = connect_endpoints(hub, y);
  x.reset();  // the peer is gone: its QPs are destroyed
  std::byte m[4] = {std::byte{7}};
  for (int i = 0; i < 3; ++i) ASSERT_EQ(hub.send_inline(hx, m), Status::kOk);
  OpCompletion failed[3];
  int failures = 0;
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (failures < 3 && std::chrono::steady_clock::now() < deadline) {
    (void)hub.poll();
    (void)y.poll();
    while (failures < 3 && hub.completion(failed[failures]) == Status::kOk) ++failures;
  }
  ASSERT_EQ(failures, 3) << "outstanding sends to the dead peer did not all complete";
  EXPECT_EQ(failed[0].status, Status::kRetryExceeded) << to_string(failed[0].status);
  EXPECT_EQ(failed[1].status, Status::kFlushed);
  EXPECT_EQ(failed[2].status, Status::kFlushed);
  for (const auto& f : failed) EXPECT_EQ(f.channel, hx);
  EXPECT_EQ(hub.channel_status(hx), Status::kClosed);
  EXPECT_EQ(hub.send_inline(hx, m), Status::kClosed) << "later sends fail fast";
  // The other channel is untouched.
  ASSERT_EQ(hub.channel_status(hy), Status::kOk);
  m[0] = std::byte{8};
  ASSERT_EQ(hub.send_inline(hy, m), Status::kOk);
  Descriptor d;
  ASSERT_TRUE(wait_receive(hub, y, d));
  EXPECT_EQ(d.channel, yh);
  EXPECT_EQ(d.data[0], std::byte{8});
}

// probe(): a zero-byte RDMA WRITE. A live peer's QP acknowledges it without the peer's software
// (the peer never polls here, and nothing reaches its receive queue) or a receive buffer; once
// the peer is gone, a probe makes its channel fail within the QP's retries. Bad calls change
// nothing.
TEST(EndpointRc, ProbeFindsADeadPeerAndCostsALiveOneNothing) {
  UNET_REQUIRE_DEVICE();
  EndpointConfig c = config(Transport::kRc);
  Endpoint hub(c);
  auto x = std::make_unique<Endpoint>(c);
  auto [hx, xh] = connect_endpoints(hub, *x);
  // More probes than x has receive buffers posted: none takes one.
  const int n = static_cast<int>(c.free_queue_depth) + 8;
  for (int sent = 0; sent < n;) {
    const Status s = hub.probe(hx);
    ASSERT_TRUE(s == Status::kOk || s == Status::kNoResource) << s;
    sent += s == Status::kOk;
    ASSERT_GE(hub.poll(), 0);
  }
  const auto settle = std::chrono::steady_clock::now() + 1s;  // past any ack timeout
  while (std::chrono::steady_clock::now() < settle) ASSERT_GE(hub.poll(), 0);
  EXPECT_EQ(hub.stats().probes, static_cast<std::uint64_t>(n));
  EXPECT_EQ(hub.stats().send_errors, 0u);
  EXPECT_EQ(hub.channel_status(hx), Status::kOk);
  ASSERT_GE(x->poll(), 0);
  Descriptor d;
  EXPECT_EQ(x->receive(d), Status::kNoResource) << "a probe reaches no receive queue";
  EXPECT_EQ(x->stats().received, 0u);
  // Bad calls: refused, nothing queued.
  Endpoint ud(config(Transport::kUd));
  EXPECT_EQ(ud.probe(0), Status::kInvalidState);
  EXPECT_EQ(hub.probe(hx + 5), Status::kNotFound);
  EXPECT_EQ(hub.stats().probes, static_cast<std::uint64_t>(n));
  // The peer goes away: the next probe fails the channel.
  x.reset();
  const std::uint64_t changes = hub.channel_changes();
  ASSERT_EQ(hub.probe(hx), Status::kOk);
  const auto t0 = std::chrono::steady_clock::now();
  while (hub.channel_status(hx) == Status::kOk && std::chrono::steady_clock::now() - t0 < 10s)
    ASSERT_GE(hub.poll(), 0);
  EXPECT_EQ(hub.channel_status(hx), Status::kClosed);
  EXPECT_EQ(hub.channel_changes(), changes + 1) << "a failed channel is a change";
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
  OpCompletion failed;
  ASSERT_EQ(hub.completion(failed), Status::kOk);
  EXPECT_EQ(failed.status, Status::kRetryExceeded) << failed.status;
  EXPECT_EQ(failed.channel, hx);
  EXPECT_EQ(hub.probe(hx), Status::kClosed);
}

// Closing one channel leaves the endpoint's other channels working.
TEST(EndpointRc, ClosingAChannelDoesNotDisturbTheOthers) {
  UNET_REQUIRE_DEVICE();
  Endpoint hub(config(Transport::kRc)), x(config(Transport::kRc)), y(config(Transport::kRc));
  auto [hx, xh] = connect_endpoints(hub, x);
  auto [hy, yh] = connect_endpoints(hub, y);
  ASSERT_EQ(hub.close_channel(hx), Status::kOk);
  std::byte m[4] = {std::byte{1}};
  ASSERT_EQ(y.send_inline(yh, m), Status::kOk);
  Descriptor d;
  ASSERT_TRUE(wait_receive(y, hub, d));
  EXPECT_EQ(d.channel, hy);
  ASSERT_EQ(hub.send_inline(hy, m), Status::kOk);
  ASSERT_TRUE(wait_receive(hub, y, d));
  EXPECT_EQ(d.channel, yh);
  EXPECT_EQ(hub.stats().unknown_tag_drops, 0u);
}

// RC channels can be set up through rdma_cm as well as out of band, and join the same free queue.
TEST(EndpointRc, ChannelsThroughRdmaCm) {
  UNET_REQUIRE_DEVICE();
  UNET_REQUIRE_CM_ADDRESS();
  const std::string addr = test::cm_address();
  Endpoint server(config(Transport::kRc)), client(config(Transport::kRc));
  std::uint16_t port = server.listen_cm(addr, 0);
  ASSERT_NE(port, 0);
  // Its waits take any timeout: with none at all, down to milliseconds::min(), an accept gives up
  // at once (ETIMEDOUT) rather than overflowing its deadline.
  for (const auto t : {std::chrono::milliseconds::min(), -5ms}) {
    try {
      (void)server.accept_cm(t);
      FAIL() << "accepted nothing";
    } catch (const verbs::Error& e) {
      EXPECT_EQ(e.error_number(), ETIMEDOUT) << e.what();
    }
  }
  ChannelId sc = kNoChannel;
  std::thread acceptor(
      [&] { sc = server.accept_cm(10s); });  // the server is used by this thread only
  ChannelId cc = client.connect_cm(addr, port, 10s);
  acceptor.join();
  ASSERT_NE(sc, kNoChannel);
  std::byte m[4] = {std::byte{'c'}};
  ASSERT_EQ(client.send_inline(cc, m), Status::kOk);
  Descriptor d;
  ASSERT_TRUE(wait_receive(client, server, d));
  EXPECT_EQ(d.channel, sc);
  EXPECT_EQ(d.data[0], std::byte{'c'});
  m[0] = std::byte{'s'};
  ASSERT_EQ(server.send_inline(sc, m), Status::kOk);
  ASSERT_TRUE(wait_receive(server, client, d));
  EXPECT_EQ(d.channel, cc);
  EXPECT_EQ(d.data[0], std::byte{'s'});
  // Closing an rdma_cm channel disconnects it: the server, serving its channels, answers and
  // closes its end; later sends on either side are refused, and a second close says so.
  int peer_closed = 0;
  std::thread server_side([&] {  // the server is used by this thread only until the join
    for (auto end = std::chrono::steady_clock::now() + 10s;
         !peer_closed && std::chrono::steady_clock::now() < end;) {
      (void)server.poll();
      peer_closed = server.service_channels();
    }
  });
  EXPECT_EQ(client.close_channel(cc), Status::kOk);
  server_side.join();
  EXPECT_EQ(peer_closed, 1);
  EXPECT_EQ(server.channel_status(sc), Status::kClosed);
  EXPECT_EQ(server.send_inline(sc, m), Status::kClosed);
  EXPECT_EQ(client.send_inline(cc, m), Status::kClosed);
  EXPECT_EQ(client.close_channel(cc), Status::kClosed);
  EXPECT_EQ(server.service_channels(), 0);
  // Nothing listening: connect fails within its timeout, with an error naming rdma_cm.
  Endpoint lonely(config(Transport::kRc));
  EXPECT_THROW((void)lonely.connect_cm(addr, static_cast<std::uint16_t>(port + 1), 2s),
               verbs::Error);
  EXPECT_THROW((void)lonely.accept_cm(100ms), verbs::Error) << "accept without listen";
}

// An rdma_cm channel knows the peer's buffer size from the connection's private data, as an
// offer line states it, with a ring grant before it or without one: the largest message the peer
// takes arrives, one byte more is refused at the sender.
TEST(EndpointRc, AnRdmaCmChannelSendsNoMoreThanThePeersBuffersHold) {
  UNET_REQUIRE_DEVICE();
  UNET_REQUIRE_CM_ADDRESS();
  const std::string addr = test::cm_address();
  for (const bool ring : {true, false}) {
    SCOPED_TRACE(ring ? "ring channel" : "no ring");
    EndpointConfig small = config(Transport::kRc);
    small.buffer_bytes = 512;
    Endpoint server(small), client(config(Transport::kRc));
    const std::uint16_t port = server.listen_cm(addr, 0);
    ChannelOptions options;
    options.ring = ring;
    ChannelId sc = kNoChannel;
    std::thread acceptor([&] { sc = server.accept_cm(10s, options); });
    const ChannelId cc = client.connect_cm(addr, port, 10s, options);
    acceptor.join();
    ASSERT_NE(sc, kNoChannel);
    EXPECT_EQ(client.ring_channel(cc), ring);
    EXPECT_EQ(client.max_message(cc), 512u) << "the server's buffer size bounds the client";
    EXPECT_EQ(server.max_message(sc), 512u) << "its own is the smaller";
    const std::uint64_t sent = client.stats().sent;
    EXPECT_EQ(test::send_bytes(client, cc, test::pattern(513, 1)), Status::kInvalidArgument);
    EXPECT_EQ(client.stats().sent, sent) << "a refused send went out";
    for (std::uint64_t seed = 2; seed < 4; ++seed) {
      const auto m = test::pattern(512, seed);
      ASSERT_EQ(test::send_bytes(client, cc, m), Status::kOk);
      Descriptor d;
      ASSERT_TRUE(wait_receive(client, server, d)) << "the largest message was lost";
      EXPECT_EQ(d.channel, sc);
      EXPECT_EQ(test::take(server, d), m);
    }
    EXPECT_EQ(server.stats().recv_errors, 0u);
    EXPECT_EQ(client.stats().send_errors, 0u);
  }
}

// rdma_cm takes the service level from the path it resolves: an endpoint configured with one
// refuses rdma_cm channels with EINVAL before any connection is tried, instead of dropping it.
TEST(EndpointRc, RdmaCmRefusesAServiceLevelItCannotApply) {
  UNET_REQUIRE_DEVICE();
  EndpointConfig c = config(Transport::kRc);
  c.service_level = 3;
  Endpoint ep(c);
  for (int step = 0; step < 2; ++step) {
    try {
      if (step == 0)
        (void)ep.listen_cm("127.0.0.1", 0);
      else
        (void)ep.connect_cm("127.0.0.1", 1, 1s);
      FAIL() << "step " << step << " took a service level rdma_cm ignores";
    } catch (const verbs::Error& e) {
      EXPECT_EQ(e.error_number(), EINVAL) << e.what();
    }
  }
  EXPECT_EQ(ep.stats().sent, 0u);
}

}  // namespace
}  // namespace unet::core
