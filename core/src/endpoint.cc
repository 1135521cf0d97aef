// Endpoint set-up and channels. The data path is in endpoint_data.cc.
#include "unet/core/endpoint.h"

#include <algorithm>
#include <cstdlib>
#include <random>

#include "endpoint_impl.h"
#include "offer_line.h"
#include "unet/verbs/error.h"
#include "unet/verbs/ud_source.h"

namespace unet::core {

void Endpoint::FreeSegment::operator()(std::byte* p) const noexcept { std::free(p); }

namespace {

EndpointConfig checked(EndpointConfig c) {
  if (c.buffers == 0 || c.buffer_bytes == 0 || c.send_queue_depth == 0 || c.recv_queue_depth == 0 ||
      c.max_channels == 0 || c.signal_interval == 0 || c.max_reads == 0)
    verbs::throw_error("Endpoint", "config", EINVAL,
                       "sizes, depths and max_reads must be positive");
  if (c.service_level > 15)
    verbs::throw_error("Endpoint", "config", EINVAL, "service_level must be 0..15");
  if (c.free_queue_depth == 0 || c.free_queue_depth >= c.buffers)
    verbs::throw_error("Endpoint", "config", EINVAL,
                       "free_queue_depth must be at least 1 and leave buffers to send from");
  if (c.mode == Mode::kDirectAccess &&
      (c.max_operations == 0 || c.max_grants == 0 || c.max_pinned_bytes == 0))
    verbs::throw_error("Endpoint", "config", EINVAL,
                       "direct-access needs operations, grants and pinned bytes");
  if (c.ring_slots != 0 && !ring::valid({c.ring_slots, c.ring_slot_bytes}))
    verbs::throw_error("Endpoint", "config", EINVAL,
                       "ring_slots must be a power of two in 2..16384 and ring_slot_bytes a "
                       "multiple of 8 in 32..32768");
  return c;
}

// A random 64-bit number for the endpoint's offers, never 0 (a default ChannelOffer's). Set-up:
// may throw.
std::uint64_t random_nonce() {
  std::random_device rd;
  std::uint64_t n = 0;
  while (n == 0) n = std::uint64_t{rd()} << 32 ^ rd();
  return n;
}

// A UD peer's second tag on InfiniBand, for its packets without a GRH (verbs/ud_source.h); qpn
// 0 (no tag) on other links or without a LID.
UdTag lid_tag(verbs::LinkLayer link, std::uint32_t qpn, std::uint16_t lid) noexcept {
  if (link != verbs::LinkLayer::kInfiniBand || lid == 0) return {};
  return UdTag{qpn, verbs::lid_gid(lid)};
}

}  // namespace

Status offer_info(std::string_view line, verbs::ConnectionInfo& out) noexcept {
  std::uint32_t buffer = 0;
  ring::Geometry g;
  return offer::parse_offer(line, out, g, buffer) ? Status::kOk : Status::kInvalidArgument;
}

Endpoint::Endpoint(const EndpointConfig& config)
    : config_(checked(config)),
      buffers_(config_.buffers),
      send_queue_(config_.send_queue_depth),
      recv_queue_(config_.recv_queue_depth),
      free_queue_(config_.buffers),
      completions_(config_.max_operations + config_.send_queue_depth) {
  v_ = std::make_unique<Verbs>(config_.max_channels);
  v_->ctx = verbs::Context::open(config_.device);
  v_->pd = std::make_shared<verbs::ProtectionDomain>(v_->ctx);
  v_->gid = verbs::select_gid(*v_->ctx, config_.port, config_.gid_index, config_.netdev);
  v_->path.port = config_.port;
  v_->path.sgid_index = static_cast<std::uint8_t>(v_->gid.index);
  verbs::PortInfo port = v_->ctx->port(config_.port);
  v_->path.mtu = port.active_mtu;
  v_->link = port.link_layer;
  v_->path.sl = config_.service_level;
  v_->path.traffic_class = config_.traffic_class;
  v_->path.max_rd_atomic = config_.max_reads;  // verbs clamps both to the device
  v_->path.max_dest_rd_atomic = 255;
  max_rdma_ = port.max_msg_sz == 0 ? kMaxRdma : std::min<std::uint64_t>(port.max_msg_sz, kMaxRdma);
  v_->path.timeout = config_.ack_timeout;
  v_->path.retry_cnt = config_.retry_count;
  v_->path.rnr_retry = config_.rnr_retry;

  // One CQ for every send and arrival of the endpoint.
  std::uint32_t cqe = config_.free_queue_depth + config_.send_queue_depth * config_.max_channels;
  v_->channel = std::make_shared<verbs::CompletionChannel>(v_->ctx);
  v_->cq = std::make_shared<verbs::CompletionQueue>(v_->ctx, cqe, v_->channel);
  v_->events = std::make_unique<verbs::AsyncEvents>(v_->ctx);

  const bool ud = config_.transport == Transport::kUd;
  ud_ = ud;
  ibv_qp_type qpt = ud ? IBV_QPT_UD : IBV_QPT_RC;
  const std::uint32_t device_inline = v_->ctx->max_inline_data(qpt);
  inline_threshold_ = std::min<std::uint32_t>({config_.inline_threshold,
                                               static_cast<std::uint32_t>(Descriptor::kInlineBytes),
                                               device_inline});
  inline_post_limit_ = std::min(config_.inline_post_limit, device_inline);
  max_message_ = ud ? std::min(config_.buffer_bytes, port.active_mtu) : config_.buffer_bytes;
  port_active_ = port.active;
  inline_threshold_ = std::min(inline_threshold_, max_message_);  // send_inline obeys max_message()
  offer_nonce_ = random_nonce();
  // An eighth of the free queue may wait unposted, to be reposted with one doorbell.
  repost_batch_ = std::clamp<std::uint32_t>(config_.free_queue_depth / 8, 1, kBatch);

  // The communication segment: buffers, then (UD) one 64-byte slot per buffer for the GRH.
  segment_bytes_ = std::size_t{config_.buffers} * (config_.buffer_bytes + (ud ? kGrhSlot : 0));
  segment_bytes_ = (segment_bytes_ + 4095) / 4096 * 4096;
  segment_.reset(static_cast<std::byte*>(std::aligned_alloc(4096, segment_bytes_)));
  if (!segment_) verbs::throw_error("aligned_alloc", "communication segment", ENOMEM);
  std::fill_n(segment_.get(), segment_bytes_, std::byte{0});
  v_->mr = std::make_unique<verbs::MemoryRegion>(v_->pd, segment_.get(), segment_bytes_,
                                                 IBV_ACCESS_LOCAL_WRITE);

  if (ud) {
    verbs::QpConfig qc;
    qc.type = verbs::QpType::kUd;
    qc.send_cq = v_->cq;
    qc.max_send_wr = config_.send_queue_depth;
    qc.max_recv_wr = config_.free_queue_depth;
    qc.max_recv_sge = 2;  // GRH slot + buffer
    qc.max_send_sge = 2;  // a zero-copy send's head slot + payload
    qc.max_inline_data = std::max(inline_threshold_, inline_post_limit_);
    v_->ud_qp = std::make_unique<verbs::QueuePair>(v_->pd, qc);
    verbs::ConnectionInfo self = v_->ud_qp->local_info(v_->path);
    v_->ud_qp->connect(self, self, v_->path);  // UD: INIT -> RTR -> RTS; the peer is per send
    add_lane(*v_->ud_qp, kNoChannel);
  } else {
    v_->srq = std::make_shared<verbs::SharedReceiveQueue>(v_->pd, config_.free_queue_depth);
  }

  if (config_.mode == Mode::kDirectAccess) {
    v_->registrar.pd = v_->pd;
    v_->cache = std::make_unique<Cache>(v_->registrar, config_.max_pinned_bytes);
    v_->ops.resize(config_.max_operations);
    const std::size_t head_bytes = std::size_t{config_.max_operations} * kMaxSendHead;
    v_->heads = std::make_unique<std::byte[]>(head_bytes);
    v_->heads_mr = std::make_unique<verbs::MemoryRegion>(v_->pd, v_->heads.get(), head_bytes,
                                                         IBV_ACCESS_LOCAL_WRITE);
    v_->free_ops = std::make_unique<DescriptorRing<std::uint32_t>>(config_.max_operations);
    for (std::uint32_t i = 0; i < config_.max_operations; ++i) (void)v_->free_ops->push(i);
    v_->grants.resize(config_.max_grants);
  }

  if (!ud && config_.ring_slots != 0 && config_.max_rings != 0) {
    ring_id_slots_ = config_.max_rings * config_.ring_slots;
    ring_slot_shift_ = static_cast<std::uint32_t>(std::countr_zero(config_.ring_slots));
    rings_.assign(config_.max_rings, nullptr);
    free_ring_ids_.reserve(config_.max_rings);
    for (std::uint32_t i = config_.max_rings; i-- > 0;) free_ring_ids_.push_back(i);
    polled_.reserve(config_.max_rings);
    heads_.reserve(config_.max_rings);
  }

  prepare_post_lists();
  // Fill the free queue; the first poll() (or this) posts it.
  for (std::uint32_t i = 0; i < config_.free_queue_depth; ++i) {
    BufferId b = kNoBuffer;
    (void)buffers_.take_for_free_queue(b);  // cannot fail: free_queue_depth < buffers
    (void)free_queue_.push(b);
  }
  if (repost_free_buffers() < 0) verbs::throw_error("post_recv", "free queue", EIO);
}

Endpoint::~Endpoint() {
  // Lanes (raw QP pointers) first, then the channels' QPs, then the SRQ, CQ, MR and PD (Verbs
  // holds those) — and all of that before the segment's memory is freed.
  lanes_.clear();
  channels_.clear();
  v_.reset();
}

std::uint32_t Endpoint::add_lane(verbs::QueuePair& qp, ChannelId ch) {
  // The lane uses what was asked for, not what the provider granted: the CQ is sized from
  // send_queue_depth, and a provider may round max_send_wr up (rxe grants exactly the request).
  const std::uint32_t depth = std::min(qp.caps().max_send_wr, config_.send_queue_depth);
  auto lane = std::make_unique<Lane>(qp, ch, std::max<std::uint32_t>(depth, 1));
  lane->interval = std::clamp<std::uint32_t>(config_.signal_interval, 1,
                                             std::max<std::uint32_t>(lane->depth / 2, 1));
  lanes_.push_back(std::move(lane));
  return static_cast<std::uint32_t>(lanes_.size() - 1);
}

ChannelOffer Endpoint::offer_channel(const ChannelOptions& options) {
  if (channels_.size() >= config_.max_channels)
    verbs::throw_error("offer_channel", "endpoint", ENOSPC,
                       "max_channels (" + std::to_string(config_.max_channels) + ") reached");
  auto ch = std::make_unique<Channel>();
  verbs::ConnectionInfo local;
  if (config_.transport == Transport::kRc) {
    ch->qp = std::make_unique<verbs::QueuePair>(v_->pd, rc_qp_config());
    local = ch->qp->local_info(v_->path);
  } else {
    local = v_->ud_qp->local_info(v_->path);
  }
  ChannelOffer offer{verbs::encode(local), static_cast<std::uint32_t>(channels_.size()),
                     offer_nonce_};
  if (config_.transport == Transport::kRc && options.ring && make_ring(*ch))
    offer_ring(*ch, offer.local);
  offer.local.insert(offer.local.size() - 1, offer::encode_buffer_field(config_.buffer_bytes));
  channels_.push_back(std::move(ch));
  return offer;
}

ChannelId Endpoint::accept_offer(const ChannelOffer& offer, std::string_view peer_half) {
  if (offer.nonce != offer_nonce_ || offer.slot >= channels_.size() ||
      channels_[offer.slot]->state != Channel::State::kOffered)
    verbs::throw_error("accept_offer", "endpoint", EINVAL, "not a pending offer of this endpoint");
  ring::Geometry local_ring, peer_ring;
  verbs::ConnectionInfo local, remote;
  std::uint32_t local_buffer = 0, peer_buffer = 0;
  if (!offer::parse_offer(offer.local, local, local_ring, local_buffer) ||
      !offer::parse_offer(peer_half, remote, peer_ring, peer_buffer))
    verbs::throw_error("accept_offer", "endpoint", EPROTO, "malformed channel offer");
  Channel& ch = *channels_[offer.slot];
  ChannelId id = offer.slot;
  ch.max_message = offer::channel_limit(max_message_, config_.transport == Transport::kUd,
                                        remote.mtu, peer_buffer);
  if (config_.transport == Transport::kRc) {
    ch.qp->connect(local, remote, v_->path);
    // A ring channel when both offers carry a ring; else our ring goes now.
    if (ch.ring && peer_ring.slots != 0) {
      open_ring(ch, id, &remote.memory, peer_ring.slots, peer_ring.slot_bytes);
    } else {
      drop_unopened_ring(ch);
    }
    ch.lane = add_lane(*ch.qp, id);
    (void)v_->tags.add(ch.qp->qp_num(), id);  // a fresh QP number: cannot clash
    last_rc_qpn_ = 0;
  } else {
    if (remote.qkey != local.qkey)
      verbs::throw_error("accept_offer", "endpoint", EPROTO, "the peer uses another Q_Key");
    verbs::RemotePort rp;
    rp.lid = remote.lid;
    rp.gid = remote.gid;
    rp.sgid_index = v_->path.sgid_index;
    rp.port = config_.port;
    rp.sl = config_.service_level;
    rp.traffic_class = config_.traffic_class;
    ch.ah = std::make_unique<verbs::AddressHandle>(v_->pd, rp);
    ch.remote_qpn = remote.qpn;
    ch.remote_qkey = remote.qkey;
    ch.lane = 0;
    ch.peer = UdTag{remote.qpn, remote.gid};
    if (v_->tags.add(ch.peer, id) != Status::kOk)
      verbs::throw_error("accept_offer", "endpoint", EEXIST,
                         "a channel to this peer QP exists already");
    // On InfiniBand the peer's packets may come without a GRH: its LID names it then.
    ch.peer_lid = remote.lid;
    if (const UdTag by_lid = lid_tag(v_->link, ch.peer.qpn, remote.lid);
        by_lid.qpn != 0 && v_->tags.add(by_lid, id) != Status::kOk) {
      (void)v_->tags.remove(ch.peer);
      verbs::throw_error("accept_offer", "endpoint", EEXIST,
                         "a channel to this peer QP exists already");
    }
  }
  ch.state = Channel::State::kOpen;
  return id;
}

Status Endpoint::close_channel(ChannelId id) noexcept {
  if (id >= channels_.size()) return Status::kNotFound;
  Channel& ch = *channels_[id];
  if (ch.state != Channel::State::kOpen && ch.state != Channel::State::kFailed)
    return Status::kClosed;
  ch.state = Channel::State::kClosed;
  ++channel_changes_;
  last_rc_qpn_ = 0;  // forget the remembered tag
  if (verbs::QueuePair* qp = ch.rc_qp()) {
    (void)v_->tags.remove(qp->qp_num());
    // The QP goes to ERROR: posted sends flush and are retired as errors (rdma_cm tells the peer).
    const Status s = ch.cm ? ch.cm->close(config_.disconnect_timeout) : qp->enter_error();
    // The QP has left RTS: the ring's key dies now, its memory once no slot is held (and rings
    // a close from an upcall left behind go too).
    stop_ring(ch);
    for (auto& c : channels_)
      if (c->ring && c->state != Channel::State::kOpen) reclaim_ring(*c);
    return s;
  } else {
    (void)v_->tags.remove(ch.peer);
    if (const UdTag by_lid = lid_tag(v_->link, ch.peer.qpn, ch.peer_lid); by_lid.qpn != 0)
      (void)v_->tags.remove(by_lid);
  }
  return Status::kOk;
}

int Endpoint::service_channels() noexcept {
  service_device();
  int closed = 0;
  for (auto& ch : channels_) {
    if (!ch->cm || ch->state == Channel::State::kClosed) continue;
    if (ch->cm->wait_disconnected(std::chrono::milliseconds(0)) != Status::kOk) continue;
    (void)v_->tags.remove(ch->cm->qp().qp_num());  // the QP is in ERROR: its sends flush
    last_rc_qpn_ = 0;
    ch->state = Channel::State::kClosed;
    ++channel_changes_;
    stop_ring(*ch);  // as close_channel: the QP has left RTS
    ++closed;
  }
  for (auto& c : channels_)
    if (c->ring && c->state != Channel::State::kOpen) reclaim_ring(*c);
  return closed;
}

verbs::QpConfig Endpoint::rc_qp_config() const {
  verbs::QpConfig qc;
  qc.type = verbs::QpType::kRc;
  qc.send_cq = v_->cq;
  qc.srq = v_->srq;
  qc.max_send_wr = config_.send_queue_depth;
  qc.max_send_sge =
      3;  // a zero-copy send's head slot + payload; a ring write's head, payload, tail
  // Ring writes go inline as the same payload's SEND would, with their head and tail.
  const std::uint32_t ring_inline =
      config_.ring_slots ? ring::wire_bytes(std::max(inline_threshold_, inline_post_limit_), true)
                         : 0;
  qc.max_inline_data = std::max({inline_threshold_, inline_post_limit_, ring_inline});
  return qc;
}

// rdma_cm resolves the path, service level included: a configured one would be dropped unseen.
void Endpoint::refuse_cm_service_level(const char* op) const {
  if (config_.service_level != 0)
    verbs::throw_error(op, "endpoint", EINVAL,
                       "rdma_cm takes the service level from the path it resolves; service_level " +
                           std::to_string(config_.service_level) +
                           " applies to out-of-band channels only (set traffic_class for rdma_cm)");
}

std::uint16_t Endpoint::listen_cm(std::string_view address, std::uint16_t port) {
  if (config_.transport != Transport::kRc)
    verbs::throw_error("listen_cm", "endpoint", ENOTSUP, "rdma_cm channels are RC");
  refuse_cm_service_level("listen_cm");
  v_->listener = std::make_unique<verbs::CmListener>(address, port);
  return v_->listener->port();
}

ChannelId Endpoint::accept_cm(std::chrono::milliseconds timeout, const ChannelOptions& options) {
  if (!v_->listener) verbs::throw_error("accept_cm", "endpoint", EINVAL, "listen_cm() first");
  if (channels_.size() >= config_.max_channels)
    verbs::throw_error("accept_cm", "endpoint", ENOSPC, "max_channels reached");
  return open_cm(timeout, options, [&](const verbs::CmParams& p) {
    return v_->listener->accept(v_->pd, rc_qp_config(), p);
  });
}

ChannelId Endpoint::connect_cm(std::string_view address, std::uint16_t port,
                               std::chrono::milliseconds timeout, const ChannelOptions& options) {
  if (config_.transport != Transport::kRc)
    verbs::throw_error("connect_cm", "endpoint", ENOTSUP, "rdma_cm channels are RC");
  refuse_cm_service_level("connect_cm");
  if (channels_.size() >= config_.max_channels)
    verbs::throw_error("connect_cm", "endpoint", ENOSPC, "max_channels reached");
  return open_cm(timeout, options, [&](const verbs::CmParams& p) {
    return verbs::cm_connect(address, port, v_->pd, rc_qp_config(), p);
  });
}

// An rdma_cm channel: our ring (unless `options` say none) and our buffer size in the private
// data of the request or the accept, whatever the peer's says, as an offer line carries them; the
// connection made by `connect`; then a ring channel when both ends granted a ring. A failure, or
// the peer's malformed private data, drops our ring and the connection (its destructor
// disconnects) and throws.
ChannelId Endpoint::open_cm(std::chrono::milliseconds timeout, const ChannelOptions& options,
                            const CmConnect& connect) {
  auto ch = std::make_unique<Channel>();
  if (options.ring) (void)make_ring(*ch);
  const auto id = static_cast<ChannelId>(channels_.size());
  try {
    verbs::CmParams p;
    p.timeout = timeout;
    p.retry_count = config_.retry_count;
    p.rnr_retry_count = config_.rnr_retry;
    p.initiator_depth = config_.max_reads;  // clamped by verbs, as below
    p.responder_resources = 255;            // all the device takes
    if (config_.traffic_class != 0) p.tos = config_.traffic_class;
    p.private_data = cm_private_data(*ch);
    ch->cm = connect(p);
    apply_cm_private_data(*ch, id);
  } catch (...) {
    drop_unopened_ring(*ch);
    throw;
  }
  ch->lane = add_lane(ch->cm->qp(), id);
  (void)v_->tags.add(ch->cm->qp().qp_num(), id);
  last_rc_qpn_ = 0;
  ch->state = Channel::State::kOpen;
  channels_.push_back(std::move(ch));
  return id;
}

}  // namespace unet::core
