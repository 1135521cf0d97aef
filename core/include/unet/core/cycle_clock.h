// CycleClock: timestamps for timed loops and timers that cost no system call.
//
// perftest times with the CPU's cycle counter; so does unet's bench. This matters beyond taste:
// in the SoftRoCE VM the guest clocksource is HPET, which has no vDSO, so every
// std::chrono::steady_clock::now() there is a system call plus an emulated device read, too dear
// for a loop that measures microseconds (core/README.md). The counter is calibrated once against
// steady_clock; on non-x86 builds it falls back to steady_clock.
#pragma once

#include <chrono>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace unet::core {

// A calibrated cycle counter: now() reads it, the instance converts ticks to time.
class CycleClock {
 public:
  // The counter now (rdtsc on x86; steady_clock's nanoseconds elsewhere). No system call on x86.
  static std::uint64_t now() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#else
    return static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
  }

  // Measures ticks per microsecond over `window` (set-up only; sleeps for `window`).
  static CycleClock calibrate(std::chrono::milliseconds window = std::chrono::milliseconds(200));
  // One calibration per process (50 ms, on first use; thread-safe), for timers rather than
  // measurements.
  static const CycleClock& process();

  // Conversions with this calibration: ticks to microseconds, a duration to ticks, and the
  // rate itself.
  double to_us(std::uint64_t ticks) const noexcept {
    return static_cast<double>(ticks) / ticks_per_us_;
  }
  std::uint64_t ticks(std::chrono::microseconds d) const noexcept {
    return static_cast<std::uint64_t>(static_cast<double>(d.count()) * ticks_per_us_);
  }
  double ticks_per_us() const noexcept { return ticks_per_us_; }
  // Ticks since an arbitrary origin as nanoseconds. Integer only (a multiply and a shift): the
  // layers' timers call it on every poll, and floating point costs far more than that under
  // emulation (core/README.md, Performance).
  std::chrono::nanoseconds to_ns(std::uint64_t ticks) const noexcept {
#ifdef __SIZEOF_INT128__
    return std::chrono::nanoseconds(static_cast<std::int64_t>(
        (static_cast<unsigned __int128>(ticks) * ns_per_tick_q32_) >> 32));
#else
    return std::chrono::nanoseconds(
        static_cast<std::int64_t>(static_cast<double>(ticks) * 1000.0 / ticks_per_us_));
#endif
  }

 private:
  explicit CycleClock(double ticks_per_us) noexcept
      : ticks_per_us_(ticks_per_us), ns_per_tick_q32_(ns_per_tick_q32(ticks_per_us)) {}
  // 1000 / ticks_per_us in 32.32 fixed point; a rate below one tick per ms is taken as that.
  static std::uint64_t ns_per_tick_q32(double ticks_per_us) noexcept {
    const double rate = ticks_per_us > 1e-3 ? ticks_per_us : 1e-3;
    return static_cast<std::uint64_t>(1000.0 * 4294967296.0 / rate + 0.5);
  }
  double ticks_per_us_;
  std::uint64_t ns_per_tick_q32_;
};

}  // namespace unet::core
