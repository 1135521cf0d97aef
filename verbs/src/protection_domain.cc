#include "unet/verbs/protection_domain.h"

#include <cerrno>

#include "unet/verbs/error.h"

namespace unet::verbs {

ProtectionDomain::ProtectionDomain(std::shared_ptr<Context> ctx) : ctx_(std::move(ctx)) {
  pd_ = ibv_alloc_pd(ctx_->native());
  if (!pd_) throw_error("ibv_alloc_pd", ctx_->name(), errno);
}

ProtectionDomain::~ProtectionDomain() { ibv_dealloc_pd(pd_); }

}  // namespace unet::verbs
