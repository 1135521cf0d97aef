// Ring offer: what a channel offer adds when it grants the peer a ring. Pure logic.
//
// A core channel offer is the verbs ConnectionInfo line (verbs/connection_info.h). An offer with a
// ring carries the ring's registered bytes (ring + control block) in the line's addr/rkey/len
// fields and appends, before the newline, " ring=<slots>x<slot bytes>" in lowercase hex. A channel
// is a ring channel when both offers carry a ring; each side writes into the other's. Through
// rdma_cm the same grant travels in the connection's private data (Grant, below).
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "unet/core/little_endian.h"

namespace unet::core::ring {

inline constexpr std::string_view kOfferField = " ring=";
// At most 2^14 slots: 16-bit sequence numbers and credit totals then tell laps apart.
inline constexpr std::uint32_t kMinSlots = 2, kMaxSlots = 1u << 14;
inline constexpr std::uint32_t kMinSlotBytes = 32, kMaxSlotBytes = 1u << 15;
inline constexpr std::uint32_t kControlBytes = 64;

struct Geometry {
  std::uint32_t slots = 0;
  std::uint32_t slot_bytes = 0;
  // Bytes registered for the peer: the ring and its control block.
  std::uint64_t remote_bytes() const noexcept {
    return std::uint64_t{slots} * slot_bytes + kControlBytes;
  }
};

constexpr bool valid(const Geometry& g) noexcept {
  return g.slots >= kMinSlots && g.slots <= kMaxSlots && (g.slots & (g.slots - 1)) == 0 &&
         g.slot_bytes >= kMinSlotBytes && g.slot_bytes <= kMaxSlotBytes && g.slot_bytes % 8 == 0;
}

// The field for `g`, to append before the offer line's newline.
inline std::string encode_field(const Geometry& g) {
  char buf[32];
  char* p = buf;
  p = std::to_chars(p, buf + sizeof buf, g.slots, 16).ptr;
  *p++ = 'x';
  p = std::to_chars(p, buf + sizeof buf, g.slot_bytes, 16).ptr;
  return std::string(kOfferField) + std::string(buf, p);
}

// Splits an offer line into the ConnectionInfo line and its ring field. Returns false for a
// ring field that is malformed or names an invalid geometry; `line` and `g` are then untouched.
// A line without the field is not an error: `g` stays {0, 0} (no ring).
inline bool split_offer(std::string_view& line, Geometry& g) noexcept {
  const std::size_t at = line.find(kOfferField);
  if (at == std::string_view::npos) return true;
  std::string_view f = line.substr(at + kOfferField.size());
  if (!f.empty() && f.back() == '\n') f.remove_suffix(1);
  Geometry out;
  const auto hex = [](std::string_view s, std::uint32_t& v) {
    if (s.empty() || s.size() > 8 || (s.size() > 1 && s[0] == '0')) return false;
    for (char c : s)
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    return std::from_chars(s.data(), s.data() + s.size(), v, 16).ec == std::errc{};
  };
  const std::size_t x = f.find('x');
  if (x == std::string_view::npos || !hex(f.substr(0, x), out.slots) ||
      !hex(f.substr(x + 1), out.slot_bytes) || !valid(out))
    return false;
  line = line.substr(0, at);
  g = out;
  return true;
}

// rdma_cm: a ring grant in the private data of the connect request or its reply, from byte 0:
// magic (4) · slots (4) · slot bytes (4) · rkey (4) · address of the ring (8), little-endian. The
// CM pads what it delivers with zeros (to 56 bytes for a request, 196 for a reply), so private
// data that does not start with the magic carries no ring; any that does must be a valid grant.
inline constexpr std::size_t kGrantBytes = 24;
inline constexpr std::uint32_t kGrantMagic = 0x676e5255;  // "URng"

struct Grant {
  Geometry geometry;  // {0, 0}: no ring
  std::uint64_t addr = 0;
  std::uint32_t rkey = 0;
};

inline void encode_grant(const Grant& g, std::span<std::byte, kGrantBytes> out) noexcept {
  store_le(out.data(), kGrantMagic);
  store_le(out.data() + 4, g.geometry.slots);
  store_le(out.data() + 8, g.geometry.slot_bytes);
  store_le(out.data() + 12, g.rkey);
  store_le(out.data() + 16, g.addr);
}

// Reads a grant from the peer's private data. Returns false for data that starts with the magic
// but is cut short or names an invalid geometry or a null address; `g` is then untouched. Data
// without the magic is not an error: `g` becomes {} (no ring).
inline bool decode_grant(std::span<const std::byte> in, Grant& g) noexcept {
  if (in.size() < 4 || load_le<std::uint32_t>(in.data()) != kGrantMagic) {
    g = {};
    return true;
  }
  if (in.size() < kGrantBytes) return false;
  Grant out;
  out.geometry = {load_le<std::uint32_t>(in.data() + 4), load_le<std::uint32_t>(in.data() + 8)};
  out.rkey = load_le<std::uint32_t>(in.data() + 12);
  out.addr = load_le<std::uint64_t>(in.data() + 16);
  if (!valid(out.geometry) || out.addr == 0) return false;
  g = out;
  return true;
}

}  // namespace unet::core::ring
