// join_pmix() in a build without PMIx (UNET_PMIX=OFF, or AUTO without libpmix-dev).
#include "unet/boot/job.h"

namespace unet::boot {

bool have_pmix() noexcept { return false; }

std::unique_ptr<Job> join_pmix(std::chrono::milliseconds) {
  throw Error(std::string("this unet was built without PMIx (UNET_PMIX=OFF, or libpmix-dev was "
                          "missing)") +
              (started_by_pmix()
                   ? ", but a PMIx launcher started this process"
                   : ": start the program without --launcher pmix to fork its ranks"));
}

}  // namespace unet::boot
