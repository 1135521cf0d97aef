// LatencyStats: perftest's latency columns computed honestly — in double, from every sample
// (no dropped outliers), t_typical being the median and percentiles by nearest rank.
#pragma once

#include <cstdio>
#include <span>

namespace unet::bench {

struct LatencyStats {
  std::size_t samples = 0;
  double min = 0, max = 0, median = 0, avg = 0, stdev = 0, p99 = 0, p999 = 0;
};

// `us` are latencies in microseconds (reordered in place). Empty input gives all zeros.
LatencyStats compute_latency(std::span<double> us);

// perftest's latency table header and one row, to `out`.
void print_latency_header(std::FILE* out);
void print_latency_row(std::FILE* out, std::size_t bytes, std::size_t iterations,
                       const LatencyStats& s);

}  // namespace unet::bench
