// boot::run() with the fork launcher, and PMIx absent: no device. Every worker is a fork of this
// test process; it reports through its exit status, so the assertions stay in the parent.
#include "unet/boot/launch.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <string>
#include <thread>

namespace unet::boot {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

LaunchConfig forked(int procs, milliseconds timeout = milliseconds(20000)) {
  LaunchConfig c;
  c.program = "launch_test";
  c.mode = LaunchMode::kFork;
  c.procs = procs;
  c.timeout = timeout;
  return c;
}

// Runs `work` on `procs` forked workers; returns run()'s status and what the workers and the
// parent wrote to stderr, and how long it took.
struct Outcome {
  int status;
  std::string err;
  double seconds;
};
Outcome run_captured(const LaunchConfig& c, const Work& work) {
  testing::internal::CaptureStderr();
  const auto t0 = Clock::now();
  const int status = run(c, work);
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  return {status, testing::internal::GetCapturedStderr(), s};
}

TEST(ForkLauncher, CollectivesGiveEveryRankEveryPart) {
  const Outcome o = run_captured(forked(8), [](Job& job) {
    const int n = job.size(), me = job.rank();
    if (n != 8 || job.local_rank() != me || job.local_size() != n ||
        job.launcher() != Launcher::kFork)
      return kExitWrong;
    // Blobs of any bytes: newlines, NULs, colons, empty ones.
    std::string mine = "rank " + std::to_string(me) + "\n:" + std::string(me, '\0');
    const auto all = job.allgather(mine);
    for (int r = 0; r < n; ++r)
      if (all[r] != "rank " + std::to_string(r) + "\n:" + std::string(r, '\0')) return kExitWrong;
    std::vector<std::string> out(n);
    for (int r = 0; r < n; ++r)
      out[r] = r == 3 ? "" : std::to_string(me) + "->" + std::to_string(r);
    const auto in = job.alltoall(out);
    for (int r = 0; r < n; ++r)
      if (in[r] != (me == 3 ? "" : std::to_string(r) + "->" + std::to_string(me)))
        return kExitWrong;
    int spins = 0;
    job.barrier([&] { ++spins; });
    if (job.allgather(std::string(100000, char('a' + me)))[7] != std::string(100000, 'h'))
      return kExitWrong;  // a large blob
    return kExitOk;
  });
  EXPECT_EQ(o.status, kExitOk) << o.err;
}

TEST(ForkLauncher, AWrongResultIsReportedButIsNoFailure) {
  const Outcome o = run_captured(forked(3), [](Job& job) {
    job.barrier();
    return job.rank() == 1 ? kExitWrong : kExitOk;
  });
  EXPECT_EQ(o.status, kExitWrong) << o.err;
}

TEST(ForkLauncher, AFailingRankStopsTheOthersAndIsNamed) {
  const Outcome o = run_captured(forked(4), [](Job& job) -> int {
    if (job.rank() == 3) throw std::runtime_error("checked failure");
    job.barrier();  // the others wait here for rank 3, in vain
    return kExitOk;
  });
  EXPECT_EQ(o.status, kExitError);
  EXPECT_NE(o.err.find("launch_test: rank 3: checked failure"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("rank 3 exited with status 1; stopping the other ranks"), std::string::npos)
      << o.err;
  EXPECT_LT(o.seconds, 5.0);
}

TEST(ForkLauncher, AKilledRankIsNamedAtOnce) {
  const Outcome o = run_captured(forked(4), [](Job& job) {
    job.barrier();
    if (job.rank() == 2) std::raise(SIGKILL);
    job.barrier([] { std::this_thread::sleep_for(milliseconds(1)); });
    return kExitOk;
  });
  EXPECT_EQ(o.status, kExitError);
  EXPECT_NE(o.err.find("rank 2 was killed by signal Killed"), std::string::npos) << o.err;
  EXPECT_LT(o.seconds, 5.0);
}

TEST(ForkLauncher, ARankThatLeavesWhileOthersWaitForItIsNamed) {
  const Outcome o = run_captured(forked(3), [](Job& job) {
    if (job.rank() != 1) job.barrier();
    return kExitOk;
  });
  EXPECT_EQ(o.status, kExitError);
  EXPECT_NE(o.err.find("rank 1 exited with status 0 while rank"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("waits for it in collective #1"), std::string::npos) << o.err;
}

TEST(ForkLauncher, RanksCallingDifferentCollectivesAreAnError) {
  const Outcome o = run_captured(forked(2), [](Job& job) {
    if (job.rank() == 0)
      (void)job.allgather("x");
    else
      (void)job.alltoall({"a", "b"});
    return kExitOk;
  });
  EXPECT_EQ(o.status, kExitError);
  EXPECT_NE(o.err.find("collective #1: rank 0 called gather but rank 1 called alltoall"),
            std::string::npos)
      << o.err;
}

TEST(ForkLauncher, TheRunsTimeoutEndsAHungRank) {
  const Outcome o = run_captured(forked(2, milliseconds(1500)), [](Job& job) {
    if (job.rank() == 0) std::this_thread::sleep_for(std::chrono::seconds(30));
    job.barrier();
    return kExitOk;
  });
  EXPECT_EQ(o.status, kExitError);
  EXPECT_NE(o.err.find("timed out after 1 s (collective #1 waits for rank 0)"), std::string::npos)
      << o.err;
  EXPECT_LT(o.seconds, 8.0);
}

TEST(ForkLauncher, BadConfigurationsAreRefused) {
  EXPECT_THROW(run(forked(0), [](Job&) { return kExitOk; }), std::invalid_argument);
  EXPECT_THROW(run(forked(kMaxForkedProcs + 1), [](Job&) { return kExitOk; }),
               std::invalid_argument);
  EXPECT_THROW(parse_launch_mode("slurm"), std::invalid_argument);
  EXPECT_EQ(parse_launch_mode("pmix"), LaunchMode::kPmix);
}

// Started alone, a PMIx join fails at once with a message that says what to do.
TEST(Pmix, JoiningWithoutALauncherIsAClearError) {
  ::unsetenv("PMIX_NAMESPACE");
  ::unsetenv("PMIX_RANK");
  EXPECT_FALSE(started_by_pmix());
  EXPECT_EQ(resolve(LaunchMode::kAuto), Launcher::kFork);
  const auto t0 = Clock::now();
  try {
    (void)join_pmix(milliseconds(5000));
    FAIL() << "join_pmix succeeded without a launcher";
  } catch (const Error& e) {
    const std::string why = e.what();
    if (have_pmix()) {
      EXPECT_NE(why.find("PMIx_Init: UNREACHABLE: no PMIx launcher started this process"),
                std::string::npos)
          << why;
    } else {
      EXPECT_NE(why.find("built without PMIx"), std::string::npos) << why;
    }
  }
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 5.0);
  ::setenv("PMIX_NAMESPACE", "x", 1);
  ::setenv("PMIX_RANK", "0", 1);
  EXPECT_EQ(resolve(LaunchMode::kAuto), Launcher::kPmix);
  ::unsetenv("PMIX_NAMESPACE");
  ::unsetenv("PMIX_RANK");
}

}  // namespace
}  // namespace unet::boot
