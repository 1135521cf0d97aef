// Endpoint data path: send, receive, release and the progress engine. No allocation, lock,
// exception or system call beyond the verbs post/poll themselves.
#include <endian.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "endpoint_impl.h"
#include "unet/verbs/ud_source.h"

namespace unet::core {

Status Endpoint::acquire_buffer(BufferId& out) noexcept { return buffers_.take_spare(out); }

std::span<std::byte> Endpoint::buffer(BufferId b) noexcept {
  if (!buffers_.valid(b)) return ring_slot(b);
  return {segment_.get() + std::size_t{b} * config_.buffer_bytes, config_.buffer_bytes};
}

UNET_ALWAYS_INLINE Status Endpoint::push_buffer(ChannelId ch, BufferId b, std::uint32_t length,
                                                std::uint16_t flags, std::uint32_t imm) noexcept {
  Status why = Status::kOk;
  const Channel* c = open_channel(ch, why);
  if (!c) return why;
  if (!buffers_.valid(b) || length == 0 || length > c->max_message) return Status::kInvalidArgument;
  if (buffers_.owner(b) != BufferOwner::kApplication) return Status::kInvalidState;
  Descriptor* d = send_queue_.reserve();
  if (!d) return Status::kNoResource;
  (void)buffers_.queue_send(b);
  compose_buffer(*d, ch, b, length, flags, imm);
  send_queue_.commit();
  return Status::kOk;
}

Status Endpoint::probe(ChannelId ch) noexcept {
  if (config_.transport != Transport::kRc) return Status::kInvalidState;
  if (Status s = channel_status(ch); s != Status::kOk) return s;
  Descriptor* d = send_queue_.reserve();
  if (!d) return Status::kNoResource;
  d->channel = ch;
  d->length = 0;
  d->buffer = kNoBuffer;
  d->flags = Descriptor::kProbe;
  d->imm = 0;
  send_queue_.commit();
  ++stats_.probes;
  return Status::kOk;
}

UNET_ALWAYS_INLINE Status Endpoint::push_inline(ChannelId ch, std::span<const std::byte> payload,
                                                std::uint16_t flags, std::uint32_t imm) noexcept {
  Status why = Status::kOk;
  const Channel* c = open_channel(ch, why);
  if (!c) return why;
  if (payload.empty() || payload.size() > inline_threshold_ || payload.size() > c->max_message)
    return Status::kInvalidArgument;
  Descriptor* d = send_queue_.reserve();
  if (!d) return Status::kNoResource;
  compose_inline(*d, ch, payload, flags, imm);
  send_queue_.commit();
  return Status::kOk;
}

Status Endpoint::send(ChannelId ch, BufferId b, std::uint32_t length) noexcept {
  return push_buffer(ch, b, length, 0, 0);
}
Status Endpoint::send(ChannelId ch, BufferId b, std::uint32_t length, std::uint32_t imm) noexcept {
  return push_buffer(ch, b, length, Descriptor::kImm, imm);
}
Status Endpoint::send_inline(ChannelId ch, std::span<const std::byte> payload) noexcept {
  return push_inline(ch, payload, 0, 0);
}
Status Endpoint::send_inline(ChannelId ch, std::span<const std::byte> payload,
                             std::uint32_t imm) noexcept {
  return push_inline(ch, payload, Descriptor::kImm, imm);
}

int Endpoint::poll() noexcept {
  if (device_failed_) [[unlikely]]
    return -1;
  // UD: a QP that failed is brought back first (endpoint_recover.cc).
  int recovered = 0;
  if (ud_failed()) [[unlikely]] {
    if ((recovered = recover_ud_qp()) < 0) return -1;
  }
  // Sends first: a message pushed since the last call goes out before anything else is done, and
  // what the application does after its send (wait for the reply) is the arrival polls below.
  int posted = send_queue_.empty() ? 0 : post_pending_sends();
  // Arrivals: the rings first (loads, no call), then the completion queue — which waits for the
  // next poll when the rings brought something, so an arrival's answer is not held up by a CQ
  // poll (never twice in a row: send completions and SEND arrivals are not kept waiting). When
  // the CQ had nothing either, the rings are read again: what landed meanwhile is found now.
  int rang = poll_rings();
  int reaped = 0;
  if (rang == 0 || cq_skipped_) {
    cq_skipped_ = false;
    reaped = reap();
    if (reaped == 0) rang = poll_rings();
  } else {
    cq_skipped_ = true;
  }
  // Ring channels: credits they owe, telling the peers we are awake once we poll again after
  // arm() (endpoint_ring.cc).
  if (credits_due_) [[unlikely]]
    (void)send_ring_credits();
  if (asleep_) [[unlikely]] {
    if (++polls_since_arm_ > kAwakePolls)
      ring_wake();
    else
      ring_relook();
  }
  // Freed buffers go back in batches while arrivals come in: one post list per repost_batch_
  // buffers, not one per message. A poll that reaped nothing returns whatever waits: it is idle
  // time, so a ping-pong reposts while it waits for the reply instead of between an arrival and
  // its answer (core/README.md: what that cost).
  // Never to a failed UD QP, which would only flush them.
  const std::uint32_t waiting = free_queue_.size();
  const bool repost = waiting >= repost_batch_ || (waiting > 0 && reaped == 0 && rang == 0);
  int reposted = repost && !ud_failed() ? repost_free_buffers() : 0;
  if (posted < 0 || reaped < 0 || reposted < 0) return -1;
  return recovered + reaped + posted + reposted + rang;
}

int Endpoint::flush_pending() noexcept { return post_pending_sends(); }

bool Endpoint::ud_failed() const noexcept { return ud_ && lanes_[0]->failed; }

std::uint32_t Endpoint::max_message(ChannelId id) const noexcept {
  Status why = Status::kOk;
  const Channel* c = open_channel(id, why);
  return c ? c->max_message : 0;
}

Status Endpoint::channel_status(ChannelId id) const noexcept {
  Status why = Status::kOk;
  (void)open_channel(id, why);
  return why;
}

// Builds the WR for send-queue descriptor `d` into slot n of the post list. The slots' sg_list
// is set once (prepare_post_lists); every other field a send reads is written here.
UNET_ALWAYS_INLINE void Endpoint::build_wr(const Descriptor& d, Channel& ch,
                                           std::uint32_t n) noexcept {
  Verbs& v = *v_;
  ibv_send_wr& w = v.swr[n];
  ibv_sge& s = v.ssge[n][0];
  w.next = nullptr;
  w.opcode = IBV_WR_SEND;
  w.send_flags = 0;
  w.num_sge = 1;
  if (d.flags & Descriptor::kProbe) {  // zero bytes: no address or rkey is checked (IB C9-88)
    w.opcode = IBV_WR_RDMA_WRITE;
    w.num_sge = 0;
    w.wr.rdma.remote_addr = 0;
    w.wr.rdma.rkey = 0;
    return;
  }
  if (d.flags & Descriptor::kOp) {
    const Op& op = v.ops[d.buffer];
    s = {op.local, op.length, op.lkey};
    if (op.copied) w.send_flags = IBV_SEND_INLINE;
    if (op.head_length) {  // the head slot first, then the payload
      s = {reinterpret_cast<std::uint64_t>(v.heads.get() + std::size_t{d.buffer} * kMaxSendHead),
           op.head_length, v.heads_mr->lkey()};
      v.ssge[n][1] = {op.local, op.length, op.lkey};
      w.num_sge = 2;
    }
    if (op.kind != OpKind::kSend) {
      w.opcode = op.kind == OpKind::kWrite ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
      w.wr.rdma.remote_addr = op.remote;
      w.wr.rdma.rkey = op.rkey;
    }
  } else if (d.is_inline()) {
    s = {reinterpret_cast<std::uint64_t>(d.data), d.length, 0};
    w.send_flags = IBV_SEND_INLINE;
  } else {
    s = {reinterpret_cast<std::uint64_t>(segment_.get() +
                                         std::size_t{d.buffer} * config_.buffer_bytes),
         d.length, v.mr->lkey()};
    if (d.length <= inline_post_limit_) w.send_flags = IBV_SEND_INLINE;  // copied at post
  }
  if (d.flags & Descriptor::kImm) {
    w.opcode = IBV_WR_SEND_WITH_IMM;
    w.imm_data = htobe32(d.imm);
  }
  if (ch.ah && (w.opcode == IBV_WR_SEND || w.opcode == IBV_WR_SEND_WITH_IMM)) {
    w.wr.ud.ah = ch.ah->native();
    w.wr.ud.remote_qpn = ch.remote_qpn;
    w.wr.ud.remote_qkey = ch.remote_qkey;
  }
}

// A segment-buffer send whose WR was posted inline (`copied`): the post copies it, so its buffer
// is spare right after.
static bool buffer_posted_inline(const Descriptor& d, bool copied) noexcept {
  return !(d.flags & (Descriptor::kInline | Descriptor::kOp | Descriptor::kProbe)) && copied;
}

// What an in-flight entry holds for descriptor `d`: nothing when its payload is copied at post
// (inside the descriptor, or a buffer whose WR is inline) or it has none (a probe).
static std::uint32_t inflight_what(const Descriptor& d, bool copied) noexcept {
  if (d.flags & Descriptor::kOp) return kOpBit | d.buffer;
  if (d.flags & (Descriptor::kInline | Descriptor::kProbe)) return kNoBuffer;
  return copied ? kNoBuffer : d.buffer;
}

// Posts the send queue's descriptors, one post list (one doorbell) per run of descriptors that go
// to the same QP. Stops at a QP whose send queue is full, keeping the descriptors in order.
UNET_ALWAYS_INLINE int Endpoint::post_pending_sends() noexcept {
  // The common case first, on a path of its own: one message or operation waiting, for an open
  // channel whose send queue has room; a small message (inside its descriptor, or a buffer within
  // a SEND's inline limit and, on a ring channel, the peer's slots) is posted inline whichever way
  // it goes.
  if (send_queue_.size() == 1) {
    Descriptor& d = send_queue_.at(0);
    if (!(d.flags & Descriptor::kProbe) && d.channel < channels_.size()) {
      Channel& c = *channels_[d.channel];
      Lane& lane = *lanes_[c.lane];
      if (c.state == Channel::State::kOpen && !lane.failed && lane.in_flight() < lane.depth) {
        if (d.flags & Descriptor::kOp) return post_lone(d, c, lane, false);
        if (d.is_inline() ||
            (d.length <= inline_post_limit_ && (!c.ring || d.length <= c.ring->fit_inline)))
          return post_lone(d, c, lane, true);
        return post_lone(d, c, lane, false);
      }
    }
  }
  Verbs& v = *v_;
  int done = 0;
  std::uint32_t pending = send_queue_.size();  // one thread produces and consumes: exact
  while (pending > 0) {
    Descriptor& first = send_queue_.at(0);
    Channel* fc = first.channel < channels_.size() ? channels_[first.channel].get() : nullptr;
    const bool closed = !fc || fc->state != Channel::State::kOpen;  // closed or failed since pushed
    // Reported, never posted: a closed channel's send, or (UD) one whose QP failed, until poll()
    // brings the QP back. It still holds its buffer.
    if (closed || lanes_[fc->lane]->failed) [[unlikely]] {
      const std::uint32_t what = inflight_what(first, false);
      const ChannelId ch = closed ? first.channel : lanes_[fc->lane]->channel;
      send_queue_.pop();
      --pending;
      settle(what, ch, closed ? Status::kClosed : Status::kFlushed);
      ++done;
      continue;
    }
    const std::uint32_t lane_id = fc->lane;
    Lane& lane = *lanes_[lane_id];
    const std::uint32_t limit = std::min({pending, kBatch, lane.depth - lane.in_flight()});
    std::uint32_t n = 0, inline_buffers = 0;
    bool holds = false;  // an unsignaled send of this list holds a buffer or is an op
    for (Channel* c = fc; n < limit; ++n) {
      Descriptor& d = send_queue_.at(n);
      if (n > 0) {  // the list continues while descriptors go to the same open QP
        c = d.channel < channels_.size() ? channels_[d.channel].get() : nullptr;
        if (!c || c->lane != lane_id || c->state != Channel::State::kOpen) break;
      }
      if (c->ring && ring_route(d, *c->ring))
        build_ring_wr(d, *c->ring, n, lane.next_seq);
      else
        build_wr(d, *c, n);
      ibv_send_wr& w = v.swr[n];
      const bool copied = w.send_flags & IBV_SEND_INLINE;
      const std::uint32_t what = inflight_what(d, copied);
      inline_buffers += buffer_posted_inline(d, copied);
      const std::uint32_t seq = lane.track(what);
      holds = holds || what != kNoBuffer;
      // Selective signaling: every `interval`-th send (its completion retires every send before
      // it on the QP) ...
      if (++lane.unsignaled == lane.interval) {
        w.send_flags |= IBV_SEND_SIGNALED;
        lane.unsignaled = 0;
        holds = false;
      }
      w.wr_id = send_wr_id(lane_id, seq);
      if (n > 0) v.swr[n - 1].next = &w;
      if (w.send_flags & IBV_SEND_INLINE) ++stats_.inline_sent;
    }
    if (n == 0) break;  // this QP's send queue is full: wait for completions
    // ... and the last of the list when a send since the last signaled one holds a buffer or is
    // a direct-access op (so buffers come back and ops complete when traffic stops), or when the
    // QP's send queue is nearly full.
    if (lane.unsignaled != 0 && (holds || lane.in_flight() + lane.interval >= lane.depth)) {
      v.swr[n - 1].send_flags |= IBV_SEND_SIGNALED;
      lane.unsignaled = 0;
    }
    ++stats_.doorbells;
    const Status posted = lane.qp->post_send(v.swr[0]);
    // Buffers posted inline were copied by the post (or, if it failed, are reported below with
    // the rest of the lane): spare again either way.
    for (std::uint32_t i = 0; inline_buffers > 0 && i < n; ++i) {
      const Descriptor& d = send_queue_.at(i);
      if (buffer_posted_inline(d, v.swr[i].send_flags & IBV_SEND_INLINE)) {
        (void)buffers_.send_done(d.buffer);
        --inline_buffers;
      }
    }
    send_queue_.pop(n);
    pending -= n;
    if (posted != Status::kOk) {
      post_refused(lane);
      return -1;
    }
    stats_.sent += n;
    done += static_cast<int>(n);
  }
  return done;
}

// Posts `d`, the one descriptor on the send queue, a message or operation (no probe) for open
// channel `c` whose lane has room: what the loop of post_pending_sends does for a list of one.
// `small`: a message the post copies (the caller's test; a constant where this is inlined). A
// buffer posted inline is spare again once posted; one posted from the segment, and an operation,
// are signaled, so that the buffer comes back and the operation completes when traffic stops.
UNET_ALWAYS_INLINE int Endpoint::post_lone(Descriptor& d, Channel& c, Lane& lane,
                                           bool small) noexcept {
  ibv_send_wr& w = v_->swr[0];
  if (c.ring && ring_route(d, *c.ring))  // never an operation
    build_ring_wr(d, *c.ring, 0, lane.next_seq);
  else
    build_wr(d, c, 0);
  // Copied by the post (a descriptor's payload is, always) a message holds nothing.
  const bool copied = small || (w.send_flags & IBV_SEND_INLINE);
  const std::uint32_t what = inflight_what(d, copied);
  const std::uint32_t seq = lane.track(what);
  if (++lane.unsignaled == lane.interval || what != kNoBuffer ||
      lane.in_flight() + lane.interval >= lane.depth) {
    w.send_flags |= IBV_SEND_SIGNALED;
    lane.unsignaled = 0;
  }
  w.wr_id = send_wr_id(c.lane, seq);
  ++stats_.doorbells;
  stats_.inline_sent += copied;
  const Status posted = lane.qp->post_send(w);
  if (buffer_posted_inline(d, copied)) (void)buffers_.send_done(d.buffer);
  send_queue_.pop();
  if (posted != Status::kOk) [[unlikely]] {
    post_refused(lane);
    return -1;
  }
  ++stats_.sent;
  return 1;
}

// Queues a completion for the application; counted if the completion queue is full.
void Endpoint::complete(const OpCompletion& c) noexcept {
  if (!completions_.push(c)) ++stats_.completion_drops;
}

// Gives back what a finished (or failed, or never posted) send held, and reports it: operations
// always, plain sends only when they failed.
void Endpoint::settle(std::uint32_t what, ChannelId ch, Status status) noexcept {
  if (status != Status::kOk) ++stats_.send_errors;
  if (what & kOpBit && what != kNoBuffer) {
    std::uint32_t slot = what & ~kOpBit;
    Op& op = v_->ops[slot];
    complete({op.tag, op.channel, op.kind, status});
    op.lease.release();
    (void)v_->free_ops->push(slot);
    ++stats_.ops_completed;
    return;
  }
  if (what != kNoBuffer) (void)buffers_.send_done(what);
  if (status != Status::kOk) complete({0, ch, OpKind::kSend, status});
}

// Retires the oldest in-flight send of `lane` with `status`.
void Endpoint::retire_one(Lane& lane, Status status) noexcept {
  if (lane.in_flight() > 0) settle(lane.retire_oldest(), lane.channel, status);
}

// Retires every in-flight send of `lane` up to and including sequence number `seq`. Inline sends
// that succeeded hold nothing: retiring them is counting.
UNET_ALWAYS_INLINE void Endpoint::retire_through(Lane& lane, std::uint32_t seq,
                                                 Status status) noexcept {
  if (!seq_le(lane.oldest, seq)) return;  // retired already
  std::uint32_t n = std::min(seq - lane.oldest + 1, lane.in_flight());
  if (lane.holding == 0 &&
      status == Status::kOk) {  // sends that held nothing: counting them is all
    lane.oldest += n;
    return;
  }
  for (; n > 0; --n) {
    const std::uint32_t what = lane.retire_oldest();
    if (status == Status::kOk && !(what & kOpBit))  // a buffer sent: settle()'s case, here
      (void)buffers_.send_done(what);
    else if (what != kNoBuffer || status != Status::kOk)
      settle(what, lane.channel, status);
  }
}

// Send `seq` of `lane` failed with `status`: the sends before it completed, the ones after it are
// flushed; its channel (RC) fails, so later sends on it are refused with kClosed.
void Endpoint::fail_lane(Lane& lane, std::uint32_t seq, Status status) noexcept {
  retire_through(lane, seq - 1, Status::kOk);
  if (lane.in_flight() > 0 && lane.oldest == seq) retire_one(lane, status);
  abort_lane(lane, Status::kFlushed);
}

// The provider refused a post (part of a list may be posted): stop the QP so everything flushes,
// and report every in-flight send of the lane as flushed — none is known done.
void Endpoint::post_refused(Lane& lane) noexcept {
  (void)lane.qp->enter_error();  // if even that fails, the lane is done with all the same
  abort_lane(lane, Status::kFlushed);
}

// The lane is unusable: every send still in flight is retired with `status`, and its channel
// (RC) fails.
void Endpoint::abort_lane(Lane& lane, Status status) noexcept {
  lane.failed = true;
  while (lane.in_flight() > 0) retire_one(lane, status);
  lane.unsignaled = 0;
  if (lane.channel != kNoChannel && channels_[lane.channel]->state == Channel::State::kOpen) {
    channels_[lane.channel]->state = Channel::State::kFailed;
    ++channel_changes_;
    stop_ring(*channels_[lane.channel]);  // its arrivals are dropped, as a failed channel's are
  }
}

int Endpoint::reap_completions() noexcept { return reap(); }

UNET_ALWAYS_INLINE int Endpoint::reap() noexcept {
  std::size_t n = 0;
  if (v_->cq->poll(v_->wc, n) != Status::kOk) return -1;
  for (std::size_t i = 0; i < n; ++i) {
    if (v_->wc[i].wr_id & kSendBit)
      send_completed(i);
    else
      arrived(i);
  }
  return static_cast<int>(n);
}

// A signaled send completed (or failed): retire it and the unsignaled ones before it.
UNET_ALWAYS_INLINE void Endpoint::send_completed(std::size_t i) noexcept {
  const verbs::WorkCompletion& wc = v_->wc[i];
  Lane& lane = *lanes_[(wc.wr_id & ~kSendBit) >> 32];
  const auto seq = static_cast<std::uint32_t>(wc.wr_id);
  if (lane.failed) return;  // flushes after the failure was handled
  if (wc.status == IBV_WC_SUCCESS)
    retire_through(lane, seq, Status::kOk);
  else
    fail_lane(lane, seq, verbs::to_status(wc.status));
}

// An arrival in buffer b: free queue -> endpoint; it goes to the application or back.
UNET_ALWAYS_INLINE void Endpoint::arrived(std::size_t i) noexcept {
  const verbs::WorkCompletion& wc = v_->wc[i];
  const BufferId b = static_cast<BufferId>(wc.wr_id);
  (void)buffers_.arrived(b);
  ChannelId ch = kNoChannel;
  std::uint32_t len = 0;
  bool no_source = false;  // UD without a GRH where that names no one: counted apart
  if (wc.status == IBV_WC_SUCCESS) {
    if (config_.transport == Transport::kUd) {
      const auto* grh = reinterpret_cast<const std::uint8_t*>(
          segment_.get() + std::size_t{config_.buffers} * config_.buffer_bytes +
          std::size_t{b} * kGrhSlot);
      const std::optional<verbs::Gid> from =
          verbs::ud_source((wc.wc_flags & IBV_WC_GRH) != 0, v_->link, wc.slid, grh);
      if (from) [[likely]] {
        ch = v_->tags.find(UdTag{wc.src_qp, *from});
      } else {
        no_source = true;
        ++stats_.no_grh_drops;
      }
      len = wc.byte_len >= verbs::kGrhBytes
                ? wc.byte_len - static_cast<std::uint32_t>(verbs::kGrhBytes)
                : 0;
    } else {
      if (wc.qp_num != last_rc_qpn_) {  // a run of arrivals on one QP looks its tag up once
        last_rc_qpn_ = wc.qp_num;
        last_rc_channel_ = v_->tags.find(wc.qp_num);
      }
      ch = last_rc_channel_;
      len = wc.byte_len;
    }
    if (ch != kNoChannel && channels_[ch]->state != Channel::State::kOpen) ch = kNoChannel;
    if (ch != kNoChannel) {
      if (RingChannel* r = channels_[ch]->ring.get()) ring_before_send(*r);
    } else if (!no_source) {
      ++stats_.unknown_tag_drops;
    }
  } else [[unlikely]] {
    arrival_failed(i);  // endpoint_recover.cc
  }
  if (ch == kNoChannel) {  // dropped (unknown tag) or failed: straight back to the free queue
    (void)release(b);
    return;
  }
  const bool imm = wc.wc_flags & IBV_WC_WITH_IMM;
  const std::uint32_t imm_value = imm ? be32toh(wc.imm_data) : 0;
  if (upcall_) return arrived_upcall(ch, b, len, imm, imm_value);
  Descriptor* d = recv_queue_.reserve();
  if (!d) {  // the application lags: counted, and the buffer goes back
    ++stats_.recv_overflow_drops;
    (void)release(b);
    return;
  }
  describe_arrival(*d, ch, b, len, imm, imm_value);
  recv_queue_.commit();
  ++stats_.received;
}

// With an upcall the descriptor lives here, not in the receive queue.
void Endpoint::arrived_upcall(ChannelId ch, BufferId b, std::uint32_t len, bool imm,
                              std::uint32_t imm_value) noexcept {
  Descriptor up;
  describe_arrival(up, ch, b, len, imm, imm_value);
  ++stats_.upcalls;
  in_upcall_ = true;
  upcall_(up);
  in_upcall_ = false;
}

// Fills the receive descriptor of an arrival; a small one is copied inside it and its buffer
// recycled at once.
UNET_ALWAYS_INLINE void Endpoint::describe_arrival(Descriptor& d, ChannelId ch, BufferId b,
                                                   std::uint32_t len, bool imm,
                                                   std::uint32_t imm_value) noexcept {
  d.channel = ch;
  d.length = len;
  d.imm = imm_value;
  const std::uint16_t imm_flag = imm ? Descriptor::kImm : 0;
  if (len <= inline_threshold_) {
    copy_small(d.data, segment_.get() + std::size_t{b} * config_.buffer_bytes, len);
    d.flags = Descriptor::kInline | imm_flag;
    d.buffer = kNoBuffer;
    (void)release(b);
    ++stats_.inline_received;
  } else {
    d.flags = imm_flag;
    d.buffer = b;
  }
}

// Sets the post lists' fixed fields once: each WR's scatter list and, for receives, the lengths
// and key of its entries. The data path then writes only what changes per message.
void Endpoint::prepare_post_lists() noexcept {
  const bool ud = config_.transport == Transport::kUd;
  for (std::uint32_t i = 0; i < kBatch; ++i) {
    v_->swr[i] = {};
    v_->swr[i].sg_list = v_->ssge[i];
    v_->swr[i].num_sge = 1;
    ibv_sge* s = v_->rsge[i];
    v_->rwr[i] = {};
    v_->rwr[i].sg_list = s;
    if (ud) {
      s[0] = {0, static_cast<std::uint32_t>(verbs::kGrhBytes), v_->mr->lkey()};
      s[1] = {0, config_.buffer_bytes, v_->mr->lkey()};
      v_->rwr[i].num_sge = 2;
    } else {
      s[0] = {0, config_.buffer_bytes, v_->mr->lkey()};
      v_->rwr[i].num_sge = 1;
    }
  }
}

// Posts the free queue's buffers as receives, one post list per batch.
int Endpoint::repost_free_buffers() noexcept {
  const bool ud = config_.transport == Transport::kUd;
  std::byte* const data = segment_.get();
  std::byte* const grh = data + std::size_t{config_.buffers} * config_.buffer_bytes;
  int done = 0;
  while (!free_queue_.empty()) {
    std::uint32_t n = std::min<std::uint32_t>(free_queue_.size(), kBatch);
    for (std::uint32_t i = 0; i < n; ++i) {
      BufferId b = free_queue_.at(i);
      ibv_recv_wr& w = v_->rwr[i];
      ibv_sge* s = v_->rsge[i];
      w.wr_id = b;
      w.next = i + 1 < n ? &v_->rwr[i + 1] : nullptr;
      const auto buf =
          reinterpret_cast<std::uint64_t>(data + std::size_t{b} * config_.buffer_bytes);
      if (ud) {
        s[0].addr = reinterpret_cast<std::uint64_t>(grh + std::size_t{b} * kGrhSlot);
        s[1].addr = buf;
      } else {
        s[0].addr = buf;
      }
    }
    Status st = ud ? v_->ud_qp->post_recv(v_->rwr[0]) : v_->srq->post_recv(v_->rwr[0]);
    if (st != Status::kOk) return -1;
    ++stats_.reposts;
    free_queue_.pop(n);
    done += static_cast<int>(n);
  }
  return done;
}

// --- ring channels (set-up and slow paths: endpoint_ring.cc) ---

// Whether send-queue descriptor `d` of a ring channel goes into the peer's ring (else by SEND).
// Every message is published first, then the peer's sleep flag read, both seq_cst: a full fence
// between (one ThreadSanitizer understands, unlike a bare fence). A peer about to sleep writes the
// flag, then reads what we published (ring_look), so either it sees this message counted or we
// see the flag and send by SEND, whose completion wakes it.
UNET_ALWAYS_INLINE bool Endpoint::ring_route(const Descriptor& d, RingChannel& r) noexcept {
  if (d.flags & (Descriptor::kOp | Descriptor::kProbe)) [[unlikely]] {
    if (d.flags & Descriptor::kProbe) return false;
    const OpKind kind = v_->ops[d.buffer].kind;
    if (kind != OpKind::kSend) {  // not a message; after a WRITE the next message goes by SEND
      r.after_write = r.after_write || kind == OpKind::kWrite;
      return false;
    }
  }
  store_word(r.control->published, ++r.published, std::memory_order_seq_cst);
  // A message the ring cannot post inline goes by SEND when a SEND would be inline: a payload
  // inside the descriptor has no registration, and a small buffer is spare at the post.
  bool ring = !(d.flags & Descriptor::kOp) && !r.after_write &&
              (d.length <= r.fit_inline ||
               (d.length <= r.fit && !d.is_inline() && d.length > inline_post_limit_)) &&
              load_word(r.control->peer_asleep, std::memory_order_seq_cst) == 0;
  if (ring && r.tx.available() == 0) {  // the credit word may have news
    if (!r.tx.update(load_word(r.control->credit))) ++stats_.ring_protocol_errors;
    ring = r.tx.available() > 0;
  }
  if (!ring) {
    ++r.fallbacks_sent;
    r.after_write = false;  // a SEND completes after the WRITEs before it (IB ordering)
    ++stats_.ring_fallbacks;
  }
  return ring;
}

// Builds WR n as the RDMA WRITE of `d` into the peer's next slot: head, payload and tail in one
// WRITE. A small payload (inside the descriptor, or a buffer of up to kRingImage bytes) goes as
// one slot image, composed here and copied by the post (inline): one gather entry, where three
// cost the provider more than the copy. A larger buffer's is gathered between the head and tail of
// the lane's staging entry (inline as a SEND of it would be). The head piggybacks what our own
// ring has freed.
UNET_ALWAYS_INLINE void Endpoint::build_ring_wr(const Descriptor& d, RingChannel& r,
                                                std::uint32_t n, std::uint32_t lane_seq) noexcept {
  Verbs& v = *v_;
  ibv_send_wr& w = v.swr[n];
  ibv_sge* sge = v.ssge[n];
  const std::uint32_t seq = r.tx.take();
  const bool imm = d.flags & Descriptor::kImm;
  const std::uint64_t head = ring::head_word(seq, d.length, imm, r.fallbacks_sent, r.rx.freed());
  r.rx.reported();
  const std::uint32_t off = ring::payload_offset(imm), body = ring::pad8(d.length);
  w.next = nullptr;
  w.opcode = IBV_WR_RDMA_WRITE;
  w.wr.rdma.remote_addr = r.peer_ring + std::uint64_t{seq & (r.tx.slots() - 1)} * r.peer_slot_bytes;
  w.wr.rdma.rkey = r.peer_rkey;
  // A descriptor's payload fits an image, and inline (ring_route took it only then).
  if (d.is_inline() || (d.length <= r.inline_payload && d.length <= kRingImage)) {
    std::byte* img = v.ring_image[n];
    const std::uint64_t imm_word = d.imm;
    std::memcpy(img, &head, 8);
    std::memcpy(img + 8, &imm_word, 8);       // the imm word (the payload's place without imm)
    std::memset(img + off + body - 8, 0, 8);  // the payload's padding
    if (d.is_inline())
      copy_small(img + off, d.data, d.length);
    else
      std::memcpy(img + off, segment_.get() + std::size_t{d.buffer} * config_.buffer_bytes,
                  d.length);
    std::memcpy(img + off + body, &head, 8);
    sge[0] = {reinterpret_cast<std::uint64_t>(img), off + body + ring::kTailBytes, 0};
    w.num_sge = 1;
    w.send_flags = IBV_SEND_INLINE;
  } else {
    // The staging entry: head, imm word, zeros, tail; the payload's padding comes from the zeros.
    auto* e =
        reinterpret_cast<std::uint64_t*>(r.staging + std::size_t{lane_seq & r.staging_mask} * 32);
    e[0] = head;
    e[1] = d.imm;
    e[3] = head;
    const std::uint32_t pad = body - d.length, lkey = r.local_mr->lkey();
    sge[0] = {reinterpret_cast<std::uint64_t>(e), off, lkey};
    sge[1] = {reinterpret_cast<std::uint64_t>(segment_.get() +
                                              std::size_t{d.buffer} * config_.buffer_bytes),
              d.length, v.mr->lkey()};
    sge[2] = {reinterpret_cast<std::uint64_t>(e + 3) - pad, ring::kTailBytes + pad, lkey};
    w.num_sge = 3;
    w.send_flags = d.length <= r.inline_payload ? IBV_SEND_INLINE : 0;
  }
  ++stats_.ring_sent;
}

// Reads every polled ring's next head word: all of them in one pass of loads ORed together (an
// idle ring's next slot is all zeros), then takes the arrivals of the rings that have one.
UNET_ALWAYS_INLINE int Endpoint::poll_rings() noexcept {
  const std::size_t n = heads_.size();
  const std::uint64_t* const* h = heads_.data();
  if (n <= 1)  // none, or the one ring of a single channel: its head decides
    return n == 1 && load_word(*h[0], std::memory_order_relaxed) != 0
               ? take_ring(*polled_[0], kBatch)
               : 0;
  std::uint64_t any = 0;
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4)
    any |= load_word(*h[i], std::memory_order_relaxed) |
           load_word(*h[i + 1], std::memory_order_relaxed) |
           load_word(*h[i + 2], std::memory_order_relaxed) |
           load_word(*h[i + 3], std::memory_order_relaxed);
  for (; i < n; ++i) any |= load_word(*h[i], std::memory_order_relaxed);
  if (any == 0) [[likely]]
    return 0;
  int found = 0;
  for (i = 0; i < heads_.size(); ++i)  // an upcall may close a channel and shrink the set
    if (load_word(*heads_[i], std::memory_order_relaxed) != 0)
      found += take_ring(*polled_[i], kBatch);
  return found;
}

// Takes the arrivals waiting in ring `r`, in order: a slot is taken once its head names the
// sequence number expected next and its tail repeats the head (core/README.md, "Ring channels"),
// and once every SEND of the channel sent before it was taken. A small payload is copied into the
// descriptor and its slot freed at once; a larger one is the application's, in place, until
// release(). When the receive queue is full the message waits in the ring: nothing is dropped.
UNET_ALWAYS_INLINE int Endpoint::take_ring(RingChannel& r, std::uint32_t most) noexcept {
  std::uint32_t taken = 0;
  std::uint32_t seq = r.rx.taken();
  std::byte* slot = r.slot(seq);  // == heads_[r.polled]
  while (taken < most) {
    std::uint64_t w = 0;
    const ring::Slot c = ring::read_slot(slot, r.slot_bytes, static_cast<std::uint16_t>(seq), w);
    if (c != ring::Slot::kMessage) [[unlikely]] {
      if (c != ring::Slot::kMalformed) break;  // empty, or not all there yet
      ring_malformed(r);
      slot = r.slot(++seq);
      continue;
    }
    if (ring::waits_for_send(w, r.fallbacks_taken)) break;  // a SEND sent before it comes first
    const std::uint32_t len = ring::length_of(w);
    const bool imm = ring::imm_of(w);
    Descriptor* d = &v_->upcall_arrival;  // not on the stack: its alignment would cost every poll
    if (!upcall_ && !(d = recv_queue_.reserve())) break;
    if (!r.tx.update16(ring::credit_of(w))) [[unlikely]]
      ++stats_.ring_protocol_errors;
    ++r.arrived;
    d->channel = r.channel;
    d->length = len;
    d->imm = imm ? static_cast<std::uint32_t>(
                       ring::load_word(slot + ring::kHeadBytes, std::memory_order_relaxed))
                 : 0;
    if (len <= inline_threshold_) {  // copied, and the slot zeroed and free again at once
      copy_small(d->data, slot + ring::payload_offset(imm), len);
      d->flags = imm ? Descriptor::kInline | Descriptor::kImm : Descriptor::kInline;
      d->buffer = kNoBuffer;
      ring::zero_words(slot, ring::wire_bytes(len, imm));
      r.rx.take_and_free();
      ++stats_.inline_received;
    } else {
      const std::uint32_t i = r.rx.take() & (r.slots - 1);
      d->flags = imm ? Descriptor::kImm : 0;
      d->buffer = config_.buffers + r.index * config_.ring_slots + i;
      r.held[i] = ring::wire_bytes(len, imm) | (imm ? RingChannel::kHeldImm : 0);
      ++r.holding;
    }
    ++stats_.ring_received;
    ++taken;
    ++seq;
    slot = r.next_slot(slot);
    if (upcall_) {
      ++stats_.upcalls;
      in_upcall_ = true;
      upcall_(*d);
      in_upcall_ = false;
      if (r.polled == UINT32_MAX) return static_cast<int>(taken);  // the upcall closed the channel
      slot = r.slot(seq = r.rx.taken());
    } else {
      recv_queue_.commit();
      ++stats_.received;
    }
  }
  heads_[r.polled] = reinterpret_cast<const std::uint64_t*>(slot);
  if (r.rx.report_due()) credits_due_ = true;
  return static_cast<int>(taken);
}

// A SEND arrived on ring channel `r`: the ring messages sent before it are taken first, all of
// them (an arrival's completion means the WRITEs before it on the QP are in place: IB ordering;
// the ones after it wait for it), then it.
UNET_ALWAYS_INLINE void Endpoint::ring_before_send(RingChannel& r) noexcept {
  if (r.polled != UINT32_MAX) (void)take_ring(r, UINT32_MAX);
  ++r.fallbacks_taken;
  ++r.arrived;
}

}  // namespace unet::core
