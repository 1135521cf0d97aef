// PollClock: one clock reading per poll, shared by what that poll does.
//
// The layers' timers (uam's resends and last-heard times, the stream's RTT samples and
// deadlines, datagram reassembly) read the time on every poll. Under emulation a read costs about
// 30 ns (core/README.md, Performance), so a poll reads once and its arrivals, timers and sends use
// that reading; outside a poll each call reads afresh.
#pragma once

#include <chrono>

#include "unet/core/cycle_clock.h"

namespace unet::core {

class PollClock {
 public:
  using Time = std::chrono::nanoseconds;  // since any fixed origin

  PollClock() : clock_(CycleClock::process()) {}

  // A fresh reading.
  Time now() const noexcept { return clock_.to_ns(CycleClock::now()); }
  // Between begin() and end() the poll's reading, else a fresh one.
  Time time() const noexcept { return poll_ != Time{} ? poll_ : now(); }
  // Reads the clock for the poll that starts now; returns the reading.
  Time begin() noexcept { return poll_ = now(); }
  // The poll is over: time() reads afresh again.
  void end() noexcept { poll_ = Time{}; }

 private:
  CycleClock clock_;
  Time poll_{};  // zero outside a poll
};

}  // namespace unet::core
