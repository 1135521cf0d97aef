// Endpoint internals shared by endpoint.cc (set-up) and endpoint_data.cc (data path).
#pragma once

#include <cstring>
#include <memory>
#include <unordered_map>

#include "unet/core/endpoint.h"
#include "unet/verbs/address_handle.h"
#include "unet/verbs/completion_channel.h"
#include "unet/verbs/completion_queue.h"
#include "unet/verbs/device.h"
#include "unet/verbs/gid.h"
#include "unet/verbs/memory_region.h"
#include "unet/verbs/queue_pair.h"
#include "unet/verbs/shared_receive_queue.h"

namespace unet::core {

// UD arrivals carry a 40-byte GRH before the payload; each buffer has a 64-byte slot for it.
inline constexpr std::uint32_t kGrhSlot = 64;
// Work done per poll() step at most: completions reaped, WRs in one post list.
inline constexpr std::uint32_t kBatch = 32;

// wr_id of a send: bit 63 set, the lane in bits 32..62, and in bits 0..31 how many in-flight
// sends of that lane its completion retires (0 for unsignaled sends; they only complete on error).
// wr_id of a receive: the buffer id (bit 63 clear).
inline constexpr std::uint64_t kSendBit = 1ull << 63;
constexpr std::uint64_t send_wr_id(std::uint32_t lane, std::uint32_t retire) noexcept {
  return kSendBit | std::uint64_t{lane} << 32 | retire;
}

// A UD channel's key: the peer's QPN and GID.
struct UdPeer {
  std::uint32_t qpn = 0;
  verbs::Gid gid;
  bool operator==(const UdPeer&) const = default;
};
struct UdPeerHash {
  std::size_t operator()(const UdPeer& p) const noexcept {
    std::uint64_t h = p.qpn;
    for (std::uint8_t b : p.gid.raw) h = h * 1099511628211ull ^ b;
    return static_cast<std::size_t>(h);
  }
};

struct Endpoint::Verbs {
  std::shared_ptr<verbs::Context> ctx;
  std::shared_ptr<verbs::ProtectionDomain> pd;
  std::shared_ptr<verbs::CompletionChannel> channel;  // notify_fd()
  std::shared_ptr<verbs::CompletionQueue> cq;
  std::shared_ptr<verbs::SharedReceiveQueue> srq;  // RC: the free queue
  std::unique_ptr<verbs::QueuePair> ud_qp;         // UD: the endpoint's one QP
  std::unique_ptr<verbs::MemoryRegion> mr;         // the communication segment
  verbs::GidEntry gid;
  verbs::PathParams path;
  std::unordered_map<std::uint32_t, ChannelId> by_qpn;       // RC tag -> channel
  std::unordered_map<UdPeer, ChannelId, UdPeerHash> by_peer;  // UD tag -> channel
  // Post lists, built in place: no allocation on the data path.
  ibv_send_wr swr[kBatch];
  ibv_sge ssge[kBatch];
  ibv_recv_wr rwr[kBatch];
  ibv_sge rsge[kBatch][2];
  verbs::WorkCompletion wc[kBatch];
};

struct Endpoint::Channel {
  enum class State : std::uint8_t { kOffered, kOpen, kFailed, kClosed };
  State state = State::kOffered;
  std::uint32_t lane = 0;
  std::unique_ptr<verbs::QueuePair> qp;     // RC
  std::unique_ptr<verbs::AddressHandle> ah;  // UD
  std::uint32_t remote_qpn = 0;
  std::uint32_t remote_qkey = 0;
  UdPeer peer;
};

// One send queue of the device: its in-flight sends in order, and its signaling state.
struct Endpoint::Lane {
  Lane(verbs::QueuePair& q, ChannelId c, std::uint32_t d) : qp(&q), channel(c), depth(d), inflight(d) {}
  verbs::QueuePair* qp;
  ChannelId channel;        // RC: the channel owning the QP; UD: kNoChannel
  std::uint32_t depth;      // the QP's send queue depth
  std::uint32_t interval = 1;
  std::uint32_t unsignaled = 0;  // posted since the last signaled send
  bool failed = false;
  DescriptorRing<BufferId> inflight;  // buffer of each posted, unretired send (kNoBuffer: inline)
};

}  // namespace unet::core
