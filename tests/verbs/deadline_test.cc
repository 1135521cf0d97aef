// Deadline and the timeout clamps (verbs/deadline.h): any milliseconds value turns into a
// deadline without overflow — the extremes a caller passes to mean "forever" or "at once"
// included (UBSan runs this too).
#include "unet/verbs/deadline.h"

#include <gtest/gtest.h>

#include <chrono>
#include <climits>

namespace unet::verbs {
namespace {

using namespace std::chrono_literals;
using Clock = Deadline::Clock;
using std::chrono::milliseconds;

TEST(Deadline, AnOrdinaryTimeoutEndsWhenItSays) {
  const Clock::time_point t0 = Clock::now();
  const Deadline d(250ms, t0);
  EXPECT_FALSE(d.never());
  EXPECT_FALSE(d.passed(t0));
  EXPECT_FALSE(d.passed(t0 + 249ms));
  EXPECT_TRUE(d.passed(t0 + 250ms));
  EXPECT_EQ(d.left(t0), 250ms);
  EXPECT_EQ(d.left(t0 + 1us), 250ms);  // rounded up: a sleep of it never wakes early
  EXPECT_EQ(d.left(t0 + 300ms), 0ms);
  EXPECT_EQ(d.poll_timeout(t0 + 100ms), 150);
  EXPECT_EQ(d.poll_timeout(t0 + 1s), 0);
}

TEST(Deadline, TheLongestTimeoutsMeanNever) {
  const Clock::time_point t0 = Clock::now();
  for (const milliseconds t :
       {milliseconds::max(), milliseconds::max() - 1ms,
        milliseconds(std::chrono::duration_cast<milliseconds>(Clock::duration::max()))}) {
    const Deadline d(t, t0);
    EXPECT_TRUE(d.never()) << t.count();
    EXPECT_FALSE(d.passed(t0));
    EXPECT_FALSE(d.passed(Clock::time_point::max()));
    EXPECT_EQ(d.left(t0), milliseconds::max());
    EXPECT_EQ(d.poll_timeout(t0), -1);  // poll(2): no end
  }
  // Long but representable: a real deadline, and poll's int still does not overflow.
  const Deadline year(std::chrono::hours(24 * 365), t0);
  EXPECT_FALSE(year.never());
  EXPECT_FALSE(year.passed(t0 + std::chrono::hours(24 * 364)));
  EXPECT_EQ(year.poll_timeout(t0), INT_MAX);
}

TEST(Deadline, ZeroAndNegativeTimeoutsHaveAlreadyPassed) {
  const Clock::time_point t0 = Clock::now();
  for (const milliseconds t : {0ms, -1ms, milliseconds::min(), milliseconds::min() + 1ms}) {
    const Deadline d(t, t0);
    EXPECT_FALSE(d.never()) << t.count();
    EXPECT_TRUE(d.passed(t0));
    EXPECT_EQ(d.left(t0), 0ms);
    EXPECT_EQ(d.poll_timeout(t0), 0);
  }
  EXPECT_TRUE(Deadline(milliseconds::min()).passed());
}

TEST(Deadline, ClampsForIntsAndTimers) {
  EXPECT_EQ(clamp_ms(milliseconds::max()), INT_MAX);
  EXPECT_EQ(clamp_ms(milliseconds::min()), 0);
  EXPECT_EQ(clamp_ms(-5ms), 0);
  EXPECT_EQ(clamp_ms(1234ms), 1234);
  EXPECT_EQ(clamp_timer(milliseconds::max()), kLongestTimer);
  EXPECT_EQ(clamp_timer(milliseconds::min()), 0ms);
  EXPECT_EQ(clamp_timer(3s), 3s);
  // A clamped timer adds to a nanosecond clock centuries from its origin without overflow.
  const std::chrono::nanoseconds now = std::chrono::hours(24 * 365 * 150);
  EXPECT_GT(now + clamp_timer(milliseconds::max()), now);
}

}  // namespace
}  // namespace unet::verbs
