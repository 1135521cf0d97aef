// wait_until: the blocking wait of the layers built on an endpoint (uam, ulp).
//
// Runs the layer's progress function, tests the layer's condition, and otherwise sleeps on the
// endpoint's completion channel — in slices of at most `slice`, so the layer's timers (acks,
// resends, keepalives) still run while nothing arrives — until the condition holds or `timeout`
// passes. Returns kOk, kTimeout, kDeviceError when progress reports a failure (a negative
// count), or the endpoint's wait error. The deadline is kept on steady_clock, the clock a caller
// measures with, not on the layers' calibrated CycleClock: a blocking wait is off the data path,
// and a calibration error must not end a wait early. Any timeout works: milliseconds::max() waits
// without end, zero or negative runs the check once (verbs/deadline.h).
#pragma once

#include <algorithm>
#include <chrono>

#include "unet/core/endpoint.h"
#include "unet/verbs/deadline.h"

namespace unet::core {

// `progress()` returns the work done, negative on a device failure (like Endpoint::poll());
// `done()` is the condition waited for. Both run at least once, even with a zero timeout.
template <class Progress, class Done>
[[nodiscard]] Status wait_until(
    Endpoint& net, std::chrono::milliseconds timeout, Progress&& progress, Done&& done,
    std::chrono::milliseconds slice = std::chrono::milliseconds(1)) noexcept {
  const verbs::Deadline deadline(timeout);  // the caller's clock: kTimeout means `timeout` passed
  for (;;) {
    if (progress() < 0) return Status::kDeviceError;
    if (done()) return Status::kOk;
    const auto t = verbs::Deadline::Clock::now();
    if (deadline.passed(t)) return Status::kTimeout;
    const auto nap = std::min(slice, deadline.left(t));
    if (Status s = net.wait(nap); s != Status::kOk && s != Status::kTimeout) return s;
  }
}

}  // namespace unet::core
