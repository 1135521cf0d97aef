// Unit: ring credits (core/src/ring_credits.h): the writer's window over the peer's ring and the
// reader's in-order freeing, across wrap-around of every running total.
#include "ring_credits.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace unet::core::ring {
namespace {

TEST(RingCredits, TheWindowIsTheSlotsLessWhatIsWrittenAndNotFreed) {
  SendWindow w(8);
  EXPECT_EQ(w.available(), 8u);
  for (std::uint32_t i = 0; i < 8; ++i) EXPECT_EQ(w.take(), i);
  EXPECT_EQ(w.available(), 0u);
  EXPECT_TRUE(w.update16(3));
  EXPECT_EQ(w.available(), 3u);
  EXPECT_TRUE(w.update(8));
  EXPECT_EQ(w.available(), 8u);
  EXPECT_TRUE(w.update16(5)) << "an older total (a head written before the credit word) is no news";
  EXPECT_EQ(w.available(), 8u);
}

TEST(RingCredits, ImpossibleTotalsAreRefusedAndChangeNothing) {
  SendWindow w(8);
  for (int i = 0; i < 5; ++i) (void)w.take();
  EXPECT_FALSE(w.update(6)) << "frees a slot never written";
  EXPECT_FALSE(w.update16(6));
  EXPECT_FALSE(w.update16(0x7fff));
  EXPECT_FALSE(w.update(std::uint64_t{1} << 40 | 6))
      << "only the low 32 bits count, and they are ahead";
  EXPECT_EQ(w.available(), 3u);
  EXPECT_TRUE(w.update16(0xfffc)) << "behind what we know: old news, not an error";
  EXPECT_EQ(w.available(), 3u);
  EXPECT_TRUE(w.update16(5));
  EXPECT_EQ(w.available(), 8u);
}

TEST(RingCredits, TotalsWrapAt16And32Bits) {
  SendWindow w(64);
  for (std::uint64_t n = 0; n < 200000; ++n) {  // past 2^16 three times over
    ASSERT_GT(w.available(), 0u);
    (void)w.take();
    if (n % 40 == 39) {
      ASSERT_TRUE(w.update16(static_cast<std::uint16_t>(n + 1))) << n;
      ASSERT_EQ(w.available(), 64u);
    }
  }
  // 32 bits: start just below the wrap.
  SendWindow v(4, 0xfffffff0u);
  FreeList f(4, 0xfffffff0u);
  for (int n = 0; n < 64; ++n) {
    ASSERT_GT(v.available(), 0u) << n;
    (void)v.take();
    f.free(f.take() & 3);
    ASSERT_TRUE(v.update(f.freed())) << n;
    ASSERT_EQ(v.available(), 4u) << n;
  }
  EXPECT_LT(f.freed(), 0x100u) << "the totals wrapped";
}

TEST(RingCredits, SlotsAreFreedInRingOrderWhateverOrderTheApplicationReleases) {
  FreeList f(8);
  std::vector<std::uint32_t> held;
  for (int i = 0; i < 6; ++i) held.push_back(f.take() & 7);
  EXPECT_TRUE(f.held(2));
  f.free(2);
  f.free(4);
  EXPECT_EQ(f.freed(), 0u) << "slot 0 still held: nothing after it counts";
  EXPECT_FALSE(f.held(2));
  f.free(0);
  EXPECT_EQ(f.freed(), 1u);
  f.free(1);
  EXPECT_EQ(f.freed(), 3u) << "0, 1 and the already freed 2";
  EXPECT_FALSE(f.report_due()) << "3 owed of 8: due at half";
  f.free(3);
  EXPECT_EQ(f.freed(), 5u);
  EXPECT_TRUE(f.report_due());
  f.reported();
  EXPECT_EQ(f.owed(), 0u);
  f.free(5);
  EXPECT_EQ(f.owed(), 1u);
  EXPECT_FALSE(f.held(9)) << "an index outside the ring is never held";
}

// Writer and reader against each other: random take/release, the writer learning totals only
// through 16-bit heads or whole credit words, over many laps; the writer never overruns a slot
// the reader holds.
TEST(RingCredits, WriterNeverOverrunsAHeldSlot) {
  constexpr std::uint32_t kSlots = 16;
  SendWindow w(kSlots);
  FreeList f(kSlots);
  std::mt19937 rng(7);
  std::vector<bool> occupied(kSlots, false);
  std::vector<std::uint32_t> held;
  std::uint32_t in_flight = 0;  // written, not yet taken by the reader
  for (int step = 0; step < 300000; ++step) {
    switch (rng() % 4) {
      case 0:
      case 1:
        if (w.available() > 0) {
          const std::uint32_t i = w.take() % kSlots;
          ASSERT_FALSE(occupied[i]) << "step " << step;
          occupied[i] = true;
          ++in_flight;
        }
        break;
      case 2:
        if (in_flight > 0) {
          held.push_back(f.take() & (kSlots - 1));
          --in_flight;
        }
        break;
      default:
        if (!held.empty()) {
          const std::size_t k = rng() % held.size();
          const std::uint32_t i = held[k];
          held.erase(held.begin() + static_cast<std::ptrdiff_t>(k));
          const std::uint32_t before = f.freed();
          f.free(i);
          for (std::uint32_t s = before; s != f.freed(); ++s) occupied[s % kSlots] = false;
          if (rng() % 2)
            ASSERT_TRUE(w.update16(static_cast<std::uint16_t>(f.freed())));
          else
            ASSERT_TRUE(w.update(f.freed()));
          f.reported();
        }
    }
  }
}

}  // namespace
}  // namespace unet::core::ring
