// ProtectionDomain: owner of an ibv_pd. Memory regions, windows, QPs, SRQs and address handles
// are made in a PD and hold it alive.
#pragma once

#include <memory>

#include "unet/verbs/device.h"

namespace unet::verbs {

// Owner of an ibv_pd. Holds its Context alive.
class ProtectionDomain {
 public:
  // Allocates the PD. Throws Error on failure.
  explicit ProtectionDomain(std::shared_ptr<Context> ctx);
  ~ProtectionDomain();
  ProtectionDomain(const ProtectionDomain&) = delete;
  ProtectionDomain& operator=(const ProtectionDomain&) = delete;

  // The provider's object, for calls this layer does not wrap (it stays owned here).
  // And the Context it was made on (as a reference, or shared to keep it alive).
  ibv_pd* native() const noexcept { return pd_; }
  Context& context() const noexcept { return *ctx_; }
  const std::shared_ptr<Context>& context_ptr() const noexcept { return ctx_; }

 private:
  std::shared_ptr<Context> ctx_;
  ibv_pd* pd_ = nullptr;
};

}  // namespace unet::verbs
