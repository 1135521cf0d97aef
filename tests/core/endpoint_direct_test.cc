// Device: direct-access endpoints — RDMA WRITE/READ between application memory that nobody
// registered by hand, a bounded registration cache, grants and revocation (memory checked byte for
// byte), forged tokens refused by the peer's device, and failures reported per operation.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "endpoint_support.h"
#include "unet/core/endpoint.h"
#include "unet/verbs/device.h"

namespace unet::core {
namespace {

using namespace std::chrono_literals;

EndpointConfig direct_config(std::size_t max_pinned = 64u << 20) {
  EndpointConfig c = test::endpoint_config(Transport::kRc, 64);
  c.mode = Mode::kDirectAccess;
  c.max_pinned_bytes = max_pinned;
  return c;
}

void fill(std::vector<std::uint8_t>& v, std::uint8_t seed) {
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<std::uint8_t>(seed + i * 13 + (i >> 12));
}
bool same(const std::uint8_t* p, const std::vector<std::uint8_t>& v) {
  return std::memcmp(p, v.data(), v.size()) == 0;
}

class Direct : public ::testing::Test {
 protected:
  void SetUp() override {
    UNET_REQUIRE_DEVICE();
    a_ = std::make_unique<Endpoint>(direct_config(pinned_));
    b_ = std::make_unique<Endpoint>(direct_config());
    std::tie(ab_, ba_) = test::connect_endpoints(*a_, *b_);
  }
  // Polls both endpoints until a_ reports one completion; fails the test after 30 s.
  OpCompletion wait_completion() {
    auto deadline = std::chrono::steady_clock::now() + 30s;
    OpCompletion c;
    while (std::chrono::steady_clock::now() < deadline) {
      (void)a_->poll();
      (void)b_->poll();
      if (a_->completion(c) == Status::kOk) return c;
    }
    ADD_FAILURE() << "no completion within 30 s";
    c.status = Status::kTimeout;
    return c;
  }
  std::size_t pinned_ = 64u << 20;
  std::unique_ptr<Endpoint> a_, b_;
  ChannelId ab_ = kNoChannel, ba_ = kNoChannel;
};

// Up to 16 MiB, or the port's largest message when that is less (rxe says 8 MiB).
TEST_F(Direct, WriteAndReadUnregisteredMemoryUpToTheLargestMessage) {
  const auto largest = static_cast<std::size_t>(std::min<std::uint64_t>(16u << 20, a_->max_rdma()));
  for (std::size_t size : {std::size_t{1}, std::size_t{4096}, std::size_t{1} << 20, largest}) {
    std::vector<std::uint8_t> src(size), window(size, 0), back(size, 0);
    fill(src, static_cast<std::uint8_t>(size));
    RemoteToken token;
    ASSERT_EQ(b_->grant(window.data(), size, kRemoteRead | kRemoteWrite, token), Status::kOk);
    ASSERT_EQ(a_->write(ab_, src.data(), size, token, 0, 100 + size), Status::kOk);
    OpCompletion c = wait_completion();
    ASSERT_EQ(c.status, Status::kOk) << size;
    EXPECT_EQ(c.tag, 100 + size);
    EXPECT_EQ(c.kind, OpKind::kWrite);
    EXPECT_EQ(c.channel, ab_);
    ASSERT_TRUE(same(window.data(), src)) << "write of " << size << " bytes corrupted";
    ASSERT_EQ(a_->read(ab_, back.data(), size, token, 0, 200 + size), Status::kOk);
    c = wait_completion();
    ASSERT_EQ(c.status, Status::kOk) << size;
    EXPECT_EQ(c.kind, OpKind::kRead);
    ASSERT_TRUE(same(back.data(), src)) << "read of " << size << " bytes corrupted";
    ASSERT_EQ(b_->revoke(token), Status::kOk);
  }
  EXPECT_GE(a_->registration_stats().misses, 1u);
  EXPECT_EQ(a_->stats().send_errors, 0u);
}

// A WRITE of up to inline_post_limit() bytes is copied when posted: it registers nothing, its
// bytes arrive, and it completes like any other. One byte more goes through the cache.
TEST_F(Direct, SmallWritesAreCopiedAtThePostAndRegisterNothing) {
  const std::size_t small = a_->inline_post_limit();
  ASSERT_GT(small, 0u);
  std::vector<std::uint8_t> src(small + 1), window(small + 1, 0);
  fill(src, 7);
  RemoteToken token;
  ASSERT_EQ(b_->grant(window.data(), window.size(), kRemoteWrite, token), Status::kOk);
  const RegistrationCacheStats before = a_->registration_stats();
  ASSERT_EQ(a_->write(ab_, src.data(), small, token, 0, 1), Status::kOk);
  OpCompletion c = wait_completion();
  ASSERT_EQ(c.status, Status::kOk);
  EXPECT_EQ(c.tag, 1u);
  EXPECT_EQ(a_->registration_stats(), before) << "a small write went through the cache";
  EXPECT_EQ(std::memcmp(window.data(), src.data(), small), 0);
  ASSERT_EQ(a_->write(ab_, src.data(), small + 1, token, 0, 2), Status::kOk);
  ASSERT_EQ(wait_completion().status, Status::kOk);
  EXPECT_EQ(a_->registration_stats().misses, before.misses + 1);
  EXPECT_TRUE(same(window.data(), src));
  ASSERT_EQ(b_->revoke(token), Status::kOk);
}

// pin() registers ahead: the first write of the range is then a cache hit, and its bytes arrive.
// Bad input is refused and registers nothing.
TEST_F(Direct, PinnedMemoryIsAHitAtItsFirstWrite) {
  constexpr std::size_t kLen = 256u << 10;
  std::vector<std::uint8_t> src(kLen), window(kLen, 0);
  fill(src, 3);
  RemoteToken token;
  ASSERT_EQ(b_->grant(window.data(), kLen, kRemoteWrite, token), Status::kOk);
  const RegistrationCacheStats before = a_->registration_stats();
  EXPECT_EQ(a_->pin(nullptr, kLen), Status::kInvalidArgument);
  EXPECT_EQ(a_->pin(src.data(), 0), Status::kInvalidArgument);
  EXPECT_EQ(a_->registration_stats(), before) << "a refused pin() changed the cache";
  ASSERT_EQ(a_->pin(src.data(), kLen), Status::kOk);
  EXPECT_EQ(a_->registration_stats().misses, before.misses + 1);
  EXPECT_GE(a_->registration_stats().pinned_bytes, before.pinned_bytes + kLen);
  const std::uint64_t hits = a_->registration_stats().hits;
  ASSERT_EQ(a_->write(ab_, src.data(), kLen, token, 0, 1), Status::kOk);
  ASSERT_EQ(wait_completion().status, Status::kOk);
  EXPECT_EQ(a_->registration_stats().misses, before.misses + 1) << "the write registered again";
  EXPECT_EQ(a_->registration_stats().hits, hits + 1);
  EXPECT_TRUE(same(window.data(), src));
  ASSERT_EQ(b_->revoke(token), Status::kOk);
}

// Memory freed and mapped again at the same address: after forget(), the next write registers
// the new pages, so the peer receives the new bytes, not the old pages' (a stale registration).
TEST_F(Direct, ForgottenMemoryIsRegisteredAfreshWhenReused) {
  constexpr std::size_t kLen = 1u << 20;
  std::vector<std::uint8_t> window(kLen, 0);
  RemoteToken token;
  ASSERT_EQ(b_->grant(window.data(), kLen, kRemoteWrite, token), Status::kOk);
  void* p = ::mmap(nullptr, kLen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  std::memset(p, 0xAA, kLen);
  ASSERT_EQ(a_->write(ab_, p, kLen, token, 0, 1), Status::kOk);
  ASSERT_EQ(wait_completion().status, Status::kOk);
  ASSERT_EQ(window[kLen - 1], 0xAA);
  a_->forget(p, kLen);
  ASSERT_EQ(::munmap(p, kLen), 0);
  void* q = ::mmap(p, kLen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  ASSERT_EQ(q, p);
  std::memset(q, 0x55, kLen);
  const auto misses = a_->registration_stats().misses;
  ASSERT_EQ(a_->write(ab_, q, kLen, token, 0, 2), Status::kOk);
  ASSERT_EQ(wait_completion().status, Status::kOk);
  EXPECT_EQ(a_->registration_stats().misses, misses + 1);
  EXPECT_EQ(window[0], 0x55);
  EXPECT_EQ(window[kLen - 1], 0x55);
  a_->forget(q, kLen);
  ASSERT_EQ(::munmap(q, kLen), 0);
}

class DirectSmallCache : public Direct {
 protected:
  void SetUp() override {
    pinned_ = 1u << 20;  // 1 MiB of pinned memory for a_'s cache
    Direct::SetUp();
  }
};

TEST_F(DirectSmallCache, CacheEvictsToStayUnderItsBound) {
  constexpr std::size_t kRegion = 384 * 1024;
  std::vector<std::vector<std::uint8_t>> regions(6, std::vector<std::uint8_t>(kRegion));
  std::vector<std::uint8_t> window(kRegion);
  RemoteToken token;
  ASSERT_EQ(b_->grant(window.data(), kRegion, kRemoteWrite, token), Status::kOk);
  for (int round = 0; round < 2; ++round) {
    for (std::size_t r = 0; r < regions.size(); ++r) {
      fill(regions[r], static_cast<std::uint8_t>(r + round));
      ASSERT_EQ(a_->write(ab_, regions[r].data(), kRegion, token, 0, r), Status::kOk);
      ASSERT_EQ(wait_completion().status, Status::kOk);
      ASSERT_TRUE(same(window.data(), regions[r]));
      RegistrationCacheStats s = a_->registration_stats();
      ASSERT_LE(s.pinned_bytes, std::size_t{1} << 20);
    }
  }
  RegistrationCacheStats s = a_->registration_stats();
  EXPECT_GT(s.evictions, 0u) << "six 384 KiB regions cannot all stay under a 1 MiB bound";
  EXPECT_LE(s.peak_pinned_bytes, std::size_t{1} << 20);
  // A single region over the bound is refused, and nothing was queued.
  std::vector<std::uint8_t> huge(2u << 20);
  EXPECT_EQ(a_->write(ab_, huge.data(), 1u << 20, token, 0, 9),
            Status::kInvalidArgument);  // beyond the window
  RemoteToken big;
  std::vector<std::uint8_t> big_window(2u << 20);
  ASSERT_EQ(b_->grant(big_window.data(), big_window.size(), kRemoteWrite, big), Status::kOk);
  EXPECT_EQ(a_->write(ab_, huge.data(), huge.size(), big, 0, 9), Status::kNoResource);
  EXPECT_EQ(a_->poll(), 0);
}

// Completions not yet read count against max_operations as operations in flight do: an operation
// whose completion could find no room is refused (and changes nothing), so none is ever dropped,
// however long the application leaves them unread.
TEST(DirectFewOperations, UnreadCompletionsHoldBackNewOperationsAndNoneIsLost) {
  UNET_REQUIRE_DEVICE();
  constexpr std::uint32_t kOps = 4;
  EndpointConfig ca = direct_config();
  ca.max_operations = kOps;
  Endpoint a(ca), b(direct_config());
  const ChannelId ab = test::connect_endpoints(a, b).first;
  std::vector<std::uint8_t> window(64), src(64);
  fill(src, 3);
  RemoteToken token;
  ASSERT_EQ(b.grant(window.data(), window.size(), kRemoteWrite, token), Status::kOk);
  std::uint64_t started = 0, read = 0, room = kOps;
  for (int round = 0; round < 40; ++round) {
    std::uint64_t now = 0;
    Status s = Status::kOk;
    while ((s = a.write(ab, src.data(), src.size(), token, 0, started)) == Status::kOk)
      ++started, ++now;
    ASSERT_EQ(s, Status::kNoResource) << "round " << round;
    ASSERT_EQ(now, room) << "round " << round;
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (a.stats().ops_completed < started && std::chrono::steady_clock::now() < deadline) {
      (void)a.poll();
      (void)b.poll();
    }
    ASSERT_EQ(a.stats().ops_completed, started) << "round " << round;
    // Nothing in flight, every slot held by a completion not yet read: still refused.
    ASSERT_EQ(a.write(ab, src.data(), src.size(), token, 0, started), Status::kNoResource);
    room = 1 + round % kOps;  // read some, in order
    OpCompletion c;
    for (std::uint64_t i = 0; i < room; ++i) {
      ASSERT_EQ(a.completion(c), Status::kOk);
      ASSERT_EQ(c.status, Status::kOk);
      ASSERT_EQ(c.tag, read++);
    }
  }
  OpCompletion c;
  while (a.completion(c) == Status::kOk) ASSERT_EQ(c.tag, read++);
  EXPECT_EQ(read, started);
  EXPECT_EQ(a.stats().completion_drops, 0u);
  EXPECT_TRUE(same(window.data(), src));
}

TEST_F(Direct, RevokedTokenFailsWithRemoteAccessErrorAndMemoryIsUnchanged) {
  std::vector<std::uint8_t> window(8192), src(8192);
  fill(window, 0x33);
  std::vector<std::uint8_t> before = window;
  fill(src, 0x99);
  RemoteToken token;
  ASSERT_EQ(b_->grant(window.data(), window.size(), kRemoteWrite, token), Status::kOk);
  ASSERT_EQ(b_->revoke(token), Status::kOk);
  EXPECT_EQ(b_->revoke(token), Status::kNotFound) << "revoked twice";
  ASSERT_EQ(a_->write(ab_, src.data(), src.size(), token, 0, 1), Status::kOk);
  OpCompletion c = wait_completion();
  EXPECT_EQ(c.status, Status::kRemoteAccessError);
  EXPECT_EQ(c.tag, 1u);
  EXPECT_EQ(window, before) << "a revoked window was written";
  // The failure broke the RC connection: the channel reports it and refuses further sends.
  EXPECT_EQ(a_->channel_status(ab_), Status::kClosed);
  EXPECT_EQ(a_->write(ab_, src.data(), 16, token, 0, 2), Status::kClosed);
}

TEST_F(Direct, OutstandingOperationsCompleteWithTheFailureInOrder) {
  std::vector<std::uint8_t> good(4096), dead(4096), src(4096);
  fill(src, 7);
  RemoteToken ok_token, dead_token;
  ASSERT_EQ(b_->grant(good.data(), good.size(), kRemoteWrite, ok_token), Status::kOk);
  ASSERT_EQ(b_->grant(dead.data(), dead.size(), kRemoteWrite, dead_token), Status::kOk);
  ASSERT_EQ(b_->revoke(dead_token), Status::kOk);
  // Queue four writes; the second targets the revoked window. They go out in one post list.
  ASSERT_EQ(a_->write(ab_, src.data(), 4096, ok_token, 0, 1), Status::kOk);
  ASSERT_EQ(a_->write(ab_, src.data(), 4096, dead_token, 0, 2), Status::kOk);
  ASSERT_EQ(a_->write(ab_, src.data(), 4096, ok_token, 0, 3), Status::kOk);
  ASSERT_EQ(a_->write(ab_, src.data(), 4096, ok_token, 0, 4), Status::kOk);
  Status expect[] = {Status::kOk, Status::kRemoteAccessError, Status::kFlushed, Status::kFlushed};
  for (std::uint64_t tag = 1; tag <= 4; ++tag) {
    OpCompletion c = wait_completion();
    EXPECT_EQ(c.tag, tag) << "completions out of order";
    EXPECT_EQ(c.status, expect[tag - 1]) << "tag " << tag;
  }
  EXPECT_TRUE(same(good.data(), src)) << "the write before the failure was lost";
  EXPECT_EQ(a_->stats().ops_completed, 4u);
  EXPECT_EQ(a_->stats().send_errors, 3u);
}

TEST_F(Direct, BadOperationsAreRefusedBeforeAnythingIsQueued) {
  std::vector<std::uint8_t> window(4096), src(8192);
  RemoteToken token;
  ASSERT_EQ(b_->grant(window.data(), window.size(), kRemoteWrite, token), Status::kOk);
  EXPECT_EQ(a_->write(ab_, src.data(), 4097, token, 0, 1),
            Status::kInvalidArgument);  // past the window
  EXPECT_EQ(a_->write(ab_, src.data(), 16, token, 4090, 1),
            Status::kInvalidArgument);  // straddles its end
  EXPECT_EQ(a_->write(ab_, src.data(), 16, token, ~0ull, 1),
            Status::kInvalidArgument);  // offset overflow
  EXPECT_EQ(a_->write(ab_, nullptr, 16, token, 0, 1), Status::kInvalidArgument);
  EXPECT_EQ(a_->write(ab_, src.data(), 0, token, 0, 1), Status::kInvalidArgument);
  EXPECT_EQ(a_->write(ab_ + 9, src.data(), 16, token, 0, 1), Status::kNotFound);
  EXPECT_EQ(b_->grant(nullptr, 16, kRemoteWrite, token), Status::kInvalidArgument);
  EXPECT_EQ(b_->grant(window.data(), 16, 0, token), Status::kInvalidArgument);
  EXPECT_EQ(b_->grant(window.data(), 16, 0x80, token), Status::kInvalidArgument);
  RemoteToken forged = token;
  forged.rkey ^= 1;
  EXPECT_EQ(b_->revoke(forged), Status::kNotFound);
  EXPECT_EQ(a_->poll(), 0) << "a refused operation was queued";
  OpCompletion c;
  EXPECT_EQ(a_->completion(c), Status::kNoResource);
  // A base-level endpoint has no direct-access calls.
  EndpointConfig base = direct_config();
  base.mode = Mode::kBaseLevel;
  Endpoint plain(base);
  EXPECT_EQ(plain.grant(window.data(), 16, kRemoteWrite, token), Status::kInvalidState);
  EXPECT_EQ(plain.pin(window.data(), 16), Status::kInvalidState);
}

// The largest WRITE or READ is the port's max_msg_sz (at most 2 GiB): one byte more is refused
// here, before the device would fail the channel with it (mlx5 says 1 GiB, rxe 2 GiB).
TEST_F(Direct, OperationsPastThePortsLargestMessageAreRefused) {
  auto ctx = verbs::Context::open(test::device_name());
  const std::uint64_t port_max = ctx->port(1).max_msg_sz;
  ASSERT_GT(port_max, 0u);
  EXPECT_EQ(a_->max_rdma(), std::min<std::uint64_t>(port_max, std::uint64_t{1} << 31));
  std::vector<std::uint8_t> window(4096), src(4096);
  RemoteToken token;
  ASSERT_EQ(b_->grant(window.data(), window.size(), kRemoteRead | kRemoteWrite, token),
            Status::kOk);
  RemoteToken huge = token;  // refused locally: the length is never used
  huge.length = a_->max_rdma() + 4096;
  EXPECT_EQ(a_->write(ab_, src.data(), a_->max_rdma() + 1, huge, 0, 1), Status::kInvalidArgument);
  EXPECT_EQ(a_->read(ab_, src.data(), a_->max_rdma() + 1, huge, 0, 1), Status::kInvalidArgument);
  EXPECT_EQ(a_->poll(), 0) << "a refused operation was queued";
  ASSERT_EQ(a_->write(ab_, src.data(), src.size(), token, 0, 2), Status::kOk)
      << "the channel works on";
  EXPECT_EQ(wait_completion().status, Status::kOk);
}

// Many READs in flight at once (max_reads, 16 by default) all complete with the window's bytes.
TEST_F(Direct, SixteenReadsInFlightAllCompleteWithTheRightBytes) {
  constexpr std::size_t kPiece = 64 * 1024, kReads = 16;
  std::vector<std::uint8_t> window(kPiece * kReads), back(window.size(), 0);
  fill(window, 41);
  RemoteToken token;
  ASSERT_EQ(b_->grant(window.data(), window.size(), kRemoteRead, token), Status::kOk);
  for (std::size_t i = 0; i < kReads; ++i)
    ASSERT_EQ(a_->read(ab_, back.data() + i * kPiece, kPiece, token, i * kPiece, i), Status::kOk);
  std::vector<bool> done(kReads, false);
  for (std::size_t i = 0; i < kReads; ++i) {
    const OpCompletion c = wait_completion();
    ASSERT_EQ(c.status, Status::kOk);
    ASSERT_LT(c.tag, kReads);
    EXPECT_FALSE(done[c.tag]) << "completed twice: " << c.tag;
    done[c.tag] = true;
  }
  EXPECT_TRUE(same(back.data(), window));
}

TEST_F(Direct, MemoryThatCannotBeRegisteredIsRefused) {
  // Address space with no access at all: the registration cache cannot pin it.
  void* p = mmap(nullptr, 1 << 16, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  std::vector<std::uint8_t> window(1 << 16);
  RemoteToken token;
  ASSERT_EQ(b_->grant(window.data(), window.size(), kRemoteWrite, token), Status::kOk);
  RegistrationCacheStats before = a_->registration_stats();
  Status s = a_->write(ab_, p, 4096, token, 0, 1);
  EXPECT_NE(s, Status::kOk);
  EXPECT_TRUE(s == Status::kDeviceError || s == Status::kNoResource) << to_string(s);
  EXPECT_EQ(a_->registration_stats().pinned_bytes, before.pinned_bytes);
  EXPECT_EQ(a_->poll(), 0) << "a refused operation was queued";
  EXPECT_EQ(b_->grant(p, 4096, kRemoteWrite, token), Status::kDeviceError)
      << "granted unmapped memory";
  munmap(p, 1 << 16);
}

// Ops are signaled only at the interval or at the end of a post list: an op followed in the same
// list by an inline send (which holds nothing) must still complete, through the tail's signal.
TEST_F(Direct, AnOperationFollowedByAnInlineSendStillCompletes) {
  std::vector<std::uint8_t> src(4096), window(4096, 0);
  fill(src, 0x33);
  RemoteToken token;
  ASSERT_EQ(b_->grant(window.data(), window.size(), kRemoteWrite, token), Status::kOk);
  const std::byte note[4] = {};
  for (std::uint64_t tag = 1; tag <= 3; ++tag) {  // the same list each time: write, then a note
    ASSERT_EQ(a_->write(ab_, src.data(), src.size(), token, 0, tag), Status::kOk);
    ASSERT_EQ(a_->send_inline(ab_, note), Status::kOk);
    OpCompletion c = wait_completion();
    ASSERT_EQ(c.status, Status::kOk);
    EXPECT_EQ(c.tag, tag);
  }
  EXPECT_TRUE(same(window.data(), src));
}

TEST_F(Direct, ZeroCopySendFromApplicationMemory) {
  std::vector<std::uint8_t> msg(3000);
  fill(msg, 0x41);
  ASSERT_EQ(a_->send_from(ab_, msg.data(), static_cast<std::uint32_t>(msg.size()), 77),
            Status::kOk);
  OpCompletion c = wait_completion();
  ASSERT_EQ(c.status, Status::kOk);
  EXPECT_EQ(c.kind, OpKind::kSend);
  EXPECT_EQ(c.tag, 77u);
  Descriptor d;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (b_->receive(d) != Status::kOk && std::chrono::steady_clock::now() < deadline)
    (void)b_->poll();
  ASSERT_EQ(d.length, msg.size());
  ASSERT_FALSE(d.is_inline());
  EXPECT_TRUE(same(reinterpret_cast<const std::uint8_t*>(b_->buffer(d.buffer).data()), msg));
  EXPECT_EQ(b_->release(d.buffer), Status::kOk);
}

// A head (a protocol header) and application memory gathered into one message, on RC and UD: the
// receiver gets head then payload, byte for byte; what cannot fit is refused before anything is
// queued.
void gather_send_round_trip(Endpoint& a, Endpoint& b, ChannelId ab) {
  std::vector<std::uint8_t> head(Endpoint::kMaxSendHead), msg(a.max_message());
  fill(head, 0x17);
  fill(msg, 0x29);
  const auto* h = reinterpret_cast<const std::byte*>(head.data());
  const auto max = a.max_message();
  // Refused, nothing queued: a head over the limit, head + payload over max_message, no payload.
  EXPECT_EQ(a.send_from(ab, std::span(h, head.size() + 1), msg.data(), 1, 1),
            Status::kInvalidArgument);
  EXPECT_EQ(a.send_from(ab, std::span(h, head.size()), msg.data(), max - 63, 1),
            Status::kInvalidArgument);
  EXPECT_EQ(a.send_from(ab, std::span(h, head.size()), msg.data(), 0, 1), Status::kInvalidArgument);
  EXPECT_EQ(a.send_queue_space(), a.config().send_queue_depth);
  for (std::size_t head_len : {std::size_t{1}, std::size_t{20}, head.size()}) {
    const auto len = static_cast<std::uint32_t>(max - head_len);
    ASSERT_EQ(a.send_from(ab, std::span(h, head_len), msg.data(), len, head_len), Status::kOk);
    OpCompletion c;
    Descriptor d;
    bool completed = false, arrived = false;
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!(completed && arrived) && std::chrono::steady_clock::now() < deadline) {
      (void)a.poll();
      (void)b.poll();
      if (!completed && a.completion(c) == Status::kOk) completed = true;
      if (!arrived && b.receive(d) == Status::kOk) arrived = true;
    }
    ASSERT_TRUE(completed && arrived) << head_len;
    EXPECT_EQ(c.status, Status::kOk);
    EXPECT_EQ(c.tag, head_len);
    ASSERT_EQ(d.length, max);
    ASSERT_FALSE(d.is_inline());
    const auto* got = reinterpret_cast<const std::uint8_t*>(b.buffer(d.buffer).data());
    EXPECT_EQ(std::memcmp(got, head.data(), head_len), 0) << "head of " << head_len;
    EXPECT_EQ(std::memcmp(got + head_len, msg.data(), len), 0)
        << "payload after a head of " << head_len;
    EXPECT_EQ(b.release(d.buffer), Status::kOk);
  }
  EXPECT_EQ(a.stats().send_errors, 0u);
}

TEST_F(Direct, ZeroCopySendGathersAHeadAndApplicationMemoryIntoOneMessage) {
  gather_send_round_trip(*a_, *b_, ab_);
}

TEST(DirectUd, ZeroCopySendGathersAHeadAndApplicationMemoryIntoOneMessage) {
  UNET_REQUIRE_DEVICE();
  EndpointConfig c = test::endpoint_config(Transport::kUd, 64);
  c.mode = Mode::kDirectAccess;
  Endpoint a(c), b(c);
  auto [ab, ba] = test::connect_endpoints(a, b);
  (void)ba;
  gather_send_round_trip(a, b, ab);
}

// What the local checks cannot stop: a peer that forges its token (widens the range, shifts the
// address, guesses a key, or writes through a read grant) reaches the granting side's device, which
// refuses it with a remote access error. Nothing around or inside the window changes, byte for
// byte, and a forged read brings nothing back. Each failure breaks only its own RC channel.
TEST_F(Direct, ForgedTokensAreRefusedByThePeersDeviceAndMemoryIsUnchanged) {
  constexpr std::size_t kPage = 4096;
  std::vector<std::uint8_t> memory(3 * kPage), src(kPage), dst(kPage);  // guard, window, guard
  fill(memory, 0x5a);
  fill(src, 0xc3);
  fill(dst, 0x11);
  const std::vector<std::uint8_t> before = memory, dst_before = dst;
  std::uint8_t* window = memory.data() + kPage;
  RemoteToken rw, ro;
  ASSERT_EQ(b_->grant(window, kPage, kRemoteWrite | kRemoteRead, rw), Status::kOk);
  ASSERT_EQ(b_->grant(window, kPage, kRemoteRead, ro), Status::kOk);

  struct Case {
    const char* what;
    RemoteToken token;
    std::uint64_t offset;
    bool read;
  };
  RemoteToken longer = rw, earlier = rw, guessed = rw;
  longer.length = 2 * kPage;  // claims the guard page after the window
  earlier.addr -= kPage;      // claims the guard page before it
  earlier.length += kPage;
  guessed.rkey ^= 0x80;  // the key byte of the rkey, wrong
  const Case cases[] = {
      {"write past the window's end", longer, kPage, false},
      {"write before the window's start", earlier, 0, false},
      {"write with a guessed rkey", guessed, 0, false},
      {"write through a read-only grant", ro, 0, false},
      {"read past the window's end", longer, kPage, true},
      {"read with a guessed rkey", guessed, 0, true},
  };
  std::uint64_t tag = 100;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    auto [ab, ba] = test::connect_endpoints(*a_, *b_);  // a fresh channel: the last one failed
    (void)ba;
    const Status posted = c.read ? a_->read(ab, dst.data(), kPage, c.token, c.offset, ++tag)
                                 : a_->write(ab, src.data(), kPage, c.token, c.offset, ++tag);
    ASSERT_EQ(posted, Status::kOk) << "the forged token passed no local check to get here";
    const OpCompletion done = wait_completion();
    EXPECT_EQ(done.tag, tag);
    EXPECT_EQ(done.status, Status::kRemoteAccessError);
    EXPECT_EQ(a_->channel_status(ab), Status::kClosed);
    EXPECT_EQ(memory, before) << "the granting side's memory changed";
    EXPECT_EQ(dst, dst_before) << "a refused read brought bytes back";
  }
  // The honest token still works, on a new channel, and on the old ones nothing else happened.
  auto [ab, ba] = test::connect_endpoints(*a_, *b_);
  (void)ba;
  ASSERT_EQ(a_->write(ab, src.data(), kPage, rw, 0, 1), Status::kOk);
  const OpCompletion ok = wait_completion();
  EXPECT_EQ(ok.status, Status::kOk);
  EXPECT_TRUE(same(window, src));
  EXPECT_TRUE(std::equal(memory.begin(), memory.begin() + kPage, before.begin())) << "guard before";
  EXPECT_TRUE(std::equal(memory.end() - kPage, memory.end(), before.end() - kPage))
      << "guard after";
  EXPECT_EQ(a_->channel_status(ab_), Status::kOk) << "the fixture's channel was disturbed";
}

}  // namespace
}  // namespace unet::core
