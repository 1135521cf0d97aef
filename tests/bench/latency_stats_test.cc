// Unit: latency statistics use every sample, in double, with the median as t_typical.
#include "latency_stats.h"

#include <gtest/gtest.h>

#include <vector>

namespace unet::bench {
namespace {

TEST(LatencyStats, OddAndEvenMedians) {
  std::vector<double> odd = {5, 1, 3};
  EXPECT_DOUBLE_EQ(compute_latency(odd).median, 3);
  std::vector<double> even = {4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(compute_latency(even).median, 2.5);
}

TEST(LatencyStats, NoSampleIsDroppedAndStdevIsNotTruncated) {
  // perftest drops the two largest samples and truncates stdev through an int; unet does neither.
  std::vector<double> v = {1.25, 1.25, 1.25, 1.25, 100.5};
  LatencyStats s = compute_latency(v);
  EXPECT_EQ(s.samples, 5u);
  EXPECT_DOUBLE_EQ(s.max, 100.5);
  EXPECT_DOUBLE_EQ(s.min, 1.25);
  EXPECT_DOUBLE_EQ(s.avg, (4 * 1.25 + 100.5) / 5);
  EXPECT_NEAR(s.stdev, 44.385949, 1e-5);  // sqrt(7880.45 / 4): sample stdev, n - 1
}

TEST(LatencyStats, PercentilesByNearestRank) {
  std::vector<double> v;
  for (int i = 1; i <= 1000; ++i) v.push_back(i);
  LatencyStats s = compute_latency(v);
  EXPECT_DOUBLE_EQ(s.p99, 990);
  EXPECT_DOUBLE_EQ(s.p999, 999);
  std::vector<double> one = {7};
  s = compute_latency(one);
  EXPECT_DOUBLE_EQ(s.p99, 7);
  EXPECT_DOUBLE_EQ(s.stdev, 0);
  std::vector<double> none;
  EXPECT_EQ(compute_latency(none).samples, 0u);
}

}  // namespace
}  // namespace unet::bench
