// fence_timeout: under mpirun, rank 1 stays out of a barrier for 60 s while the job's collectives
// may wait 2 s. The other ranks' PMIx_Fence must fail with a clear error naming the collective,
// and the job end non-zero long before rank 1 comes back (boot/README.md, "Failure"). No device.
#include <chrono>
#include <thread>

#include "unet/boot/launch.h"

int main() {
  unet::boot::LaunchConfig cfg;
  cfg.program = "fence_timeout";
  cfg.mode = unet::boot::LaunchMode::kPmix;
  cfg.timeout = std::chrono::seconds(2);
  return unet::boot::run(cfg, [](unet::boot::Job& job) {
    job.barrier();  // every rank has joined
    if (job.rank() == 1) std::this_thread::sleep_for(std::chrono::seconds(60));
    job.barrier();
    return unet::boot::kExitOk;
  });
}
