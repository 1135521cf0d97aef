#include "unet/verbs/memory_region.h"

#include <cerrno>
#include <string>

#include "unet/verbs/error.h"

namespace unet::verbs {

MemoryRegion::MemoryRegion(std::shared_ptr<ProtectionDomain> pd, void* addr, std::size_t length,
                           int access)
    : pd_(std::move(pd)), access_(access) {
  std::string object = pd_->context().name() + ", " + std::to_string(length) + " bytes";
  if (addr == nullptr || length == 0)
    throw_error("ibv_reg_mr", object, EINVAL, "null address or zero length");
  mr_ = ibv_reg_mr(pd_->native(), addr, length, access);
  if (!mr_)
    throw_error(
        "ibv_reg_mr", object, errno,
        errno == ENOMEM || errno == EPERM ? "is `ulimit -l` (locked memory) large enough?" : "");
}

MemoryRegion::~MemoryRegion() { ibv_dereg_mr(mr_); }

}  // namespace unet::verbs
