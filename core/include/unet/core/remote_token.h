// RemoteToken: what an endpoint hands a peer so it may RDMA WRITE into or READ from one window of
// its memory (direct-access mode): the window's address, length and key. It grants exactly that
// window and nothing else, and stops working when revoked. Exchanged out of band as one text line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "unet/status.h"

namespace unet::core {

// A window of the granting endpoint's memory: where it is, how long, and the key that reaches it.
struct RemoteToken {
  std::uint64_t addr = 0;
  std::uint64_t length = 0;
  std::uint32_t rkey = 0;
  std::uint32_t id = 0;  // the granting endpoint's handle, for revoke()

  bool operator==(const RemoteToken&) const = default;

  // "unet-token/1 addr=<16 hex> len=<16 hex> rkey=<8 hex> id=<8 hex>\n"
  std::string encode() const;
  // kOk and `out` filled, or kInvalidArgument and `out` untouched.
  static Status decode(std::string_view line, RemoteToken& out) noexcept;
};

// What a grant allows the peer (or-ed together).
enum Access : unsigned {
  kRemoteRead = 1u << 0,
  kRemoteWrite = 1u << 1,
};

}  // namespace unet::core
