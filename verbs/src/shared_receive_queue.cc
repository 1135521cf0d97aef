#include "unet/verbs/shared_receive_queue.h"

#include <cerrno>
#include <string>

#include "unet/verbs/error.h"

namespace unet::verbs {

SharedReceiveQueue::SharedReceiveQueue(std::shared_ptr<ProtectionDomain> pd, std::uint32_t max_wr,
                                       std::uint32_t max_sge)
    : pd_(std::move(pd)) {
  const DeviceLimits& l = pd_->context().limits();
  ibv_srq_init_attr attr{};
  attr.attr.max_wr = Context::clamp(max_wr, l.max_srq_wr);
  attr.attr.max_sge = Context::clamp(max_sge, l.max_srq_sge);
  srq_ = ibv_create_srq(pd_->native(), &attr);
  if (!srq_)
    throw_error("ibv_create_srq",
                pd_->context().name() + ", " + std::to_string(attr.attr.max_wr) + " WRs", errno);
  max_wr_ = attr.attr.max_wr;  // the provider writes back what it granted
  max_sge_ = attr.attr.max_sge;
}

SharedReceiveQueue::~SharedReceiveQueue() { ibv_destroy_srq(srq_); }

}  // namespace unet::verbs
