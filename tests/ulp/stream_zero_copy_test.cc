// Zero-copy stream sends on a real device (label device): application memory queued by reference
// and gathered into segments by the device, mixed with copied sends, byte-exact at the receiver;
// each send completes once, in order, only after the peer acknowledged it — or, on abort, with
// kClosed once the device is done with it; bad input refused with nothing queued.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "stream_support.h"

namespace unet::ulp {
namespace {

using namespace std::chrono_literals;
using test::byte_at;
using test::Pair;
using test::stream_config;

core::EndpointConfig direct_ud() {
  core::EndpointConfig c = test::ud_config();
  c.mode = core::Mode::kDirectAccess;
  return c;
}

// Reads what waits on `c` into `got`; returns false on an error other than "nothing yet".
bool drain(StreamEndpoint& ep, ConnId c, std::vector<std::byte>& got) {
  std::byte in[16384];
  std::size_t n = 0;
  Status s;
  while ((s = ep.recv(c, in, n)) == Status::kOk) got.insert(got.end(), in, in + n);
  return s == Status::kNoResource || s == Status::kClosed;
}

// 3 MiB in zero-copy sends of 48 KiB (not a multiple of the MSS) from one application buffer,
// each send's memory scribbled over as soon as its completion says it is ours again: the receiver
// still gets every byte as it was when sent, and every tag completes exactly once, in order.
TEST(StreamZeroCopy, SendsApplicationMemoryByteExactAndCompletesEachSendOnceInOrder) {
  UNET_REQUIRE_DEVICE();
  Pair p(stream_config(), direct_ud());
  auto [ca, cb] = p.connect();
  constexpr std::size_t kChunk = 48 * 1024, kTotal = 64 * kChunk;
  std::vector<std::byte> src(kTotal), got;
  for (std::size_t i = 0; i < kTotal; ++i) src[i] = byte_at(i, 3);
  const std::vector<std::byte> expected = src;
  std::size_t queued = 0, completed = 0, wrong = 0;
  ASSERT_TRUE(p.pump(
      [&] {
        while (queued < kTotal / kChunk &&
               p.a->send_zero_copy(ca, std::span(src).subspan(queued * kChunk, kChunk),
                                   1000 + queued) == Status::kOk)
          ++queued;
        ZeroCopyCompletion z;
        while (p.a->zero_copy_completion(z) == Status::kOk) {
          wrong += z.conn != ca || z.status != Status::kOk || z.tag != 1000 + completed;
          std::fill_n(src.begin() + static_cast<std::ptrdiff_t>((z.tag - 1000) * kChunk), kChunk,
                      std::byte{0xEE});
          ++completed;
        }
        if (!drain(*p.b, cb, got)) ADD_FAILURE() << "recv failed";
        return completed == kTotal / kChunk && got.size() >= kTotal;
      },
      60s))
      << "completed " << completed << ", received " << got.size();
  EXPECT_EQ(wrong, 0u);
  ASSERT_EQ(got.size(), kTotal);
  EXPECT_TRUE(got == expected) << "the receiver got other bytes than were sent";
  const StreamStats s = *p.a->stats(ca);
  EXPECT_GE(s.zero_copy_segments, kTotal / p.a->mss());
  EXPECT_EQ(s.bytes_sent, kTotal);
  ZeroCopyCompletion extra;
  EXPECT_EQ(p.a->zero_copy_completion(extra), Status::kNoResource) << "a send completed twice";
}

// Copied and zero-copy sends interleaved on one connection keep their order in the stream.
TEST(StreamZeroCopy, CopiedAndZeroCopySendsKeepTheirOrder) {
  UNET_REQUIRE_DEVICE();
  Pair p(stream_config(), direct_ud());
  auto [ca, cb] = p.connect();
  std::vector<std::byte> pinned(20000), expected, got;
  for (std::size_t i = 0; i < pinned.size(); ++i) pinned[i] = byte_at(i, 9);
  std::vector<std::byte> copied(3001);
  for (std::size_t i = 0; i < copied.size(); ++i) copied[i] = byte_at(i, 77);
  int round = 0, completions = 0;
  ASSERT_TRUE(p.pump([&] {
    if (round < 8) {  // each round: copied, zero-copy (the same memory, reused after completion)
      std::size_t took = 0;
      if (completions == round && p.a->send(ca, copied, took) == Status::kOk &&
          took == copied.size()) {
        EXPECT_EQ(p.a->send_zero_copy(ca, pinned, round), Status::kOk);
        expected.insert(expected.end(), copied.begin(), copied.end());
        expected.insert(expected.end(), pinned.begin(), pinned.end());
        ++round;
      } else if (took > 0) {
        ADD_FAILURE() << "a partial copy: the buffer should have room";
      }
    }
    ZeroCopyCompletion z;
    while (p.a->zero_copy_completion(z) == Status::kOk) completions += z.status == Status::kOk;
    if (!drain(*p.b, cb, got)) ADD_FAILURE() << "recv failed";
    return round == 8 && completions == 8 && got.size() >= expected.size();
  })) << "rounds "
      << round << ", completions " << completions;
  EXPECT_TRUE(got == expected);
}

// Aborted with zero-copy sends pending: each completes once with kClosed after the device let go
// of it, and the connection's slot is reusable afterwards.
TEST(StreamZeroCopy, AbortCompletesPendingSendsWithClosed) {
  UNET_REQUIRE_DEVICE();
  StreamConfig cfg = stream_config();
  cfg.max_connections = 1;  // the next connect needs the aborted one's slot
  Pair p(cfg, direct_ud());
  auto [ca, cb] = p.connect();
  std::vector<std::byte> src(60000, std::byte{0x5A});
  ASSERT_EQ(p.a->send_zero_copy(ca, std::span(src).first(30000), 1), Status::kOk);
  ASSERT_EQ(p.a->send_zero_copy(ca, std::span(src).subspan(30000), 2), Status::kOk);
  ASSERT_EQ(p.a->abort(ca), Status::kOk);
  std::vector<ZeroCopyCompletion> done;
  ASSERT_TRUE(p.pump(
      [&] {
        ZeroCopyCompletion z;
        while (p.a->zero_copy_completion(z) == Status::kOk) done.push_back(z);
        return done.size() >= 2;
      },
      10s));
  ASSERT_EQ(done.size(), 2u);
  for (std::uint64_t i = 0; i < 2; ++i) {
    EXPECT_EQ(done[i].tag, i + 1);
    EXPECT_EQ(done[i].conn, ca);
    // kOk when the peer happened to acknowledge it before the abort went out, else kClosed.
    EXPECT_TRUE(done[i].status == Status::kClosed || done[i].status == Status::kOk)
        << done[i].status;
  }
  EXPECT_EQ(done[1].status, Status::kClosed) << "30000 bytes cannot all be acked before the abort";
  ConnId again = kNoConn;
  ASSERT_TRUE(p.pump([&] { return p.a->connect(p.ab, 81, again) == Status::kOk; }, 5s))
      << "the aborted connection's slot was not freed";
  (void)cb;
}

// Refused with nothing queued: a base-level endpoint, no bytes, more than the send buffer, before
// the connection is established, past the room left, past kMaxZeroCopySends pending.
TEST(StreamZeroCopy, BadSendsAreRefusedAndQueueNothing) {
  UNET_REQUIRE_DEVICE();
  std::vector<std::byte> src(stream_config().send_buffer + 1, std::byte{1});
  {
    Pair base;  // base-level
    auto [ca, cb] = base.connect();
    EXPECT_EQ(base.a->send_zero_copy(ca, std::span(src).first(100), 1), Status::kInvalidState);
    (void)cb;
  }
  Pair p(stream_config(), direct_ud());
  ConnId pending = kNoConn;
  ASSERT_EQ(p.b->listen(80), Status::kOk);
  ASSERT_EQ(p.a->connect(p.ab, 80, pending), Status::kOk);
  EXPECT_EQ(p.a->send_zero_copy(pending, std::span(src).first(100), 1),
            Status::kInvalidState);  // SYN_SENT
  EXPECT_EQ(p.a->send_zero_copy(kNoConn, std::span(src).first(100), 1), Status::kNotFound);
  ConnId cb = kNoConn;
  ASSERT_TRUE(p.pump([&] { return p.b->accept(80, cb) == Status::kOk; }));
  StreamState st;
  ASSERT_TRUE(p.pump(
      [&] { return p.a->state(pending, st) == Status::kOk && st == StreamState::kEstablished; }));
  const ConnId ca = pending;
  EXPECT_EQ(p.a->send_zero_copy(ca, {}, 1), Status::kInvalidArgument);
  EXPECT_EQ(p.a->send_zero_copy(ca, src, 1), Status::kInvalidArgument);  // > send_buffer
  // 15 sends pending (no poll() in between takes the peer's acks); then one byte more than the
  // room left is refused, one that fits is taken, and a 17th pending send is refused.
  const std::uint32_t buffer = stream_config().send_buffer;
  std::uint32_t queued = 0;
  std::uint64_t tag = 10;
  while (tag < 10 + StreamEndpoint::kMaxZeroCopySends - 1) {
    ASSERT_EQ(p.a->send_zero_copy(ca, std::span(src).first(1000), tag++), Status::kOk);
    queued += 1000;
  }
  StreamStats before = *p.a->stats(ca);
  EXPECT_EQ(p.a->send_zero_copy(ca, std::span(src).first(buffer - queued + 1), 98),
            Status::kNoResource);
  ASSERT_EQ(p.a->send_zero_copy(ca, std::span(src).first(1000), tag++), Status::kOk);
  queued += 1000;
  before = *p.a->stats(ca);
  EXPECT_EQ(p.a->send_zero_copy(ca, std::span(src).first(1000), 99), Status::kNoResource)
      << "a 17th pending send";
  const StreamStats after = *p.a->stats(ca);
  EXPECT_EQ(after.bytes_sent, before.bytes_sent);
  EXPECT_EQ(after.segments_sent, before.segments_sent);
  // Everything queued arrives once, and 99 never completes.
  std::vector<std::byte> got;
  std::vector<std::uint64_t> tags;
  ASSERT_TRUE(p.pump([&] {
    ZeroCopyCompletion z;
    while (p.a->zero_copy_completion(z) == Status::kOk) tags.push_back(z.tag);
    if (!drain(*p.b, cb, got)) ADD_FAILURE() << "recv failed";
    return got.size() >= queued && tags.size() >= tag - 10;
  }));
  EXPECT_EQ(got.size(), queued);
  ASSERT_EQ(tags.size(), tag - 10);
  for (std::size_t i = 0; i < tags.size(); ++i) EXPECT_EQ(tags[i], 10 + i);
}

}  // namespace
}  // namespace unet::ulp
