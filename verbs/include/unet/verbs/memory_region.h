// MemoryRegion: a registered (pinned) range of memory, and RemoteKey, what a peer needs to reach
// it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "unet/verbs/protection_domain.h"

namespace unet::verbs {

// What a peer needs for RDMA WRITE/READ into a window of memory: address, rkey and length.
struct RemoteKey {
  std::uint64_t addr = 0;
  std::uint32_t rkey = 0;
  std::uint64_t length = 0;

  bool operator==(const RemoteKey&) const = default;
};

// Owner of an ibv_mr: a registered, pinned range. Holds its PD alive.
class MemoryRegion {
 public:
  // Registers [addr, addr+length) with `access` (IBV_ACCESS_* flags). Throws Error on failure
  // (e.g. ENOMEM when the memlock limit is reached, EINVAL for a zero length).
  MemoryRegion(std::shared_ptr<ProtectionDomain> pd, void* addr, std::size_t length, int access);
  ~MemoryRegion();
  MemoryRegion(const MemoryRegion&) = delete;
  MemoryRegion& operator=(const MemoryRegion&) = delete;

  // The provider's object, for calls this layer does not wrap (it stays owned here).
  // Then the region's keys, extent and access flags, and its RemoteKey for a peer.
  ibv_mr* native() const noexcept { return mr_; }
  std::uint32_t lkey() const noexcept { return mr_->lkey; }
  std::uint32_t rkey() const noexcept { return mr_->rkey; }
  void* addr() const noexcept { return mr_->addr; }
  std::size_t length() const noexcept { return mr_->length; }
  int access() const noexcept { return access_; }
  RemoteKey remote_key() const noexcept {
    return {reinterpret_cast<std::uint64_t>(mr_->addr), mr_->rkey, mr_->length};
  }
  // True when [p, p+n) lies inside the region.
  bool contains(const void* p, std::size_t n) const noexcept {
    auto b = reinterpret_cast<std::uintptr_t>(mr_->addr);
    auto q = reinterpret_cast<std::uintptr_t>(p);
    return q >= b && n <= mr_->length && q - b <= mr_->length - n;
  }

 private:
  std::shared_ptr<ProtectionDomain> pd_;
  ibv_mr* mr_ = nullptr;
  int access_ = 0;
};

}  // namespace unet::verbs
