// seq_lt, seq_le: serial-number order of 32-bit sequence numbers (RFC 1982).
//
// Shared by every layer that numbers its messages or bytes: core's send lanes, uam's messages,
// ulp's stream bytes.
//
// Numbers run freely and wrap at 2^32. `a` is before `b` when the signed distance b - a is
// positive, which is right as long as the two are less than 2^31 apart; each user bounds what it
// has outstanding far below that.
#pragma once

#include <cstdint>

namespace unet::core {

// `a` comes strictly before `b`; at or before `b`.
constexpr bool seq_lt(std::uint32_t a, std::uint32_t b) noexcept {
  return static_cast<std::int32_t>(a - b) < 0;
}
constexpr bool seq_le(std::uint32_t a, std::uint32_t b) noexcept {
  return static_cast<std::int32_t>(a - b) <= 0;
}

static_assert(seq_lt(0xFFFFFFFFu, 0u), "wraps");
static_assert(!seq_lt(5u, 5u) && seq_le(5u, 5u));
static_assert(seq_lt(0u, 0x7FFFFFFFu) && !seq_lt(0x7FFFFFFFu, 0u), "under half the space apart");

}  // namespace unet::core
