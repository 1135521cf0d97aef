// ProtectionDomain: owner of an ibv_pd. Memory regions, windows, QPs, SRQs and address handles
// are made in a PD and hold it alive.
#pragma once

#include <memory>

#include "unet/verbs/device.h"

namespace unet::verbs {

class ProtectionDomain {
 public:
  explicit ProtectionDomain(std::shared_ptr<Context> ctx);
  ~ProtectionDomain();
  ProtectionDomain(const ProtectionDomain&) = delete;
  ProtectionDomain& operator=(const ProtectionDomain&) = delete;

  ibv_pd* native() const noexcept { return pd_; }
  Context& context() const noexcept { return *ctx_; }
  const std::shared_ptr<Context>& context_ptr() const noexcept { return ctx_; }

 private:
  std::shared_ptr<Context> ctx_;
  ibv_pd* pd_ = nullptr;
};

}  // namespace unet::verbs
