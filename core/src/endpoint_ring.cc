// Ring channels: set-up, credits, release of slots read in place, and the sleep handshake. The
// data-path steps (a message into the peer's ring, arrivals out of ours) are in endpoint_data.cc.
#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>

#include "endpoint_impl.h"
#include "offer_limit.h"
#include "ring_offer.h"
#include "unet/verbs/error.h"

namespace unet::core {

void RingChannel::FreeBlock::operator()(std::byte* p) const noexcept { std::free(p); }

namespace {

constexpr std::size_t kStagingEntry = 32;  // a ring send's head (16), zeros (8) and tail (8)

std::uint64_t address_of(const void* p) { return reinterpret_cast<std::uint64_t>(p); }

// A ring's slot size: no more than one of our buffers carries (max_message), larger messages
// come by SEND, as on a plain channel.
std::uint32_t ring_slot_bytes(const EndpointConfig& c, std::uint32_t max_message) {
  return std::clamp(ring::pad8(max_message) + ring::kOverhead, ring::kMinSlotBytes,
                    c.ring_slot_bytes);
}

std::uint32_t staging_entries(const EndpointConfig& c) {
  return std::bit_ceil(std::max<std::uint32_t>(c.send_queue_depth, 1));
}

// The page-aligned block of one ring: the ring the peer writes, the control block, our staging.
std::size_t ring_block_bytes(const EndpointConfig& c, std::uint32_t max_message) {
  const std::size_t remote =
      std::size_t{c.ring_slots} * ring_slot_bytes(c, max_message) + ring::kControlBytes;
  return (remote + std::size_t{staging_entries(c)} * kStagingEntry + 4095) / 4096 * 4096;
}

}  // namespace

std::size_t ring_channel_bytes(const EndpointConfig& config) noexcept {
  if (config.transport != Transport::kRc || config.ring_slots == 0) return 0;
  return ring_block_bytes(config, config.buffer_bytes);  // RC: max_message() is the buffer size
}

// Set-up: our ring, registered for the peer. False (and no error) when the endpoint already has
// max_rings of them.
bool Endpoint::make_ring(Channel& ch) {
  if (free_ring_ids_.empty()) return false;
  const std::uint32_t slots = config_.ring_slots;
  const std::uint32_t slot_bytes = ring_slot_bytes(config_, max_message_);
  const std::uint32_t staging = staging_entries(config_);
  auto r = std::make_unique<RingChannel>(slots, slot_bytes);
  const std::size_t remote = std::size_t{slots} * slot_bytes + ring::kControlBytes;
  r->block_bytes = ring_block_bytes(config_, max_message_);
  r->block.reset(static_cast<std::byte*>(std::aligned_alloc(4096, r->block_bytes)));
  if (!r->block) verbs::throw_error("aligned_alloc", "ring channel", ENOMEM);
  std::memset(r->block.get(), 0, r->block_bytes);  // a slot the peer may write is all zeros
  r->ring = r->block.get();
  r->control = reinterpret_cast<RingControl*>(r->ring + std::size_t{slots} * slot_bytes);
  r->staging = r->ring + remote;
  r->staging_mask = staging - 1;
  r->remote_mr = std::make_unique<verbs::MemoryRegion>(
      v_->pd, r->ring, remote,
      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  r->local_mr = std::make_unique<verbs::MemoryRegion>(
      v_->pd, r->staging, std::size_t{staging} * kStagingEntry, IBV_ACCESS_LOCAL_WRITE);
  r->index = free_ring_ids_.back();
  free_ring_ids_.pop_back();
  rings_[r->index] = r.get();
  ch.ring = std::move(r);
  return true;
}

// Out of band: the offer line carries our ring's key in its memory fields and its geometry in
// the ring field.
void Endpoint::offer_ring(Channel& ch, std::string& offer_line) {
  verbs::ConnectionInfo local;
  (void)verbs::decode(offer_line, local);  // our own line: always valid
  local.memory = ch.ring->remote_mr->remote_key();
  offer_line = verbs::encode(local);
  offer_line.insert(offer_line.size() - 1,
                    ring::encode_field({ch.ring->slots, ch.ring->slot_bytes}));
}

// rdma_cm: the private data of the connect request or the accept: our ring (none: no ring), then
// our buffer size (offer_limit.h).
std::vector<std::byte> Endpoint::cm_private_data(const Channel& ch) const {
  const std::size_t at = ch.ring ? ring::kGrantBytes : 0;
  std::vector<std::byte> out(at + offer::kBufferBlockBytes);
  if (ch.ring) {
    const verbs::RemoteKey key = ch.ring->remote_mr->remote_key();
    ring::encode_grant({{ch.ring->slots, ch.ring->slot_bytes}, key.addr, key.rkey},
                       std::span<std::byte, ring::kGrantBytes>(out.data(), ring::kGrantBytes));
  }
  offer::encode_buffer_block(config_.buffer_bytes, std::span<std::byte, offer::kBufferBlockBytes>(
                                                       out.data() + at, offer::kBufferBlockBytes));
  return out;
}

// rdma_cm, connected: the peer's buffer size bounds the channel; a ring channel when both ends
// granted a ring, else ours goes now.
void Endpoint::apply_cm_private_data(Channel& ch, ChannelId id) {
  const std::span<const std::byte> data = ch.cm->peer_private_data();
  ring::Grant peer;
  if (!ring::decode_grant(data, peer))
    verbs::throw_error("rdma_cm", "ring channel", EPROTO, "the peer's ring grant is malformed");
  std::uint32_t peer_buffer = 0;
  if (!offer::decode_buffer_block(data.subspan(peer.geometry.slots != 0 ? ring::kGrantBytes : 0),
                                  peer_buffer))
    verbs::throw_error("rdma_cm", "channel", EPROTO, "the peer's buffer size is malformed");
  ch.max_message = offer::channel_limit(max_message_, false, 0, peer_buffer);
  if (!ch.ring) return;
  if (peer.geometry.slots == 0) {
    drop_unopened_ring(ch);
    return;
  }
  const verbs::RemoteKey key{peer.addr, peer.rkey, peer.geometry.remote_bytes()};
  open_ring(ch, id, &key, peer.geometry.slots, peer.geometry.slot_bytes);
}

// A ring that was never opened: nothing polls it and the application holds none of its slots, so
// it goes at once (also when set-up failed and its channel is about to be destroyed).
void Endpoint::drop_unopened_ring(Channel& ch) noexcept {
  RingChannel* r = ch.ring.get();
  if (!r) return;
  r->remote_mr.reset();
  rings_[r->index] = nullptr;
  free_ring_ids_.push_back(r->index);
  ch.ring.reset();
}

// Accept time, both offers carry a ring: the peer's ring is where our messages go. `peer_memory`
// is the peer's verbs::RemoteKey (ring and control block).
void Endpoint::open_ring(Channel& ch, ChannelId id, const void* peer_memory,
                         std::uint32_t peer_slots, std::uint32_t peer_slot_bytes) {
  const auto& key = *static_cast<const verbs::RemoteKey*>(peer_memory);
  const ring::Geometry g{peer_slots, peer_slot_bytes};
  if (key.addr == 0 || key.length != g.remote_bytes())
    verbs::throw_error("accept_offer", "endpoint", EPROTO,
                       "the peer's ring does not match its geometry");
  RingChannel& r = *ch.ring;
  r.peer_ring = key.addr;
  r.peer_rkey = key.rkey;
  r.peer_slot_bytes = peer_slot_bytes;
  r.peer_control = key.addr + std::uint64_t{peer_slots} * peer_slot_bytes;
  r.tx = ring::SendWindow(peer_slots);
  // Inline as a SEND of the same payload would be (and a descriptor's payload always), as far as
  // the QP takes the head and tail beside it.
  const std::uint32_t cap = ch.rc_qp()->caps().max_inline_data;
  r.inline_payload = std::min(std::max(inline_post_limit_, inline_threshold_),
                              cap >= ring::kOverhead ? (cap - ring::kOverhead) & ~7u : 0);
  r.fit = ring::capacity(peer_slot_bytes);
  r.fit_inline = std::min(r.fit, r.inline_payload);
  r.channel = id;
  r.polled = static_cast<std::uint32_t>(polled_.size());
  polled_.push_back(&r);
  heads_.push_back(&r.head(0));
}

bool Endpoint::ring_channel(ChannelId id) const noexcept {
  return id < channels_.size() && channels_[id]->ring && channels_[id]->ring->channel == id;
}

// The ring is no longer read: poll() leaves it, and the peer's key to it dies (its later writes
// fail with a remote access error at the peer and change nothing here). Its memory stays while
// the application holds slots of it.
void Endpoint::stop_ring(Channel& ch) noexcept {
  RingChannel* r = ch.ring.get();
  if (!r) return;
  if (r->polled != UINT32_MAX) {
    const std::uint32_t i = r->polled;
    polled_[i] = polled_.back();
    heads_[i] = heads_.back();
    polled_[i]->polled = i;
    polled_.pop_back();
    heads_.pop_back();
    r->polled = UINT32_MAX;
  }
  r->remote_mr.reset();
}

// Frees a stopped ring's memory once nothing refers to it: the QP has left RTS, the peer's key is
// dead and the application holds none of its slots. Not under an upcall (poll() may be reading it).
void Endpoint::reclaim_ring(Channel& ch) noexcept {
  RingChannel* r = ch.ring.get();
  if (!r || r->remote_mr || r->holding > 0 || in_upcall_) return;
  rings_[r->index] = nullptr;
  free_ring_ids_.push_back(r->index);  // capacity max_rings, reserved: no allocation
  ch.ring.reset();
}

std::span<std::byte> Endpoint::ring_slot(BufferId b) noexcept {
  if (b < config_.buffers || b - config_.buffers >= ring_id_slots_) return {};
  const std::uint32_t k = b - config_.buffers;
  RingChannel* r = rings_[k >> ring_slot_shift_];  // ring_slots is a power of two
  const std::uint32_t i = k & (config_.ring_slots - 1);
  if (!r || !r->rx.held(i)) return {};
  const bool imm = r->held[i] & RingChannel::kHeldImm;
  return {r->ring + std::size_t{i} * r->slot_bytes + ring::payload_offset(imm),
          ring::capacity(r->slot_bytes)};
}

// A ring arrival read in place goes back: its slot is zeroed for the next lap and freed in order.
Status Endpoint::release_ring_slot(BufferId b) noexcept {
  if (b - config_.buffers >= ring_id_slots_) return Status::kInvalidArgument;
  const std::uint32_t k = b - config_.buffers;
  RingChannel* r = rings_[k >> ring_slot_shift_];  // ring_slots is a power of two
  const std::uint32_t i = k & (config_.ring_slots - 1);
  if (!r || !r->rx.held(i)) return Status::kInvalidState;
  ring::zero_words(r->ring + std::size_t{i} * r->slot_bytes, r->held[i] & 0xffff);
  r->rx.free(i);
  --r->holding;
  if (r->rx.report_due()) credits_due_ = true;
  if (!r->remote_mr) reclaim_ring(*channels_[r->channel]);
  return Status::kOk;
}

// A message head no correct writer makes: counted, the slot zeroed and freed, the ring moves on.
void Endpoint::ring_malformed(RingChannel& r) noexcept {
  ++stats_.ring_protocol_errors;
  const std::uint32_t i = r.rx.take() & (r.slots - 1);
  std::memset(r.ring + std::size_t{i} * r.slot_bytes, 0, r.slot_bytes);
  r.rx.free(i);
  ++r.arrived;
}

// Posts one control operation on `ch`'s QP, beside the send queue's sends (in its lane's
// sequence, so its completion retires like any send's). kNoResource when the lane is full.
Status Endpoint::post_control(Channel& ch, const ControlOp& op) noexcept {
  Lane& lane = *lanes_[ch.lane];
  if (lane.failed || ch.state != Channel::State::kOpen) return Status::kClosed;
  if (lane.in_flight() + 1 >= lane.depth) return Status::kNoResource;
  ibv_send_wr w{};
  ibv_sge s{};
  std::uint64_t value = op.value;  // inline: copied at the post
  w.wr.rdma.remote_addr = op.remote;
  w.wr.rdma.rkey = op.rkey;
  switch (op.kind) {
    case ControlOp::Kind::kWriteWord:
      w.opcode = IBV_WR_RDMA_WRITE;
      s = {address_of(&value), sizeof value, 0};
      w.send_flags = IBV_SEND_INLINE;
      w.sg_list = &s;
      w.num_sge = 1;
      break;
    case ControlOp::Kind::kReadWord:
      w.opcode = IBV_WR_RDMA_READ;
      s = {address_of(op.local), sizeof(std::uint64_t), op.lkey};
      w.sg_list = &s;
      w.num_sge = 1;
      break;
    case ControlOp::Kind::kProbe:
      w.opcode = IBV_WR_RDMA_WRITE;  // zero bytes: no address or rkey is checked
      w.wr.rdma.remote_addr = 0;
      w.wr.rdma.rkey = 0;
      break;
  }
  const std::uint32_t seq = lane.track(kNoBuffer);
  w.wr_id = send_wr_id(ch.lane, seq);
  if (op.signal || ++lane.unsignaled >= lane.interval ||
      lane.in_flight() + lane.interval >= lane.depth) {
    w.send_flags |= IBV_SEND_SIGNALED;
    lane.unsignaled = 0;
  }
  ++stats_.doorbells;
  if (lane.qp->post_send(w) != Status::kOk) {
    post_refused(lane);
    return Status::kDeviceError;
  }
  return Status::kOk;
}

// Writes the freed totals that rings owe their writers (half a ring or more, and no message of
// ours carried them back). A ring whose lane is full keeps owing; the next poll() tries again.
int Endpoint::send_ring_credits() noexcept {
  credits_due_ = false;
  int sent = 0;
  for (RingChannel* r : polled_) {
    if (!r->rx.report_due()) continue;
    ControlOp op;
    op.kind = ControlOp::Kind::kWriteWord;
    op.remote = r->peer_control + offsetof(RingControl, credit);
    op.rkey = r->peer_rkey;
    op.value = r->rx.freed();
    const Status s = post_control(*channels_[r->channel], op);
    if (s == Status::kOk) {
      r->rx.reported();
      ++stats_.ring_credit_writes;
      ++sent;
    } else if (s == Status::kNoResource) {
      credits_due_ = true;
    }
  }
  return sent;
}

// arm(): tells every ring peer that we sleep, so that it sends its next messages by SEND (whose
// completion wakes us), and reads how many messages it had published by then. A peer publishes a
// message before it looks at the flag (ring_route, with a full fence between), so a message
// published after our READ saw the flag, and one published before is in the count we read. The
// READ is signaled: its completion wakes us, and the next look compares the count with what
// arrived. Equal: nothing can come by the ring until we are awake again, and later looks post
// nothing. Behind: a message is still on its way into the ring; we read again, and each READ's
// completion wakes us until it is here — a wake-up within a round trip of its arrival.
void Endpoint::ring_sleep() noexcept {
  asleep_ = true;
  polls_since_arm_ = 0;
  for (RingChannel* r : polled_) ring_look(*r);
}

// A poll() while asleep: a READ that completed before arm() asked for the next event woke nobody;
// the poll that reaped it reads again if the count was behind, so the next READ's completion
// comes after the request and wakes us.
void Endpoint::ring_relook() noexcept {
  for (RingChannel* r : polled_)
    if (r->reading) ring_look(*r);
}

void Endpoint::ring_look(RingChannel& r) noexcept {
  Channel& ch = *channels_[r.channel];
  const Lane& lane = *lanes_[ch.lane];
  if (r.reading) {
    if (!lane.failed && !seq_lt(r.read_seq, lane.oldest)) return;  // its completion wakes us
    r.reading = false;
    const auto published = static_cast<std::uint32_t>(load_word(r.control->peer_published));
    r.sleep_clean = r.told_asleep && !lane.failed && seq_le(published, r.arrived);
  }
  if (r.told_asleep && r.sleep_clean) return;
  ControlOp op;
  op.kind = ControlOp::Kind::kWriteWord;
  op.rkey = r.peer_rkey;
  // A lane too full for these has a signaled send outstanding, whose completion wakes us.
  if (!r.told_asleep) {
    op.remote = r.peer_control + offsetof(RingControl, peer_asleep);
    op.value = 1;
    if (post_control(ch, op) != Status::kOk) return;
    r.told_asleep = true;
    r.sleep_clean = false;
  }
  op.kind = ControlOp::Kind::kReadWord;
  op.remote = r.peer_control + offsetof(RingControl, published);
  op.local = &r.control->peer_published;
  op.lkey = r.remote_mr->lkey();
  op.signal = true;
  r.read_seq = lane.next_seq;  // the number post_control gives the READ
  if (post_control(ch, op) != Status::kOk) return;
  r.reading = true;
  ++stats_.ring_sleeps;
}

// The endpoint is polling again: the ring peers may write into the rings again.
void Endpoint::ring_wake() noexcept {
  asleep_ = false;
  for (RingChannel* r : polled_) {
    if (!r->told_asleep) continue;
    ControlOp flag;
    flag.kind = ControlOp::Kind::kWriteWord;
    flag.remote = r->peer_control + offsetof(RingControl, peer_asleep);
    flag.rkey = r->peer_rkey;
    flag.value = 0;
    if (post_control(*channels_[r->channel], flag) == Status::kOk) {
      r->told_asleep = false;
      r->sleep_clean = false;
    } else {
      asleep_ = true;  // try again at the next poll
    }
  }
}

}  // namespace unet::core
