// Endpoint internals shared by endpoint.cc (set-up) and endpoint_data.cc (data path).
#pragma once

#include <bit>
#include <cstring>
#include <memory>
#include <unordered_map>

#include "registration_cache.h"
#include "ring_channel.h"
#include "unet/core/always_inline.h"
#include "unet/core/channel_table.h"
#include "unet/core/endpoint.h"
#include "unet/core/serial_number.h"
#include "unet/verbs/address_handle.h"
#include "unet/verbs/async_events.h"
#include "unet/verbs/completion_channel.h"
#include "unet/verbs/completion_queue.h"
#include "unet/verbs/connection_manager.h"
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
// A poll() that comes this many polls after arm() with no arm() between tells the ring peers we
// are awake (endpoint_ring.cc): a loop that sleeps calls arm() far more often, a busy one soon
// passes it.
inline constexpr std::uint32_t kAwakePolls = 64;
// Ring writes of payloads up to this size are composed whole in one image (build_ring_wr).
inline constexpr std::uint32_t kRingImage = 128;
static_assert(kRingImage >= Descriptor::kInlineBytes + 7,
              "a descriptor's payload fits an image, padded");

// wr_id of a send: bit 63 set, the lane in bits 32..62, the send's sequence number on its lane in
// bits 0..31. A QP completes its sends in order, so a signaled completion retires every in-flight
// send up to its sequence number, and an error completion names exactly the one that failed.
// wr_id of a receive: the buffer id (bit 63 clear).
inline constexpr std::uint64_t kSendBit = 1ull << 63;
constexpr std::uint64_t send_wr_id(std::uint32_t lane, std::uint32_t seq) noexcept {
  return kSendBit | std::uint64_t{lane} << 32 | seq;
}

// What an in-flight send holds: a buffer, kNoBuffer (inline), or kOpBit | an op slot
// (direct-access operation).
inline constexpr std::uint32_t kOpBit = 1u << 31;
// The largest one-sided operation whatever the port says: an op's length is 32 bits, and the
// RDMA length field of a packet header too.
inline constexpr std::uint64_t kMaxRdma = std::uint64_t{1} << 31;

// Registrations for the cache: one verbs MR per cached range, local access only.
struct MrRegistrar {
  std::shared_ptr<verbs::ProtectionDomain> pd;
  using Handle = verbs::MemoryRegion*;
  Handle register_region(void* addr, std::size_t len) {
    return new verbs::MemoryRegion(pd, addr, len, IBV_ACCESS_LOCAL_WRITE);
  }
  void deregister(Handle h) noexcept { delete h; }
  std::uint32_t lkey(const Handle& h) const { return h->lkey(); }
  std::uint32_t rkey(const Handle& h) const { return h->rkey(); }
};
using Cache = RegistrationCache<MrRegistrar>;

// A direct-access operation between push and completion: it holds its lease on the local memory.
struct Op {
  std::uint64_t tag = 0;
  ChannelId channel = kNoChannel;
  OpKind kind = OpKind::kSend;
  std::uint64_t local = 0;
  std::uint32_t length = 0;
  std::uint32_t lkey = 0;
  std::uint64_t remote = 0;
  std::uint32_t rkey = 0;
  std::uint32_t head_length = 0;  // sends: bytes of the op's head slot sent before `local`
  bool copied = false;            // posted inline: no lease, the post copies `local`
  Cache::Lease lease;
};

struct Endpoint::Verbs {
  std::shared_ptr<verbs::Context> ctx;
  std::shared_ptr<verbs::ProtectionDomain> pd;
  std::shared_ptr<verbs::CompletionChannel> channel;  // notify_fd()
  std::shared_ptr<verbs::CompletionQueue> cq;
  std::shared_ptr<verbs::SharedReceiveQueue> srq;  // RC: the free queue
  std::unique_ptr<verbs::QueuePair> ud_qp;         // UD: the endpoint's one QP
  std::unique_ptr<verbs::MemoryRegion> mr;         // the communication segment
  // Direct-access mode (the registrar outlives the cache, the cache outlives the ops' leases).
  MrRegistrar registrar;
  std::unique_ptr<Cache> cache;
  std::vector<Op> ops;
  // Each op's head slot (Endpoint::kMaxSendHead bytes at slot * kMaxSendHead), registered.
  std::unique_ptr<std::byte[]> heads;
  std::unique_ptr<verbs::MemoryRegion> heads_mr;
  std::unique_ptr<DescriptorRing<std::uint32_t>> free_ops;
  std::vector<std::unique_ptr<verbs::MemoryRegion>> grants;  // by RemoteToken::id
  std::unique_ptr<verbs::CmListener> listener;               // listen_cm()
  verbs::GidEntry gid;
  verbs::PathParams path;
  // Arrival tag -> channel. A UD channel on InfiniBand holds two tags: the peer's GID and its LID
  // key (verbs/ud_source.h), for packets that come with a GRH and without one.
  ChannelTable tags;
  verbs::LinkLayer link = verbs::LinkLayer::kUnknown;  // the endpoint's port's
  std::unique_ptr<verbs::AsyncEvents> events;          // the device's asynchronous events
  explicit Verbs(std::uint32_t max_channels) : tags(2 * max_channels) {}
  // Post lists, built in place: no allocation on the data path.
  ibv_send_wr swr[kBatch];
  ibv_sge ssge[kBatch][3];  // a send's head slot and payload, or its one buffer; a ring
                            // write's head, payload and tail
  // Ring writes of small payloads: each WR's slot image (head, imm, payload, tail).
  alignas(8) std::byte ring_image[kBatch][ring::kOverhead + kRingImage];
  ibv_recv_wr rwr[kBatch];
  Descriptor upcall_arrival;  // a ring arrival handed to the upcall
  ibv_sge rsge[kBatch][2];
  verbs::WorkCompletion wc[kBatch];
};

struct Endpoint::Channel {
  enum class State : std::uint8_t { kOffered, kOpen, kFailed, kClosed };
  State state = State::kOffered;
  std::uint32_t lane = 0;
  std::uint32_t max_message = 0;             // ours within the peer's (offer_limit.h)
  std::unique_ptr<verbs::QueuePair> qp;      // RC, set up out of band
  std::unique_ptr<verbs::CmConnection> cm;   // RC, set up through rdma_cm (owns its QP)
  std::unique_ptr<verbs::AddressHandle> ah;  // UD
  std::unique_ptr<RingChannel> ring;         // RC ring channel (endpoint_ring.cc)
  std::uint32_t remote_qpn = 0;
  std::uint32_t remote_qkey = 0;
  UdTag peer;
  std::uint16_t peer_lid = 0;  // UD on InfiniBand: its LID tag (lid_tag in endpoint.cc)
  verbs::QueuePair* rc_qp() noexcept { return qp ? qp.get() : cm ? &cm->qp() : nullptr; }
};

// One send queue of the device: its in-flight sends in order, and its signaling state.
// Sequence numbers are consecutive, so the in-flight sends are [oldest, next_seq) and what each
// holds sits at seq & mask: tracking a send is one store, retiring one a load.
struct Endpoint::Lane {
  Lane(verbs::QueuePair& q, ChannelId c, std::uint32_t d)
      : qp(&q),
        channel(c),
        depth(d),
        mask(std::bit_ceil(d) - 1),
        held(std::make_unique<std::uint32_t[]>(mask + 1)) {}
  std::uint32_t in_flight() const noexcept { return next_seq - oldest; }
  // Records what the send about to be posted holds; returns its sequence number.
  std::uint32_t track(std::uint32_t what) noexcept {
    held[next_seq & mask] = what;
    holding += what != kNoBuffer;
    return next_seq++;
  }
  // What the oldest in-flight send holds; it is retired (in_flight() > 0).
  std::uint32_t retire_oldest() noexcept {
    const std::uint32_t what = held[oldest++ & mask];
    holding -= what != kNoBuffer;
    return what;
  }

  std::uint32_t next_seq = 0;  // of the next send posted
  std::uint32_t oldest = 0;    // of the oldest send not retired (== next_seq: none)
  std::uint32_t holding = 0;   // in-flight sends that hold a buffer or an op
  verbs::QueuePair* qp;
  ChannelId channel;    // RC: the channel owning the QP; UD: kNoChannel
  std::uint32_t depth;  // the QP's send queue depth: in_flight() <= depth
  std::uint32_t interval = 1;
  std::uint32_t unsignaled = 0;  // posted since the last signaled send
  bool failed = false;
  std::uint32_t mask;
  std::unique_ptr<std::uint32_t[]> held;
};

// endpoint.h: open_channel(). Here, for every data-path file.
UNET_ALWAYS_INLINE const Endpoint::Channel* Endpoint::open_channel(ChannelId ch,
                                                                   Status& why) const noexcept {
  if (ch >= channels_.size()) {
    why = Status::kNotFound;
    return nullptr;
  }
  const Channel* c = channels_[ch].get();
  if (c->state != Channel::State::kOpen) {
    why = Status::kClosed;
    return nullptr;
  }
  return c;
}

}  // namespace unet::core
