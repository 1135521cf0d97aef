#include "launcher.h"

#include "unet/boot/endpoint_plan.h"

namespace unet::perf {

std::unique_ptr<boot::Job> join_launcher(RawFlags& f, std::chrono::milliseconds timeout) {
  if (!boot::started_by_pmix() || !f.hosts.empty() || f.limits) return nullptr;
  std::unique_ptr<boot::Job> job = boot::join_pmix(timeout);
  if (job->size() != 2)
    throw boot::Error("under a launcher unet_perf runs as 2 ranks (mpirun -np 2), not " +
                      std::to_string(job->size()));
  const auto nodes = job->allgather(job->node());
  if (job->rank() == 1) f.hosts = {nodes[0]};
  if (f.device.empty()) f.device = boot::choose_device(job->local_rank());
  return job;
}

}  // namespace unet::perf
