// ConnectionInfo: what two processes exchange to connect QPs out of band, and its wire codec.
//
// Wire format (version 1): one ASCII line, fixed field order and widths, hex numbers:
//   unet-oob/1 lid=LLLL qpn=QQQQQQ psn=PPPPPP gid=<32 hex> mtu=<dec> qkey=KKKKKKKK
//              addr=<16 hex> rkey=RRRRRRRR len=<16 hex>\n            (one line, single spaces)
// `addr/rkey/len` name a memory window the peer may RDMA into or from (all zero when none).
// decode() validates every field and refuses anything else, so a garbled or hostile peer cannot
// produce a half-filled ConnectionInfo; it accepts only the spelling encode() writes (lowercase
// hex, no leading zeros in mtu), which verbs/fuzz/connection_info_fuzz checks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "unet/status.h"
#include "unet/verbs/gid.h"
#include "unet/verbs/memory_region.h"

namespace unet::verbs {

// One side's half of an out-of-band QP set-up: what the peer needs to reach this QP.
struct ConnectionInfo {
  std::uint16_t lid = 0;
  std::uint32_t qpn = 0;  // 24 bits
  std::uint32_t psn = 0;  // 24 bits
  Gid gid;
  std::uint32_t mtu = 0;   // path MTU in bytes the sender will use (256..4096; 0 = unspecified)
  std::uint32_t qkey = 0;  // UD only
  RemoteKey memory;        // optional RDMA target

  bool operator==(const ConnectionInfo&) const = default;
};

// The line's first word (names the version), and the longest line decode() accepts.
inline constexpr std::string_view kConnectionInfoMagic = "unet-oob/1";
inline constexpr std::size_t kConnectionInfoMaxLine = 192;

// The line for `info`, newline included.
std::string encode(const ConnectionInfo& info);

// Parses one line (trailing '\n' optional). kOk and `out` filled, or kInvalidArgument and `out`
// untouched.
Status decode(std::string_view line, ConnectionInfo& out) noexcept;

// A random 24-bit packet sequence number for a new connection.
std::uint32_t random_psn();

}  // namespace unet::verbs
