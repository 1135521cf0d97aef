// example_main(): the main() of the example programs. It reads the flags every example has, starts
// the job through unet::boot — forked here (`--procs N`), or as the ranks mpirun or srun started
// (PMIx) — and in each rank opens an endpoint sized for the job (boot::plan_for: direct-access RC
// on the rank's device), connects it to every other rank (boot::connect_all), runs the program on
// a Group, and waits, still serving its peers, until every rank is done.
//
// Exit status (boot/launch.h): 0 verified; 3 ran but the result is wrong; 1 any failure (a rank
// died, timed out, a channel failed: the launcher names the rank and stops the others; gflags'
// own errors too); 2 a flag out of range or a stray argument; 77 no RDMA device when forking
// (ctest's skip), except that with UNET_REQUIRE_DEVICE=1 a missing device is 1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "group.h"
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

// Reads the program's own flags (its gflags FLAGS_...) and returns the program; throws
// std::invalid_argument for a value out of range (cli::check_range).
using Setup = std::function<Program(const CommonParams& common)>;

// Parses argv with gflags: the flags every example has (--procs, --launcher, --seed, --chunk,
// --timeout, --device, --stats, --corrupt, --kill-rank; example_main.cc) and the program's own,
// defined in its source. --help lists them all under `summary` and returns kExitOk. Then runs
// `setup` and the job. A flag out of range or a stray argument prints a message and returns
// kExitUsage (gflags itself ends the program with status 1 on an unknown flag or a value not of
// the flag's type); any other failure returns kExitError. `program` prefixes every message.
int example_main(const char* program, const char* summary, int argc, char** argv,
                 const Setup& setup);

}  // namespace unet::uam::examples
