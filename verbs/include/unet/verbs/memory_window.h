// MemoryWindow: a window onto part of a MemoryRegion that a peer may access with its own rkey.
//
// Type 2 windows are bound by a work request posted on one QP (QueuePair::post_bind) and revoked
// by a local invalidate (QueuePair::post_invalidate); after revocation the peer's access fails with
// a remote access error. Type 1 windows are bound with ibv_bind_mw. Whether the device supports
// type 2 is DeviceLimits::mw_type2.
#pragma once

#include <cstdint>
#include <memory>

#include "unet/verbs/protection_domain.h"

namespace unet::verbs {

// Type 1 (bound with ibv_bind_mw) or type 2 (bound by a WR on one QP).
enum class MemoryWindowType : std::uint8_t { kType1 = 1, kType2 = 2 };

// Owner of an ibv_mw. Holds its PD alive.
class MemoryWindow {
 public:
  // Allocates an unbound window of `type`. Throws Error on failure (e.g. when the device lacks
  // that type).
  MemoryWindow(std::shared_ptr<ProtectionDomain> pd, MemoryWindowType type);
  ~MemoryWindow();
  MemoryWindow(const MemoryWindow&) = delete;
  MemoryWindow& operator=(const MemoryWindow&) = delete;

  // The provider's object, for calls this layer does not wrap (it stays owned here).
  // And the window's type.
  ibv_mw* native() const noexcept { return mw_; }
  MemoryWindowType type() const noexcept { return type_; }
  // The rkey a peer uses once the last bind completes (0 before any bind).
  std::uint32_t rkey() const noexcept { return rkey_; }

 private:
  friend class QueuePair;  // post_bind() sets rkey_
  std::shared_ptr<ProtectionDomain> pd_;
  ibv_mw* mw_ = nullptr;
  MemoryWindowType type_;
  std::uint32_t rkey_ = 0;
};

}  // namespace unet::verbs
