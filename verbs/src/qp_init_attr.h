// make_qp_init_attr: the ibv_qp_init_attr for a QpConfig, every size clamped to the device.
// Shared by QueuePair (ibv_create_qp) and CmConnection (rdma_create_qp). Internal to verbs/.
#pragma once

#include <cerrno>

#include "unet/verbs/queue_pair.h"

namespace unet::verbs {

// Throws Error (EINVAL) naming `object` when the config has no send CQ.
ibv_qp_init_attr make_qp_init_attr(Context& ctx, const QpConfig& config, const std::string& object);

// After the device refused a QP of `cap` with `err`: halves the send queue's depth for another
// try and returns true, or false when there is nothing left to try. A device may bound a send
// queue's bytes, depth times WQE size, and a WQE grows with max_inline_data (mlx5): a deep queue of
// large inline WQEs is refused where either alone fits. The depth gives way, down to 16, not the
// inline size (which the endpoint sizes its sends by); the endpoint uses the depth the QP got.
// Pure.
bool shrink_send_queue(ibv_qp_cap& cap, int err) noexcept;

// Creates the QP `attr` asks for with `create` (ibv_create_qp or rdma_create_qp), shrinking the
// send queue while the device refuses it (shrink_send_queue). Returns what `create` returned
// last; `attr.cap` is the request that succeeded.
template <class Create>
auto create_shrinking(ibv_qp_init_attr& attr, Create&& create) {
  for (;;) {
    auto r = create(attr);
    if (r || !shrink_send_queue(attr.cap, errno)) return r;
  }
}

}  // namespace unet::verbs
