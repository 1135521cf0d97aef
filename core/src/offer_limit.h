// Offer limit: the largest message an endpoint takes, carried in its channel offers. Pure logic.
//
// A core offer line (ring_offer.h) ends, before its newline, with " buf=<bytes>" in lowercase hex:
// the offering endpoint's buffer size, the largest message it can receive. Together with the
// line's path MTU (UD: one message is one packet) it bounds what a channel may send, so that two
// ends with different MTUs or buffer sizes refuse an oversize message at the sender instead of
// losing it on the wire or failing it at the receiver. A line without the field (an older peer)
// bounds nothing. An rdma_cm channel carries the size in its private data instead (below).
#pragma once

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "unet/core/little_endian.h"

namespace unet::core::offer {

inline constexpr std::string_view kBufferField = " buf=";
inline constexpr std::uint32_t kMaxBuffer = 1u << 31;

// The field for `bytes` (1 .. 2^31), to append last before the offer line's newline.
inline std::string encode_buffer_field(std::uint32_t bytes) {
  char buf[16];
  char* end = std::to_chars(buf, buf + sizeof buf, bytes, 16).ptr;
  return std::string(kBufferField) + std::string(buf, end);
}

// Splits the buffer field off the end of an offer line. Returns false for a field that is
// malformed or out of range; `line` and `bytes` are then untouched. A line without the field is
// not an error: `bytes` becomes 0 (unknown).
inline bool split_buffer_field(std::string_view& line, std::uint32_t& bytes) noexcept {
  const std::size_t at = line.rfind(kBufferField);
  if (at == std::string_view::npos) {
    bytes = 0;
    return true;
  }
  std::string_view f = line.substr(at + kBufferField.size());
  if (!f.empty() && f.back() == '\n') f.remove_suffix(1);
  if (f.empty() || f.size() > 8 || f[0] == '0') return false;
  for (char c : f)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  std::uint32_t v = 0;
  if (std::from_chars(f.data(), f.data() + f.size(), v, 16).ec != std::errc{} || v > kMaxBuffer)
    return false;
  line = line.substr(0, at);
  bytes = v;
  return true;
}

// rdma_cm: the buffer size in the private data of the connect request or its reply, after the
// ring grant when there is one (ring_offer.h): magic (4) · bytes (4), little-endian.
inline constexpr std::size_t kBufferBlockBytes = 8;
inline constexpr std::uint32_t kBufferMagic = 0x66754255;  // "UBuf"

inline void encode_buffer_block(std::uint32_t bytes,
                                std::span<std::byte, kBufferBlockBytes> out) noexcept {
  store_le(out.data(), kBufferMagic);
  store_le(out.data() + 4, bytes);
}

// Reads the block at the start of `in`. Returns false for one that starts with the magic but is
// cut short or names 0 or more than kMaxBuffer bytes; `bytes` is then untouched. Data without the
// magic (the CM's zero padding: an older peer) is not an error: `bytes` becomes 0 (unknown).
inline bool decode_buffer_block(std::span<const std::byte> in, std::uint32_t& bytes) noexcept {
  if (in.size() < 4 || load_le<std::uint32_t>(in.data()) != kBufferMagic) {
    bytes = 0;
    return true;
  }
  if (in.size() < kBufferBlockBytes) return false;
  const auto v = load_le<std::uint32_t>(in.data() + 4);
  if (v == 0 || v > kMaxBuffer) return false;
  bytes = v;
  return true;
}

// The largest message a channel may send: our own limit, within the peer's buffer size and, on
// UD, its path MTU (each 0 when the peer did not say).
constexpr std::uint32_t channel_limit(std::uint32_t ours, bool ud, std::uint32_t peer_mtu,
                                      std::uint32_t peer_buffer) noexcept {
  std::uint32_t m = ours;
  if (peer_buffer != 0) m = std::min(m, peer_buffer);
  if (ud && peer_mtu != 0) m = std::min(m, peer_mtu);
  return m;
}

}  // namespace unet::core::offer
