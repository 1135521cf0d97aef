// EndpointPlan, plan_endpoint() and plan_for(): the endpoint one rank of a job of N ranks opens —
// its device, its receive-buffer budget, its pinned memory — sized from N, checked against the
// device and the memory-lock limit before any traffic.
//
// Receive buffers (uam/endpoint.h): a channel with credit window W holds c(W) = 2W + ceil(W/2) + 2
// posted buffers, so a rank with a channel to each of the N-1 others posts
//   P = max(256, (N-1) c(W) + 32)          (32: core's repost batch)
// buffers. W is 8 (uam's default) unless that breaks the budget `max_posted_buffers` (4096 by
// default); then the largest W that fits; with none (W = 1 does not fit either) the job does not
// fit. The segment holds P + 256 buffers (the 256 to send from) of 4 KiB on RC and of the path MTU
// (+ 64 bytes for the GRH) on UD. Pinned memory per rank = the segment, plus on direct-access
// endpoints the registration cache's bound (the program's) and 64 bytes per operation slot, plus
// on RC the ring channels' memory: min(N-1, max_rings) x core::ring_channel_bytes() (24 KiB each
// with core's defaults; later channels are plain).
// boot/README.md has the figures for 8 to 256 ranks.
//
// UD: uam's acknowledgements come from the peer's software, so a peer waiting for a CPU looks
// silent; beyond 40 ranks the plan lets a silent peer be for at least 20 ms x N before its
// channel fails (uam's default is about 0.8 s: here its timeout backs off to 1 s, with as many
// retries as that takes).
//
// RC: rxe's acknowledgements are kernel software, starved like any thread when ranks outnumber
// the CPUs and whose go-back-N retries across a loaded link collapse, so the plan raises core's
// ack_timeout until a silent QP fails after at least max(2 s, 200 ms x N) (4.096 us x
// 2^ack_timeout x 7: 17 gives 3.8 s up to 18 ranks, 19 gives 15 s at 64; core's default, 14,
// gives 0.47 s).
//
// The device's own objects are shared by the ranks that open it: RC makes a QP per channel, UD an
// address handle per channel (core), so r ranks on one device need r (N-1) of them (rxe allows
// 32767 address handles: a UD mesh of 256 ranks needs two devices of 128).
//
// The completion queue takes P + S (N-1) entries (S: the send queue depth per QP), so S is 128
// unless the device's max_cqe needs it smaller, and never below uam's 80.
//
// Device choice: UNET_DEVICE names the device, or a comma-separated list of them; unset, the list
// is every device of this node (verbs' order, as ibv_devices prints it). A rank takes the entry at
// its local rank modulo the list's length, so the ranks of a node spread over its devices. The
// GID index is UNET_GID_INDEX if set, else chosen like perftest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "unet/boot/job.h"
#include "unet/core/endpoint.h"
#include "unet/uam/endpoint.h"

namespace unet::boot {

inline constexpr std::uint32_t kDefaultMaxPostedBuffers = 4096;

// What the plan needs to know of the device and the host (plan_for() reads them).
struct DeviceFacts {
  std::string name;                   // the device the rank opens ("" = the first)
  std::uint32_t mtu = 1024;           // the port's active MTU: UD's buffer size
  std::uint32_t max_qp = UINT32_MAX;  // device-wide, as max_ah
  std::uint32_t max_ah = UINT32_MAX;
  std::uint32_t max_cqe = UINT32_MAX;
  std::uint32_t max_recv_wr = UINT32_MAX;    // RC: the SRQ's max_srq_wr; UD: the QP's max_qp_wr
  std::uint64_t memlock_bytes = UINT64_MAX;  // RLIMIT_MEMLOCK (UINT64_MAX: unlimited or exempt)
};

// What the program asks for.
struct PlanRequest {
  core::Transport transport = core::Transport::kRc;
  core::Mode mode = core::Mode::kDirectAccess;  // direct access: uam's store() and get() (RC)
  int ranks = 2;                                // plan_for() sets it to the job's size
  int ranks_per_device = 1;  // of this node on this rank's device (plan_for() counts them)
  std::size_t max_pinned_bytes = 64u << 20;  // direct access: the registration cache's bound
  std::uint32_t max_posted_buffers = kDefaultMaxPostedBuffers;  // the receive-buffer budget
};

// The endpoint of one rank and what it costs.
struct EndpointPlan {
  core::EndpointConfig net;
  uam::Config am;                 // am.window: W
  std::uint32_t per_channel = 0;  // c(W): posted buffers one channel holds
  std::size_t segment_bytes = 0;  // pinned by the segment
  std::size_t ring_bytes = 0;     // RC: pinned by the ring channels
  std::size_t pinned_bytes = 0;   // segment + rings + registration cache bound + operation heads
};

// The plan for `request` on `device` (a pure function: no device is opened). Throws Error saying
// which bound the job breaks and by how much: the receive-buffer budget, the device's QPs or
// address handles, receive-queue depth or completion-queue entries, or the memory-lock limit.
EndpointPlan plan_endpoint(const PlanRequest& request, const DeviceFacts& device);

// The device this rank opens (see the top of this file); "" when the node has none.
std::string choose_device(int local_rank);

// Collective: every rank of `job` chooses its device, reads its facts, plans with
// request.ranks = job.size() and ranks_per_device from its node's ranks and device list, and all
// agree before any traffic: when any rank's plan fails, every
// rank throws the same AgreedError, naming that rank, its node and device.
EndpointPlan plan_for(Job& job, PlanRequest request);

}  // namespace unet::boot
