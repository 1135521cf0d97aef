// Device: ring channels (RC) — messages RDMA-written into the receiver's ring and found by
// polling, beside SEND/RECV fallbacks on the same channel. Every test checks delivered bytes,
// order and counters.
#include <gtest/gtest.h>
#include <poll.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <random>
#include <thread>
#include <vector>

#include "endpoint_support.h"
#include "netem.h"
#include "ring_offer.h"
#include "unet/core/endpoint.h"
#include "unet/core/remote_token.h"
#include "unet/verbs/completion_queue.h"
#include "unet/verbs/connection_info.h"
#include "unet/verbs/connection_manager.h"
#include "unet/verbs/device.h"
#include "unet/verbs/error.h"
#include "unet/verbs/protection_domain.h"

namespace unet::core {
namespace {

using namespace std::chrono_literals;
using test::connect_endpoints;

constexpr std::uint32_t kSlots = 32, kSlotBytes = 256;  // small: many laps, credits run out often
constexpr std::uint32_t kCapacity = kSlotBytes - 24;

EndpointConfig ring_config(std::uint8_t rnr_retry = 7) {
  EndpointConfig c = test::endpoint_config(Transport::kRc, 256);
  c.free_queue_depth = 128;
  c.ring_slots = kSlots;
  c.ring_slot_bytes = kSlotBytes;
  c.rnr_retry = rnr_retry;
  return c;
}

std::byte pattern(std::uint64_t msg, std::uint32_t i) {
  return static_cast<std::byte>(msg * 167 + i * 13 + 5);
}

// Messages before this one fit a slot: enough to pass the 16-bit ring sequence wrap quickly.
constexpr std::uint64_t kRingOnly = 70000;

// One direction of traffic: the sizes come from a seeded generator both ends replay, so the
// receiver knows the length and bytes of message n without being told.
struct Direction {
  Endpoint& from;
  Endpoint& to;
  ChannelId out, in;
  std::mt19937_64 sizes_tx, sizes_rx;
  std::uint64_t sent = 0, received = 0;
  std::deque<BufferId> held;  // arrivals the receiver keeps a while (holding ring slots back)
  std::uint64_t ring_only;    // messages before this one fit a slot
  Direction(Endpoint& f, Endpoint& t, ChannelId o, ChannelId i, std::uint64_t seed,
            std::uint64_t fit = kRingOnly)
      : from(f), to(t), out(o), in(i), sizes_tx(seed), sizes_rx(seed), ring_only(fit) {}
  std::uint32_t size(std::mt19937_64& g, std::uint64_t n) const {
    const std::uint64_t r = g();
    if (n < ring_only) return 1 + static_cast<std::uint32_t>((r >> 8) % kCapacity);
    // Mostly ring-sized, some larger (fallback), a few at the edges.
    switch (r % 16) {
      case 0:
        return 1;
      case 1:
        return kCapacity;
      case 2:
        return kCapacity + 1;
      case 3:
      case 4:
        return kCapacity + 1 + static_cast<std::uint32_t>((r >> 8) % 1500);
      default:
        return 1 + static_cast<std::uint32_t>((r >> 8) % kCapacity);
    }
  }
};

// Sends direction d's next message. False on back-pressure (nothing sent).
bool send_next(Direction& d) {
  std::mt19937_64 peek = d.sizes_tx;
  const std::uint32_t len = d.size(peek, d.sent);
  Status s;
  if (len <= d.from.inline_threshold()) {
    std::byte tmp[Descriptor::kInlineBytes];
    for (std::uint32_t i = 0; i < len; ++i) tmp[i] = pattern(d.sent, i);
    s = d.from.send_inline(d.out, {tmp, len});
  } else {
    BufferId b = kNoBuffer;
    if ((s = d.from.acquire_buffer(b)) == Status::kOk) {
      auto bytes = d.from.buffer(b);
      for (std::uint32_t i = 0; i < len; ++i) bytes[i] = pattern(d.sent, i);
      s = d.from.send(d.out, b, len);
      if (s != Status::kOk) {
        EXPECT_EQ(d.from.release(b), Status::kOk);  // unsent: spare again
      }
    }
  }
  if (s == Status::kNoResource || s == Status::kClosed) return false;
  EXPECT_EQ(s, Status::kOk);
  d.sizes_tx = peek;
  ++d.sent;
  return true;
}

// Takes every arrival of direction d, checking length, bytes and order; keeps some a while.
void take_arrivals(Direction& d, std::mt19937& rng) {
  for (Descriptor a; d.to.receive(a) == Status::kOk;) {
    ASSERT_EQ(a.channel, d.in);
    const std::uint32_t len = d.size(d.sizes_rx, d.received);
    ASSERT_EQ(a.length, len) << "message " << d.received << ": lost, repeated or out of order";
    const std::byte* p = a.is_inline() ? a.data : d.to.buffer(a.buffer).data();
    for (std::uint32_t i = 0; i < len; ++i)
      ASSERT_EQ(p[i], pattern(d.received, i)) << "message " << d.received;
    ++d.received;
    if (!a.is_inline()) {
      if (d.received > d.ring_only && rng() % 8 == 0)
        d.held.push_back(a.buffer);
      else
        ASSERT_EQ(d.to.release(a.buffer), Status::kOk);
    }
  }
  while (!d.held.empty() && (d.held.size() > 6 || rng() % 3 == 0)) {
    ASSERT_EQ(d.to.release(d.held.front()), Status::kOk);
    d.held.pop_front();
  }
}

// Runs directions x (a to b) and y (b to a) at once until each has delivered `messages`, checked,
// or `limit` passed; then gives back every held slot.
void exchange(Direction& x, Direction& y, std::uint64_t messages, std::chrono::seconds limit) {
  std::mt19937 rng(5);
  const std::uint64_t window = 24;  // < free queue (128) less the repost batch and held buffers
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while ((x.received < messages || y.received < messages) &&
         std::chrono::steady_clock::now() < deadline) {
    for (Direction* d : {&x, &y})
      for (int k = 0; k < 8 && d->sent < messages && d->sent - d->received < window; ++k)
        if (!send_next(*d)) break;
    ASSERT_GE(x.from.poll(), 0);
    ASSERT_GE(y.from.poll(), 0);
    take_arrivals(x, rng);
    take_arrivals(y, rng);
    if (::testing::Test::HasFatalFailure()) return;
  }
  for (Direction* d : {&x, &y})
    while (!d->held.empty()) {
      ASSERT_EQ(d->to.release(d->held.front()), Status::kOk);
      d->held.pop_front();
    }
  ASSERT_EQ(x.received, messages);
  ASSERT_EQ(y.received, messages);
}

// Both directions at once with rnr_retry 0 (a single overrun of a free queue would fail the
// channel): first kRingOnly messages that fit a slot (past the 16-bit sequence wrap), then random
// sizes from 1 to past the slot (SEND fallbacks) with the receivers holding some slots back, so
// credits run out and come back many times. A window keeps SENDs within the peer's free queue,
// as any flow control above core would.
TEST(RingChannel, TortureBothWaysByteExactInOrderAcrossRingAndFallback) {
  UNET_REQUIRE_DEVICE();
  const std::uint64_t messages = kRingOnly + test::env_amount("UNET_RING_TORTURE_MESSAGES", 30000);
  Endpoint a(ring_config(0)), b(ring_config(0));
  auto [ab, ba] = connect_endpoints(a, b);
  ASSERT_TRUE(a.ring_channel(ab));
  ASSERT_TRUE(b.ring_channel(ba));
  EXPECT_EQ(a.send_inline(ab, {}), Status::kInvalidArgument) << "zero bytes";
  Direction x(a, b, ab, ba, 11), y(b, a, ba, ab, 12);
  exchange(x, y, messages, 600s);
  if (HasFatalFailure()) return;
  for (Endpoint* e : {&a, &b}) {
    const EndpointStats& st = e->stats();
    EXPECT_EQ(st.send_errors, 0u);
    EXPECT_EQ(st.recv_overflow_drops, 0u);
    EXPECT_EQ(st.ring_protocol_errors, 0u);
    EXPECT_GT(st.ring_sent, 65536u) << "the 16-bit sequence numbers wrapped";
    EXPECT_GT(st.ring_fallbacks, (messages - kRingOnly) / 8)
        << "larger messages and no-credit moments went by SEND";
    EXPECT_GT(st.ring_credit_writes, 0u);
    EXPECT_EQ(st.sent, messages) << "every message was posted, by ring or SEND";
    EXPECT_EQ(st.ring_sent + st.ring_fallbacks, messages);
  }
  EXPECT_EQ(a.stats().ring_received, b.stats().ring_sent);
  EXPECT_EQ(b.stats().ring_received, a.stats().ring_sent);
  EXPECT_EQ(a.channel_status(ab), Status::kOk);
}

// The upcall sees ring arrivals too, in order with SEND arrivals, and a slot it keeps is the
// application's until release().
TEST(RingChannel, UpcallTakesRingArrivalsInOrder) {
  UNET_REQUIRE_DEVICE();
  Endpoint a(ring_config()), b(ring_config());
  auto [ab, ba] = connect_endpoints(a, b);
  std::vector<std::uint32_t> lengths;
  std::vector<BufferId> kept;
  b.set_upcall([&](const Descriptor& d) {
    EXPECT_EQ(d.channel, ba);
    const std::byte* p = d.is_inline() ? d.data : b.buffer(d.buffer).data();
    for (std::uint32_t i = 0; i < d.length; ++i)
      ASSERT_EQ(p[i], pattern(lengths.size(), i)) << "message " << lengths.size();
    lengths.push_back(d.length);
    if (!d.is_inline()) kept.push_back(d.buffer);
  });
  const std::uint32_t sizes[] = {8, 100, kCapacity, 2000, 40, 3000, 200, 1};
  for (std::uint32_t m = 0; m < 8; ++m) {
    BufferId buf = kNoBuffer;
    ASSERT_EQ(a.acquire_buffer(buf), Status::kOk);
    for (std::uint32_t i = 0; i < sizes[m]; ++i) a.buffer(buf)[i] = pattern(m, i);
    ASSERT_EQ(a.send(ab, buf, sizes[m]), Status::kOk);
  }
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (lengths.size() < 8 && std::chrono::steady_clock::now() < deadline) {
    (void)a.poll();
    (void)b.poll();
  }
  ASSERT_EQ(lengths, std::vector<std::uint32_t>(std::begin(sizes), std::end(sizes)));
  EXPECT_EQ(b.stats().ring_received, 6u) << "two were larger than a slot";
  for (BufferId k : kept) {
    EXPECT_FALSE(b.buffer(k).empty());
    EXPECT_EQ(b.release(k), Status::kOk);
    EXPECT_EQ(b.release(k), Status::kInvalidState) << "released twice";
    if (k >= b.config().buffers) {
      EXPECT_TRUE(b.buffer(k).empty()) << "a freed ring slot is nobody's buffer";
    }
  }
}

// The ring's key is the ring's alone: a peer writing past it, or with it after the channel
// closed, gets a remote access error and the ring's memory and traffic are untouched.
TEST(RingChannel, WritesOutsideTheRingAndAfterCloseAreRefused) {
  UNET_REQUIRE_DEVICE();
  Endpoint a(ring_config()), b(ring_config());
  EndpointConfig dc = ring_config();
  dc.mode = Mode::kDirectAccess;
  Endpoint attacker(dc);
  // b's offer names its ring: the key a peer writes it with.
  ChannelOffer oa = a.offer_channel(), ob = b.offer_channel();
  verbs::ConnectionInfo info;
  ASSERT_EQ(offer_info(ob.local, info), Status::kOk);
  ASSERT_EQ(info.memory.length, std::uint64_t{kSlots} * kSlotBytes + 64);
  const ChannelId ab = a.accept_offer(oa, ob.local), ba = b.accept_offer(ob, oa.local);
  RemoteToken ring{info.memory.addr, info.memory.length, info.memory.rkey, 0};

  std::vector<std::byte> junk(4096, std::byte{0xee});
  auto attack = [&](const RemoteToken& t, std::uint64_t offset, std::size_t len) {
    // A fresh channel each time: a refused write fails the attacker's channel.
    auto [xb, bx] = connect_endpoints(attacker, b, {.ring = false});
    EXPECT_EQ(attacker.write(xb, junk.data(), len, t, offset, 1), Status::kOk);
    OpCompletion c;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (attacker.completion(c) != Status::kOk && std::chrono::steady_clock::now() < deadline) {
      (void)attacker.poll();
      (void)b.poll();
    }
    (void)bx;
    return c.status;
  };
  // Past the end of the ring and its control block, by a byte and by a page.
  RemoteToken longer = ring;
  longer.length += 4096;
  EXPECT_EQ(attack(longer, ring.length - 8, 9), Status::kRemoteAccessError);
  EXPECT_EQ(attack(longer, ring.length, 4096), Status::kRemoteAccessError);
  RemoteToken before = ring;
  before.addr -= 64;
  before.length += 64;
  EXPECT_EQ(attack(before, 0, 64), Status::kRemoteAccessError);

  // The ring channel still carries checked traffic, by ring.
  for (std::uint32_t m = 0; m < 40; ++m) {
    std::byte msg[32];
    for (std::uint32_t i = 0; i < 32; ++i) msg[i] = pattern(m, i);
    ASSERT_EQ(a.send_inline(ab, msg), Status::kOk);
    Descriptor d;
    ASSERT_TRUE(test::wait_receive(a, b, d)) << m;
    ASSERT_EQ(d.channel, ba);
    for (std::uint32_t i = 0; i < d.length; ++i) ASSERT_EQ(d.data[i], pattern(m, i));
  }
  EXPECT_GE(b.stats().ring_received, 40u);
  EXPECT_EQ(b.stats().ring_protocol_errors, 0u);

  // After close the key is dead: the same write that would land in the ring is refused.
  ASSERT_EQ(b.close_channel(ba), Status::kOk);
  EXPECT_EQ(b.rings(), 0u) << "no slot held: the ring's memory went with the close";
  EXPECT_EQ(attack(ring, 0, 64), Status::kRemoteAccessError);
}

// A slot the application holds keeps the ring's memory after close; the last release frees it.
TEST(RingChannel, ClosedRingLivesUntilItsLastSlotIsReleased) {
  UNET_REQUIRE_DEVICE();
  Endpoint a(ring_config()), b(ring_config());
  auto [ab, ba] = connect_endpoints(a, b);
  EXPECT_EQ(b.rings(), 1u);
  BufferId buf = kNoBuffer;
  ASSERT_EQ(a.acquire_buffer(buf), Status::kOk);
  std::memset(a.buffer(buf).data(), 0x7c, 200);
  ASSERT_EQ(a.send(ab, buf, 200), Status::kOk);
  Descriptor d;
  ASSERT_TRUE(test::wait_receive(a, b, d));
  ASSERT_FALSE(d.is_inline());
  ASSERT_GE(d.buffer, b.config().buffers) << "read in place, in the ring";
  ASSERT_EQ(b.close_channel(ba), Status::kOk);
  EXPECT_EQ(b.rings(), 1u) << "the held slot keeps the ring";
  EXPECT_EQ(b.buffer(d.buffer)[199], std::byte{0x7c}) << "and its bytes";
  EXPECT_EQ(b.release(d.buffer), Status::kOk);
  EXPECT_EQ(b.rings(), 0u);
  EXPECT_EQ(b.release(d.buffer), Status::kInvalidState) << "gone with its ring";
  // A new channel gets a ring again.
  auto [ab2, ba2] = connect_endpoints(a, b);
  EXPECT_TRUE(b.ring_channel(ba2));
  (void)ab2;
}

// Close during traffic: every message b took is intact and in order; a's later sends fail and
// are reported, never hang; b keeps working on another channel.
TEST(RingChannel, CloseDuringTrafficLosesNothingSilently) {
  UNET_REQUIRE_DEVICE();
  Endpoint a(ring_config()), b(ring_config());
  auto [ab, ba] = connect_endpoints(a, b);
  Direction x(a, b, ab, ba, 21, 0);
  std::mt19937 rng(3);
  while (x.received < 2000) {
    for (int k = 0; k < 8 && x.sent - x.received < 48; ++k)
      if (!send_next(x)) break;
    ASSERT_GE(a.poll(), 0);
    ASSERT_GE(b.poll(), 0);
    take_arrivals(x, rng);
    if (HasFatalFailure()) return;
  }
  for (int k = 0; k < 20; ++k) (void)send_next(x);  // some in flight as the channel closes
  ASSERT_EQ(b.close_channel(ba), Status::kOk);
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (a.channel_status(ab) == Status::kOk && std::chrono::steady_clock::now() < deadline) {
    (void)send_next(x);
    (void)a.poll();
    (void)b.poll();
  }
  EXPECT_EQ(a.channel_status(ab), Status::kClosed)
      << "a's writes into a closed ring failed its channel";
  EXPECT_GT(a.stats().send_errors, 0u) << "and the failed sends were reported";
  std::byte m[8] = {};
  EXPECT_EQ(a.send_inline(ab, m), Status::kClosed);
  for (int k = 0; k < 10; ++k)
    ASSERT_GE(a.poll(), 0);  // the sends queued before the failure are reported
  while (!x.held.empty()) {
    ASSERT_EQ(b.release(x.held.front()), Status::kOk);
    x.held.pop_front();
  }
  EXPECT_EQ(b.rings(), 0u);
  // b still works.
  auto [ab2, ba2] = connect_endpoints(a, b);
  ASSERT_EQ(a.send_inline(ab2, m), Status::kOk);
  Descriptor d;
  ASSERT_TRUE(test::wait_receive(a, b, d));
  EXPECT_EQ(d.channel, ba2);
}

// wait() and notify_fd() wake for messages a peer would write into the ring: the sleeper tells
// its peers first, so they send by SEND while it sleeps. Each wake-up comes within a bound, and
// the receiver that polls again gets ring arrivals again.
TEST(RingChannel, WaitAndNotifyFdWakeForRingTrafficWithinABound) {
  UNET_REQUIRE_DEVICE();
  Endpoint a(ring_config()), b(ring_config());
  auto [ab, ba] = connect_endpoints(a, b);
  constexpr int kRounds = 30;
  std::atomic<int> asked{0};
  std::thread sender([&, ab = ab] {
    for (int m = 0; m < kRounds; ++m) {
      while (asked.load() <= m) {
        (void)a.poll();
        std::this_thread::yield();
      }
      std::this_thread::sleep_for(m % 3 == 0 ? 0ms : 5ms);  // sometimes before b is asleep
      std::byte msg[8];
      std::memcpy(msg, &m, sizeof m);
      while (a.send_inline(ab, msg) == Status::kNoResource) (void)a.poll();
      (void)a.poll();
    }
    const auto until = std::chrono::steady_clock::now() + 200ms;
    while (std::chrono::steady_clock::now() < until) (void)a.poll();
  });
  std::chrono::nanoseconds worst{0};
  for (int m = 0; m < kRounds; ++m) {
    asked.store(m + 1);
    const auto t0 = std::chrono::steady_clock::now();
    Descriptor d{};
    if (m % 2 == 0) {
      ASSERT_EQ(b.wait(10s), Status::kOk) << m;
    } else {  // an epoll-style loop on notify_fd()
      for (;;) {
        ASSERT_GE(b.poll(), 0);
        if (b.receive(d) == Status::kOk) break;
        ASSERT_EQ(b.arm(), Status::kOk);
        ASSERT_GE(b.poll(), 0);
        if (b.receive(d) == Status::kOk) break;
        pollfd p{b.notify_fd(), POLLIN, 0};
        ASSERT_EQ(::poll(&p, 1, 10000), 1) << "round " << m << ": no wake-up within 10 s";
      }
    }
    worst = std::max(worst, std::chrono::steady_clock::now() - t0);
    if (m % 2 == 0) {
      ASSERT_EQ(b.receive(d), Status::kOk);
    }
    int got;
    std::memcpy(&got, d.data, sizeof got);
    ASSERT_EQ(got, m);
  }
  sender.join();
  EXPECT_LT(worst, 2s) << "a wake-up took " << std::chrono::duration<double>(worst).count() << " s";
  EXPECT_GT(b.stats().ring_sleeps, 0u);
  EXPECT_GT(a.stats().ring_fallbacks, 0u) << "a sleeping b was sent to by SEND";
  // Awake again (polling), b gets ring arrivals.
  const std::uint64_t before = b.stats().ring_received;
  for (int i = 0; i < 100; ++i) (void)b.poll();
  std::byte msg[8] = {};
  ASSERT_EQ(a.send_inline(ab, msg), Status::kOk);
  Descriptor d;
  ASSERT_TRUE(test::wait_receive(a, b, d));
  EXPECT_EQ(b.stats().ring_received, before + 1);
}

// At most max_rings channels of an endpoint get a ring; later ones are plain and work the same.
TEST(RingChannel, PollingBoundCapsTheRings) {
  UNET_REQUIRE_DEVICE();
  EndpointConfig c = ring_config();
  c.max_rings = 2;
  Endpoint a(ring_config()), b(c);
  std::vector<std::pair<ChannelId, ChannelId>> chans;
  for (int i = 0; i < 4; ++i) chans.push_back(connect_endpoints(a, b));
  EXPECT_EQ(b.rings(), 2u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(b.ring_channel(chans[i].second), i < 2) << i;
    EXPECT_EQ(a.ring_channel(chans[i].first), i < 2) << "a ring channel needs both ends' rings";
  }
  EXPECT_EQ(a.rings(), 2u) << "a's rings for the plain channels went at accept";
  for (std::uint32_t m = 0; m < 4; ++m) {
    std::byte msg[4] = {std::byte(m), std::byte(m), std::byte(m), std::byte(m)};
    ASSERT_EQ(a.send_inline(chans[m].first, msg), Status::kOk);
    Descriptor d;
    ASSERT_TRUE(test::wait_receive(a, b, d));
    EXPECT_EQ(d.channel, chans[m].second);
    EXPECT_EQ(d.data[3], std::byte(m));
  }
  EXPECT_EQ(b.stats().ring_received, 2u);
}

// A SEND that arrives while the receive queue is full is dropped and counted
// (recv_overflow_drops), as on a plain channel; the ring messages sent before it, which wait in
// the ring for room, still come, in order (they once waited for good: the SEND's count had moved
// on past theirs).
TEST(RingChannel, RingMessagesBeforeASendDroppedForAFullReceiveQueueStillCome) {
  UNET_REQUIRE_DEVICE();
  EndpointConfig cb = ring_config();
  cb.recv_queue_depth = 8;
  Endpoint a(ring_config()), b(cb);
  auto [ab, ba] = connect_endpoints(a, b);
  const auto poll_for = [&](std::chrono::milliseconds t) {
    for (const auto end = std::chrono::steady_clock::now() + t;
         std::chrono::steady_clock::now() < end;) {
      ASSERT_GE(a.poll(), 0);
      ASSERT_GE(b.poll(), 0);
    }
  };
  // 16 small messages by ring while b's application receives nothing: the queue fills, the rest
  // wait in the ring.
  constexpr std::uint32_t kSmall = 16;
  for (std::uint32_t m = 0; m < kSmall; ++m) {
    const std::byte msg[4] = {std::byte(m), std::byte(m), std::byte(m), std::byte(m)};
    ASSERT_EQ(a.send_inline(ab, msg), Status::kOk);
  }
  poll_for(200ms);
  const std::uint64_t queued = b.stats().ring_received;
  ASSERT_LT(queued, kSmall) << "the receive queue is full";
  // One message larger than a slot, by SEND: dropped for the full queue.
  BufferId big = kNoBuffer;
  ASSERT_EQ(a.acquire_buffer(big), Status::kOk);
  ASSERT_EQ(a.send(ab, big, kCapacity + 1), Status::kOk);
  for (const auto end = std::chrono::steady_clock::now() + 5s;
       b.stats().recv_overflow_drops == 0 && std::chrono::steady_clock::now() < end;)
    poll_for(1ms);
  ASSERT_EQ(b.stats().recv_overflow_drops, 1u);
  // The application catches up: every small message comes, in order.
  for (std::uint32_t m = 0; m < kSmall; ++m) {
    Descriptor d;
    ASSERT_TRUE(m < queued ? b.receive(d) == Status::kOk : test::wait_receive(a, b, d, 2s))
        << "message " << m << " of " << kSmall << " (" << queued << " were queued; ring_received "
        << b.stats().ring_received << ", ring_protocol_errors " << b.stats().ring_protocol_errors
        << ")";
    EXPECT_EQ(d.channel, ba);
    EXPECT_EQ(d.data[0], std::byte(m));
  }
}

// rdma_cm channels are ring channels too: each end's grant rides in the private data of the
// connect request and of the accept. Checked traffic both ways by ring and by SEND; a peer that
// grants no ring makes a plain channel at both ends; the peer's disconnect stops the ring and
// frees it.
TEST(RingChannel, RdmaCmChannelsAreRingChannels) {
  UNET_REQUIRE_DEVICE();
  UNET_REQUIRE_CM_ADDRESS();
  const std::string addr = test::cm_address();
  Endpoint a(ring_config(0)), b(ring_config(0)), c(ring_config(0));
  const std::uint16_t port = b.listen_cm(addr, 0);
  ChannelId ba = kNoChannel;
  std::thread acceptor(
      [&] { ba = b.accept_cm(10s); });  // b is used by this thread only until the join
  const ChannelId ab = a.connect_cm(addr, port, 10s);
  acceptor.join();
  ASSERT_NE(ba, kNoChannel);
  ASSERT_TRUE(a.ring_channel(ab));
  ASSERT_TRUE(b.ring_channel(ba));
  const std::uint64_t messages = 6000;
  Direction x(a, b, ab, ba, 21, 2000), y(b, a, ba, ab, 22, 2000);
  exchange(x, y, messages, 300s);
  if (HasFatalFailure()) return;
  for (Endpoint* e : {&a, &b}) {
    const EndpointStats& st = e->stats();
    EXPECT_EQ(st.send_errors, 0u);
    EXPECT_EQ(st.ring_protocol_errors, 0u);
    EXPECT_GT(st.ring_sent, 2000u);
    EXPECT_GT(st.ring_fallbacks, 0u) << "messages larger than a slot went by SEND";
    EXPECT_EQ(st.ring_sent + st.ring_fallbacks, messages);
  }
  EXPECT_EQ(a.stats().ring_received, b.stats().ring_sent);
  EXPECT_EQ(b.stats().ring_received, a.stats().ring_sent);

  // A peer that grants no ring: a plain channel, and b's ring for it goes at once.
  ChannelId bc = kNoChannel;
  acceptor = std::thread([&] { bc = b.accept_cm(10s); });
  const ChannelId cb = c.connect_cm(addr, port, 10s, {.ring = false});
  acceptor.join();
  ASSERT_NE(bc, kNoChannel);
  EXPECT_FALSE(c.ring_channel(cb));
  EXPECT_FALSE(b.ring_channel(bc));
  EXPECT_EQ(b.rings(), 1u) << "only ab's";
  EXPECT_EQ(c.rings(), 0u);
  const std::uint64_t ring_sent = b.stats().ring_sent;
  std::byte m[16] = {std::byte{'p'}};
  ASSERT_EQ(c.send_inline(cb, m), Status::kOk);
  Descriptor d;
  ASSERT_TRUE(test::wait_receive(c, b, d));
  EXPECT_EQ(d.channel, bc);
  ASSERT_EQ(b.send_inline(bc, m), Status::kOk);
  ASSERT_TRUE(test::wait_receive(b, c, d));
  EXPECT_EQ(d.channel, cb);
  EXPECT_EQ(d.data[0], std::byte{'p'});
  EXPECT_EQ(b.stats().ring_sent, ring_sent) << "by SEND";

  // a closes: b answers the disconnect, and the ring of that channel is no longer b's.
  int closed = 0;
  std::thread server_side([&] {  // b is used by this thread only until the join
    for (auto end = std::chrono::steady_clock::now() + 10s;
         !closed && std::chrono::steady_clock::now() < end;) {
      (void)b.poll();
      closed = b.service_channels();
    }
  });
  EXPECT_EQ(a.close_channel(ab), Status::kOk);
  server_side.join();
  EXPECT_EQ(closed, 1);
  EXPECT_EQ(b.channel_status(ba), Status::kClosed);
  EXPECT_EQ(b.rings(), 0u);
  EXPECT_EQ(a.rings(), 0u);
  EXPECT_EQ(b.channel_status(bc), Status::kOk) << "the other channel carries on";
}

// A connect request whose private data starts with a ring grant but names an impossible ring is
// refused (EPROTO) with nothing kept; the listener then accepts a well-formed one.
TEST(RingChannel, RdmaCmMalformedGrantIsRefusedWithNothingKept) {
  UNET_REQUIRE_DEVICE();
  UNET_REQUIRE_CM_ADDRESS();
  const std::string addr = test::cm_address();
  Endpoint b(ring_config(0));
  const std::uint16_t port = b.listen_cm(addr, 0);
  auto ctx = verbs::Context::open(b.config().device);
  auto pd = std::make_shared<verbs::ProtectionDomain>(ctx);
  auto cq = std::make_shared<verbs::CompletionQueue>(ctx, 16);
  verbs::QpConfig qc;
  qc.send_cq = cq;
  verbs::CmParams bad;
  bad.timeout = 10s;
  bad.private_data.resize(ring::kGrantBytes);
  ring::encode_grant({{3, 1000}, 0x1000, 1},
                     std::span<std::byte, ring::kGrantBytes>(bad.private_data));
  int error = 0;
  std::thread acceptor([&] {  // b is used by this thread only until the join
    try {
      (void)b.accept_cm(10s);
    } catch (const verbs::Error& e) {
      error = e.error_number();
    }
  });
  std::unique_ptr<verbs::CmConnection> raw;
  try {
    raw = verbs::cm_connect(addr, port, pd, qc, bad);  // may be established before b refuses it
  } catch (const verbs::Error&) {
  }
  acceptor.join();
  EXPECT_EQ(error, EPROTO);
  EXPECT_EQ(b.rings(), 0u);
  raw.reset();

  Endpoint a(ring_config(0));
  ChannelId ba = kNoChannel;
  acceptor = std::thread([&] { ba = b.accept_cm(10s); });
  const ChannelId ab = a.connect_cm(addr, port, 10s);
  acceptor.join();
  ASSERT_NE(ba, kNoChannel);
  EXPECT_EQ(ba, 0u) << "the refused connection kept no channel";
  EXPECT_TRUE(b.ring_channel(ba));
  std::byte m[8] = {std::byte{'r'}};
  ASSERT_EQ(a.send_inline(ab, m), Status::kOk);
  Descriptor d;
  ASSERT_TRUE(test::wait_receive(a, b, d));
  EXPECT_EQ(d.channel, ba);
  EXPECT_EQ(b.stats().ring_received, 1u);
}

}  // namespace
}  // namespace unet::core
