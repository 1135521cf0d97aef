// CompletionChannel: the file descriptor a CQ signals when a requested completion arrives.
//
// The fd is non-blocking and may be added to epoll/select/poll. Arming: CompletionQueue::
// request_notify(); after the fd turns readable, get_event() consumes the event (and acknowledges
// it), then the caller re-arms and polls the CQ to catch completions that raced the re-arm.
#pragma once

#include <chrono>
#include <memory>

#include "unet/status.h"
#include "unet/verbs/device.h"

namespace unet::verbs {

class CompletionQueue;

// Owner of an ibv_comp_channel (non-blocking). Holds its Context alive.
class CompletionChannel {
 public:
  // Creates the channel. Throws Error on failure.
  explicit CompletionChannel(std::shared_ptr<Context> ctx);
  ~CompletionChannel();
  CompletionChannel(const CompletionChannel&) = delete;
  CompletionChannel& operator=(const CompletionChannel&) = delete;

  // The provider's object, for calls this layer does not wrap (it stays owned here).
  // fd() is the descriptor to add to epoll/select/poll.
  ibv_comp_channel* native() const noexcept { return ch_; }
  int fd() const noexcept { return ch_->fd; }

  // Consumes one pending event without blocking: kOk and `cq` set to the CQ that fired, or
  // kNoResource when none is pending.
  Status get_event(CompletionQueue*& cq) noexcept;

  // Waits up to `timeout` for an event, then consumes it as get_event() does; kTimeout if none.
  Status wait(std::chrono::milliseconds timeout, CompletionQueue*& cq) noexcept;

 private:
  std::shared_ptr<Context> ctx_;
  ibv_comp_channel* ch_ = nullptr;
};

}  // namespace unet::verbs
