// One size of one test: the endpoint and channel it runs on, the check pattern, and the tests
// (ep_tests.cc, da_tests.cc, am_tests.cc, dgram_tests.cc, stream_tests.cc);
// their bounded waits are progress.h's.
//
// Rules for every timed loop: timestamps are cycle-counter reads into arrays allocated before the
// loop; nothing is printed or allocated inside it; a failure throws PerfError (and ends the run).
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <span>
#include <string>

#include "connect.h"
#include "options.h"
#include "progress.h"
#include "report.h"
#include "test_table.h"
#include "unet/core/cycle_clock.h"
#include "unet/core/endpoint.h"

namespace unet::perf {

// One size of the configured test: what a row's run function gets, before the size's endpoint
// exists, and what every family's round (Round below, AmRound, StreamRound) starts from.
struct SizeRun {
  const PerfConfig& cfg;
  Session* session;  // nullptr with --oob rc_pingpong / ib_send_lat: the peer is the tool
  std::uint32_t size;
  const core::CycleClock& clock;
  std::uint64_t total() const noexcept { return cfg.warmup + cfg.iterations; }  // warm-up too
};

// A round of the core-endpoint tests (ep_*, da_*): one channel of a core::Endpoint.
struct Round : SizeRun {
  core::Endpoint& ep;
  core::ChannelId ch;
  // Direct-access tests: 3 * size bytes each, page-aligned and zeroed, allocated before the
  // endpoint so that they outlive its registrations. `local` is the source or target of this
  // side's operations, `window` what it grants the peer.
  std::span<std::byte> local;
  std::span<std::byte> window;
};

// The check pattern: byte i of message `seed`. First and last messages carry it; the receiver
// compares.
inline std::byte pattern(std::uint64_t seed, std::size_t i) noexcept {
  return static_cast<std::byte>(seed * 131 + i * 7 + 1);
}
void fill_pattern(std::span<std::byte> out, std::uint64_t seed) noexcept;
// "" when `in` carries pattern `seed` from byte `from` on, otherwise where it differs (for an
// error message: byte_differs).
std::string check_pattern(std::span<const std::byte> in, std::uint64_t seed, std::size_t from = 0);
// "byte I is GOT, not WANT".
std::string byte_differs(std::size_t i, std::byte got, std::byte want);

// The run function of each row of the test table (test_table.h), run_NAME: one size of the test,
// both sides (cfg.is_client()). It makes the size's endpoint, agrees with the peer whether both
// can run it (agreed_size), connects one channel, runs the test, compares the two sides' counts
// (finish_round) and returns the client's figures (a server's result carries only the size).
#define UNET_PERF_DECLARE_RUN(name, ...) SizeResult run_##name(const SizeRun& a);
UNET_PERF_TESTS(UNET_PERF_DECLARE_RUN)
#undef UNET_PERF_DECLARE_RUN

// The frame of every run function. `make()` builds this size's endpoint and returns "ok" or
// "skip <why>" (an exception from it becomes "error <what>"); the two sides compare (agree_size).
// A skip on either side returns the result with the reason; otherwise `run()` runs the size.
template <class Make, class Run>
SizeResult agreed_size(const SizeRun& a, Make make, Run run) {
  std::string state;
  try {
    state = make();
  } catch (const std::exception& e) {  // verbs::Error, or uam's / ulp's std::invalid_argument
    state = std::string("error ") + e.what();
  }
  if (std::string skip = agree_size(*a.session, a.size, state); !skip.empty()) {
    SizeResult result = SizeResult::of(a.size, a.cfg.iterations);
    result.skipped = skip;
    return result;
  }
  return run();
}

// run_NAME of the core-endpoint tests (ep_*, da_*): a core::Endpoint sized for the message (and
// for da_* this side's memory, allocated before it), then `test` on a Round over one channel.
SizeResult on_endpoint(const SizeRun& a, SizeResult (*test)(Round&));

// ep_lat on a channel made elsewhere: also main.cc's, against --oob rc_pingpong or ib_send_lat.
SizeResult ep_lat(Round& r);

}  // namespace unet::perf
