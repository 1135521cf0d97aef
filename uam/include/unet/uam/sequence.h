// Seq: a channel's 32-bit message sequence number, compared in serial-number arithmetic (RFC 1982).
//
// Sequence numbers run freely and wrap at 2^32. `a` is before `b` when the signed distance b - a is
// positive, which is right as long as the two are less than 2^31 apart — guaranteed here because a
// sender never has more than ReliabilityConfig::window (at most 2^15) messages unacknowledged.
#pragma once

#include <cstdint>

#include "unet/core/serial_number.h"

namespace unet::uam {

// A message sequence number (wraps at 2^32).
using Seq = std::uint32_t;

// Signed distance from `a` to `b` (positive when b is after a).
constexpr std::int32_t seq_distance(Seq a, Seq b) noexcept {
  return static_cast<std::int32_t>(b - a);
}
// `a` comes strictly before `b`; before or equal (core's serial-number order).
constexpr bool seq_before(Seq a, Seq b) noexcept { return core::seq_lt(a, b); }
constexpr bool seq_before_eq(Seq a, Seq b) noexcept { return core::seq_le(a, b); }

static_assert(seq_before(0xFFFFFFFFu, 0u), "wraps");
static_assert(!seq_before(5u, 5u) && seq_before_eq(5u, 5u));

}  // namespace unet::uam
