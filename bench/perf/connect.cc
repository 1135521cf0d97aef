#include "connect.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace unet::perf {
namespace {

constexpr std::size_t kMaxLine = 1024;

std::uint64_t parse_count(std::string_view line, std::string_view tag) {
  if (line.substr(0, tag.size()) != tag) return UINT64_MAX;
  line.remove_prefix(tag.size());
  std::uint64_t v = 0;
  if (line.empty()) return UINT64_MAX;
  for (char ch : line) {
    if (ch < '0' || ch > '9') return UINT64_MAX;
    v = v * 10 + static_cast<std::uint64_t>(ch - '0');
  }
  return v;
}

}  // namespace

Session Session::open(const PerfConfig& c) {
  if (c.is_client())
    return Session(verbs::OobSocket::connect(c.host, c.tcp_port, c.timeout), true, c.timeout);
  verbs::OobListener listener("", c.tcp_port);
  return Session(listener.accept(c.timeout), false, c.timeout);
}

void Session::send_line(std::string_view line) {
  std::string l(line);
  l += '\n';
  sock_.send_all(l, timeout_);
}

std::string Session::recv_line() { return sock_.recv_line(timeout_, kMaxLine); }
std::string Session::recv_line(std::chrono::milliseconds timeout) {
  return sock_.recv_line(timeout, kMaxLine);
}

void Session::check_settings(const PerfConfig& c) {
  if (client_) {
    std::string line = settings_line(c);
    line.pop_back();
    send_line(line);
    const std::string answer = recv_line();
    if (answer.rfind("mismatch ", 0) == 0) throw PerfError(answer.substr(9));
    if (answer != "ok") throw PerfError("unexpected answer to the settings: '" + answer + "'");
    return;
  }
  if (auto diff = compare_settings(c, recv_line(), /*peer_is_client=*/true)) {
    send_line("mismatch " + *diff);
    throw PerfError(*diff);
  }
  send_line("ok");
}

bool Session::line_waiting() const {
  pollfd p{sock_.fd(), POLLIN, 0};
  const int n = ::poll(&p, 1, 0);
  if (n < 0 && errno != EINTR)
    throw PerfError(std::string("poll on the session: ") + std::strerror(errno));
  return n > 0;  // readable, or closed (the next recv_line says which)
}

namespace {

// Both endpoint kinds have the same set-up calls.
template <class Ep>
core::ChannelId connect_any(Ep& ep, const PerfConfig& c, Session& s) {
  if (c.rdma_cm) {
    if (s.client()) {
      const std::string ready = s.recv_line();
      if (ready != "cm-ready")
        throw PerfError("expected the server's 'cm-ready', got '" + ready + "'");
      return ep.connect_cm(c.host, c.tcp_port, c.timeout, {.ring = c.ring});
    }
    (void)ep.listen_cm("", c.tcp_port);
    s.send_line("cm-ready");
    return ep.accept_cm(c.timeout, {.ring = c.ring});
  }
  core::ChannelOffer offer = ep.offer_channel({.ring = c.ring});
  std::string mine = offer.local;
  if (!mine.empty() && mine.back() == '\n') mine.pop_back();
  if (s.client()) {
    s.send_line(mine);
    return ep.accept_offer(offer, s.recv_line());
  }
  // The server completes its half before answering: its QP is ready before the client can send.
  core::ChannelId ch = ep.accept_offer(offer, s.recv_line());
  s.send_line(mine);
  return ch;
}

}  // namespace

core::ChannelId connect_channel(core::Endpoint& ep, const PerfConfig& c, Session& s) {
  return connect_any(ep, c, s);
}

core::ChannelId connect_channel(uam::Endpoint& ep, const PerfConfig& c, Session& s) {
  return connect_any(ep, c, s);
}

std::string agree_size(Session& s, std::uint32_t size, const std::string& state) {
  const std::string tag = "size " + std::to_string(size) + " ";
  std::string peer;
  if (s.client()) {
    s.send_line(tag + state);
    peer = s.recv_line();
  } else {
    peer = s.recv_line();
    s.send_line(tag + state);
  }
  const std::string who = s.client() ? "the server" : "the client";
  if (state.rfind("error ", 0) == 0) throw PerfError(state.substr(6));
  if (peer.rfind(tag, 0) != 0) throw PerfError(who + " is at another size: '" + peer + "'");
  peer.erase(0, tag.size());
  if (peer.rfind("error ", 0) == 0) throw PerfError(who + " failed: " + peer.substr(6));
  if (state.rfind("skip ", 0) == 0) return state.substr(5);
  if (peer.rfind("skip ", 0) == 0) return who + ": " + peer.substr(5);
  return "";
}

core::RemoteToken exchange_tokens(Session& s, const core::RemoteToken& mine) {
  std::string line = mine.encode();
  if (!line.empty() && line.back() == '\n') line.pop_back();
  std::string theirs;
  if (s.client()) {
    s.send_line(line);
    theirs = s.recv_line();
  } else {
    theirs = s.recv_line();
    s.send_line(line);
  }
  core::RemoteToken t;
  if (core::RemoteToken::decode(theirs, t) != Status::kOk)
    throw PerfError("malformed remote token from the peer: '" + theirs + "'");
  return t;
}

void sync_go(Session& s) {
  if (s.client()) s.send_line("go");
  if (const std::string go = s.recv_line(); go != "go")
    throw PerfError("expected 'go' from the peer, got '" + go + "'");
  if (!s.client()) s.send_line("go");
}

std::chrono::milliseconds idle_server_wait(const PerfConfig& c, std::uint64_t bytes) {
  return c.timeout + std::chrono::milliseconds(bytes / 1049);  // 1 MiB/s = 1048.576 bytes per ms
}

std::uint64_t finish_round(Session& s, std::uint64_t count,
                           const std::function<std::string()>& server_check,
                           std::chrono::milliseconds server_wait) {
  if (s.client()) {
    s.send_line("done " + std::to_string(count));
    const std::string answer = s.recv_line();
    if (answer.rfind("error ", 0) == 0) throw PerfError("the server reports: " + answer.substr(6));
    const std::uint64_t theirs = parse_count(answer, "done ");
    if (theirs != count)
      throw PerfError("the client sent " + std::to_string(count) +
                      " messages but the server counted '" + answer + "'");
    return theirs;
  }
  const std::string line = server_wait.count() > 0 ? s.recv_line(server_wait) : s.recv_line();
  const std::uint64_t theirs = parse_count(line, "done ");
  std::string problem;
  if (theirs != count)
    problem = "the client reports '" + line + "' but the server counted " + std::to_string(count) +
              " messages";
  else if (server_check)
    problem = server_check();
  if (!problem.empty()) {
    s.send_line("error " + problem);
    throw PerfError(problem);
  }
  s.send_line("done " + std::to_string(count));
  return theirs;
}

}  // namespace unet::perf
