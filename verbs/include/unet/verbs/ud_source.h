// ud_source: who sent a UD arrival, as its tag's address part.
//
// A UD receive's first 40 bytes hold the packet's GRH only when the completion says one came
// (IBV_WC_GRH); otherwise they keep whatever an earlier arrival left in that buffer. RoCE always
// carries a GRH, so an arrival without one is malformed there. On InfiniBand a sender on the same
// subnet may omit it, and the fabric-assigned source LID (the completion's slid) names the sender:
// lid_gid() turns it into a GID-shaped key no port GID uses, so one table holds both kinds.
#pragma once

#include <cstdint>
#include <optional>

#include "unet/verbs/device.h"
#include "unet/verbs/gid.h"

namespace unet::verbs {

// The key for the sender at `lid` when its packets come without a GRH: ::LID (the IPv6 form of a
// 16-bit number; subnet-prefixed IB GIDs and IPv4-mapped RoCE GIDs never look like it).
constexpr Gid lid_gid(std::uint16_t lid) noexcept {
  Gid g;
  g.raw[14] = static_cast<std::uint8_t>(lid >> 8);
  g.raw[15] = static_cast<std::uint8_t>(lid);
  return g;
}

// The sender's address key: the GRH's source GID when `has_grh`; without one, lid_gid(slid) on
// InfiniBand and nothing (drop the arrival) on Ethernet or an unknown link, or for LID 0.
inline std::optional<Gid> ud_source(bool has_grh, LinkLayer link, std::uint16_t slid,
                                    const std::uint8_t* grh) noexcept {
  if (has_grh) return grh_source_gid(grh);
  if (link == LinkLayer::kInfiniBand && slid != 0) return lid_gid(slid);
  return std::nullopt;
}

}  // namespace unet::verbs
