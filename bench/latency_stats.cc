#include "latency_stats.h"

#include <algorithm>
#include <cmath>

namespace unet::bench {
namespace {

// Nearest-rank percentile of sorted data: the smallest value with at least q of the samples
// at or below it.
double percentile(std::span<const double> sorted, double q) {
  auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

}  // namespace

LatencyStats compute_latency(std::span<double> us) {
  LatencyStats s;
  s.samples = us.size();
  if (us.empty()) return s;
  std::sort(us.begin(), us.end());
  s.min = us.front();
  s.max = us.back();
  std::size_t n = us.size();
  s.median = n % 2 ? us[n / 2] : (us[n / 2 - 1] + us[n / 2]) / 2;
  double sum = 0;
  for (double v : us) sum += v;
  s.avg = sum / static_cast<double>(n);
  double sq = 0;
  for (double v : us) sq += (v - s.avg) * (v - s.avg);
  s.stdev = n > 1 ? std::sqrt(sq / static_cast<double>(n - 1)) : 0;
  s.p99 = percentile(us, 0.99);
  s.p999 = percentile(us, 0.999);
  return s;
}

void print_latency_header(std::FILE* out) {
  std::fprintf(out,
               " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]"
               "    t_stdev[usec]   99%% percentile[usec]   99.9%% percentile[usec] \n");
}

void print_latency_row(std::FILE* out, std::size_t bytes, std::size_t iterations,
                       const LatencyStats& s) {
  std::fprintf(out,
               " %-7zu %-10zu %-7.2f        %-7.2f        %-7.2f          %-7.2f        %-7.2f"
               "          %-7.2f                %-7.2f\n",
               bytes, iterations, s.min, s.max, s.median, s.avg, s.stdev, s.p99, s.p999);
}

}  // namespace unet::bench
