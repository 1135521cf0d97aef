#include "unet/core/cycle_clock.h"

#include <thread>

namespace unet::core {

namespace {

// One steady_clock reading and the counter value it belongs to: the reading is bracketed by two
// counter reads, and of a few tries the tightest bracket wins. A thread descheduled between the
// reads (common in a loaded VM, where steady_clock itself is a system call) would otherwise skew
// the rate by the length of the pause over the window.
struct Reading {
  std::chrono::steady_clock::time_point time;
  double ticks;  // the bracket's middle
};

Reading read_both() {
  Reading best{};
  std::uint64_t best_width = ~std::uint64_t{0};
  for (int i = 0; i < 8; ++i) {
    const std::uint64_t before = CycleClock::now();
    const auto t = std::chrono::steady_clock::now();
    const std::uint64_t after = CycleClock::now();
    if (after - before < best_width) {
      best_width = after - before;
      best = {t, static_cast<double>(before) + static_cast<double>(after - before) / 2};
    }
  }
  return best;
}

}  // namespace

CycleClock CycleClock::calibrate(std::chrono::milliseconds window) {
  const Reading r0 = read_both();
  std::this_thread::sleep_for(window);
  const Reading r1 = read_both();
  const double us = std::chrono::duration<double, std::micro>(r1.time - r0.time).count();
  return CycleClock((r1.ticks - r0.ticks) / us);
}

const CycleClock& CycleClock::process() {
  static const CycleClock clock = calibrate(std::chrono::milliseconds(50));
  return clock;
}

}  // namespace unet::core
