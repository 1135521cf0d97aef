// make_qp_init_attr: the ibv_qp_init_attr for a QpConfig, every size clamped to the device.
// Shared by QueuePair (ibv_create_qp) and CmConnection (rdma_create_qp). Internal to verbs/.
#pragma once

#include "unet/verbs/queue_pair.h"

namespace unet::verbs {

// Throws Error (EINVAL) naming `object` when the config has no send CQ.
ibv_qp_init_attr make_qp_init_attr(Context& ctx, const QpConfig& config, const std::string& object);

}  // namespace unet::verbs
