// Offer line: the parts of a core channel offer (ChannelOffer::local). Pure logic.
//
// The line is the verbs ConnectionInfo line (verbs/connection_info.h) with, before its newline,
// the ring field when it grants a ring (ring_offer.h) and last the buffer field (offer_limit.h).
#pragma once

#include <cstdint>
#include <string_view>

#include "offer_limit.h"
#include "ring_offer.h"
#include "unet/verbs/connection_info.h"

namespace unet::core::offer {

// An offer line's parts: its QP half, the ring it grants ({0, 0}: none) and its endpoint's
// buffer size (0: not said). False for a malformed line.
inline bool parse_offer(std::string_view line, verbs::ConnectionInfo& info, ring::Geometry& ring,
                        std::uint32_t& buffer) noexcept {
  return split_buffer_field(line, buffer) && ring::split_offer(line, ring) &&
         verbs::decode(line, info) == Status::kOk;
}

}  // namespace unet::core::offer
