// Deadline: when a bounded wait ends, on steady_clock, computed once and without overflow.
//
// Every blocking wait in unet (core's and the layers' wait(), accept(), the completion channel,
// rdma_cm, the out-of-band socket) takes a std::chrono::milliseconds timeout and turns it into a
// Deadline here, never by adding to now() itself: now() + milliseconds::max() overflows. A
// timeout too long to add to now() (milliseconds::max(), or anything past the clock's range of
// about 292 years) is "never": the wait lasts until its condition holds. Zero or negative means
// "already passed": the wait checks its condition once and returns. It lives in verbs/, the
// lowest layer, so that verbs' own waits and every layer above use the same one.
#pragma once

#include <chrono>
#include <climits>

namespace unet::verbs {

// A timeout as the int of milliseconds the C interfaces take (poll(2), rdma_resolve_addr),
// clamped to 0 .. INT_MAX (24.8 days; a longer wait loops).
constexpr int clamp_ms(std::chrono::milliseconds t) noexcept {
  return t.count() <= 0 ? 0 : t.count() >= INT_MAX ? INT_MAX : static_cast<int>(t.count());
}

// A timeout a layer keeps in its configuration and adds to its own nanosecond clock (a stream's
// connect or dead-peer timeout, uam's keepalive): clamped to 0 .. a century, so that a
// configured milliseconds::max() means "never" and the addition cannot overflow.
inline constexpr std::chrono::milliseconds kLongestTimer = std::chrono::hours(24 * 365 * 100);
constexpr std::chrono::milliseconds clamp_timer(std::chrono::milliseconds t) noexcept {
  return t.count() <= 0 ? std::chrono::milliseconds::zero() : t < kLongestTimer ? t : kLongestTimer;
}

// The end of a wait (see the top of this file). Plain data: copy it freely.
class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  // `timeout` from now, or from `now` (tests pass the time in).
  explicit Deadline(std::chrono::milliseconds timeout) noexcept : Deadline(timeout, Clock::now()) {}
  Deadline(std::chrono::milliseconds timeout, Clock::time_point now) noexcept : at_(now) {
    if (timeout.count() <= 0) return;
    // The room left on the clock after `now`, in whole milliseconds (rounded down): a timeout
    // below it adds without overflow, anything else never comes.
    const auto room =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::time_point::max() - now);
    if (timeout < room)
      at_ = now + timeout;
    else
      never_ = true;
  }

  // True for a wait without end.
  bool never() const noexcept { return never_; }
  // Whether the deadline has come.
  bool passed(Clock::time_point now = Clock::now()) const noexcept { return !never_ && now >= at_; }
  // The time left, rounded up to whole milliseconds (so a sleep of it does not wake a moment
  // early and spin), at least zero; milliseconds::max() for never.
  std::chrono::milliseconds left(Clock::time_point now = Clock::now()) const noexcept {
    if (never_) return std::chrono::milliseconds::max();
    if (now >= at_) return std::chrono::milliseconds::zero();
    return std::chrono::ceil<std::chrono::milliseconds>(at_ - now);
  }
  // left() as poll(2) and epoll_wait(2) take their timeout: -1 (no end) for never, else
  // clamp_ms(left()).
  int poll_timeout(Clock::time_point now = Clock::now()) const noexcept {
    return never_ ? -1 : clamp_ms(left(now));
  }

 private:
  Clock::time_point at_;
  bool never_ = false;
};

}  // namespace unet::verbs
