// StreamEndpoint segments: arrival, acknowledgement, data, output, retransmission and timers.
#include <algorithm>
#include <array>

#include "stream_impl.h"
#include "unet/core/always_inline.h"

namespace unet::ulp {

namespace {

bool synchronized(StreamState s) noexcept {
  return s != StreamState::kClosed && s != StreamState::kListen && s != StreamState::kSynSent &&
         s != StreamState::kSynReceived;
}
// States whose peer may still send us data.
bool receiving(StreamState s) noexcept {
  return s == StreamState::kEstablished || s == StreamState::kFinWait1 ||
         s == StreamState::kFinWait2;
}
// States in which our data or FIN may still be going out.
bool sending(StreamState s) noexcept {
  return s == StreamState::kEstablished || s == StreamState::kCloseWait ||
         s == StreamState::kFinWait1 || s == StreamState::kClosing || s == StreamState::kLastAck;
}

// Copies `payload` into the receive buffer at sequence number `seq` (in two pieces at the wrap).
template <class Conn>
UNET_ALWAYS_INLINE void put(Conn& c, std::uint32_t seq,
                            std::span<const std::byte> payload) noexcept {
  const auto n = static_cast<std::uint32_t>(payload.size());
  const std::uint32_t at = (seq - (c.irs + 1)) & c.rmask;
  const std::uint32_t first = std::min(n, c.rmask + 1 - at);
  copy_bytes(c.rbuf.get() + at, payload.data(), first);
  if (n > first) copy_bytes(c.rbuf.get(), payload.data() + first, n - first);
}

// How long TIME_WAIT lasts: the configured time, or four of our RTOs when that is longer. The
// peer resends a FIN whose ACK was lost after its RTO (about ours: the same path) and backs off
// if that ACK is lost too; once the wait is over the application may exit, and nothing answers.
template <class Conn>
Time time_wait_of(const Conn& c, std::chrono::milliseconds configured) noexcept {
  return std::max<Time>(configured, 4 * c.rtt.rto());
}

}  // namespace

int StreamEndpoint::poll() noexcept {
  const Time t = clock_.begin();  // read once, by the arrivals, timers and sends below
  const int n = net_->poll();     // arrivals are handled in here (core's upcall)
  if (n < 0) {
    clock_.end();
    return n;
  }
  core::OpCompletion done;
  while (net_->completion(done) == Status::kOk) zero_copy_completion(done);
  core::service_when_due(*net_, t, next_service_);
  // A channel core closed or failed since the last look fails its connections (timers()).
  const bool recheck = net_->channel_changes() != seen_channel_changes_;
  seen_channel_changes_ = net_->channel_changes();
  for (auto& p : conns_) {
    Conn& c = *p;
    if (!c.used) continue;
    timers(c, t, recheck);
    if (!c.used) continue;
    if (c.output_due()) output(c);
    if (c.ack_owed > 0 && t >= c.ack_due) c.ack_pending = true;
    if (c.ack_pending) send_ack_now(c);
    if (c.zc_count > 0) retire_zero_copy(c);
  }
  clock_.end();
  refresh_fds();
  const int f = net_->flush();
  return f < 0 ? f : n + f;
}

void StreamEndpoint::arrival(const core::Descriptor& d) noexcept {
  const std::span<const std::byte> bytes =
      d.is_inline() ? d.inline_payload()
                    : std::span<const std::byte>(net_->buffer(d.buffer).first(d.length));
  // A segment buffer may be kept (take()); a ring slot read in place is not: its ring needs it.
  const bool keepable = !d.is_inline() && d.buffer < net_->config().buffers;
  if (keepable) arriving_ = d.buffer;
  SegmentHeader h;
  if (decode(bytes, h) != Status::kOk) {
    ++stats_.malformed;
  } else if (Conn* c = find(d.channel, h.dst_port, h.src_port)) {
    c->last_heard = clock_.time();
    ++c->stats.segments_received;
    ++stats_.segments;
    on_segment(*c, h, bytes.subspan(kSegmentHeaderBytes));
  } else if (h.has(kSyn) && !h.has(kAck)) {
    on_syn(d.channel, h);
  } else {
    ++stats_.stray;
    if (!h.has(kRst)) (void)send_reset(d.channel, h, bytes.size() - kSegmentHeaderBytes);
  }
  // Given back unless a connection kept it (take() cleared arriving_).
  if (keepable ? arriving_ != core::kNoBuffer : !d.is_inline()) (void)net_->release(d.buffer);
  arriving_ = core::kNoBuffer;
}

// A SYN for no connection: a listener on its port takes it into a new connection (SYN_RECEIVED).
void StreamEndpoint::on_syn(ChannelId peer, const SegmentHeader& h) noexcept {
  Listener* l = nullptr;
  for (auto& p : listeners_)
    if (p->port == h.dst_port) l = p.get();
  ConnId id;
  Conn* c = nullptr;
  if (!l || l->ready.full() || !(c = new_conn(peer, h.dst_port, h.src_port, id))) {
    ++stats_.refused_syn;
    if (!l) (void)send_reset(peer, h, 0);  // nobody listens; a full backlog lets the SYN retry
    return;
  }
  ++stats_.segments;
  c->listener = l->port;
  c->irs = h.seq;
  c->rcv_nxt = c->rcv_read = h.seq + 1;
  c->snd_wnd = h.window;
  c->deadline = clock_.time() + config_.connect_timeout;
  c->state = StreamState::kListen;
  step(*c, StreamEvent::kRecvSyn);
}

// In-order data at rcv_nxt, within the receive buffer: kept in its arrival's buffer for recv()
// when it is large enough and the connection and endpoint may keep one more, else copied in.
UNET_ALWAYS_INLINE void StreamEndpoint::take(Conn& c, std::span<const std::byte> payload) noexcept {
  const auto n = static_cast<std::uint32_t>(payload.size());
  if (n >= Conn::kKeepFrom && arriving_ != core::kNoBuffer && c.kept_count < Conn::kMaxKept &&
      kept_total_ < kept_budget_) {
    c.kept[(c.kept_first + c.kept_count++) % Conn::kMaxKept] = {arriving_, payload.data(),
                                                                c.rcv_nxt, n};
    arriving_ = core::kNoBuffer;
    ++kept_total_;
    ++c.stats.kept_segments;
  } else {
    put(c, c.rcv_nxt, payload);
  }
  c.rcv_nxt += n;
  c.stats.bytes_received += n;
}

// Data was taken: acknowledged at once when `now` (a filled gap: the sender is in recovery),
// else once ack_every segments wait or the first has waited ack_delay (poll() sends it).
UNET_ALWAYS_INLINE void StreamEndpoint::owe_ack(Conn& c, bool now) noexcept {
  if (now || ++c.ack_owed >= config_.ack_every)
    c.ack_pending = true;
  else if (c.ack_owed == 1)
    c.ack_due = clock_.time() + config_.ack_delay;
}

// Header prediction, as TCP's: the next in-order segment of an established connection, an ACK
// and nothing else, with room for its bytes, while nothing is held past a gap, no recovery runs
// and no FIN of ours waits. Its ACK is new, or it carries data (an old ACK without data may be a
// duplicate). Does what on_ack() and on_data() do for such a segment; false for the rest.
UNET_ALWAYS_INLINE bool StreamEndpoint::predicted(Conn& c, const SegmentHeader& h,
                                                  std::span<const std::byte> payload) noexcept {
  const auto n = static_cast<std::uint32_t>(payload.size());
  if (c.state != StreamState::kEstablished || h.flags != kAck || h.seq != c.rcv_nxt ||
      !c.held.empty() || c.cc.in_recovery() || c.fin_queued || seq_lt(h.ack, c.snd_una) ||
      seq_lt(c.snd_max, h.ack) || (h.ack == c.snd_una && n == 0) ||
      h.seq + n - c.rcv_read > c.rmask + 1)
    return false;
  if (h.ack != c.snd_una)
    ack_advances(c, h, c.flight());
  else
    c.snd_wnd = h.window;
  if (n > 0) {
    take(c, payload);
    owe_ack(c, false);
  }
  return true;
}

UNET_ALWAYS_INLINE void StreamEndpoint::on_segment(Conn& c, const SegmentHeader& h,
                                                   std::span<const std::byte> payload) noexcept {
  if (predicted(c, h, payload)) return;
  if (h.has(kRst)) {
    const bool ok = c.state == StreamState::kSynSent
                        ? h.has(kAck) && h.ack == c.iss + 1
                        : seq_le(c.rcv_nxt, h.seq) && seq_le(h.seq, c.rcv_nxt + receive_window(c));
    if (!ok) return;  // not in our window: ignore, as RFC 793 says
    Transition t;
    if (transition(c.state, StreamEvent::kRecvRst, t) == Status::kOk)
      step(c, StreamEvent::kRecvRst);
    else
      fail(c, Status::kClosed);  // a refused connect
    return;
  }
  switch (c.state) {
    case StreamState::kSynSent:
      if (h.has(kSyn) && h.has(kAck) && h.ack == c.iss + 1) {
        c.irs = h.seq;
        c.rcv_nxt = c.rcv_read = h.seq + 1;
        c.snd_una = c.iss + 1;
        c.snd_wnd = h.window;
        if (c.timing) c.rtt.sample(clock_.time() - c.timed_at);
        c.timing = false;
        c.rto_deadline = Time{};
        c.expiries = 0;
        step(c, StreamEvent::kRecvSynAck);
        send_ack_now(c);
      } else if (h.has(kSyn) && !h.has(kAck)) {  // simultaneous open
        c.irs = h.seq;
        c.rcv_nxt = c.rcv_read = h.seq + 1;
        c.snd_wnd = h.window;
        step(c, StreamEvent::kRecvSyn);
      }
      return;
    case StreamState::kSynReceived:
      if (h.has(kSyn) && !h.has(kAck)) {  // our SYN-ACK was lost: the peer's SYN again
        (void)send_segment(c, kSyn | kAck, c.iss, 0);
        return;
      }
      if (!h.has(kAck) || h.ack != c.iss + 1) return;
      c.snd_una = c.iss + 1;
      c.snd_wnd = h.window;
      c.rto_deadline = Time{};
      c.expiries = 0;
      if (c.timing) c.rtt.sample(clock_.time() - c.timed_at);
      c.timing = false;
      step(c, StreamEvent::kRecvAckOfSyn);
      break;  // the ACK may carry data
    default:
      break;
  }
  if (!synchronized(c.state)) return;
  if (h.has(kSyn)) {  // our ACK of their SYN-ACK was lost: acknowledge again
    send_ack_now(c);
    return;
  }
  // A SACK segment's payload is its blocks (checked by decode()), not data.
  std::array<SackBlock, kMaxSackBlocks> blocks;
  std::size_t nblocks = 0;
  if (h.has(kSack)) {
    nblocks = read_sack(payload, blocks);
    payload = {};
  }
  on_ack(c, h, payload.size(), std::span<const SackBlock>(blocks.data(), nblocks));
  if (!c.used) return;
  if (receiving(c.state)) {
    on_data(c, h, payload);
  } else if (c.peer_fin && (h.has(kFin) || !payload.empty())) {
    // The peer's FIN again (or data from before it): our ACK of it was lost, and the peer, in
    // FIN_WAIT_1, CLOSING or LAST_ACK, resends until one comes. Acknowledge it again (RFC 793);
    // in TIME_WAIT, which exists for this, the wait starts over (RFC 793, 3.9).
    c.ack_pending = true;
    if (c.state == StreamState::kTimeWait)
      c.deadline = clock_.time() + time_wait_of(c, config_.time_wait);
  }
}

UNET_ALWAYS_INLINE void StreamEndpoint::on_ack(Conn& c, const SegmentHeader& h, std::size_t payload,
                                               std::span<const SackBlock> sack) noexcept {
  if (!h.has(kAck) || seq_lt(h.ack, c.snd_una)) return;  // old
  if (seq_lt(c.snd_max, h.ack)) {                        // acknowledges what we never sent
    c.ack_pending = true;
    return;
  }
  note_sack(c, sack);
  const std::uint32_t flight = c.flight();
  if (seq_lt(c.snd_una, h.ack)) return ack_advances(c, h, flight);
  // h.ack == snd_una: a duplicate ack if it carries nothing else and data is outstanding.
  if (payload == 0 && !h.has(kFin) && flight > 0 && h.window == c.snd_wnd) {
    ++c.stats.dup_acks;
    ++c.dup_count;
    if (c.cc.on_dup_ack(flight, c.snd_max)) {
      ++c.stats.fast_retransmits;
      c.sack_resent = c.snd_una;
      retransmit_first(c);
    } else if (c.cc.in_recovery()) {
      resend_hole(c);
    }
  }
  c.snd_wnd = h.window;
}

// An ACK that moves snd_una forward (`flight` was in flight before it).
UNET_ALWAYS_INLINE void StreamEndpoint::ack_advances(Conn& c, const SegmentHeader& h,
                                                     std::uint32_t flight) noexcept {
  c.dup_count = 0;
  // Only a FIN sent makes snd_max pass snd_end. Not fin_sent: a timeout clears it to send the
  // FIN again, and the ACK of the first one may come before that.
  const bool fin_acked = c.fin_queued && h.ack == c.snd_end + 1;
  const std::uint32_t acked = h.ack - c.snd_una;
  c.snd_una = h.ack;
  c.sacked.drop_below(c.snd_una);
  if (seq_lt(c.snd_nxt, c.snd_una)) c.snd_nxt = c.snd_una;
  if (c.timing && seq_lt(c.timed_seq, h.ack)) {
    c.rtt.sample(clock_.time() - c.timed_at);
    c.timing = false;
  }
  c.snd_wnd = h.window;
  if (c.cc.in_recovery()) {
    // A partial ack: its first hole is resent, unless a SACK-revealed resend already did.
    if (c.cc.on_recovery_ack(acked, h.ack, flight - acked) && !seq_lt(c.snd_una, c.sack_resent))
      retransmit_first(c);
    if (c.cc.in_recovery()) resend_hole(c);
  } else {
    c.cc.on_ack(acked);
  }
  c.expiries = 0;
  c.rto_deadline = c.flight() > 0 ? clock_.time() + c.rtt.rto() : Time{};
  if (fin_acked) {
    c.fin_sent = true;
    step(c, StreamEvent::kRecvAckOfFin);
  }
}

UNET_ALWAYS_INLINE void StreamEndpoint::on_data(Conn& c, const SegmentHeader& h,
                                                std::span<const std::byte> payload) noexcept {
  std::uint32_t seq = h.seq;
  if (!payload.empty()) {
    if (seq_lt(seq, c.rcv_nxt)) {  // some or all of it seen before
      const std::uint32_t skip = c.rcv_nxt - seq;
      if (skip >= payload.size()) {
        send_ack_now(c);  // a duplicate: tell the peer where we are
        return;
      }
      payload = payload.subspan(skip);
      seq = c.rcv_nxt;
    }
    const auto n = static_cast<std::uint32_t>(payload.size());
    if (seq + n - c.rcv_read > c.rmask + 1) {  // beyond the receive buffer
      ++c.stats.window_drops;
      send_ack_now(c);
      return;
    }
    if (seq != c.rcv_nxt) {  // past a gap: kept at its place; the duplicate ack asks for the gap
      if (c.held.add(seq, seq + n)) {
        put(c, seq, payload);
        ++c.stats.held_out_of_order;
      } else {
        ++c.stats.out_of_order_drops;
      }
      send_ack_now(c);
      return;
    }
    take(c, payload);
    const bool filled_gap = !c.held.empty() && seq_le(c.held[0].start, c.rcv_nxt);
    // The gap is filled: run over what was held beyond it.
    while (!c.held.empty() && seq_le(c.held[0].start, c.rcv_nxt)) {
      if (seq_lt(c.rcv_nxt, c.held[0].end)) {
        c.stats.bytes_received += c.held[0].end - c.rcv_nxt;
        c.rcv_nxt = c.held[0].end;
      }
      c.held.pop_front();
    }
    owe_ack(c, filled_gap);
  } else if (seq_lt(seq, c.rcv_nxt)) {
    c.ack_pending = true;  // a keepalive
  }
  if (h.has(kFin) && !c.peer_fin && seq + payload.size() == c.rcv_nxt) {
    c.peer_fin = true;
    c.rcv_nxt += 1;
    step(c, StreamEvent::kRecvFin);
    send_ack_now(c);
  }
}

// Applies a state-machine event (the caller made sure it is allowed) and its actions.
void StreamEndpoint::step(Conn& c, StreamEvent e) noexcept {
  Transition t;
  if (transition(c.state, e, t) != Status::kOk) return;
  c.state = t.next;
  const Time n = clock_.time();
  if (t.actions & (kActSendSyn | kActSendSynAck)) {
    c.snd_nxt = c.snd_max = c.iss + 1;
    c.timing = true;
    c.timed_seq = c.iss;
    c.timed_at = n;
    (void)send_segment(c, (t.actions & kActSendSynAck) ? (kSyn | kAck) : kSyn, c.iss, 0);
    c.rto_deadline = n + c.rtt.rto();
  }
  if (t.actions & kActSendAck) c.ack_pending = true;
  if (t.actions & kActSendFin) {
    c.fin_queued = true;
    output(c);
  }
  if (t.actions & kActSendRst) {
    SegmentHeader to;  // as if answering the peer's next segment
    to.flags = kAck;
    to.src_port = c.rport;
    to.dst_port = c.lport;
    to.seq = c.rcv_nxt;
    to.ack = c.snd_nxt;
    (void)send_reset(c.peer, to, 0);
  }
  if (t.actions & kActConnected && c.listener) {  // into the listener's backlog for accept()
    for (auto& l : listeners_)
      if (l->port == c.listener) c.in_backlog = l->ready.push(c.id);
    if (!c.in_backlog) {  // the backlog filled since the SYN came: refuse it after all
      ++stats_.refused_syn;
      step(c, StreamEvent::kAbort);
      return;
    }
  }
  if (t.actions & kActFailed) c.error = t.error;
  if (c.state == StreamState::kTimeWait) {
    c.deadline = n + time_wait_of(c, config_.time_wait);
    c.rto_deadline = Time{};
  }
  if (c.state == StreamState::kClosed) {
    c.rto_deadline = Time{};
    if (c.orphan()) free_conn(c);
  }
}

// Sends what the windows allow: new data, then our FIN once the data is out.
void StreamEndpoint::output(Conn& c) noexcept {
  if (!sending(c.state)) return;
  for (;;) {
    if (seq_lt(c.snd_nxt, c.snd_end)) {
      const std::uint32_t flight = c.flight();
      // A zero window still lets one byte out when nothing is in flight: the probe that finds
      // out when it opens (the retransmission timer repeats it).
      // Limited transmit (RFC 3042): the first two duplicate acks each let one new segment out,
      // so a small window still gathers the three duplicates a fast retransmit needs.
      const std::uint32_t limited = c.cc.in_recovery() ? 0 : std::min(c.dup_count, 2u) * c.mss;
      const std::uint32_t wnd =
          std::min(c.cc.cwnd() + limited, std::max(c.snd_wnd, flight == 0 ? 1u : 0u));
      if (flight >= wnd) return;
      const std::uint32_t usable = wnd - flight, ready = c.run(c.snd_nxt);
      const std::uint32_t len = std::min({c.mss, ready, usable});
      // Sender-side silly window avoidance (RFC 1122, 4.2.3.4): a segment the window, not the
      // data, would cut short waits for the ack that is due and goes whole, unless it is half
      // the peer's window. Only while ack_every segments are in flight: fewer, and the peer's
      // delayed ack (taken to be configured as ours) would hold the window shut for ack_delay.
      if (len < c.mss && len < ready && 2 * len < c.snd_wnd &&
          flight >= std::uint64_t{config_.ack_every} * c.mss)
        return;
      if (push_segment(c, kAck, c.snd_nxt, len) != Status::kOk) return;
      const std::uint32_t end = c.snd_nxt + len;
      if (seq_lt(c.snd_max, end)) {
        const std::uint32_t fresh = end - (seq_lt(c.snd_nxt, c.snd_max) ? c.snd_max : c.snd_nxt);
        c.stats.bytes_sent += fresh;
        if (!c.timing && !seq_lt(c.snd_nxt, c.snd_max)) {  // Karn: time only first transmissions
          c.timing = true;
          c.timed_seq = c.snd_nxt;
          c.timed_at = clock_.time();
        }
        c.snd_max = end;
      } else {
        ++c.stats.retransmitted_segments;
      }
      c.snd_nxt = end;
      if (c.rto_deadline == Time{}) c.rto_deadline = clock_.time() + c.rtt.rto();
    } else if (c.fin_queued && !c.fin_sent && c.snd_nxt == c.snd_end) {
      if (send_segment(c, kAck | kFin, c.snd_end, 0) != Status::kOk) return;
      c.fin_sent = true;
      c.snd_nxt = c.snd_end + 1;
      if (seq_lt(c.snd_max, c.snd_nxt)) c.snd_max = c.snd_nxt;
      if (c.rto_deadline == Time{}) c.rto_deadline = clock_.time() + c.rtt.rto();
    } else {
      return;
    }
  }
}

// One segment: header, then `len` bytes from `seq` — of the send buffer, inside a descriptor when
// it fits, else in a segment buffer; or gathered from a zero-copy send's memory (send_pinned).
// kNoResource when the send path is full. push_segment() is the same, inline: output()'s.
Status StreamEndpoint::send_segment(Conn& c, std::uint8_t flags, std::uint32_t seq,
                                    std::uint32_t len) noexcept {
  return push_segment(c, flags, seq, len);
}

UNET_ALWAYS_INLINE Status StreamEndpoint::push_segment(Conn& c, std::uint8_t flags,
                                                       std::uint32_t seq,
                                                       std::uint32_t len) noexcept {
  if (net_->send_queue_space() == 0) return Status::kNoResource;
  SegmentHeader h;
  h.flags = flags;
  h.src_port = c.lport;
  h.dst_port = c.rport;
  h.seq = seq;
  h.ack = (flags & kAck) ? c.rcv_nxt : 0;
  h.window = receive_window(c);
  if (len && c.zc_count > 0) {
    if (PinnedSend* z = c.pinned_at(seq)) return send_pinned(c, *z, h, len);
  }
  // A pure ack names what is held past a gap (selective acks).
  std::array<SackBlock, Conn::kSackSent> sack;
  std::uint32_t nsack = 0;
  if (flags == kAck && len == 0 && config_.selective_acks) {
    for (; nsack < std::min(c.held.size(), Conn::kSackSent); ++nsack)
      sack[nsack] = {c.held[nsack].start, c.held[nsack].end};
    if (nsack > 0) h.flags |= kSack;
  }
  const std::size_t extra = nsack * kSackBlockBytes;
  const std::size_t size = kSegmentHeaderBytes + len + extra;
  std::array<std::byte, core::Descriptor::kInlineBytes> small;
  core::BufferId b = core::kNoBuffer;
  std::byte* p = small.data();
  if (size > net_->inline_threshold()) {
    if (Status s = net_->acquire_buffer(b); s != Status::kOk) return s;
    p = net_->buffer(b).data();
  }
  Status coded = encode(h, len + extra, std::span<std::byte>(p, kSegmentHeaderBytes));
  if (coded == Status::kOk && nsack > 0)
    coded = encode_sack(std::span<const SackBlock>(sack.data(), nsack), h.ack,
                        std::span<std::byte>(p + kSegmentHeaderBytes, extra));
  if (coded != Status::kOk) {
    if (b != core::kNoBuffer) (void)net_->release(b);
    return coded;
  }
  if (len) {
    const std::uint32_t at = (seq - c.data_start()) & c.smask;
    const std::uint32_t first = std::min(len, c.smask + 1 - at);
    copy_bytes(p + kSegmentHeaderBytes, c.sbuf.get() + at, first);
    if (len > first) copy_bytes(p + kSegmentHeaderBytes + first, c.sbuf.get(), len - first);
  }
  const Status s = b == core::kNoBuffer
                       ? net_->send_inline(c.peer, std::span<const std::byte>(p, size))
                       : net_->send(c.peer, b, static_cast<std::uint32_t>(size));
  if (s != Status::kOk) return s;
  segment_sent(c, flags);
  return Status::kOk;
}

// A segment went out: counted, and one carrying an ACK is the acknowledgement owed.
void StreamEndpoint::segment_sent(Conn& c, std::uint8_t flags) noexcept {
  ++c.stats.segments_sent;
  if (flags & kAck) {
    c.ack_pending = false;
    c.ack_owed = 0;
  }
}

void StreamEndpoint::send_ack_now(Conn& c) noexcept {
  if (synchronized(c.state) || c.state == StreamState::kSynReceived)
    (void)send_segment(c, kAck, c.snd_nxt, 0);
}

// An RST answering segment `to` (RFC 793: seq from its ack, or ack its sequence space).
Status StreamEndpoint::send_reset(ChannelId peer, const SegmentHeader& to,
                                  std::size_t payload) noexcept {
  if (net_->send_queue_space() == 0) return Status::kNoResource;
  SegmentHeader h;
  h.src_port = to.dst_port;
  h.dst_port = to.src_port;
  if (to.has(kAck)) {
    h.flags = kRst;
    h.seq = to.ack;
  } else {
    h.flags = kRst | kAck;
    h.ack = to.seq + static_cast<std::uint32_t>(payload) + (to.has(kSyn) ? 1 : 0) +
            (to.has(kFin) ? 1 : 0);
  }
  std::array<std::byte, kSegmentHeaderBytes> bytes;
  if (Status s = encode(h, 0, bytes); s != Status::kOk) return s;
  const Status s = net_->send_inline(peer, bytes);
  if (s == Status::kOk) ++stats_.resets_sent;
  return s;
}

// Resends the first unacknowledged segment (fast retransmit, partial ack), and gives it a whole
// RTO to be acknowledged, as Linux does: the timer was armed by the last ack that moved snd_una,
// before the three duplicates that revealed the loss, and with an RTO near its 2 ms floor (about
// two round trips here) it would otherwise expire while recovery is going well.
void StreamEndpoint::retransmit_first(Conn& c) noexcept {
  c.timing = false;  // Karn
  ++c.stats.retransmitted_segments;
  c.rto_deadline = clock_.time() + c.rtt.rto();
  if (seq_lt(c.snd_una, c.snd_end)) {
    const std::uint32_t len = std::min({c.mss, c.run(c.snd_una), std::max(c.flight(), 1u)});
    const bool sent = send_segment(c, kAck, c.snd_una, len) == Status::kOk;
    if (sent && seq_lt(c.sack_resent, c.snd_una + len)) c.sack_resent = c.snd_una + len;
  } else if (c.fin_sent && c.snd_una == c.snd_end) {
    (void)send_segment(c, kAck | kFin, c.snd_end, 0);
  }
}

// Selective acks: records what the peer's SACK blocks say it holds, past snd_una and within the
// data we sent (a block naming more is ignored).
void StreamEndpoint::note_sack(Conn& c, std::span<const SackBlock> sack) noexcept {
  if (!config_.selective_acks) return;
  for (const SackBlock& b : sack) {
    const std::uint32_t start = seq_lt(b.start, c.snd_una) ? c.snd_una : b.start;
    if (seq_lt(start, b.end) && seq_le(b.end, c.snd_end) && seq_le(b.end, c.snd_max))
      (void)c.sacked.add(start, b.end);
  }
}

// Selective acks, in fast recovery: resends the first hole below a SACKed range that this
// recovery has not resent yet, one segment per ack. NewReno alone resends one hole per round
// trip (each partial ack names the next); this repairs every loss of a window in about one.
void StreamEndpoint::resend_hole(Conn& c) noexcept {
  if (c.sacked.empty()) return;
  std::uint32_t seq = seq_lt(c.sack_resent, c.snd_una) ? c.snd_una : c.sack_resent;
  while (const auto* r = c.sacked.find(seq)) seq = r->end;  // what the peer holds is not resent
  const auto* above = c.sacked.next_after(seq);
  if (!above || !seq_lt(seq, c.snd_end)) return;  // no hole known below a SACKed range
  const std::uint32_t len = std::min({c.mss, above->start - seq, c.run(seq)});
  if (send_segment(c, kAck, seq, len) != Status::kOk) return;
  c.sack_resent = seq + len;
  c.timing = false;  // Karn
  ++c.stats.retransmitted_segments;
  ++c.stats.sack_resent;
}

UNET_ALWAYS_INLINE void StreamEndpoint::timers(Conn& c, Time t, bool recheck) noexcept {
  if (c.state == StreamState::kClosed) {
    if (c.orphan()) free_conn(c);
    return;
  }
  // The channel under the connection closed or failed (RC: the peer stopped answering the
  // device's retries): nothing more can pass, so the connection fails now, not at the connect or
  // dead-peer timeout.
  if (recheck && net_->channel_status(c.peer) != Status::kOk) return fail(c, Status::kClosed);
  if (c.state == StreamState::kSynSent || c.state == StreamState::kSynReceived) {
    if (t >= c.deadline) {
      step(c, StreamEvent::kTimeout);
    } else if (c.rto_deadline != Time{} && t >= c.rto_deadline) {
      c.timing = false;
      c.rtt.backoff();
      (void)send_segment(c, c.state == StreamState::kSynSent ? kSyn : (kSyn | kAck), c.iss, 0);
      c.rto_deadline = t + c.rtt.rto();
    }
    return;
  }
  if (c.state == StreamState::kTimeWait) {
    if (t >= c.deadline) step(c, StreamEvent::kTimeout);
    return;
  }
  if (t - c.last_heard >= config_.dead_peer_timeout) return fail(c, Status::kTimeout);
  if (c.rto_deadline != Time{} && t >= c.rto_deadline) {
    if (++c.expiries > config_.max_retransmits) return fail(c, Status::kTimeout);
    ++c.stats.timeouts;
    c.rtt.backoff();
    c.cc.on_timeout(c.flight());
    c.snd_nxt = c.snd_una;  // go back: resend from the first unacknowledged byte
    if (c.fin_sent && seq_le(c.snd_una, c.snd_end)) c.fin_sent = false;
    c.timing = false;
    c.rto_deadline = t + c.rtt.rto();
  }
  const Time quarter = config_.dead_peer_timeout / 4;
  if (c.flight() == 0 && t - c.last_heard >= quarter && t - c.last_keepalive >= quarter) {
    c.last_keepalive = t;
    (void)send_segment(c, kAck, c.snd_nxt - 1, 0);  // below the peer's rcv_nxt: it acks
  }
}

// The connection is gone (timeout, reset): pending calls see `error`.
void StreamEndpoint::fail(Conn& c, Status error) noexcept {
  c.state = StreamState::kClosed;
  c.error = error;
  c.rto_deadline = Time{};
  if (c.orphan()) free_conn(c);
}

}  // namespace unet::ulp
