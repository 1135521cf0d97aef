#include "unet/verbs/completion_channel.h"

#include <fcntl.h>
#include <poll.h>

#include <cerrno>

#include "unet/verbs/completion_queue.h"
#include "unet/verbs/deadline.h"
#include "unet/verbs/error.h"

namespace unet::verbs {

CompletionChannel::CompletionChannel(std::shared_ptr<Context> ctx) : ctx_(std::move(ctx)) {
  ch_ = ibv_create_comp_channel(ctx_->native());
  if (!ch_) throw_error("ibv_create_comp_channel", ctx_->name(), errno);
  int flags = fcntl(ch_->fd, F_GETFL);
  if (flags < 0 || fcntl(ch_->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    int err = errno;
    ibv_destroy_comp_channel(ch_);
    throw_error("fcntl(O_NONBLOCK)", ctx_->name() + " completion channel", err);
  }
}

CompletionChannel::~CompletionChannel() { ibv_destroy_comp_channel(ch_); }

Status CompletionChannel::get_event(CompletionQueue*& cq) noexcept {
  ibv_cq* native = nullptr;
  void* user = nullptr;
  if (ibv_get_cq_event(ch_, &native, &user) != 0)
    return errno == EAGAIN ? Status::kNoResource : Status::kDeviceError;
  ibv_ack_cq_events(native, 1);
  cq = static_cast<CompletionQueue*>(user);
  return Status::kOk;
}

Status CompletionChannel::wait(std::chrono::milliseconds timeout, CompletionQueue*& cq) noexcept {
  const Deadline deadline(timeout);
  for (;;) {
    Status s = get_event(cq);
    if (s != Status::kNoResource) return s;
    if (deadline.passed()) return Status::kTimeout;
    pollfd p{ch_->fd, POLLIN, 0};
    int rc = ::poll(&p, 1, deadline.poll_timeout());
    if (rc < 0 && errno != EINTR) return Status::kDeviceError;
  }
}

}  // namespace unet::verbs
