// The endpoints of the bench/ring tools: small, on the device and GID their flags name, and the
// one call that joins two of them by a channel.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "unet/core/endpoint.h"

namespace unet::bench {

inline core::EndpointConfig ring_bench_config(const std::string& device, int gid_index,
                                              std::uint32_t send_queue_depth) {
  core::EndpointConfig c;
  c.device = device;
  if (gid_index >= 0) c.gid_index = static_cast<std::uint32_t>(gid_index);
  c.buffers = 64;
  c.free_queue_depth = 32;
  c.send_queue_depth = send_queue_depth;
  return c;
}

// A channel between `a` and `b` (a ring channel unless `ring` is false): {a's id, b's id}.
inline std::pair<core::ChannelId, core::ChannelId> join(core::Endpoint& a, core::Endpoint& b,
                                                        bool ring) {
  const core::ChannelOffer oa = a.offer_channel({.ring = ring}),
                           ob = b.offer_channel({.ring = ring});
  const core::ChannelId ab = a.accept_offer(oa, ob.local);
  return {ab, b.accept_offer(ob, oa.local)};
}

}  // namespace unet::bench
