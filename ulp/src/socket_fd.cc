// SocketFd: an epoll instance over the endpoint's notify fd and the socket's eventfd.
#include "unet/ulp/socket_fd.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <new>

namespace unet::ulp {

namespace {

Status from_errno(int e) noexcept {
  return e == EMFILE || e == ENFILE || e == ENOMEM || e == ENOSPC ? Status::kNoResource
                                                                  : Status::kInvalidArgument;
}

bool watch(int epoll, int fd) noexcept {
  epoll_event ev{};
  ev.events = EPOLLIN;  // level-triggered: readable for as long as the member is
  ev.data.fd = fd;
  return ::epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &ev) == 0;
}

}  // namespace

Status SocketFd::create(int notify_fd, std::unique_ptr<SocketFd>& out) noexcept {
  const int epoll = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll < 0) return from_errno(errno);
  const int event = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  Status s = Status::kOk;
  if (event < 0) {
    s = from_errno(errno);
  } else if (!watch(epoll, notify_fd) || !watch(epoll, event)) {
    s = from_errno(errno);
  } else if (SocketFd* p = new (std::nothrow) SocketFd(epoll, event)) {
    out.reset(p);
    return Status::kOk;
  } else {
    s = Status::kNoResource;
  }
  if (event >= 0) ::close(event);
  ::close(epoll);
  return s;
}

SocketFd::~SocketFd() {
  ::close(event_);  // the member first, then the epoll instance that watches it
  ::close(epoll_);
}

void SocketFd::flip(bool ready) noexcept {
  // The counter is 0 or 1: writing 1 to 0 and reading 1 back never block or overflow, so a
  // failure (none is expected) leaves ready_ as it was and the next set() tries again.
  std::uint64_t v = 1;
  const ssize_t n = ready ? ::write(event_, &v, sizeof v) : ::read(event_, &v, sizeof v);
  if (n == static_cast<ssize_t>(sizeof v)) ready_ = ready;
}

}  // namespace unet::ulp
