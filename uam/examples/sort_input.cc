#include "sort_input.h"

#include <gflags/gflags.h>

#include <cstdio>

#include "program_flags.h"

DEFINE_uint64(keys, 16777216, "keys to sort, in total");
DEFINE_uint64(samples, 4096, "keys each rank sends rank 0 to choose the splitters");

namespace unet::uam::examples {

SortInput sort_input() {
  SortInput in;
  in.keys = cli::check_range("keys", FLAGS_keys, 1, 1ull << 32);
  in.samples = cli::check_range("samples", FLAGS_samples, 1, 1u << 20);
  return in;
}

void print_repeated(const Repeated& r, double us) {
  std::printf("  %s: %.1f us (mean of %d after %d)\n", r.name, us, r.timed, r.warm_up);
}

std::string sample_note(const SampleTimes& t) {
  char note[96];
  std::snprintf(note, sizeof note, "rank 0: samples in %.3f ms, sorting them %.3f ms", t.in_ms,
                t.sort_ms);
  return note;
}

}  // namespace unet::uam::examples
