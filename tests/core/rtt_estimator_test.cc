// The RFC 6298 estimator against values computed by hand from the RFC's formulas.
#include "unet/core/rtt_estimator.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace unet::core {
namespace {

using namespace std::chrono_literals;
using std::chrono::nanoseconds;

RttConfig wide() {  // bounds that never clamp the values below
  RttConfig c;
  c.initial_rto = 1s;
  c.min_rto = 1us;
  c.max_rto = 60s;
  c.granularity = 100us;
  return c;
}

TEST(RttEstimator, BeforeAnySampleRtoIsInitial) {
  RttEstimator e;
  EXPECT_FALSE(e.has_sample());
  EXPECT_EQ(e.samples(), 0u);
  EXPECT_EQ(e.rto(), 200ms);
  EXPECT_EQ(e.srtt(), 0ns);
  EXPECT_EQ(e.rttvar(), 0ns);
}

TEST(RttEstimator, FirstSampleSetsSrttAndHalfOfItAsVariance) {
  RttEstimator e(wide());
  e.sample(10ms);
  EXPECT_TRUE(e.has_sample());
  EXPECT_EQ(e.samples(), 1u);
  EXPECT_EQ(e.srtt(), 10ms);
  EXPECT_EQ(e.rttvar(), 5ms);
  EXPECT_EQ(e.rto(), 30ms);  // 10 + max(0.1, 4 * 5)
}

TEST(RttEstimator, LaterSamplesFollowRfc6298) {
  RttEstimator e(wide());
  e.sample(10ms);
  // RTTVAR = 3/4 * 5 + 1/4 * |10 - 18| = 5.75; SRTT = 7/8 * 10 + 1/8 * 18 = 11; RTO = 11 + 23.
  e.sample(18ms);
  EXPECT_EQ(e.rttvar(), 5750us);
  EXPECT_EQ(e.srtt(), 11ms);
  EXPECT_EQ(e.rto(), 34ms);
  // RTTVAR = 3/4 * 5.75 + 1/4 * |11 - 3| = 6.3125; SRTT = 7/8 * 11 + 1/8 * 3 = 10; RTO = 10
  // + 25.25.
  e.sample(3ms);
  EXPECT_EQ(e.rttvar(), 6312500ns);
  EXPECT_EQ(e.srtt(), 10ms);
  EXPECT_EQ(e.rto(), 35250us);
  EXPECT_EQ(e.samples(), 3u);
}

TEST(RttEstimator, GranularityFloorsTheVarianceTerm) {
  RttEstimator e(wide());
  for (int i = 0; i < 40; ++i) e.sample(1ms);  // RTTVAR decays by 3/4 a sample: 0.5 ms → ~5 ns
  EXPECT_EQ(e.srtt(), 1ms);
  EXPECT_LT(4 * e.rttvar(), 100us);
  EXPECT_EQ(e.rto(), 1100us);  // SRTT + G
}

TEST(RttEstimator, RtoClampedToMinimum) {
  RttEstimator e;   // min_rto 2 ms
  e.sample(100us);  // 100 + max(100, 200) = 300 us
  EXPECT_EQ(e.srtt(), 100us);
  EXPECT_EQ(e.rto(), 2ms);
}

TEST(RttEstimator, RtoClampedToMaximum) {
  RttEstimator e;  // max_rto 4 s
  e.sample(3s);    // 3 + 4 * 1.5 = 9 s
  EXPECT_EQ(e.srtt(), 3s);
  EXPECT_EQ(e.rttvar(), 1500ms);
  EXPECT_EQ(e.rto(), 4s);
}

TEST(RttEstimator, HugeSampleSaturatesInsteadOfOverflowing) {
  RttEstimator e;
  e.sample(nanoseconds::max());
  EXPECT_EQ(e.rto(), 4s);
  e.sample(nanoseconds::max());
  EXPECT_EQ(e.srtt(), nanoseconds::max());
  EXPECT_EQ(e.rto(), 4s);
  e.sample(0ns);
  EXPECT_EQ(e.rto(), 4s);
}

TEST(RttEstimator, NegativeSampleCountsAsZero) {
  RttEstimator e(wide());
  e.sample(-5ms);
  EXPECT_EQ(e.srtt(), 0ns);
  EXPECT_EQ(e.rttvar(), 0ns);
  EXPECT_EQ(e.rto(), 100us);  // 0 + G
}

TEST(RttEstimator, BackoffDoublesUpToTheMaximum) {
  RttEstimator e;  // initial 200 ms, max 4 s
  e.backoff();
  EXPECT_EQ(e.rto(), 400ms);
  e.backoff();
  EXPECT_EQ(e.rto(), 800ms);
  e.backoff();
  EXPECT_EQ(e.rto(), 1600ms);
  e.backoff();
  EXPECT_EQ(e.rto(), 3200ms);
  e.backoff();
  EXPECT_EQ(e.rto(), 4s);  // not 6.4 s
  e.backoff();
  EXPECT_EQ(e.rto(), 4s);
  EXPECT_FALSE(e.has_sample());
}

TEST(RttEstimator, SampleAfterBackoffRecomputes) {
  RttEstimator e(wide());
  e.sample(10ms);
  EXPECT_EQ(e.rto(), 30ms);
  e.backoff();
  e.backoff();
  EXPECT_EQ(e.rto(), 120ms);
  EXPECT_EQ(e.srtt(), 10ms);  // backoff leaves the estimates alone
  EXPECT_EQ(e.rttvar(), 5ms);
  e.sample(18ms);  // as in LaterSamplesFollowRfc6298, as though there had been no backoff
  EXPECT_EQ(e.rto(), 34ms);
}

TEST(RttEstimator, ValidateAcceptsDefaultsAndEqualBounds) {
  EXPECT_NO_THROW(RttConfig{}.validate());
  RttConfig c;
  c.min_rto = c.initial_rto = c.max_rto = 5ms;
  c.granularity = 0ns;
  EXPECT_NO_THROW(c.validate());
  RttEstimator e(c);
  e.sample(1us);
  EXPECT_EQ(e.rto(), 5ms);
}

TEST(RttEstimator, ValidateRefusesBadConfigs) {
  auto with = [](auto change) {
    RttConfig c;
    change(c);
    return c;
  };
  const RttConfig bad[] = {
      with([](RttConfig& c) { c.min_rto = 0ns; }),
      with([](RttConfig& c) { c.min_rto = -1ms; }),
      with([](RttConfig& c) { c.initial_rto = 1ms; }),  // below min_rto (2 ms)
      with([](RttConfig& c) { c.max_rto = 100ms; }),  // below initial_rto (200 ms)
      with([](RttConfig& c) { c.granularity = -1ns; }),
  };
  for (const RttConfig& c : bad) {
    EXPECT_THROW(c.validate(), std::invalid_argument);
    EXPECT_THROW(RttEstimator{c}, std::invalid_argument);
  }
}

}  // namespace
}  // namespace unet::core
