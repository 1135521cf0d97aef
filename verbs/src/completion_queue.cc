#include "unet/verbs/completion_queue.h"

#include <cerrno>
#include <string>

#include "unet/verbs/error.h"

namespace unet::verbs {

CompletionQueue::CompletionQueue(std::shared_ptr<Context> ctx, std::uint32_t cqe,
                                 std::shared_ptr<CompletionChannel> channel)
    : ctx_(std::move(ctx)), channel_(std::move(channel)) {
  int n = static_cast<int>(Context::clamp(cqe, ctx_->limits().max_cqe));
  cq_ = ibv_create_cq(ctx_->native(), n, this, channel_ ? channel_->native() : nullptr, 0);
  if (!cq_)
    throw_error("ibv_create_cq", ctx_->name() + ", " + std::to_string(n) + " entries", errno);
}

CompletionQueue::~CompletionQueue() { ibv_destroy_cq(cq_); }

}  // namespace unet::verbs
