// CycleClock's integer tick-to-nanosecond conversion against the rate it was calibrated to.
#include "unet/core/cycle_clock.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

namespace unet::core {
namespace {

TEST(CycleClock, ToNsAgreesWithTheCalibratedRate) {
  const CycleClock c = CycleClock::calibrate(std::chrono::milliseconds(5));
  ASSERT_GT(c.ticks_per_us(), 0.0);
  EXPECT_EQ(c.to_ns(0).count(), 0);
  // From one tick to about 60 years of a 3 GHz counter.
  for (std::uint64_t t : {std::uint64_t{1}, std::uint64_t{999}, std::uint64_t{123456789},
                          std::uint64_t{1} << 40, std::uint64_t{5'700'000'000'000'000'000ull}}) {
    const double want = static_cast<double>(t) * 1000.0 / c.ticks_per_us();
    const double got = static_cast<double>(c.to_ns(t).count());
    EXPECT_NEAR(got, want, 1.0 + want * 1e-9) << t << " ticks at " << c.ticks_per_us() << "/us";
  }
}

TEST(CycleClock, ToNsIsMonotonicAcrossTicks) {
  const CycleClock& c = CycleClock::process();
  const std::uint64_t base = CycleClock::now();
  std::int64_t last = c.to_ns(base).count();
  for (std::uint64_t i = 1; i < 5000; ++i) {
    const std::int64_t ns = c.to_ns(base + i).count();
    ASSERT_GE(ns, last) << i;
    last = ns;
  }
  // A millisecond's ticks make a millisecond, within two nanoseconds.
  const auto ms_ticks = static_cast<std::uint64_t>(std::llround(c.ticks_per_us() * 1000));
  EXPECT_NEAR(static_cast<double>(c.to_ns(base + ms_ticks).count() - c.to_ns(base).count()), 1e6,
              2.0);
}

}  // namespace
}  // namespace unet::core
