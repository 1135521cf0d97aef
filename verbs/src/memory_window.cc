#include "unet/verbs/memory_window.h"

#include <cerrno>

#include "unet/verbs/error.h"

namespace unet::verbs {

MemoryWindow::MemoryWindow(std::shared_ptr<ProtectionDomain> pd, MemoryWindowType type)
    : pd_(std::move(pd)), type_(type) {
  mw_ =
      ibv_alloc_mw(pd_->native(), type == MemoryWindowType::kType1 ? IBV_MW_TYPE_1 : IBV_MW_TYPE_2);
  if (!mw_)
    throw_error(
        "ibv_alloc_mw",
        pd_->context().name() + (type == MemoryWindowType::kType1 ? ", type 1" : ", type 2"),
        errno);
}

MemoryWindow::~MemoryWindow() { ibv_dealloc_mw(mw_); }

}  // namespace unet::verbs
