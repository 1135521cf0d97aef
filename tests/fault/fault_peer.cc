// unet_fault_peer <core|uam-rc|uam-ud|stream>: the peer that tests/fault/peer_death_test.cc starts
// as a separate process and kills with SIGKILL in the middle of traffic.
//
// Protocol on stdin/stdout, one line each:
//   peer -> test   its channel offer (core::ChannelOffer::local)
//   test -> peer   the test's offer
//   peer -> test   core only: a RemoteToken for a kWindowBytes window it granted for writing
//   peer -> test   "ready"
// Then it serves until killed, or until its stdin closes (the test gave up): core keeps its
// endpoint polled and gives arrivals back; uam answers kEcho requests with a kEchoReply carrying
// the same words; stream listens on kStreamPort and echoes what each connection sends.
// Exit status 0 on stdin EOF, 1 on any failure (message on stderr).
#include <poll.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <exception>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "endpoint_support.h"
#include "peer_protocol.h"
#include "unet/uam/endpoint.h"
#include "unet/ulp/stream_endpoint.h"

namespace {

using namespace unet;
using namespace unet::test;

std::string read_line() {
  std::string line;
  if (!std::getline(std::cin, line))
    throw std::runtime_error("stdin closed before the test's offer");
  return line;
}

void say(const std::string& line) {
  std::cout << line << (line.ends_with('\n') ? "" : "\n") << std::flush;
}

// True once the test closed our stdin: time to go.
bool stdin_closed() {
  pollfd p{STDIN_FILENO, POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  char c;
  return ::read(STDIN_FILENO, &c, 1) <= 0;
}

int serve_core() {
  core::EndpointConfig cfg = endpoint_config(core::Transport::kRc);
  cfg.mode = core::Mode::kDirectAccess;
  core::Endpoint ep(cfg);
  std::vector<std::byte> window(kWindowBytes);
  core::RemoteToken token;
  if (ep.grant(window.data(), window.size(), core::kRemoteWrite, token) != Status::kOk)
    throw std::runtime_error("grant failed");
  const core::ChannelOffer offer = ep.offer_channel();
  say(offer.local);
  (void)ep.accept_offer(offer, read_line());
  say(token.encode());
  say("ready");
  for (std::uint64_t i = 0;; ++i) {
    if (ep.poll() < 0) throw std::runtime_error("poll failed");
    core::Descriptor d;
    while (ep.receive(d) == Status::kOk)
      if (!d.is_inline()) (void)ep.release(d.buffer);
    if (i % 1024 == 0 && stdin_closed()) return 0;
  }
}

int serve_uam(core::Transport t) {
  uam::Endpoint ep(uam_config(t));
  if (ep.on_request(kEcho, [&](uam::Token& tok, const uam::Message& m) {
        (void)ep.reply(tok, kEchoReply, m.args, {});
        return uam::Disposition::kDone;
      }) != Status::kOk)
    throw std::runtime_error("on_request failed");
  const core::ChannelOffer offer = ep.offer_channel();
  say(offer.local);
  (void)ep.accept_offer(offer, read_line());
  say("ready");
  for (std::uint64_t i = 0;; ++i) {
    if (ep.poll() < 0) throw std::runtime_error("poll failed");
    if (i % 1024 == 0 && stdin_closed()) return 0;
  }
}

int serve_stream() {
  ulp::StreamEndpoint ep(ud_config(), stream_peer_config());
  const core::ChannelOffer offer = ep.offer_peer();
  say(offer.local);
  (void)ep.accept_peer(offer, read_line());
  if (ep.listen(kStreamPort) != Status::kOk) throw std::runtime_error("listen failed");
  say("ready");
  std::vector<ulp::ConnId> conns;
  std::array<std::byte, 16384> buf;
  for (std::uint64_t i = 0;; ++i) {
    if (ep.poll() < 0) throw std::runtime_error("poll failed");
    ulp::ConnId c;
    while (ep.accept(kStreamPort, c) == Status::kOk) conns.push_back(c);
    for (ulp::ConnId conn : conns) {  // echo: read only what the send buffer can take back
      std::size_t got = 0;
      if (ep.recv(conn, buf, got) != Status::kOk || got == 0) continue;
      for (std::size_t at = 0; at < got;) {
        std::size_t took = 0;
        const Status s = ep.send(conn, std::span(buf).subspan(at, got - at), took);
        if (s != Status::kOk && s != Status::kNoResource) break;
        at += took;
        if (at < got && ep.poll() < 0) throw std::runtime_error("poll failed");
      }
    }
    if (i % 1024 == 0 && stdin_closed()) return 0;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc == 2 ? argv[1] : "";
  try {
    if (mode == "core") return serve_core();
    if (mode == "uam-rc") return serve_uam(core::Transport::kRc);
    if (mode == "uam-ud") return serve_uam(core::Transport::kUd);
    if (mode == "stream") return serve_stream();
    std::fprintf(stderr, "usage: unet_fault_peer core|uam-rc|uam-ud|stream\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unet_fault_peer %s: %s\n", mode.c_str(), e.what());
  }
  return 1;
}
