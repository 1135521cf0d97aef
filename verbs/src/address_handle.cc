#include "unet/verbs/address_handle.h"

#include <algorithm>
#include <cerrno>

#include "unet/verbs/error.h"

namespace unet::verbs {

ibv_ah_attr make_ah_attr(const RemotePort& remote) noexcept {
  ibv_ah_attr a{};
  a.dlid = remote.lid;
  a.port_num = remote.port;
  a.sl = remote.sl;
  a.is_global = remote.global ? 1 : 0;
  if (remote.global) {
    std::copy(remote.gid.raw.begin(), remote.gid.raw.end(), a.grh.dgid.raw);
    a.grh.sgid_index = remote.sgid_index;
    a.grh.hop_limit = remote.hop_limit;
    a.grh.traffic_class = remote.traffic_class;
  }
  return a;
}

AddressHandle::AddressHandle(std::shared_ptr<ProtectionDomain> pd, const RemotePort& remote)
    : pd_(std::move(pd)) {
  ibv_ah_attr a = make_ah_attr(remote);
  ah_ = ibv_create_ah(pd_->native(), &a);
  if (!ah_)
    throw_error("ibv_create_ah", pd_->context().name() + " -> " + remote.gid.to_string(), errno);
}

AddressHandle::~AddressHandle() { ibv_destroy_ah(ah_); }

}  // namespace unet::verbs
