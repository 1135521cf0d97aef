// example_main(): the main() of the example programs. It reads the flags every example has, starts
// the job through unet::boot — forked here (`--procs N`), or as the ranks mpirun or srun started
// (PMIx) — and in each rank opens an endpoint sized for the job (boot::plan_for: direct-access RC
// on the rank's device), connects it to every other rank (boot::connect_all), runs the program on
// a Group, and waits, still serving its peers, until every rank is done.
//
// Exit status (boot/launch.h): 0 verified; 3 ran but the result is wrong; 1 any failure (a rank
// died, timed out, a channel failed: the launcher names the rank and stops the others); 2 bad
// command line; 77 no RDMA device when forking (ctest's skip), except that with
// UNET_REQUIRE_DEVICE=1 a missing device is 1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "group.h"
#include "options.h"
#include "unet/boot/launch.h"

namespace unet::uam::examples {

using boot::kExitError;
using boot::kExitOk;
using boot::kExitSkip;
using boot::kExitUsage;
using boot::kExitWrong;

// What every example program reads from the flags example_main() declares for it.
struct CommonParams {
  std::uint64_t seed = 1;
  std::uint64_t chunk = 0;  // bytes per store or get, a multiple of 4096
  bool corrupt = false;     // test hook: damage the result, so verification must fail
};

// One rank's program: returns kExitOk, or kExitWrong when its result is wrong; throws on failure.
using Work = std::function<int(Group&)>;

// A program: its work, and the registration cache's bound (the memory store and get may pin) for
// a job of `ranks`.
struct Program {
  std::function<std::size_t(int ranks)> max_pinned_bytes;
  Work work;
};

// Reads the program's own flags (`opt`) and returns the program.
using Setup = std::function<Program(const Options& opt, const CommonParams& common)>;

// Declares the flags every example has (--procs, --launcher, --seed, --chunk, --timeout, --device,
// --stats, --corrupt, --kill-rank) beside the program's own in `opt`, parses argv, runs `setup`
// and the job. A bad flag prints a message and returns kExitUsage; any other failure, kExitError.
int example_main(Options& opt, int argc, char** argv, const Setup& setup);

}  // namespace unet::uam::examples
