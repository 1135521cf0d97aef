// barrier_check: the launcher's barrier holds every rank until the last one comes. The last rank
// (on the other simulated host) arrives 2 s late at a barrier with progress (PMIx_Fence_nb) and
// then at a blocking one; a rank that leaves either sooner than 1.9 s after the barrier before it
// says so and fails the job. No device.
#include <chrono>
#include <cstdio>
#include <thread>

#include "unet/boot/launch.h"

int main() {
  using Clock = std::chrono::steady_clock;
  unet::boot::LaunchConfig cfg;
  cfg.program = "barrier_check";
  cfg.mode = unet::boot::LaunchMode::kPmix;
  cfg.timeout = std::chrono::seconds(30);
  return unet::boot::run(cfg, [](unet::boot::Job& job) {
    const bool late = job.rank() == job.size() - 1;
    int failures = 0;
    for (const bool with_progress : {true, false}) {
      job.barrier();
      const auto t0 = Clock::now();
      if (late) std::this_thread::sleep_for(std::chrono::seconds(2));
      if (with_progress) {
        job.barrier([] {});
      } else {
        job.barrier();
      }
      const double waited = std::chrono::duration<double>(Clock::now() - t0).count();
      const char* kind = with_progress ? "with progress" : "blocking";
      if (waited < 1.9) {
        std::printf(
            "barrier_check: rank %d left the %s barrier after %.3f s, before rank %d came\n",
            job.rank(), kind, waited, job.size() - 1);
        ++failures;
      } else if (job.rank() == 0) {
        std::printf("barrier_check: rank 0 waited %.3f s at the %s barrier for rank %d\n", waited,
                    kind, job.size() - 1);
      }
    }
    return failures == 0 ? unet::boot::kExitOk : unet::boot::kExitWrong;
  });
}
