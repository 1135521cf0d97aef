// SocketFd: a pollable file descriptor for one socket (a datagram port, a stream connection or a
// stream listener), and the readiness bits kReadable and kWritable.
//
// The fd is an epoll instance with two level-triggered members: the core endpoint's notify fd
// (readable while the endpoint may have device work, until arm() consumes it) and the socket's
// own eventfd, which the protocol layer keeps signalled exactly while the socket is ready. An
// epoll fd is itself pollable — readable while one of its members is — so an application adds one
// fd per socket to its own epoll and wakes for that socket's readiness or for device work that
// poll() must run (see DatagramEndpoint::port_fd and StreamEndpoint::conn_fd for the loop).
//
// Created only when the application asks for a socket's fd: a socket nobody asks costs nothing.
// set() makes a syscall only when the state flips, so a layer may call it after every operation.
// The destructor closes both fds. One thread, as the endpoint that owns it.
#pragma once

#include <memory>

#include "unet/status.h"

namespace unet::ulp {

// Readiness and interest bits, as epoll's EPOLLIN / EPOLLOUT.
inline constexpr unsigned kReadable = 1u << 0;  // a receive would not return kNoResource
inline constexpr unsigned kWritable = 1u << 1;  // a send would take bytes (or report the failure)

// One socket's pollable fd (see the top of this file).
class SocketFd {
 public:
  // A new fd watching `notify_fd`, not ready: kOk with `out` set; kNoResource when the kernel is
  // out of fds or memory (EMFILE, ENFILE, ENOMEM, ENOSPC); kInvalidArgument when `notify_fd`
  // cannot be watched (not an open pollable fd). Nothing is left open on failure.
  static Status create(int notify_fd, std::unique_ptr<SocketFd>& out) noexcept;
  ~SocketFd();
  SocketFd(const SocketFd&) = delete;
  SocketFd& operator=(const SocketFd&) = delete;

  // The epoll fd to add to the application's epoll (EPOLLIN). Owned by this object.
  int fd() const noexcept { return epoll_; }
  // Whether the socket is signalled ready now.
  bool ready() const noexcept { return ready_; }
  // Signals the socket ready (true) or clears it (false); writes or reads the eventfd only when
  // the state changes.
  void set(bool ready) noexcept {
    if (ready != ready_) flip(ready);
  }

 private:
  SocketFd(int epoll, int event) noexcept : epoll_(epoll), event_(event) {}
  void flip(bool ready) noexcept;  // the syscall, out of line

  int epoll_;
  int event_;
  bool ready_ = false;
};

}  // namespace unet::ulp
