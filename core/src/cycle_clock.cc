#include "unet/core/cycle_clock.h"

#include <thread>

namespace unet::core {

CycleClock CycleClock::calibrate(std::chrono::milliseconds window) {
  auto t0 = std::chrono::steady_clock::now();
  std::uint64_t c0 = now();
  std::this_thread::sleep_for(window);
  auto t1 = std::chrono::steady_clock::now();
  std::uint64_t c1 = now();
  double us = std::chrono::duration<double, std::micro>(t1 - t0).count();
  return CycleClock(static_cast<double>(c1 - c0) / us);
}

const CycleClock& CycleClock::process() {
  static const CycleClock clock = calibrate(std::chrono::milliseconds(50));
  return clock;
}

}  // namespace unet::core
