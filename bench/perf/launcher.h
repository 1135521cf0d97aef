// join_launcher(): unet_perf's two sides as the two ranks of a job mpirun or srun started, as
// ucx_perftest runs under `mpirun -np 2` (bench/perf/README.md).
#pragma once

#include <chrono>
#include <memory>

#include "options.h"
#include "unet/boot/job.h"

namespace unet::perf {

// When a PMIx launcher started this process and no host was given: joins the job (PMIx), which
// must have 2 ranks; rank 0 becomes the server and rank 1 the client, whose host is rank 0's node
// as the launcher names it. Without -d, each rank opens boot's device for it (UNET_DEVICE, else
// its local rank modulo the node's devices). Returns the job, to keep until the run ends, or
// nullptr when unet_perf runs as usual. Throws boot::Error when the job cannot be joined or has
// another size.
std::unique_ptr<boot::Job> join_launcher(RawFlags& flags, std::chrono::milliseconds timeout);

}  // namespace unet::perf
