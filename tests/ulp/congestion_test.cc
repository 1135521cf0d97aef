// NewReno: slow start, congestion avoidance, fast retransmit and recovery with partial acks, and
// timeouts, against values computed by hand from RFC 5681 and RFC 6582.
#include "unet/ulp/congestion.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace unet::ulp {
namespace {

constexpr std::uint32_t kMss = 1000;

TEST(NewReno, StartsWithTheInitialWindowAndNoThreshold) {
  NewReno cc(kMss);
  EXPECT_EQ(cc.cwnd(), 4000u);
  EXPECT_EQ(cc.ssthresh(), UINT32_MAX);
  EXPECT_FALSE(cc.in_recovery());
  EXPECT_EQ(NewReno(kMss, 10).cwnd(), 10000u);
  EXPECT_THROW(NewReno(0), std::invalid_argument);
  EXPECT_THROW(NewReno(kMss, 0), std::invalid_argument);
}

TEST(NewReno, SlowStartAddsWhatWasAckedUpToOneMss) {
  NewReno cc(kMss);
  cc.on_ack(1000);
  EXPECT_EQ(cc.cwnd(), 5000u);
  cc.on_ack(500);
  EXPECT_EQ(cc.cwnd(), 5500u);
  cc.on_ack(3000);  // a stretch ack still adds one mss
  EXPECT_EQ(cc.cwnd(), 6500u);
  cc.on_ack(0);  // nothing new
  EXPECT_EQ(cc.cwnd(), 6500u);
  // Acking a whole window doubles it: 6 full-mss acks of the 6.5 segments in flight.
  for (int i = 0; i < 6; ++i) cc.on_ack(kMss);
  EXPECT_EQ(cc.cwnd(), 12500u);
}

TEST(NewReno, CongestionAvoidanceAddsAboutOneMssPerWindowOfAcks) {
  NewReno cc(kMss);
  cc.on_timeout(20000);  // ssthresh 10000, cwnd 1000
  ASSERT_EQ(cc.ssthresh(), 10000u);
  for (int i = 0; i < 9; ++i) cc.on_ack(kMss);  // slow start up to the threshold
  ASSERT_EQ(cc.cwnd(), 10000u);
  cc.on_ack(kMss);  // cwnd == ssthresh: avoidance, + 1000 * 1000 / 10000
  EXPECT_EQ(cc.cwnd(), 10100u);
  cc.on_ack(kMss);  // + 1000000 / 10100 = 99
  EXPECT_EQ(cc.cwnd(), 10199u);
  for (int i = 0; i < 8; ++i) cc.on_ack(kMss);  // ten acks, one window's worth, in all
  EXPECT_GE(cc.cwnd(), 10950u);
  EXPECT_LT(cc.cwnd(), 11000u);
  EXPECT_EQ(cc.ssthresh(), 10000u);
}

TEST(NewReno, CongestionAvoidanceAddsAtLeastOneByte) {
  NewReno cc(1, 4);
  cc.on_timeout(0);  // ssthresh 2 mss = 2, cwnd 1
  cc.on_ack(1);      // slow start: 2
  EXPECT_EQ(cc.cwnd(), 2u);
  cc.on_ack(1);  // avoidance: 1 * 1 / 2 = 0, so 1
  EXPECT_EQ(cc.cwnd(), 3u);
}

TEST(NewReno, ThirdDuplicateEntersFastRecoveryOnce) {
  NewReno cc(kMss, 10);  // cwnd 10000
  EXPECT_FALSE(cc.on_dup_ack(10000, 15000));
  EXPECT_FALSE(cc.on_dup_ack(10000, 15000));
  EXPECT_EQ(cc.cwnd(), 10000u);
  EXPECT_FALSE(cc.in_recovery());
  EXPECT_TRUE(cc.on_dup_ack(10000, 15000));  // retransmit now
  EXPECT_TRUE(cc.in_recovery());
  EXPECT_EQ(cc.ssthresh(), 5000u);            // flight / 2
  EXPECT_EQ(cc.cwnd(), 8000u);                // ssthresh + 3 mss
  EXPECT_FALSE(cc.on_dup_ack(10000, 15000));  // later ones inflate
  EXPECT_EQ(cc.cwnd(), 9000u);
  EXPECT_FALSE(cc.on_dup_ack(10000, 15000));
  EXPECT_EQ(cc.cwnd(), 10000u);
  EXPECT_EQ(cc.ssthresh(), 5000u);
  EXPECT_EQ(cc.stats().fast_retransmits, 1u);
  EXPECT_EQ(cc.stats().recoveries, 0u);
}

TEST(NewReno, FastRecoveryThresholdIsAtLeastTwoMss) {
  NewReno cc(kMss);
  cc.on_dup_ack(3000, 100);
  cc.on_dup_ack(3000, 100);
  EXPECT_TRUE(cc.on_dup_ack(3000, 100));
  EXPECT_EQ(cc.ssthresh(), 2000u);  // not 1500
  EXPECT_EQ(cc.cwnd(), 5000u);
}

TEST(NewReno, NewDataResetsTheDuplicateCount) {
  NewReno cc(kMss);
  EXPECT_FALSE(cc.on_dup_ack(4000, 4000));
  EXPECT_FALSE(cc.on_dup_ack(4000, 4000));
  cc.on_ack(kMss);
  EXPECT_FALSE(cc.on_dup_ack(4000, 5000));
  EXPECT_FALSE(cc.on_dup_ack(4000, 5000));
  EXPECT_FALSE(cc.in_recovery());
  EXPECT_TRUE(cc.on_dup_ack(4000, 5000));
}

TEST(NewReno, PartialAcksDeflateAndAskForARetransmit) {
  NewReno cc(kMss, 10);
  for (int i = 0; i < 3; ++i) (void)cc.on_dup_ack(10000, 15000);
  for (int i = 0; i < 2; ++i) (void)cc.on_dup_ack(10000, 15000);
  ASSERT_EQ(cc.cwnd(), 10000u);
  EXPECT_TRUE(cc.on_recovery_ack(2000, 7000, 8000));  // - 2000 + 1000
  EXPECT_EQ(cc.cwnd(), 9000u);
  EXPECT_TRUE(cc.in_recovery());
  EXPECT_TRUE(cc.on_recovery_ack(500, 7500, 7500));  // under one mss acked: nothing added back
  EXPECT_EQ(cc.cwnd(), 8500u);
  EXPECT_TRUE(cc.on_recovery_ack(14000, 14999, 1));  // never below one mss
  EXPECT_EQ(cc.cwnd(), 1000u);
  EXPECT_EQ(cc.stats().partial_acks, 3u);
  EXPECT_EQ(cc.stats().recoveries, 0u);
  EXPECT_EQ(cc.ssthresh(), 5000u);
}

TEST(NewReno, FullAckEndsRecovery) {
  NewReno cc(kMss, 10);
  for (int i = 0; i < 3; ++i) (void)cc.on_dup_ack(10000, 15000);
  EXPECT_FALSE(cc.on_recovery_ack(10000, 15000, 6000));  // ack == recover
  EXPECT_FALSE(cc.in_recovery());
  EXPECT_EQ(cc.cwnd(), 5000u);  // min(ssthresh 5000, 6000 + 1000)
  EXPECT_EQ(cc.stats().recoveries, 1u);
  // Recovery over: the next ack grows cwnd in avoidance, and three new duplicates are needed.
  cc.on_ack(kMss);
  EXPECT_EQ(cc.cwnd(), 5200u);
  EXPECT_FALSE(cc.on_dup_ack(5000, 20000));
  EXPECT_FALSE(cc.on_dup_ack(5000, 20000));
  EXPECT_TRUE(cc.on_dup_ack(5000, 20000));
  EXPECT_EQ(cc.stats().fast_retransmits, 2u);
}

TEST(NewReno, FullAckWithLittleInFlightLeavesRoomForOneSegment) {
  NewReno cc(kMss, 10);
  for (int i = 0; i < 3; ++i) (void)cc.on_dup_ack(10000, 15000);
  EXPECT_FALSE(cc.on_recovery_ack(10000, 16000, 0));  // past recover
  EXPECT_EQ(cc.cwnd(), 1000u);                        // min(5000, 0 + 1000)
}

TEST(NewReno, RecoverIsComparedInSequenceSpace) {
  NewReno cc(kMss, 10);
  for (int i = 0; i < 3; ++i) (void)cc.on_dup_ack(10000, 0xFFFFFF00u);
  EXPECT_TRUE(cc.on_recovery_ack(1000, 0xFFFFF000u, 9000));   // before recover: partial
  EXPECT_FALSE(cc.on_recovery_ack(1000, 0x00000100u, 2000));  // wrapped past it: full
  EXPECT_FALSE(cc.in_recovery());
}

TEST(NewReno, AckOutsideTheRightCallIsHandledSafely) {
  NewReno cc(kMss);
  EXPECT_FALSE(cc.on_recovery_ack(1000, 5000, 3000));  // not in recovery: an ordinary ack
  EXPECT_EQ(cc.cwnd(), 5000u);
  EXPECT_EQ(cc.stats().partial_acks, 0u);
  for (int i = 0; i < 3; ++i) (void)cc.on_dup_ack(4000, 9000);
  ASSERT_TRUE(cc.in_recovery());
  const std::uint32_t cwnd = cc.cwnd();
  cc.on_ack(kMss);  // in recovery, cwnd is on_recovery_ack's
  EXPECT_EQ(cc.cwnd(), cwnd);
  EXPECT_TRUE(cc.in_recovery());
}

TEST(NewReno, TimeoutCollapsesTheWindow) {
  NewReno cc(kMss, 10);
  cc.on_timeout(9000);
  EXPECT_EQ(cc.cwnd(), 1000u);
  EXPECT_EQ(cc.ssthresh(), 4500u);
  EXPECT_EQ(cc.stats().timeouts, 1u);
  cc.on_ack(kMss);  // slow start again
  EXPECT_EQ(cc.cwnd(), 2000u);
  cc.on_timeout(500);
  EXPECT_EQ(cc.ssthresh(), 2000u);  // at least 2 mss
  EXPECT_EQ(cc.stats().timeouts, 2u);
}

TEST(NewReno, TimeoutEndsRecoveryAndTheDuplicateCount) {
  NewReno cc(kMss, 10);
  for (int i = 0; i < 3; ++i) (void)cc.on_dup_ack(10000, 15000);
  ASSERT_TRUE(cc.in_recovery());
  cc.on_timeout(12000);
  EXPECT_FALSE(cc.in_recovery());
  EXPECT_EQ(cc.cwnd(), 1000u);
  EXPECT_EQ(cc.ssthresh(), 6000u);
  EXPECT_EQ(cc.stats().recoveries, 0u);  // ended by timeout, not completed
  EXPECT_FALSE(cc.on_dup_ack(1000, 16000));
  EXPECT_EQ(cc.cwnd(), 1000u);  // a duplicate outside recovery does not inflate
  NewReno partial(kMss);
  (void)partial.on_dup_ack(4000, 4000);
  (void)partial.on_dup_ack(4000, 4000);
  partial.on_timeout(4000);
  EXPECT_FALSE(partial.on_dup_ack(1000, 4000));  // the count started over
}

TEST(NewReno, CountersCountEachEvent) {
  NewReno cc(kMss, 10);
  for (int i = 0; i < 3; ++i) (void)cc.on_dup_ack(10000, 15000);
  (void)cc.on_recovery_ack(1000, 6000, 9000);
  (void)cc.on_recovery_ack(1000, 7000, 8000);
  (void)cc.on_recovery_ack(8000, 15000, 0);
  for (int i = 0; i < 3; ++i) (void)cc.on_dup_ack(4000, 19000);
  cc.on_timeout(4000);
  const CongestionStats& s = cc.stats();
  EXPECT_EQ(s.fast_retransmits, 2u);
  EXPECT_EQ(s.partial_acks, 2u);
  EXPECT_EQ(s.recoveries, 1u);
  EXPECT_EQ(s.timeouts, 1u);
}

TEST(NewReno, WindowSaturatesInsteadOfWrapping) {
  NewReno cc(UINT32_MAX / 2, 4);
  EXPECT_EQ(cc.cwnd(), UINT32_MAX);
  cc.on_ack(1000);
  EXPECT_EQ(cc.cwnd(), UINT32_MAX);
  cc.on_timeout(0);
  EXPECT_EQ(cc.ssthresh(), UINT32_MAX - 1);  // 2 mss
  for (int i = 0; i < 3; ++i) (void)cc.on_dup_ack(0, 0);
  EXPECT_EQ(cc.cwnd(), UINT32_MAX);  // ssthresh + 3 mss, saturated
  EXPECT_FALSE(cc.on_dup_ack(0, 0));
  EXPECT_EQ(cc.cwnd(), UINT32_MAX);
}

}  // namespace
}  // namespace unet::ulp
