// RangeSet: merging, refusing, trimming and lookups of sequence-number ranges, also across the
// 2^32 wrap.
#include "unet/ulp/range_set.h"

#include <gtest/gtest.h>

#include <vector>

namespace unet::ulp {
namespace {

using Set = RangeSet<4>;
using R = Set::Range;

std::vector<R> ranges(const Set& s) {
  std::vector<R> out;
  for (std::uint32_t i = 0; i < s.size(); ++i) out.push_back(s[i]);
  return out;
}

TEST(RangeSet, KeepsDisjointRangesInOrder) {
  Set s;
  EXPECT_TRUE(s.add(300, 400));
  EXPECT_TRUE(s.add(100, 200));
  EXPECT_TRUE(s.add(500, 600));
  EXPECT_EQ(ranges(s), (std::vector<R>{{100, 200}, {300, 400}, {500, 600}}));
}

TEST(RangeSet, MergesWhatTouchesOrOverlaps) {
  Set s;
  ASSERT_TRUE(s.add(100, 200));
  ASSERT_TRUE(s.add(300, 400));
  EXPECT_TRUE(s.add(200, 250));  // touches the end of the first
  EXPECT_EQ(ranges(s), (std::vector<R>{{100, 250}, {300, 400}}));
  EXPECT_TRUE(s.add(90, 110));   // overlaps its start
  EXPECT_TRUE(s.add(240, 300));  // bridges the two
  EXPECT_EQ(ranges(s), (std::vector<R>{{90, 400}}));
  EXPECT_TRUE(s.add(50, 500));  // swallows it
  EXPECT_EQ(ranges(s), (std::vector<R>{{50, 500}}));
}

TEST(RangeSet, RefusesADuplicateAndAFifthRangeUnchanged) {
  Set s;
  for (std::uint32_t i = 0; i < 4; ++i) ASSERT_TRUE(s.add(i * 100, i * 100 + 10));
  const std::vector<R> before = ranges(s);
  EXPECT_FALSE(s.add(0, 10));  // all of it held already
  EXPECT_FALSE(s.add(102, 105));
  EXPECT_FALSE(s.add(500, 510));  // would need a fifth range
  EXPECT_EQ(ranges(s), before);
  EXPECT_TRUE(s.add(305, 350));  // merging needs no new range
  EXPECT_EQ(s.size(), 4u);
}

TEST(RangeSet, DropBelowRemovesAndCuts) {
  Set s;
  ASSERT_TRUE(s.add(100, 200));
  ASSERT_TRUE(s.add(300, 400));
  s.drop_below(100);
  EXPECT_EQ(ranges(s), (std::vector<R>{{100, 200}, {300, 400}}));
  s.drop_below(150);
  EXPECT_EQ(ranges(s), (std::vector<R>{{150, 200}, {300, 400}}));
  s.drop_below(200);  // a range ending at seq goes
  EXPECT_EQ(ranges(s), (std::vector<R>{{300, 400}}));
  s.drop_below(1000);
  EXPECT_TRUE(s.empty());
}

TEST(RangeSet, PopFrontFindAndNextAfter) {
  Set s;
  ASSERT_TRUE(s.add(100, 200));
  ASSERT_TRUE(s.add(300, 400));
  ASSERT_NE(s.find(100), nullptr);
  EXPECT_EQ(*s.find(199), (R{100, 200}));
  EXPECT_EQ(s.find(200), nullptr);  // end is not in the range
  EXPECT_EQ(s.find(99), nullptr);
  EXPECT_EQ(*s.next_after(200), (R{300, 400}));
  EXPECT_EQ(*s.next_after(99), (R{100, 200}));
  EXPECT_EQ(s.next_after(300), nullptr);  // starting at seq is not after it
  s.pop_front();
  EXPECT_EQ(ranges(s), (std::vector<R>{{300, 400}}));
}

TEST(RangeSet, OrdersAcrossTheWrap) {
  Set s;
  ASSERT_TRUE(s.add(10, 20));                    // after the wrap
  ASSERT_TRUE(s.add(0xFFFFFF00u, 0xFFFFFFF0u));  // before it
  EXPECT_EQ(ranges(s), (std::vector<R>{{0xFFFFFF00u, 0xFFFFFFF0u}, {10, 20}}));
  EXPECT_TRUE(s.add(0xFFFFFFF0u, 10));  // joins them across zero
  EXPECT_EQ(ranges(s), (std::vector<R>{{0xFFFFFF00u, 20}}));
  EXPECT_NE(s.find(0), nullptr);
  s.drop_below(5);
  EXPECT_EQ(ranges(s), (std::vector<R>{{5, 20}}));
}

}  // namespace
}  // namespace unet::ulp
