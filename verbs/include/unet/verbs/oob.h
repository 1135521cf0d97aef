// OobSocket, OobListener: out-of-band TCP set-up, the classic way (perftest, ibv_*_pingpong) two
// processes swap QP attributes before any RDMA traffic. Every operation takes a timeout and
// throws Error on failure or timeout (ETIMEDOUT): it is set-up, not data path.
//
// Exchange protocol: the client writes its ConnectionInfo line first, the server reads it and
// answers with its own (rdma-core's pingpong order).
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "unet/verbs/connection_info.h"

namespace unet::verbs {

// The unit of every timeout here.
using Millis = std::chrono::milliseconds;

// A connected TCP socket with timed, whole-message reads and writes. Movable, not copyable.
class OobSocket {
 public:
  // Connects to host:port, retrying while the server is not listening yet, for up to `timeout`.
  static OobSocket connect(std::string_view host, std::uint16_t port, Millis timeout);

  // Adopts a connected socket `fd` (closed on destruction).
  explicit OobSocket(int fd) noexcept : fd_(fd) {}
  OobSocket(OobSocket&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  OobSocket& operator=(OobSocket&& o) noexcept;
  ~OobSocket();

  // The socket's descriptor. send_all() writes all of `data` within `timeout`, or throws.
  int fd() const noexcept { return fd_; }
  void send_all(std::string_view data, Millis timeout);
  // Reads exactly out.size() bytes.
  void recv_exact(std::span<char> out, Millis timeout);
  // Reads up to and including '\n' (returned without it); refuses lines over `max_len` bytes.
  std::string recv_line(Millis timeout, std::size_t max_len = kConnectionInfoMaxLine);

 private:
  int fd_ = -1;
};

// A listening TCP socket for the server side of the exchange.
class OobListener {
 public:
  // Listens on `host` ("" = all addresses) and `port` (0 = pick a free one; see port()).
  OobListener(std::string_view host, std::uint16_t port);
  ~OobListener();
  OobListener(const OobListener&) = delete;
  OobListener& operator=(const OobListener&) = delete;

  // The port it listens on. accept() waits up to `timeout` for one client, or throws.
  std::uint16_t port() const noexcept { return port_; }
  OobSocket accept(Millis timeout);

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
};

// The two halves of the exchange. Each returns the peer's validated ConnectionInfo.
ConnectionInfo exchange_as_client(OobSocket& s, const ConnectionInfo& local, Millis timeout);
ConnectionInfo exchange_as_server(OobSocket& s, const ConnectionInfo& local, Millis timeout);

}  // namespace unet::verbs
