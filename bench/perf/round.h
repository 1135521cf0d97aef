// One size of one test: the endpoint and channel it runs on, bounded waits that poll or sleep on
// completion events (-e), the check pattern, and the tests (ep_tests.cc, da_tests.cc, am_tests.cc).
//
// Rules for every timed loop: timestamps are cycle-counter reads into arrays allocated before the
// loop; nothing is printed or allocated inside it; a failure throws PerfError (and ends the run).
#pragma once

#include <poll.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "connect.h"
#include "unet/core/cycle_clock.h"
#include "options.h"
#include "report.h"
#include "unet/core/endpoint.h"

namespace unet::perf {

struct Round {
  const PerfConfig& cfg;
  Session* session;  // nullptr with --oob rc_pingpong: the peer is ibv_rc_pingpong, no session
  core::Endpoint& ep;
  core::ChannelId ch;
  std::uint32_t size;
  const core::CycleClock& clock;
  // Direct-access tests: 3 * size bytes each, page-aligned and zeroed, allocated before the
  // endpoint so that they outlive its registrations. `local` is the source or target of this
  // side's operations, `window` what it grants the peer.
  std::span<std::byte> local;
  std::span<std::byte> window;
  std::uint64_t total() const noexcept { return cfg.warmup + cfg.iterations; }
};

// The check pattern: byte i of message `seed`. First and last messages carry it; the receiver
// compares.
inline std::byte pattern(std::uint64_t seed, std::size_t i) noexcept {
  return static_cast<std::byte>(seed * 131 + i * 7 + 1);
}
void fill_pattern(std::span<std::byte> out, std::uint64_t seed) noexcept;
// "" when `in` carries pattern `seed`, otherwise where it differs (for an error message).
std::string check_pattern(std::span<const std::byte> in, std::uint64_t seed);

// Does the endpoint's work until `done()` is true: poll() in a loop, or with -e sleep on the
// endpoint's notify fd between polls (arm, poll once more, then poll(2)). After --timeout_ms
// without `done()`, throws PerfError saying what was awaited.
class Progress {
 public:
  Progress(core::Endpoint& ep, const PerfConfig& cfg, const core::CycleClock& clock)
      : ep_(ep), cfg_(cfg), patience_(clock.ticks(cfg.timeout)) {}

  template <class Done>
  void until(Done done, const char* what) {
    if (cfg_.events) return until_event(done, what);
    const std::uint64_t deadline = core::CycleClock::now() + patience_;
    for (std::uint32_t idle = 0;; ++idle) {
      if (ep_.poll() < 0) device_error(what);
      if (done()) return;
      if (idle % 4096 == 4095 && core::CycleClock::now() > deadline) timed_out(what);
    }
  }

  // Retries `attempt` (a send, acquire_buffer or one-sided operation) while it says kNoResource,
  // making progress in between; any other failure throws.
  template <class Attempt>
  void retry(Attempt attempt, const char* what) {
    Status s = attempt();
    if (s == Status::kOk) return;
    until(
        [&] {
          s = attempt();
          if (s != Status::kOk && s != Status::kNoResource) failed(what, s);
          return s == Status::kOk;
        },
        what);
  }

  [[noreturn]] void failed(const char* what, Status s) const;

 private:
  template <class Done>
  void until_event(Done done, const char* what) {
    const auto deadline = std::chrono::steady_clock::now() + cfg_.timeout;
    for (;;) {
      if (ep_.poll() < 0) device_error(what);
      if (done()) return;
      if (ep_.arm() != Status::kOk) device_error(what);
      if (ep_.poll() < 0) device_error(what);  // what came in while arming
      if (done()) return;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) timed_out(what);
      pollfd p{ep_.notify_fd(), POLLIN, 0};
      (void)::poll(&p, 1, static_cast<int>(left.count()));  // EINTR: loop again
    }
  }
  [[noreturn]] void device_error(const char* what) const;
  [[noreturn]] void timed_out(const char* what) const;

  core::Endpoint& ep_;
  const PerfConfig& cfg_;
  std::uint64_t patience_;
};

// The *_bw sender's step: queues messages `next`, `next` + 1, ... below `limit`, at most `batch`
// of them (the next poll() posts them with one doorbell), stamping the post time of each measured
// one (message k >= `warmup` in posted[k - warmup]). `push(k)` queues message k; kNoResource ends
// the batch until after a poll, any other failure is `progress.failed(what, s)`, which throws.
// Returns whether it queued any.
template <class AnyProgress, class Push>
bool push_batch(AnyProgress& progress, std::uint32_t batch, std::uint64_t& next,
                std::uint64_t limit, std::uint64_t warmup, std::span<std::uint64_t> posted,
                Push push, const char* what) {
  std::uint32_t pushed = 0;
  for (; pushed < batch && next < limit; ++next, ++pushed) {
    const Status s = push(next);
    if (s == Status::kNoResource) break;
    if (s != Status::kOk) progress.failed(what, s);
    if (next >= warmup) posted[next - warmup] = core::CycleClock::now();
  }
  return pushed > 0;
}

// The core-endpoint tests. Each runs both sides (cfg.is_client()), ends with finish_round, and
// returns the client's figures (the server's result carries only the size).
SizeResult run_ep_lat(Round& r);
SizeResult run_ep_bw(Round& r);
SizeResult run_da_write_lat(Round& r);
SizeResult run_da_write_bw(Round& r);
SizeResult run_da_read_lat(Round& r);

// One size of am_lat or am_bw (am_tests.cc): its uam::Endpoint, the per-size handshake, the
// channel, the test and the closing count check. Returns the client's figures.
SizeResult run_am_size(const PerfConfig& c, Session& s, std::uint32_t size,
                       const core::CycleClock& clock);

// One size of dgram_lat, stream_lat or stream_bw (ulp_tests.cc): its ulp endpoint over UD, the
// per-size handshake, the channel, the test and the closing count check. Returns the client's
// figures.
SizeResult run_ulp_size(const PerfConfig& c, Session& s, std::uint32_t size,
                        const core::CycleClock& clock);

}  // namespace unet::perf
