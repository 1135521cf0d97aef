// StreamEndpoint readiness and per-socket fds: conn_fd, listener_fd, set_interest and keeping
// each fd signalled exactly while its socket is ready.
#include "stream_impl.h"

namespace unet::ulp {

unsigned StreamEndpoint::readiness(const Conn& c) const noexcept {
  unsigned r = 0;
  // As recv(): it returns data, kClosed at the end of the stream, or the error. (A closed
  // connection has the peer's FIN or an error, so it is readable too.)
  if (c.unread() > 0 || c.peer_fin || c.error != Status::kOk) r |= kReadable;
  // As send(): it takes bytes, or returns the error.
  const bool open = c.state == StreamState::kEstablished || c.state == StreamState::kCloseWait;
  if (c.error != Status::kOk || (open && !c.fin_queued && c.queued() <= c.smask)) r |= kWritable;
  return r;
}

unsigned StreamEndpoint::readiness(ConnId id) const noexcept {
  const Conn* c = get(id);
  return c ? readiness(*c) : 0;
}

Status StreamEndpoint::set_interest(ConnId id, unsigned events) noexcept {
  if (!get(id)) return Status::kNotFound;
  if (events & ~(kReadable | kWritable)) return Status::kInvalidArgument;
  conn_sockets_[id].interest = events;
  refresh(id);
  return Status::kOk;
}

Status StreamEndpoint::conn_fd(ConnId id, int& out) noexcept {
  if (!get(id)) return Status::kNotFound;
  ConnSocket& s = conn_sockets_[id];
  if (!s.fd) {
    if (Status st = SocketFd::create(net_->notify_fd(), s.fd); st != Status::kOk) return st;
    ++open_fds_;
    refresh(id);
  }
  out = s.fd->fd();
  return Status::kOk;
}

Status StreamEndpoint::listener_fd(std::uint16_t port, int& out) noexcept {
  for (std::size_t i = 0; i < listeners_.size(); ++i) {
    if (listeners_[i]->port != port) continue;
    std::unique_ptr<SocketFd>& fd = listener_fds_[i];
    if (!fd) {
      if (Status st = SocketFd::create(net_->notify_fd(), fd); st != Status::kOk) return st;
      ++open_fds_;
      fd->set(!listeners_[i]->ready.empty());
    }
    out = fd->fd();
    return Status::kOk;
  }
  return Status::kNotFound;
}

// Signals connection `id`'s fd while its readiness meets its interest (a syscall only on a flip).
void StreamEndpoint::refresh_socket(ConnId id) noexcept {
  ConnSocket& s = conn_sockets_[id];
  if (s.fd) s.fd->set((readiness(*conns_[id]) & s.interest) != 0);
}

// After poll(), when an fd is open: every socket that has one.
void StreamEndpoint::refresh_sockets() noexcept {
  for (ConnId id = 0; id < conn_sockets_.size(); ++id) refresh_socket(id);
  for (std::size_t i = 0; i < listeners_.size(); ++i)
    if (listener_fds_[i]) listener_fds_[i]->set(!listeners_[i]->ready.empty());
}

// The id turned invalid (close, abort, freed): its fd closes and its interest resets.
void StreamEndpoint::drop_fd(ConnId id) noexcept {
  ConnSocket& s = conn_sockets_[id];
  if (s.fd) --open_fds_;
  s.fd.reset();
  s.interest = kReadable;
}

}  // namespace unet::ulp
