// unet_consumer_boot: unet::boot from an installed unet, as a user's parallel program starts:
// boot::run() forks 4 ranks here (started alone; under mpirun each process would be one rank),
// and every rank checks an allgather and an alltoall. No device is needed.
//
// Exit status: 0 when every rank saw every other's parts; 3 when one did not; 1 on a failure.
#include <unet/boot/launch.h>

#include <string>
#include <vector>

int main() {
  unet::boot::LaunchConfig cfg;
  cfg.program = "unet_consumer_boot";
  cfg.mode = unet::boot::LaunchMode::kFork;
  cfg.procs = 4;
  cfg.timeout = std::chrono::seconds(30);
  return unet::boot::run(cfg, [](unet::boot::Job& job) {
    const int n = job.size(), me = job.rank();
    const auto all = job.allgather("rank " + std::to_string(me));
    std::vector<std::string> out(n);
    for (int r = 0; r < n; ++r) out[r] = std::to_string(me) + ">" + std::to_string(r);
    const auto in = job.alltoall(out);
    for (int r = 0; r < n; ++r)
      if (all[r] != "rank " + std::to_string(r) ||
          in[r] != std::to_string(r) + ">" + std::to_string(me))
        return unet::boot::kExitWrong;
    job.barrier();
    return unet::boot::kExitOk;
  });
}
