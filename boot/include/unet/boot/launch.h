// run(): starts a parallel program either way — as the one rank a PMIx launcher started (mpirun,
// srun --mpi=pmix), or as `procs` workers forked on this host when the program was started alone
// — and turns the ranks' outcome into one exit status.
//
// Fork: the parent forks the workers and opens no device itself. Each worker gets a Job whose
// collectives the parent serves over a socket pair (gathering every rank's part, then answering
// each). A worker that exits with a failure or dies makes the parent stop the others at once and
// name the rank; so does a worker that leaves while others wait for it in a collective, and the
// run's timeout. The parent reaps every child; an orphaned worker is killed (PR_SET_PDEATHSIG).
//
// PMIx: `work` runs here, on the Job from join_pmix(). An exception from it is printed and ends
// the whole job through PMIx_Abort, so the launcher stops every rank and reports this one.
//
// Exit status: kExitOk when every rank returned kExitOk; kExitWrong when a rank found a wrong
// result and none failed otherwise; kExitError for any failure. Messages start with the program's
// name and the rank ("sample_sort: rank 2: ...").
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "unet/boot/job.h"

namespace unet::boot {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitWrong = 3;  // the program ran, and its result failed verification
inline constexpr int kExitSkip = 77;  // no RDMA device (ctest's SKIP_RETURN_CODE)

// How to start the job: kAuto is PMIx when started_by_pmix(), else fork.
enum class LaunchMode : std::uint8_t { kAuto, kFork, kPmix };
// "auto", "fork" or "pmix"; throws std::invalid_argument for anything else.
LaunchMode parse_launch_mode(std::string_view text);
// The launcher kAuto stands for in this process; the others as they are.
Launcher resolve(LaunchMode mode) noexcept;

// The most workers the fork launcher starts (beyond it, use a real launcher).
inline constexpr int kMaxForkedProcs = 1024;

struct LaunchConfig {
  std::string program;  // prefixes every message
  LaunchMode mode = LaunchMode::kAuto;
  // Fork: the workers to start, 1..kMaxForkedProcs. PMIx: 0 (any), or the size the job must have.
  int procs = 0;
  // The whole run under fork, and each collective either way.
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
};

// One rank's program: returns kExitOk, or kExitWrong when its result is wrong; throws on failure.
using Work = std::function<int(Job&)>;

// Runs `work` as every rank of the job (see the top of this file); returns the exit status. Throws
// std::invalid_argument for a bad config (procs out of range, or not the PMIx job's size) and
// Error when the PMIx launcher cannot be joined, before any work runs.
int run(const LaunchConfig& config, const Work& work);

}  // namespace unet::boot
