// rc_pingpong_oob: a U-Net endpoint channel with an unmodified `ibv_rc_pingpong` (rdma-core's
// libibverbs example, Debian 12: ibverbs-utils 44.0-2) on the other end.
//
//   core::Endpoint ep(cfg);                       // RC, buffer_bytes >= the message size
//   bench::RcPingpongOptions o;                   // host "" = be the server, like the tool
//   o.host = "127.0.0.1";
//   core::ChannelId ch = bench::connect_rc_pingpong(ep, o);
//   ... then exchange messages as the tool expects (below) with ep.send / ep.poll / ep.receive.
//
// What the tool does (read from rdma-core's libibverbs/examples/rc_pingpong.c and pingpong.c, and
// checked against the installed binary with strace inside ci/rxe-vm; no code is taken from it):
//
// Out-of-band exchange, TCP, port 18515 by default (-p):
//   message   exactly 52 bytes: sprintf("%04x:%06x:%06x:%s") of LID:QPN:PSN:GID (51 characters)
//             plus its terminating NUL; lowercase hex; GID = 32 hex digits, the 16 raw GID bytes in
//             order (the tool prints four 32-bit words, each converted to big-endian first, which
//             is the byte order on the wire). It parses the peer's message with
//             sscanf("%x:%x:%x:%s"), so it accepts upper case too and checks nothing. Example:
//             "0000:000012:e9e184:00000000000000000000ffffc6120001\0" (rxe, GID index 1).
//   order     the client connects and writes its message; the server reads it (one read() that
//             must return all 52 bytes), moves its QP to RTR and RTS, then writes its own message;
//             the client reads it (one read(), 52 bytes) and writes "done" with its NUL (5 bytes);
//             the server's one read() must return exactly those 5 bytes, else it fails. Both then
//             close the socket. The client moves its QP to RTR/RTS only after sending "done".
//   GID       all zero unless the tool runs with -g IDX; it then uses a GRH only when the peer's
//             GID has a non-zero interface id. On RoCE (rxe) it must run with -g.
// QP (RC): max_send_wr 1, max_recv_wr = rx depth (-r, 500); INIT access flags 0. RTR: path MTU
//   from -m (256..4096, default 1024; not clamped to the port's active MTU), max_dest_rd_atomic 1,
//   min_rnr_timer 12, hop limit 1, SL from -l. RTS: timeout 14, retry_cnt 7, rnr_retry 7,
//   max_rd_atomic 1. Its receives (rx depth of them) are posted before the exchange starts.
// Messages, -s SIZE (4096) and -n ITERS (1000): every message is SIZE bytes, sent from and
//   received into one buffer; every send is signaled (inline when SIZE fits the QP's inline cap).
//   The client posts the first send; each side posts its next send only when both its previous
//   send and its next receive have completed. So each side sends exactly ITERS and receives exactly
//   ITERS messages, strictly alternating, client first. Each then prints
//   "<2*SIZE*ITERS> bytes in <s> seconds = <r> Mbit/sec" and "<ITERS> iters in <s> seconds = ..."
//   and exits 0 (1 on any failed completion).
// Buffer content: filled with 0x7b before anything happens. Receives land in the buffer the next
//   send goes from, so the server's message N is the client's message N echoed, and the client's
//   message N+1 is the server's message N returned (its message 0 is the initial content). With -c
//   (--chk, present in rdma-core 44) the client zeroes the first byte of every page (the tool's
//   page size) before its first send, and the server, at the end, checks that the first byte of
//   every page of its buffer (= the last message it received) is 0, printing "invalid data in page
//   N" for each that is not. That mismatch does not change its exit status.
//
// What a unet peer must therefore do: as the client (the tool is the server) send first, then
// alternate receive/send until ITERS each; as the server, receive first. Messages of exactly SIZE
// bytes both ways; keep the first byte of each page 0 in the last message sent to a `-c` server.
// The endpoint's receives are posted when it is built (on its shared receive queue), so the tool's
// first send never finds none; its buffers must be at least SIZE bytes.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "unet/core/endpoint.h"
#include "unet/status.h"
#include "unet/verbs/gid.h"

namespace unet::verbs {
class OobListener;
}

namespace unet::bench {

// One side's address as the tool exchanges it.
struct RcPingpongAddress {
  std::uint16_t lid = 0;
  std::uint32_t qpn = 0;  // 24 bits
  std::uint32_t psn = 0;  // 24 bits
  verbs::Gid gid;

  bool operator==(const RcPingpongAddress&) const = default;
};

inline constexpr std::size_t kRcPingpongMessageBytes = 52;  // "LLLL:QQQQQQ:PPPPPP:<32 hex>" + NUL
inline constexpr std::size_t kRcPingpongDoneBytes = 5;      // "done" + NUL
inline constexpr std::uint16_t kRcPingpongDefaultPort = 18515;
inline constexpr std::uint32_t kRcPingpongDefaultMtu = 1024;
inline constexpr std::uint8_t kRcPingpongFillByte = 0x7b;  // the tool's initial buffer content

using RcPingpongMessage = std::array<char, kRcPingpongMessageBytes>;

// The 52 bytes the tool would send for `a`, lowercase, NUL-terminated. Throws verbs::Error
// (EINVAL) when QPN or PSN does not fit 24 bits.
RcPingpongMessage encode_rc_pingpong(const RcPingpongAddress& a);

// Parses exactly 52 bytes: 4, 6 and 6 hex digits separated by ':', a ':', 32 hex digits (either
// case), then one NUL. QPN 0 and 1 (not RC QPs) are refused. kOk and `out` filled, or
// kInvalidArgument with `out` untouched and *why (when given) set to a static description of the
// first thing wrong.
Status decode_rc_pingpong(std::span<const char> wire, RcPingpongAddress& out,
                          const char** why = nullptr) noexcept;

struct RcPingpongOptions {
  std::string host;                             // "" = server: listen like `ibv_rc_pingpong` alone
  std::uint16_t port = kRcPingpongDefaultPort;  // TCP port (the tool's -p)
  std::uint32_t mtu = kRcPingpongDefaultMtu;    // path MTU in bytes: must equal the tool's -m
  std::chrono::milliseconds timeout{20000};     // bounds the whole exchange
  // Server only: accept on this listener (already listening, e.g. on port 0) instead of opening
  // one on `port`, so a caller can start the tool only once the port is open. Not owned.
  verbs::OobListener* listener = nullptr;
};

// Makes an RC channel of `ep` whose peer is an `ibv_rc_pingpong` process: offers a channel, swaps
// the 52-byte addresses with the tool over TCP in its order, completes the channel with the
// tool's QPN, PSN, LID and GID and a path MTU of `o.mtu`, and does the "done" step as the tool's
// peer must. On return the channel is ready; as a client the tool waits for our first message, as
// a server the tool's first message may already be on its way. Throws verbs::Error on a bad
// option, a timeout, a malformed or unusable peer message, or a path MTU the endpoint's port
// cannot carry (the endpoint never uses more than its port's active MTU).
core::ChannelId connect_rc_pingpong(core::Endpoint& ep, const RcPingpongOptions& o);

// The tool's message content before any exchange: SIZE bytes of 0x7b, with the first byte of each
// `page` bytes zeroed when it runs with -c (`chk`). Its first message has exactly this content.
void fill_rc_pingpong_initial(std::span<std::byte> out, bool chk, std::size_t page = 4096) noexcept;

}  // namespace unet::bench
