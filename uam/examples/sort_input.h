// The input of a sample sort, from the flags that set it: --keys and --samples, shared by
// sample_sort and bench/compare's mpi_sample_sort so that both sort the same keys and take the
// same samples (gflags, defined in sort_input.cc; the seed is each program's own).
#pragma once

#include <chrono>
#include <cstdint>

namespace unet::uam::examples {

struct SortInput {
  std::uint64_t keys = 0;     // in total
  std::uint64_t samples = 0;  // per rank
};

// --keys and --samples, each checked against its range; throws std::invalid_argument naming the
// flag.
SortInput sort_input();

// The barrier figure both sorts print, as OSU's osu_barrier takes it: the mean of kBarriersTimed
// barriers in a row after kBarriersWarmUp untimed ones (the first after a long phase is slow).
inline constexpr int kBarriersWarmUp = 20, kBarriersTimed = 200;

// Runs `barrier()` as above; returns the mean of the timed ones in microseconds.
template <class Barrier>
double time_barriers(const Barrier& barrier) {
  for (int i = 0; i < kBarriersWarmUp; ++i) barrier();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kBarriersTimed; ++i) barrier();
  const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - t0;
  return took.count() / kBarriersTimed;
}

// Prints the barrier line bench/compare/cluster_sort.py reads.
void print_barrier(double us);

}  // namespace unet::uam::examples
