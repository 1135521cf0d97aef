// Endpoint notification: the completion channel's fd, arming, the blocking wait and the upcall.
#include <poll.h>

#include <cerrno>

#include "endpoint_impl.h"
#include "unet/verbs/deadline.h"

namespace unet::core {

int Endpoint::notify_fd() const noexcept { return v_->channel->fd(); }

// Consumes (and acknowledges) the events that made the fd readable.
Status Endpoint::drain_events() noexcept {
  verbs::CompletionQueue* cq = nullptr;
  for (;;) {
    Status s = v_->channel->get_event(cq);
    if (s == Status::kNoResource) return Status::kOk;
    if (s != Status::kOk) return s;
    ++stats_.wakeups;
  }
}

Status Endpoint::arm() noexcept {
  if (Status s = drain_events(); s != Status::kOk) return s;
  if (!polled_.empty()) ring_sleep();  // ring peers: send by SEND while we sleep
  return v_->cq->request_notify();
}

Status Endpoint::wait(std::chrono::milliseconds timeout) noexcept {
  const verbs::Deadline deadline(timeout);
  const std::uint64_t upcalls = stats_.upcalls, ops = stats_.ops_completed,
                      errors = stats_.send_errors;
  auto arrived = [&] {
    return !recv_queue_.empty() || stats_.upcalls != upcalls || stats_.ops_completed != ops ||
           stats_.send_errors != errors;
  };
  for (;;) {
    if (poll() < 0) return Status::kDeviceError;
    if (arrived()) return Status::kOk;
    if (Status s = arm(); s != Status::kOk) return s;
    if (poll() < 0) return Status::kDeviceError;  // what raced the arming
    if (arrived()) return Status::kOk;
    if (deadline.passed()) return Status::kTimeout;
    pollfd p{notify_fd(), POLLIN, 0};
    int ready = ::poll(&p, 1, deadline.poll_timeout());
    if (ready < 0 && errno != EINTR) return Status::kDeviceError;
    if (ready > 0) {
      if (Status s = drain_events(); s != Status::kOk) return s;
    }
    polls_since_arm_ = 0;  // still asleep: the ring peers stay told until wait() returns
  }
}

void Endpoint::set_upcall(Upcall handler) { upcall_ = std::move(handler); }

}  // namespace unet::core
