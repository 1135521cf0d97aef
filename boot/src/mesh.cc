// connect_all(): mesh.h says how.
#include "unet/boot/mesh.h"

#include <optional>

namespace unet::boot {

namespace {

// Both endpoint kinds have the same set-up calls.
template <class Ep>
std::vector<core::ChannelId> connect_any(Job& job, Ep& ep) {
  const auto n = static_cast<std::size_t>(job.size());
  const auto me = static_cast<std::size_t>(job.rank());
  std::vector<std::optional<core::ChannelOffer>> offers(n);
  std::vector<std::string> out(n);
  for (std::size_t r = 0; r < n; ++r)
    if (r != me) {
      offers[r] = ep.offer_channel();
      out[r] = offers[r]->local;
    }
  const std::vector<std::string> in = job.alltoall(out);
  std::vector<core::ChannelId> channels(n, core::kNoChannel);
  for (std::size_t r = 0; r < n; ++r)
    if (r != me) channels[r] = ep.accept_offer(*offers[r], in[r]);
  job.barrier();  // every rank's channels are open: sending may start
  return channels;
}

}  // namespace

std::vector<core::ChannelId> connect_all(Job& job, uam::Endpoint& ep) {
  return connect_any(job, ep);
}

std::vector<core::ChannelId> connect_all(Job& job, core::Endpoint& ep) {
  return connect_any(job, ep);
}

}  // namespace unet::boot
