// Ring offer: what a channel offer adds when it grants the peer a ring. Pure logic.
//
// A core channel offer is the verbs ConnectionInfo line (verbs/connection_info.h). An offer with a
// ring carries the ring's registered bytes (ring + control block) in the line's addr/rkey/len
// fields and appends, before the newline, " ring=<slots>x<slot bytes>" in lowercase hex. A channel
// is a ring channel when both offers carry a ring; each side writes into the other's.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

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
  std::uint64_t remote_bytes() const noexcept { return std::uint64_t{slots} * slot_bytes + kControlBytes; }
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
  if (x == std::string_view::npos || !hex(f.substr(0, x), out.slots) || !hex(f.substr(x + 1), out.slot_bytes) ||
      !valid(out))
    return false;
  line = line.substr(0, at);
  g = out;
  return true;
}

}  // namespace unet::core::ring
