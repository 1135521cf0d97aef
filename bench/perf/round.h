// One size of one test: the endpoint and channel it runs on, the check pattern, and the tests
// (ep_tests.cc, da_tests.cc, am_tests.cc, ulp_tests.cc); their bounded waits are progress.h's.
//
// Rules for every timed loop: timestamps are cycle-counter reads into arrays allocated before the
// loop; nothing is printed or allocated inside it; a failure throws PerfError (and ends the run).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "connect.h"
#include "unet/core/cycle_clock.h"
#include "options.h"
#include "progress.h"
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
