// group_barrier_check: Group::barrier()'s promise, checked exactly rather than by timing. The
// forked ranks share a page of counters (mapped before the fork). Before barrier e each rank
// waits a random 0..2 ms (one rank, at one barrier, 200 ms), then records that it entered e;
// after the barrier it checks that every rank has entered e. Exit 0 when no rank ever left early,
// 3 when one did (naming it), as the examples do. Forked ranks only (--procs N).
#include <gflags/gflags.h>
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <thread>

#include "example_main.h"
#include "splitmix64.h"
#include "unet/boot/launch.h"

DEFINE_uint64(barriers, 50, "barriers in a row");
DECLARE_string(launcher);  // example_main.cc's

using namespace unet::uam::examples;

namespace {

constexpr int kMaxRanks = 64;

struct Shared {
  std::atomic<std::uint64_t> entered[kMaxRanks];
};

int check(Group& g, Shared& s, std::uint64_t barriers, std::uint64_t seed) {
  const int me = g.rank();
  for (std::uint64_t e = 1; e <= barriers; ++e) {
    const bool late = me == g.size() - 1 && e == barriers / 2;
    const auto delay = late ? std::chrono::microseconds(200000)
                            : std::chrono::microseconds(splitmix64(seed ^ (e << 8) ^ me) % 2000);
    std::this_thread::sleep_for(delay);
    s.entered[me].store(e, std::memory_order_release);
    g.barrier();
    for (int r = 0; r < g.size(); ++r)
      if (const std::uint64_t got = s.entered[r].load(std::memory_order_acquire); got < e) {
        std::printf("rank %d left barrier %llu before rank %d entered it (it entered %llu)\n", me,
                    static_cast<unsigned long long>(e), r, static_cast<unsigned long long>(got));
        return kExitWrong;
      }
  }
  if (me == 0)
    std::printf("verified: %d ranks, %llu barriers, no rank left one before every rank entered\n",
                g.size(), static_cast<unsigned long long>(barriers));
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  return example_main(
      "group_barrier_check", "checks Group::barrier() on forked ranks", argc, argv,
      [](const CommonParams& common) {
        if (unet::boot::resolve(unet::boot::parse_launch_mode(FLAGS_launcher)) !=
            unet::boot::Launcher::kFork)
          throw std::invalid_argument("forked ranks only: the check shares memory across them");
        void* page = ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE,
                            MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (page == MAP_FAILED) throw std::runtime_error("mmap of the shared counters failed");
        auto* shared = new (page) Shared{};
        const std::uint64_t barriers = FLAGS_barriers, seed = common.seed;
        Program p;
        p.max_pinned_bytes = [](int) { return std::size_t{1} << 20; };
        p.work = [shared, barriers, seed](Group& g) {
          if (g.size() > kMaxRanks) throw std::invalid_argument("at most 64 ranks");
          return check(g, *shared, barriers, seed);
        };
        return p;
      });
}
