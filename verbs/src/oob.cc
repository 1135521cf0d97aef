#include "unet/verbs/oob.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

#include "addr_info.h"
#include "unet/verbs/deadline.h"
#include "unet/verbs/error.h"

namespace unet::verbs {
namespace {

std::string endpoint_name(std::string_view host, std::uint16_t port) {
  return std::string(host.empty() ? "*" : host) + ":" + std::to_string(port);
}

// Waits for `events` on fd until the deadline; throws ETIMEDOUT naming `what`.
void wait_fd(int fd, short events, const Deadline& deadline, const char* what) {
  for (;;) {
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, deadline.poll_timeout());
    if (rc > 0) return;
    if (rc == 0 && deadline.passed()) throw_error(what, "out-of-band socket", ETIMEDOUT);
    if (rc < 0 && errno != EINTR) throw_error("poll", "out-of-band socket", errno);
  }
}

int make_socket(const addrinfo* ai) {
  int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
  if (fd < 0) throw_error("socket", "out-of-band socket", errno);
  return fd;
}

}  // namespace

OobSocket OobSocket::connect(std::string_view host, std::uint16_t port, Millis timeout) {
  const Deadline deadline(timeout);
  AddrInfo ai(host, port, AF_UNSPEC, false);
  int last_err = ETIMEDOUT;
  do {
    for (addrinfo* a = ai.list; a; a = a->ai_next) {
      OobSocket s(make_socket(a));
      if (::connect(s.fd_, a->ai_addr, a->ai_addrlen) != 0) {
        if (errno != EINPROGRESS) {
          last_err = errno;
          continue;
        }
        pollfd p{s.fd_, POLLOUT, 0};
        if (::poll(&p, 1, deadline.poll_timeout()) <= 0) continue;
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(s.fd_, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0) {
          last_err = err;
          continue;
        }
      }
      int one = 1;
      setsockopt(s.fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return s;
    }
    // The server may not be listening yet: retry until the deadline, like a patient client.
    std::this_thread::sleep_for(Millis(50));
  } while (!deadline.passed());
  throw_error("connect", endpoint_name(host, port), last_err,
              "no out-of-band server answered within " + std::to_string(timeout.count()) + " ms");
}

OobSocket& OobSocket::operator=(OobSocket&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

OobSocket::~OobSocket() {
  if (fd_ >= 0) ::close(fd_);
}

void OobSocket::send_all(std::string_view data, Millis timeout) {
  const Deadline deadline(timeout);
  while (!data.empty()) {
    ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<std::size_t>(n));
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      wait_fd(fd_, POLLOUT, deadline, "send");
    } else {
      throw_error("send", "out-of-band socket", errno);
    }
  }
}

void OobSocket::recv_exact(std::span<char> out, Millis timeout) {
  const Deadline deadline(timeout);
  std::size_t got = 0;
  while (got < out.size()) {
    ssize_t n = ::recv(fd_, out.data() + got, out.size() - got, 0);
    if (n > 0) {
      got += static_cast<std::size_t>(n);
    } else if (n == 0) {
      throw_error("recv", "out-of-band socket", ECONNRESET, "peer closed the connection");
    } else if (errno == EAGAIN || errno == EINTR) {
      wait_fd(fd_, POLLIN, deadline, "recv");
    } else {
      throw_error("recv", "out-of-band socket", errno);
    }
  }
}

std::string OobSocket::recv_line(Millis timeout, std::size_t max_len) {
  const Deadline deadline(timeout);
  std::string line;
  // Byte by byte: set-up only, and it never reads past the line (the peer may send more after).
  for (;;) {
    char c;
    recv_exact(std::span<char>(&c, 1), deadline.left());
    if (c == '\n') return line;
    if (line.size() >= max_len)
      throw_error("recv_line", "out-of-band socket", EMSGSIZE,
                  "line longer than " + std::to_string(max_len) + " bytes");
    line += c;
  }
}

OobListener::OobListener(std::string_view host, std::uint16_t port) {
  AddrInfo ai(host, port, AF_UNSPEC, true);
  int last_err = EADDRNOTAVAIL;
  for (addrinfo* a = ai.list; a; a = a->ai_next) {
    int fd = make_socket(a);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 16) == 0) {
      sockaddr_storage ss{};
      socklen_t len = sizeof ss;
      getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
      port_ = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                             : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
      fd_ = fd;
      return;
    }
    last_err = errno;
    ::close(fd);
  }
  throw_error("bind/listen", endpoint_name(host, port), last_err);
}

OobListener::~OobListener() {
  if (fd_ >= 0) ::close(fd_);
}

OobSocket OobListener::accept(Millis timeout) {
  const Deadline deadline(timeout);
  for (;;) {
    int fd = ::accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return OobSocket(fd);
    }
    if (errno != EAGAIN && errno != EINTR) throw_error("accept", endpoint_name("", port_), errno);
    wait_fd(fd_, POLLIN, deadline, "accept");
  }
}

namespace {

ConnectionInfo read_info(OobSocket& s, Millis timeout) {
  std::string line = s.recv_line(timeout);
  ConnectionInfo peer;
  if (decode(line, peer) != Status::kOk)
    throw_error("decode", "out-of-band peer", EPROTO,
                "malformed connection info line (expected " + std::string(kConnectionInfoMagic) +
                    " ...): \"" + line.substr(0, 64) + "\"");
  return peer;
}

}  // namespace

ConnectionInfo exchange_as_client(OobSocket& s, const ConnectionInfo& local, Millis timeout) {
  s.send_all(encode(local), timeout);
  return read_info(s, timeout);
}

ConnectionInfo exchange_as_server(OobSocket& s, const ConnectionInfo& local, Millis timeout) {
  ConnectionInfo peer = read_info(s, timeout);
  s.send_all(encode(local), timeout);
  return peer;
}

}  // namespace unet::verbs
