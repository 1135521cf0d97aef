// connect_all(): a channel from this rank's endpoint to every other rank of the job, RC or UD as
// the endpoint is, with the channel offers exchanged through the job's launcher.
//
// Each rank makes one offer per peer (offer_channel()), the job's alltoall() carries each offer's
// text to its peer untouched (it is opaque here), each rank accepts its peers' halves, and a
// barrier ends the call, so that no rank sends before every channel of the job is open. RC: a full
// mesh, one QP per peer. UD: the endpoint's one QP; each channel is a peer's address. Size the
// endpoint for N-1 channels first (endpoint_plan.h).
#pragma once

#include <vector>

#include "unet/boot/job.h"
#include "unet/core/endpoint.h"
#include "unet/uam/endpoint.h"

namespace unet::boot {

// Collective. Returns channels[r], the channel to rank r (core::kNoChannel at job.rank()). Throws
// what the endpoint's offer_channel() / accept_offer() throw (verbs::Error, std::length_error when
// uam's receive-buffer budget is broken) and Error when a collective fails.
std::vector<core::ChannelId> connect_all(Job& job, uam::Endpoint& ep);
std::vector<core::ChannelId> connect_all(Job& job, core::Endpoint& ep);

}  // namespace unet::boot
