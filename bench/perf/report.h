// unet_perf's figures and how they are printed: perftest's bandwidth arithmetic, its tables (the
// latency table comes from bench/latency_stats), the banner, and the --json report.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>

#include "latency_stats.h"
#include "options.h"

namespace unet::perf {

// perftest's BW figures (MB = 2^20 bytes, as perftest's 0x100000):
//   BW average = bytes * n / (tcompleted[n-1] - tposted[0])
//   MsgRate    = n / (tcompleted[n-1] - tposted[0]), in millions per second
//   BW peak    = bytes / opt_delta, where opt_delta is the smallest time per message over every run
//                of consecutive messages: min over i <= j of
//                (tcompleted[j] - tposted[i]) / (j - i + 1).
// The peak search is quadratic; like perftest (which computes it "up to iters=20000") it is left
// out above kMaxPeakIterations messages and reported as 0 with peak_computed false. Unlike
// perftest, every quantity is computed in double, never truncated to whole cycles.
inline constexpr std::size_t kMaxPeakIterations = 20000;

struct BwResult {
  double peak_mb_s = 0;
  double avg_mb_s = 0;
  double msg_rate_mpps = 0;
  bool peak_computed = false;
};

// `posted[i]` and `completed[i]` are cycle-counter stamps of message i; `ticks_per_us` converts.
BwResult compute_bw(std::span<const std::uint64_t> posted, std::span<const std::uint64_t> completed,
                    std::uint64_t bytes, double ticks_per_us);

// Ping-pong latency from the client's stamps: stamps[k] is when iteration k began and stamps[n]
// when the last one ended, so each gap is one round trip. The first `warmup` are left out; the
// others, in microseconds, are halved (one way, as ib_send_lat) unless `figure` is kRoundTrip
// (da_read_lat, as ib_read_lat).
bench::LatencyStats round_trip_latency(std::span<const std::uint64_t> stamps, std::uint64_t warmup,
                                       double ticks_per_us, Figure figure = Figure::kHalfRoundTrip);

void print_bw_header(std::FILE* out);
void print_bw_row(std::FILE* out, std::uint64_t bytes, std::uint64_t iterations, const BwResult& r);

// One size's outcome: latency or bandwidth figures, or the reason it was skipped.
struct SizeResult {
  // The result of one size before it runs; the optional figures are filled in by the test.
  static SizeResult of(std::uint32_t bytes, std::uint64_t iterations) {
    SizeResult r;
    r.bytes = bytes;
    r.iterations = iterations;
    return r;
  }
  std::uint32_t bytes = 0;
  std::uint64_t iterations = 0;
  std::optional<bench::LatencyStats> latency;
  std::optional<BwResult> bandwidth;
  std::string skipped;  // non-empty: not run, and why
  // am_*: the messages the server's handlers ran (warm-up included), as it reported at the end.
  std::optional<std::uint64_t> server_count;
  // am_*: the client's uam resends (UD: Stats::retransmitted) and the duplicates it dropped (the
  // server's resends that arrived), warm-up included. Over RC both stay 0.
  std::optional<std::uint64_t> am_retransmitted;
  std::optional<std::uint64_t> am_duplicates;
  // stream_*: the client's connection's segments sent again and retransmission timeouts (what
  // the stream repaired on the unreliable UD path during the size).
  std::optional<std::uint64_t> retransmitted_segments;
  std::optional<std::uint64_t> retransmit_timeouts;
  // This side's core endpoint counters after the size ran (warm-up included): how many messages
  // went by ring or SEND, credit writes, doorbells.
  std::optional<core::EndpointStats> endpoint;
};

// What only the device tells: for the banner and the report.
struct RunInfo {
  std::string device;                  // the device actually opened
  std::uint32_t inline_threshold = 0;  // the endpoint's effective one (inside the descriptor)
  double ticks_per_us = 0;
  std::uint32_t inline_post_limit = 0;  // buffer sends posted inline up to this size
  std::uint32_t am_limit = 0;           // am_*: the largest payload on this transport
};

// The lines printed before the table, each starting with '#', e.g.
//   # unet_perf ep_lat: RC base-level send/recv through core::Endpoint, device rxe0
//   # 100 warm-up iterations excluded; latency is half the round trip; t_typical is the median
std::string banner(const PerfConfig& c, const RunInfo& info);

// The --json report: perftest's field names where perftest has them ("test_info", "results",
// MsgSize, n_iterations, t_min ... percentile_99.9, BW_peak, BW_average, MsgRate), plus the full
// configuration under "config" and the skipped sizes under "skipped". "results" is an array, one
// object per size run (perftest writes a single object: it runs one size per report). The client
// measures; a server's report has the configuration and the sizes, without figures.
std::string report_json(const PerfConfig& c, const RunInfo& info,
                        std::span<const SizeResult> results);

}  // namespace unet::perf
