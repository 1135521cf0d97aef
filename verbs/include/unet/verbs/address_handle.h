// AddressHandle: the route to a remote port that UD sends name (ibv_ah).
#pragma once

#include <cstdint>
#include <memory>

#include "unet/verbs/gid.h"
#include "unet/verbs/protection_domain.h"

namespace unet::verbs {

// Where a remote port is. On RoCE (and across IB subnets) `gid` and `sgid_index` are used and a
// GRH is sent; on a plain IB subnet `lid` suffices (set `global` false).
struct RemotePort {
  std::uint16_t lid = 0;
  Gid gid;
  bool global = true;
  std::uint8_t sgid_index = 0;  // local GID index to send from
  std::uint8_t port = 1;        // local port
  std::uint8_t hop_limit = 64;
  std::uint8_t sl = 0;             // service level (IB: picks the virtual lane; 0..15)
  std::uint8_t traffic_class = 0;  // the GRH's (RoCE: DSCP << 2 | ECN, the PFC priority's source)
};

// Fills an ibv_ah_attr for `remote` (also used for RC/UC path set-up at RTR).
ibv_ah_attr make_ah_attr(const RemotePort& remote) noexcept;

// Owner of an ibv_ah: the address a UD send names. Holds its PD alive.
class AddressHandle {
 public:
  // Creates the AH for `remote`. Throws Error naming the destination GID on failure.
  AddressHandle(std::shared_ptr<ProtectionDomain> pd, const RemotePort& remote);
  ~AddressHandle();
  AddressHandle(const AddressHandle&) = delete;
  AddressHandle& operator=(const AddressHandle&) = delete;

  // The provider's object, for calls this layer does not wrap (it stays owned here).
  ibv_ah* native() const noexcept { return ah_; }

 private:
  std::shared_ptr<ProtectionDomain> pd_;
  ibv_ah* ah_ = nullptr;
};

}  // namespace unet::verbs
