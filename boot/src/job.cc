// Job: what every launcher's Job shares.
#include "unet/boot/job.h"

#include <cstdlib>

namespace unet::boot {

Job::Job(Launcher launcher, int rank, int size, int local_rank, int local_size, std::string node,
         std::chrono::milliseconds timeout)
    : launcher_(launcher),
      rank_(rank),
      size_(size),
      local_rank_(local_rank),
      local_size_(local_size),
      node_(std::move(node)),
      timeout_(timeout) {}

Job::~Job() = default;

std::string_view launcher_name(Launcher l) noexcept {
  return l == Launcher::kPmix ? "pmix" : "fork";
}

std::string placement(Job& job, std::string_view what) {
  const std::vector<std::string> where =
      job.allgather(job.node() + (what.empty() ? "" : " (" + std::string(what) + ")"));
  std::string out;
  for (std::size_t r = 0; r < where.size();) {
    std::size_t e = r;
    while (e + 1 < where.size() && where[e + 1] == where[r]) ++e;
    out += (out.empty() ? "" : ", ") + std::to_string(r) + (e > r ? "-" + std::to_string(e) : "") +
           " on " + where[r];
    r = e + 1;
  }
  return out;
}

bool started_by_pmix() noexcept {
  const char* ns = std::getenv("PMIX_NAMESPACE");
  const char* rank = std::getenv("PMIX_RANK");
  return ns && *ns && rank && *rank;
}

}  // namespace unet::boot
