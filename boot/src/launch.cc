// run(): the PMIx way here; the fork way in fork_launcher.cc.
#include "unet/boot/launch.h"

#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>

#include "launch_impl.h"

namespace unet::boot {

LaunchMode parse_launch_mode(std::string_view text) {
  if (text == "auto") return LaunchMode::kAuto;
  if (text == "fork") return LaunchMode::kFork;
  if (text == "pmix") return LaunchMode::kPmix;
  throw std::invalid_argument("the launcher must be auto, fork or pmix, not '" + std::string(text) +
                              "'");
}

Launcher resolve(LaunchMode mode) noexcept {
  switch (mode) {
    case LaunchMode::kFork:
      return Launcher::kFork;
    case LaunchMode::kPmix:
      return Launcher::kPmix;
    case LaunchMode::kAuto:
      break;
  }
  return started_by_pmix() ? Launcher::kPmix : Launcher::kFork;
}

int run(const LaunchConfig& cfg, const Work& work) {
  if (resolve(cfg.mode) == Launcher::kFork) return detail::run_forked(cfg, work);
  std::unique_ptr<Job> job = join_pmix(cfg.timeout);
  if (cfg.procs != 0 && cfg.procs != job->size())
    throw std::invalid_argument("--procs " + std::to_string(cfg.procs) +
                                " but the launcher started " + std::to_string(job->size()) +
                                " ranks");
  try {
    return work(*job);
  } catch (const AgreedError& e) {  // every rank stops alike: no need to abort the others
    if (job->rank() == 0) std::fprintf(stderr, "%s: %s\n", cfg.program.c_str(), e.what());
    return kExitError;
  } catch (const std::exception& e) {
    const std::string msg = cfg.program + ": rank " + std::to_string(job->rank()) + " (" +
                            job->node() + "): " + e.what();
    std::fprintf(stderr, "%s\n", msg.c_str());
    std::fflush(nullptr);
    job->abort(kExitError, msg);
  }
  return kExitError;  // not reached: abort() does not return
}

}  // namespace unet::boot
