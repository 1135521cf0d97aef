// PollClock: one reading between begin() and end(), fresh readings outside.
#include "unet/core/poll_clock.h"

#include <gtest/gtest.h>

#include <thread>

namespace unet::core {
namespace {

using namespace std::chrono_literals;

TEST(PollClock, InsideAPollEveryCallGetsTheReadingItBeganWith) {
  PollClock clock;
  const PollClock::Time before = clock.now();
  const PollClock::Time t = clock.begin();
  EXPECT_GE(t, before);
  std::this_thread::sleep_for(2ms);
  EXPECT_EQ(clock.time(), t);
  EXPECT_EQ(clock.time(), t);
  EXPECT_GE(clock.now() - t, 2ms);  // now() still reads afresh
  clock.end();
  EXPECT_GE(clock.time() - t, 2ms);
}

TEST(PollClock, OutsideAPollEachCallReadsAfresh) {
  PollClock clock;
  const PollClock::Time a = clock.time();
  std::this_thread::sleep_for(1ms);
  const PollClock::Time b = clock.time();
  EXPECT_GE(b - a, 1ms);
  // A second poll takes a new reading, not the first one's.
  const PollClock::Time first = clock.begin();
  clock.end();
  std::this_thread::sleep_for(1ms);
  EXPECT_GE(clock.begin() - first, 1ms);
  clock.end();
}

}  // namespace
}  // namespace unet::core
