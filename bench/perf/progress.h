// Bounded waits, for every test family: Progress<Driver> does an endpoint's work until a condition
// holds, retries an operation that says "no resource, try again", and ends the run with a
// PerfError naming what it awaited or which operation failed. The families differ in one step,
// how their endpoint makes progress and sleeps: that is the Driver (EndpointDriver below for
// core::Endpoint; am_tests.cc and ulp_tests.h have theirs). A Driver has
//   int poll()                     one round of work; < 0 on a device error (it may throw a
//                                  PerfError for a problem its handlers recorded)
//   Status arm()                   -e: before sleeping (kOk, or a device error)
//   Status sleep(milliseconds)     -e: until the endpoint may have work, at most that long
//                                  (kOk or kTimeout; anything else ends the wait)
//   void check(const char* what)   now and then while waiting: throws if its channel failed
//   std::string late() const       added to a timeout's message: what probably went wrong
//
// Retry semantic: kNoResource means "try again after progress"; any other failure throws at once,
// naming the operation, and the operation is not called again.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "connect.h"
#include "options.h"
#include "unet/core/cycle_clock.h"
#include "unet/core/endpoint.h"

namespace unet::perf {

// What every Progress shares: the limit, the peer to watch and the messages. Not a template.
class Waits {
 public:
  // `watched`: the session to watch while idle (a line there, or its end, means the peer gave
  // up the round); nullptr when the peer may send on it during the round, or there is none.
  Waits(const PerfConfig& cfg, const core::CycleClock& clock, Session* watched)
      : cfg_(cfg), watched_(watched), patience_(clock.ticks(cfg.timeout)) {}

  // true for kOk, false for kNoResource (try again after progress); any other status throws
  // failed(what, s).
  bool succeeded(Status s, const char* what) const {
    if (s == Status::kOk) return true;
    if (s != Status::kNoResource) failed(what, s);
    return false;
  }
  [[noreturn]] void failed(const char* what, Status s) const;

 protected:
  static constexpr std::chrono::milliseconds kSlice{10};  // -e: the longest sleep between checks

  std::uint64_t deadline() const noexcept { return core::CycleClock::now() + patience_; }
  // Throws when the watched peer left the round (never blocks).
  void check_peer(const char* what) const {
    if (watched_ && watched_->line_waiting()) peer_left(what);
  }
  [[noreturn]] void device_error(const char* what) const;
  // "no <what> within N ms" and the driver's `late` note.
  [[noreturn]] void timed_out(const char* what, const std::string& late) const;

  const PerfConfig& cfg_;
  Session* watched_;

 private:
  [[noreturn]] void peer_left(const char* what) const;

  std::uint64_t patience_;
};

template <class Driver>
class Progress : public Waits {
 public:
  Progress(Driver driver, const PerfConfig& cfg, const core::CycleClock& clock,
           Session* watched = nullptr)
      : Waits(cfg, clock, watched), driver_(driver) {}

  // Does the endpoint's work until `done()` is true: poll() in a loop, or with -e sleep between
  // polls (arm, poll once more, then sleep at most kSlice). After --timeout_ms without `done()`,
  // throws PerfError saying what was awaited. The time counts from the first look at the clock,
  // 4096 polls (or one sleep) into the wait, so that a wait that ends at once reads no clock: on
  // a ping-pong that read would sit between an arrival and the answer's post. `watch_peer`
  // false: the awaited thing is the peer's next line (the session is not watched).
  template <class Done>
  void until(Done done, const char* what, bool watch_peer = true) {
    std::uint64_t limit = 0;
    for (std::uint32_t idle = 0;; ++idle) {
      if (driver_.poll() < 0) device_error(what);
      if (done()) return;
      if (cfg_.events) {
        if (driver_.arm() != Status::kOk) device_error(what);
        if (driver_.poll() < 0) device_error(what);  // what came in while arming
        if (done()) return;
        if (Status s = driver_.sleep(kSlice); s != Status::kOk && s != Status::kTimeout)
          failed(what, s);
        // A sleep may make progress (uam's wait() polls and runs handlers): what it did is looked
        // at before the checks below, which would take a peer that finished meanwhile for gone.
        if (done()) return;
      }
      if (cfg_.events || idle % 4096 == 4095) {
        driver_.check(what);
        if (watch_peer) check_peer(what);
        if (limit == 0)
          limit = deadline();
        else if (core::CycleClock::now() > limit)
          timed_out(what, driver_.late());
      }
    }
  }

  // Calls `attempt` (a send, a request, a one-sided operation) until it succeeds, making progress
  // while it says kNoResource; any other failure throws at once (failed(what, s)). A timeout
  // names `awaited` (default: `what`).
  template <class Attempt>
  void retry(Attempt attempt, const char* what, const char* awaited = nullptr) {
    if (succeeded(attempt(), what)) return;
    until([&] { return succeeded(attempt(), what); }, awaited ? awaited : what);
  }

  // A server's last wait: serves the endpoint (the client may still need acknowledgements or
  // resends) until the client's count waits on the watched session, then compares the two
  // counts and `check()` (finish_round). `count` is read after the wait.
  void finish_serving(const std::uint64_t& count, const std::function<std::string()>& check) {
    until([&] { return watched_->line_waiting(); }, "the client's count", false);
    (void)finish_round(*watched_, count, check);
  }

 private:
  Driver driver_;
};

// -e: sleeps on `fd` until it is readable or `ms` passed (EINTR: as if woken). Returns kOk.
Status sleep_on(int fd, int ms) noexcept;

// The Driver of a core::Endpoint: poll(), and with -e its notification fd.
class EndpointDriver {
 public:
  explicit EndpointDriver(core::Endpoint& ep) : ep_(ep) {}
  int poll() noexcept { return ep_.poll(); }
  Status arm() noexcept { return ep_.arm(); }
  Status sleep(std::chrono::milliseconds most) noexcept {
    return sleep_on(ep_.notify_fd(), static_cast<int>(most.count()));
  }
  void check(const char*) const noexcept {}
  // The UD note, and what this side's endpoint did, so that the two sides' messages show where
  // the traffic stopped.
  std::string late() const;

 private:
  core::Endpoint& ep_;
};

// The *_bw sender's step: queues messages `next`, `next` + 1, ... below `limit`, at most `batch`
// of them (the next poll() posts them with one doorbell), stamping the post time of each measured
// one (message k >= `warmup` in posted[k - warmup]). `push(k)` queues message k; kNoResource ends
// the batch until after a poll, any other failure throws (Waits::succeeded). Returns whether it
// queued any.
template <class Push>
bool push_batch(const Waits& progress, std::uint32_t batch, std::uint64_t& next,
                std::uint64_t limit, std::uint64_t warmup, std::span<std::uint64_t> posted,
                Push push, const char* what) {
  std::uint32_t pushed = 0;
  for (; pushed < batch && next < limit; ++next, ++pushed) {
    if (!progress.succeeded(push(next), what)) break;
    if (next >= warmup) posted[next - warmup] = core::CycleClock::now();
  }
  return pushed > 0;
}

}  // namespace unet::perf
