// run()'s two ways (private to boot/).
#pragma once

#include "unet/boot/launch.h"

namespace unet::boot::detail {

// fork_launcher.cc: forks config.procs workers and serves them.
int run_forked(const LaunchConfig& config, const Work& work);

}  // namespace unet::boot::detail
