// The input of a sample sort, from the flags that set it: --keys and --samples, shared by
// sample_sort and bench/compare's mpi_sample_sort so that both sort the same keys and take the
// same samples (gflags, defined in sort_input.cc; the seed is each program's own).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace unet::uam::examples {

struct SortInput {
  std::uint64_t keys = 0;     // in total
  std::uint64_t samples = 0;  // per rank
};

// --keys and --samples, each checked against its range; throws std::invalid_argument naming the
// flag.
SortInput sort_input();

// The latency-bound steps both sorts time again on their own after the sort, as OSU's
// benchmarks take a latency: the mean of `timed` runs in a row after `warm_up` untimed ones. In
// the sort each runs once, right after a long phase, when the first messages are slow.
struct Repeated {
  const char* name;  // as printed: "  NAME: X us (mean of T after W)"
  int warm_up, timed;
};
inline constexpr Repeated kBarrier{"barrier", 20, 200};
inline constexpr Repeated kSamplesAndSplitters{"samples and splitters", 10, 50};
inline constexpr Repeated kBucketSizes{"bucket sizes", 20, 200};

// Runs `step()` as `r` says; returns the mean of the timed runs in microseconds.
template <class Step>
double time_repeated(const Repeated& r, const Step& step) {
  for (int i = 0; i < r.warm_up; ++i) step();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < r.timed; ++i) step();
  const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - t0;
  return took.count() / r.timed;
}

// Prints the line bench/compare/cluster_sort.py reads.
void print_repeated(const Repeated& r, double us);

// Rank 0's two figures of the sample phase, in milliseconds: from the phase's start until every
// rank's samples were in, and its sort of them. Kept as numbers and made text only when the run is
// reported (sample_note()): formatting a float the first time costs about a millisecond under
// emulation, which belongs to no step of the sort.
struct SampleTimes {
  double in_ms = 0, sort_ms = 0;
};
// "rank 0: samples in X ms, sorting them Y ms", the sample phase's note that cluster_sort.py reads.
std::string sample_note(const SampleTimes& t);

}  // namespace unet::uam::examples
