// Unit: the descriptor ring, the buffer ownership table and the descriptor's size.
#include "unet/core/descriptor_ring.h"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "unet/core/buffer_table.h"
#include "unet/core/descriptor.h"

namespace unet::core {
namespace {

TEST(Descriptor, IsTwoCacheLines) {
  EXPECT_EQ(sizeof(Descriptor), 128u);
  EXPECT_EQ(alignof(Descriptor), 64u);
  EXPECT_EQ(Descriptor::kInlineBytes, 108u);  // 64 bytes and a layer's header
}

// Every length an inline payload can have, at every offset within a word: exactly [0, n) is
// copied, and no byte around it, on either side, is touched (guard bytes stay as they were).
TEST(Descriptor, CopySmallCopiesExactlyTheGivenBytes) {
  constexpr std::size_t kGuard = 16;
  for (std::size_t n = 0; n <= 128; ++n) {
    for (std::size_t at = 0; at < 8; ++at) {
      std::byte src[kGuard + 128 + kGuard + 8], dst[kGuard + 128 + kGuard + 8];
      for (std::size_t i = 0; i < sizeof src; ++i) {
        src[i] = std::byte(i * 7 + 1);
        dst[i] = std::byte{0xee};
      }
      copy_small(dst + kGuard + at, src + kGuard + at, n);
      for (std::size_t i = 0; i < sizeof dst; ++i) {
        const bool inside = i >= kGuard + at && i < kGuard + at + n;
        ASSERT_EQ(dst[i], inside ? src[i] : std::byte{0xee})
            << "n " << n << " offset " << at << " byte " << i;
      }
    }
  }
}

// Lengths around kCopySmallMax and each piece boundary of copy_large(), at offsets that put the
// pieces off word alignment: exactly [0, n) is copied, and the guard bytes stay as they were.
TEST(Descriptor, CopyBytesCopiesExactlyTheGivenBytesInPieces) {
  constexpr std::size_t kGuard = 16, kMax = 3 * kCopyPiece + 64;
  std::vector<std::byte> src(kGuard + kMax + kGuard + 8), dst(src.size());
  for (std::size_t n :
       {std::size_t{0}, std::size_t{1}, kCopySmallMax, kCopySmallMax + 1, kCopyPiece - 1,
        kCopyPiece, kCopyPiece + 1, 2 * kCopyPiece, 2 * kCopyPiece + 20, kMax}) {
    for (std::size_t at : {0, 3}) {
      for (std::size_t i = 0; i < src.size(); ++i) {
        src[i] = std::byte(i * 7 + 1 + i / 251);
        dst[i] = std::byte{0xee};
      }
      copy_bytes(dst.data() + kGuard + at, src.data() + kGuard + at, n);
      for (std::size_t i = 0; i < dst.size(); ++i) {
        const bool inside = i >= kGuard + at && i < kGuard + at + n;
        ASSERT_EQ(dst[i], inside ? src[i] : std::byte{0xee})
            << "n " << n << " offset " << at << " byte " << i;
      }
    }
  }
}

TEST(Descriptor, ComposeInlineCarriesThePayload) {
  constexpr std::size_t kInline = Descriptor::kInlineBytes;
  std::byte payload[kInline];
  for (std::size_t i = 0; i < sizeof payload; ++i) payload[i] = std::byte(200 - i);
  for (std::size_t n :
       {std::size_t{1}, std::size_t{8}, std::size_t{33}, std::size_t{64}, kInline}) {
    Descriptor d;
    compose_inline(d, 3, {payload, n}, Descriptor::kImm, 77);
    EXPECT_EQ(d.channel, 3u);
    EXPECT_EQ(d.length, n);
    EXPECT_EQ(d.buffer, kNoBuffer);
    EXPECT_EQ(d.flags, Descriptor::kInline | Descriptor::kImm);
    EXPECT_EQ(d.imm, 77u);
    EXPECT_EQ(0, std::memcmp(d.data, payload, n)) << n;
  }
}

TEST(DescriptorRing, CapacityRoundsUpToAPowerOfTwo) {
  EXPECT_EQ(DescriptorRing<int>(1).capacity(), 1u);
  EXPECT_EQ(DescriptorRing<int>(5).capacity(), 8u);
  EXPECT_EQ(DescriptorRing<int>(64).capacity(), 64u);
  EXPECT_THROW(DescriptorRing<int>(0), std::invalid_argument);
}

TEST(DescriptorRing, FifoWithFullAndEmptyRefusals) {
  DescriptorRing<int> r(4);
  int v = -1;
  EXPECT_FALSE(r.pop_into(v));
  EXPECT_EQ(v, -1) << "a failed pop changed its output";
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(r.push(i));
  EXPECT_TRUE(r.full());
  EXPECT_FALSE(r.push(99));
  EXPECT_EQ(r.reserve(), nullptr);
  for (int round = 0; round < 1000; ++round) {  // wrap around many times
    ASSERT_TRUE(r.pop_into(v));
    ASSERT_EQ(v, round);
    ASSERT_TRUE(r.push(round + 4));
  }
  EXPECT_EQ(r.size(), 4u);
  EXPECT_EQ(r.at(0), 1000);
  EXPECT_EQ(r.at(3), 1003);
  r.pop(4);
  EXPECT_TRUE(r.empty());
}

TEST(DescriptorRing, ComposeInPlace) {
  DescriptorRing<Descriptor> r(2);
  Descriptor* d = r.reserve();
  ASSERT_NE(d, nullptr);
  d->channel = 7;
  d->length = 3;
  EXPECT_TRUE(r.empty()) << "visible before commit";
  r.commit();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r.front()->channel, 7u);
}

TEST(DescriptorRing, OneProducerOneConsumerThread) {
  DescriptorRing<std::uint64_t> r(64);
#if defined(__SANITIZE_THREAD__)
  constexpr std::uint64_t kN = 50'000;  // ThreadSanitizer needs the interleavings, not the volume
#else
  constexpr std::uint64_t kN = 1'000'000;
#endif
  // A side that finds the ring full (empty) yields: on a busy two-core host a spinning thread
  // would hold the core its partner needs.
  std::thread producer([&] {
    for (std::uint64_t i = 0; i < kN;)
      if (r.push(i))
        ++i;
      else
        std::this_thread::yield();
  });
  std::uint64_t expected = 0, v;
  while (expected < kN)
    if (r.pop_into(v)) {
      ASSERT_EQ(v, expected);
      ++expected;
    } else {
      std::this_thread::yield();
    }
  producer.join();
  EXPECT_TRUE(r.empty());
}

TEST(BufferTable, OwnershipMovesOnlyAlongItsEdges) {
  BufferTable t(4);
  EXPECT_EQ(t.spare(), 4u);
  BufferId b = kNoBuffer;
  ASSERT_EQ(t.take_spare(b), Status::kOk);
  EXPECT_EQ(t.owner(b), BufferOwner::kApplication);
  EXPECT_EQ(t.arrived(b), Status::kInvalidState);    // not on the free queue
  EXPECT_EQ(t.send_done(b), Status::kInvalidState);  // not in flight
  ASSERT_EQ(t.queue_send(b), Status::kOk);
  EXPECT_EQ(t.queue_send(b), Status::kInvalidState) << "sent twice";
  EXPECT_EQ(t.release(b), Status::kInvalidState) << "released while in flight";
  ASSERT_EQ(t.send_done(b), Status::kOk);
  EXPECT_EQ(t.owner(b), BufferOwner::kSpare);
  EXPECT_EQ(t.spare(), 4u);

  BufferId f = kNoBuffer;
  ASSERT_EQ(t.take_for_free_queue(f), Status::kOk);
  EXPECT_EQ(t.owner(f), BufferOwner::kFreeQueue);
  EXPECT_EQ(t.queue_send(f), Status::kInvalidState) << "a posted receive buffer cannot be sent";
  EXPECT_EQ(t.release(f), Status::kInvalidState) << "not the application's";
  ASSERT_EQ(t.arrived(f), Status::kOk);
  ASSERT_EQ(t.release(f), Status::kOk);
  EXPECT_EQ(t.release(f), Status::kInvalidState) << "double release";
  EXPECT_EQ(t.release(17), Status::kInvalidArgument);
  EXPECT_EQ(t.spare(), 3u);
}

// The free queue's count follows its buffers; give_back returns an application buffer to spare.
TEST(BufferTable, CountsTheFreeQueueAndGivesBackToSpare) {
  BufferTable t(4);
  BufferId f = kNoBuffer, a = kNoBuffer;
  ASSERT_EQ(t.take_for_free_queue(f), Status::kOk);
  ASSERT_EQ(t.take_spare(a), Status::kOk);
  EXPECT_EQ(t.in_free_queue(), 1u);
  ASSERT_EQ(t.arrived(f), Status::kOk);
  EXPECT_EQ(t.in_free_queue(), 0u);
  EXPECT_EQ(t.arrived(f), Status::kInvalidState);
  EXPECT_EQ(t.in_free_queue(), 0u) << "a refused move counted";
  ASSERT_EQ(t.release(f), Status::kOk);
  EXPECT_EQ(t.in_free_queue(), 1u);
  EXPECT_EQ(t.release(f), Status::kInvalidState);
  EXPECT_EQ(t.in_free_queue(), 1u) << "a refused move counted";
  EXPECT_EQ(t.spare(), 2u);
  ASSERT_EQ(t.give_back(a), Status::kOk);
  EXPECT_EQ(t.owner(a), BufferOwner::kSpare);
  EXPECT_EQ(t.spare(), 3u);
  EXPECT_EQ(t.give_back(a), Status::kInvalidState) << "given back twice";
  EXPECT_EQ(t.give_back(f), Status::kInvalidState) << "not the application's";
  EXPECT_EQ(t.give_back(17), Status::kInvalidArgument);
  EXPECT_EQ(t.spare(), 3u);
  EXPECT_EQ(t.in_free_queue(), 1u);
}

TEST(BufferTable, RunsOutOfSpares) {
  BufferTable t(2);
  BufferId a = kNoBuffer, b = kNoBuffer, c = 99;
  ASSERT_EQ(t.take_spare(a), Status::kOk);
  ASSERT_EQ(t.take_for_free_queue(b), Status::kOk);
  EXPECT_EQ(t.take_spare(c), Status::kNoResource);
  EXPECT_EQ(c, 99u);
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace unet::core
