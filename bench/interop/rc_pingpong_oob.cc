// The ibv_rc_pingpong out-of-band exchange (the facts are in the header).
#include "rc_pingpong_oob.h"

#include <cerrno>
#include <cstdio>
#include <optional>
#include <string_view>

#include "unet/verbs/connection_info.h"
#include "unet/verbs/error.h"
#include "unet/verbs/oob.h"

namespace unet::bench {
namespace {

using Clock = std::chrono::steady_clock;
using Millis = std::chrono::milliseconds;

constexpr char kDone[kRcPingpongDoneBytes] = {'d', 'o', 'n', 'e', '\0'};

int hex_digit(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Exactly `width` hex digits at `pos`; false on any other character.
bool read_hex(std::span<const char> s, std::size_t pos, std::size_t width,
              std::uint32_t& out) noexcept {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < width; ++i) {
    int d = hex_digit(s[pos + i]);
    if (d < 0) return false;
    v = v << 4 | static_cast<std::uint32_t>(d);
  }
  out = v;
  return true;
}

// The wire text for error messages: printable characters kept, the rest as '.'.
std::string printable(std::span<const char> s) {
  std::string t;
  for (char c : s) t += (c >= 0x20 && c < 0x7f) ? c : '.';
  return t;
}

bool valid_mtu(std::uint32_t m) noexcept {
  return m == 256 || m == 512 || m == 1024 || m == 2048 || m == 4096;
}

// The time left until `deadline`, at least 1 ms so that a last step still gets a try.
Millis left(Clock::time_point deadline) {
  auto d = std::chrono::duration_cast<Millis>(deadline - Clock::now());
  return d > Millis(1) ? d : Millis(1);
}

std::string_view view(const RcPingpongMessage& m) { return {m.data(), m.size()}; }

RcPingpongAddress read_peer(verbs::OobSocket& s, Clock::time_point deadline) {
  RcPingpongMessage in{};
  s.recv_exact(in, left(deadline));
  RcPingpongAddress peer;
  const char* why = "";
  if (decode_rc_pingpong(in, peer, &why) != Status::kOk)
    verbs::throw_error("decode", "ibv_rc_pingpong peer", EPROTO,
                       std::string(why) + ": \"" + printable(in) + "\"");
  if (peer.lid == 0 && peer.gid.is_zero())
    verbs::throw_error("connect_rc_pingpong", "ibv_rc_pingpong peer", EINVAL,
                       "the peer sent neither a LID nor a GID (on RoCE run it with -g IDX)");
  return peer;
}

}  // namespace

RcPingpongMessage encode_rc_pingpong(const RcPingpongAddress& a) {
  if (a.qpn > 0xffffff || a.psn > 0xffffff)
    verbs::throw_error("encode_rc_pingpong", "address", EINVAL, "QPN and PSN are 24 bits");
  const std::string gid = a.gid.to_hex();  // 32 lowercase digits, bytes in wire order
  RcPingpongMessage m{};
  int n = std::snprintf(m.data(), m.size(), "%04x:%06x:%06x:%s", static_cast<unsigned>(a.lid),
                        static_cast<unsigned>(a.qpn), static_cast<unsigned>(a.psn), gid.c_str());
  if (n != static_cast<int>(kRcPingpongMessageBytes - 1))
    verbs::throw_error("encode_rc_pingpong", "address", EINVAL, "unexpected message length");
  return m;  // m[51] is the NUL snprintf wrote
}

Status decode_rc_pingpong(std::span<const char> wire, RcPingpongAddress& out,
                          const char** why) noexcept {
  auto fail = [why](const char* reason) {
    if (why) *why = reason;
    return Status::kInvalidArgument;
  };
  if (wire.size() != kRcPingpongMessageBytes) return fail("not 52 bytes");
  // Layout: LID 0..3, ':' 4, QPN 5..10, ':' 11, PSN 12..17, ':' 18, GID 19..50, NUL 51.
  if (wire[4] != ':' || wire[11] != ':' || wire[18] != ':')
    return fail("a ':' separator is missing");
  if (wire[51] != '\0') return fail("not NUL-terminated at byte 52");
  RcPingpongAddress a;
  std::uint32_t lid = 0;
  if (!read_hex(wire, 0, 4, lid)) return fail("LID is not 4 hex digits");
  if (!read_hex(wire, 5, 6, a.qpn)) return fail("QPN is not 6 hex digits");
  if (!read_hex(wire, 12, 6, a.psn)) return fail("PSN is not 6 hex digits");
  for (std::size_t i = 0; i < 16; ++i) {
    int hi = hex_digit(wire[19 + 2 * i]), lo = hex_digit(wire[20 + 2 * i]);
    if (hi < 0 || lo < 0) return fail("GID is not 32 hex digits");
    a.gid.raw[i] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  if (a.qpn < 2) return fail("QPN 0 or 1 is not an RC queue pair");
  a.lid = static_cast<std::uint16_t>(lid);
  out = a;
  return Status::kOk;
}

void fill_rc_pingpong_initial(std::span<std::byte> out, bool chk, std::size_t page) noexcept {
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = chk && page != 0 && i % page == 0 ? std::byte{0} : std::byte{kRcPingpongFillByte};
}

core::ChannelId connect_rc_pingpong(core::Endpoint& ep, const RcPingpongOptions& o) {
  const char* who = "connect_rc_pingpong";
  if (ep.config().transport != core::Transport::kRc)
    verbs::throw_error(who, "endpoint", ENOTSUP, "ibv_rc_pingpong speaks RC; the endpoint is UD");
  if (!valid_mtu(o.mtu))
    verbs::throw_error(
        who, "options", EINVAL,
        "path MTU " + std::to_string(o.mtu) + " is not 256, 512, 1024, 2048 or 4096");
  if (o.timeout <= Millis(0))
    verbs::throw_error(who, "options", EINVAL, "timeout must be positive");
  if (!o.host.empty() && o.listener)
    verbs::throw_error(who, "options", EINVAL, "a listener is for the server side (empty host)");
  const auto deadline = Clock::now() + o.timeout;

  core::ChannelOffer offer = ep.offer_channel({.ring = false});  // the tool uses SEND/RECV only
  verbs::ConnectionInfo local;
  if (core::offer_info(offer.local, local) != Status::kOk)
    verbs::throw_error(who, "endpoint", EPROTO, "the endpoint's own offer does not decode");
  // The endpoint's QP uses min(port active MTU, the peer's advertised MTU). The tool uses -m as
  // is, so the two agree only when -m fits the port; otherwise the tool's full-size packets would
  // be longer than our path MTU and refused.
  if (o.mtu > local.mtu)
    verbs::throw_error(who, "options", EINVAL,
                       "path MTU " + std::to_string(o.mtu) + " exceeds the port's active MTU " +
                           std::to_string(local.mtu) + "; run ibv_rc_pingpong with -m " +
                           std::to_string(local.mtu) + " or less");
  const RcPingpongMessage mine = encode_rc_pingpong({local.lid, local.qpn, local.psn, local.gid});

  // Completes the channel from the tool's address, with the MTU both sides use.
  auto accept = [&](const RcPingpongAddress& peer) {
    verbs::ConnectionInfo remote;
    remote.lid = peer.lid;
    remote.qpn = peer.qpn;
    remote.psn = peer.psn;
    remote.gid = peer.gid;
    remote.mtu = o.mtu;  // no qkey (RC), no memory window
    return ep.accept_offer(offer, verbs::encode(remote));
  };

  if (!o.host.empty()) {
    // Client: our address first, then theirs; our QP is ready before "done" releases the
    // server (which then waits for our first message).
    verbs::OobSocket s = verbs::OobSocket::connect(o.host, o.port, left(deadline));
    s.send_all(view(mine), left(deadline));
    core::ChannelId ch = accept(read_peer(s, deadline));
    try {
      s.send_all({kDone, sizeof kDone}, left(deadline));
    } catch (...) {
      (void)ep.close_channel(ch);  // the tool gave up: no half-made channel stays open
      throw;
    }
    return ch;
  }

  // Server: theirs first; our QP reaches RTS before we answer, as the tool's server does, since
  // the client sends its first message as soon as it has our address.
  std::optional<verbs::OobListener> own;
  verbs::OobListener* listener = o.listener;
  if (!listener) listener = &own.emplace("", o.port);
  verbs::OobSocket s = listener->accept(left(deadline));
  core::ChannelId ch = accept(read_peer(s, deadline));
  try {
    s.send_all(view(mine), left(deadline));
    char done[kRcPingpongDoneBytes] = {};
    s.recv_exact(done, left(deadline));
    if (std::string_view(done, sizeof done) != std::string_view(kDone, sizeof kDone))
      verbs::throw_error(who, "ibv_rc_pingpong peer", EPROTO,
                         "expected \"done\" and its NUL, got \"" + printable(done) + "\"");
  } catch (...) {
    (void)ep.close_channel(ch);
    throw;
  }
  return ch;
}

}  // namespace unet::bench
