// uam::Endpoint progress: arrivals and their handlers, acks and completions, timers, failures.
#include <algorithm>

#include "endpoint_impl.h"
#include "unet/core/little_endian.h"
#include "unet/core/wait_until.h"

namespace unet::uam {

namespace {

// An error reply's status word, if it names an error.
Status error_status(const Header& h) noexcept {
  if (h.arg_count != 1 || h.args[0] == 0 ||
      h.args[0] > static_cast<std::uint64_t>(Status::kDeviceError))
    return Status::kRemoteOperationError;
  return static_cast<Status>(h.args[0]);
}

}  // namespace

int Endpoint::poll() noexcept {
  // One clock read per poll, shared by its arrivals and timers. Arrivals that core delivers from
  // inside its own wait() read the clock themselves.
  const Time t = clock_.begin();
  if (!bundled_.empty()) seal_all();  // packets composed since the last poll go out first
  const int n = net_->poll();         // arrivals run their handlers in here (core's upcall)
  clock_.end();
  if (n < 0) return n;
  // What the handlers answered goes out now, ahead of the bookkeeping below, which on a
  // ping-pong's server would otherwise sit between a request's arrival and its reply.
  const int answered = n == 0 ? 0 : flush();
  if (answered < 0) return answered;
  op_completions();
  // A channel core's control path fails is failed below like any other.
  core::service_when_due(*net_, t, next_service_);
  // A channel core closed or failed since the last look fails its peer (core counts those).
  const bool recheck = net_->channel_changes() != seen_channel_changes_;
  seen_channel_changes_ = net_->channel_changes();
  for (std::size_t i = 0; i < open_.size();) {  // timers may fail a peer, which leaves open_
    const ChannelId ch = open_[i];
    timers(*peers_[ch], t, recheck);
    if (i < open_.size() && open_[i] == ch) ++i;
  }
  // Packets, replies and credits composed above go out now, not next poll.
  const int f = flush();
  if (f < 0) return f;
  return n + answered + f;
}

Status Endpoint::wait(std::chrono::milliseconds timeout) noexcept {
  const std::uint64_t before = work_;
  return core::wait_until(
      *net_, timeout, [this] { return poll(); }, [&] { return work_ != before; });
}

// One arrival from core (its upcall): a packet of one message or several (coalesced), each
// decoded and run in order; then its buffer goes back unless a handler kept it.
void Endpoint::arrival(const core::Descriptor& d) noexcept {
  Packet pk;
  pk.buffer = d.is_inline() ? core::kNoBuffer : d.buffer;
  std::span<const std::byte> rest =
      d.is_inline() ? d.inline_payload()
                    : std::span<const std::byte>(net_->buffer(pk.buffer).first(d.length));
  Peer* p = peer(d.channel);
  const Time t = clock_.time();
  // At least one message: an empty packet is refused as malformed (too short), not skipped.
  do {
    if (!p || !p->open) {  // the channel failed or closed, maybe in a handler of this packet
      ++stats_.closed_drops;
      break;
    }
    Header h;
    std::size_t used = 0;
    WireFault fault;
    if (decode_front(rest, h, used, fault) != Status::kOk) {  // it and what follows are dropped
      ++stats_.malformed;
      break;
    }
    message(*p, h, rest.subspan(header_bytes(h.arg_count), h.payload_length), pk, t);
    rest = rest.subspan(used);
  } while (!rest.empty());
  done_with(pk);
}

// One message of a packet: account credits and sequence, run the handler, apply the ack.
UNET_ALWAYS_INLINE
void Endpoint::message(Peer& p, const Header& h, std::span<const std::byte> payload, Packet& pk,
                       Time t) noexcept {
  // UD: a header whose ack is older than one already applied was composed (or, a resend, first
  // sent) before a header we have seen, and may have been held back for milliseconds (a
  // descheduled vCPU, a busy backlog) while the peer's running total moved on by more than half
  // its range: modulo 256 its old total would read as new credits (credit_window.h). Its total is
  // not used; what it returns came or comes with newer headers (a probe's answer at the latest).
  const bool fresh_total = !p.tx || !p.tx->stale_ack(h.ack);
  if (fresh_total && p.credits.on_credit_total(h.credits) != Status::kOk) {  // credits never spent
    ++stats_.bad_credits;
    return;
  }
  // Whether we hold every message the peer sent before this one: only then may its ack complete
  // our requests, since a reply the peer sent earlier (and we lost) must run first.
  bool in_step = false, deliver = false;
  if (h.kind == Kind::kCredit) {
    ++stats_.credit_messages_received;
    if (h.probe) p.credits.on_probe();
    in_step = h.seq == p.rx.ack();
  } else if (p.rx.on_arrival(h.seq, t) == Arrival::kDeliver) {
    in_step = deliver = true;
  } else {  // UD: a duplicate or a message past a gap, dropped (RC cannot produce either)
    ++(p.tx ? stats_.duplicates : stats_.out_of_order);
  }
  if (deliver) {
    const bool request = h.kind == Kind::kRequest || h.kind == Kind::kStoreDone;
    const Disposition d =
        request ? run_request(p, h, payload, pk) : run_reply(p, h, payload, pk.buffer);
    if (d == Disposition::kKept && pk.buffer != core::kNoBuffer) ++pk.kept;
  }
  if (in_step) {  // the peer is heard from in a way that can complete requests
    p.last_heard = t;
    p.probe_interval = config_.reliability.rto_initial;
  }
  // The ack after the body: a reply's own request completes after its reply handler ran.
  if (p.open) apply_ack(p, h.ack, in_step, t);
}

UNET_ALWAYS_INLINE
Disposition Endpoint::run_request(Peer& p, const Header& h, std::span<const std::byte> payload,
                                  Packet& pk) noexcept {
  if (p.credits.on_request() != Status::kOk) {  // the peer overran its window
    ++stats_.overruns;
    return Disposition::kDone;
  }
  // The packet's buffer holds one credit, the first request's, until it goes back to the free
  // queue. Any other request in it is owed its credit now, so the reply the handler sends can
  // carry it; so is a short request, whose buffer went back when core copied it into the
  // descriptor.
  if (pk.buffer == core::kNoBuffer || pk.credit != kKeptNoCredit)
    (void)p.credits.request_done();
  else
    pk.credit = p.ch;
  const Handler* fn = nullptr;
  const bool store = h.kind == Kind::kStoreDone;
  if (handlers_.lookup(h.handler, HandlerKind::kRequest, fn) != Status::kOk ||
      (store && payload.size() != kStorePayload)) {
    ++stats_.unknown_handler;
    (void)send_error(p, h.token, Status::kNotFound);
    return Disposition::kDone;
  }
  Message m;
  m.channel = p.ch;
  m.handler = h.handler;
  m.args = std::span<const std::uint64_t>(h.args.data(), h.arg_count);
  m.buffer = pk.buffer;
  if (store) {
    m.bulk_offset = core::load_le<std::uint64_t>(payload.data());
    m.bulk_length = core::load_le<std::uint64_t>(payload.data() + 8);
  } else {
    m.payload = payload;
  }
  Token token(p.ch, h.token, ++serials_);
  ++stats_.requests_handled;
  ++work_;
  const std::uint64_t outer = handling_;
  const bool outer_answered = answered_;
  handling_ = token.serial_;
  answered_ = false;
  const Disposition d = fn->request(token, m);
  handling_ = outer;  // from here on no copy of `token` answers
  answered_ = outer_answered;
  return d;
}

UNET_ALWAYS_INLINE
Disposition Endpoint::run_reply(Peer& p, const Header& h, std::span<const std::byte> payload,
                                BufferId b) noexcept {
  if (!p.awaiting(h.token) || p.slot(h.token).replied) {  // no such request, or answered twice
    ++stats_.stray_replies;
    return Disposition::kDone;
  }
  Peer::Pending& e = p.slot(h.token);
  e.replied = true;
  const Handler* fn = nullptr;
  if (h.kind == Kind::kErrorReply) {
    ++stats_.error_replies;
    e.status = error_status(h);
  } else if (handlers_.lookup(h.handler, HandlerKind::kReply, fn) != Status::kOk) {
    ++stats_.unknown_handler;
    e.status = Status::kNotFound;
  }
  if (!fn) return Disposition::kDone;
  Message m;
  m.channel = p.ch;
  m.handler = h.handler;
  m.args = std::span<const std::uint64_t>(h.args.data(), h.arg_count);
  m.payload = payload;
  m.buffer = b;
  m.cookie = e.cookie;
  ++stats_.replies_handled;
  ++work_;
  return fn->reply(m);
}

// Every message of a packet ran: its buffer goes back (and the credit it holds is owed to its
// sender) unless handlers kept it, in which case the last release() does that.
UNET_ALWAYS_INLINE
void Endpoint::done_with(const Packet& pk) noexcept {
  if (pk.kept > 0) {
    kept_[pk.buffer] = pk.credit;
    kept_refs_[pk.buffer] = pk.kept;
    return;
  }
  if (pk.credit != kKeptNoCredit) (void)peers_[pk.credit]->credits.request_done();
  if (pk.buffer != core::kNoBuffer) (void)net_->release(pk.buffer);
}

Status Endpoint::release(BufferId b) noexcept {
  if (b >= kept_.size() || kept_[b] == core::kNoChannel) return Status::kInvalidState;
  if (--kept_refs_[b] > 0) return Status::kOk;  // another message of its packet keeps it
  const ChannelId ch = kept_[b];
  kept_[b] = core::kNoChannel;
  if (ch != kKeptNoCredit) (void)peers_[ch]->credits.request_done();
  return net_->release(b);
}

// The peer has run every message of ours before sequence number `ack`: UD retires the kept
// copies, and when the arrival was `in_step` requests and stores up to there complete (any reply
// to them ran first). Out of step, the next in-step arrival completes them: the peer's missing
// messages are resent, each carrying the ack again.
UNET_ALWAYS_INLINE
void Endpoint::apply_ack(Peer& p, Seq ack, bool in_step, Time t) noexcept {
  if (p.tx) {
    const Status s = p.tx->on_ack(
        ack, t, [](Seq, std::uint64_t) {}, [&](Seq q, std::uint64_t) { resend(p, q); });
    if (s == Status::kInvalidArgument) ++stats_.bad_acks;
    if (s != Status::kOk) return;
  } else if (seq_before(p.next_seq, ack)) {  // acknowledges what we never sent
    ++stats_.bad_acks;
    return;
  }
  while (in_step && p.pending_count > 0) {
    const Peer::Pending e = p.slot(p.oldest_token);
    if (!seq_before(e.seq, ack)) break;
    ++p.oldest_token;
    --p.pending_count;
    complete(p.ch, e.cookie, e.status);  // may send a new request: the loop re-reads
  }
}

void Endpoint::complete(ChannelId ch, std::uint64_t cookie, Status s) noexcept {
  ++(s == Status::kOk ? stats_.completed_ok : stats_.completed_error);
  ++work_;
  if (on_completion_) on_completion_(ch, cookie, s);
}

// Per-peer timers: a failed core channel, UD resends, probes, and acks or credits that are due.
//
// A probe goes out when requests are outstanding but the peer has not been heard from in step for
// a while. UD: a credit message with the probe bit, which the peer answers with its credits, its
// ack and its next sequence number (an ack we could not use arrived while we missed a message),
// also sent when we are out of credit and the credit message may have been lost; it backs off
// from rto_initial to rto_max. RC: core's probe(), a zero-byte RDMA WRITE that the peer's QP
// acknowledges without a receive buffer, every `keepalive` while the peer stays silent; a dead
// peer's QP acknowledges nothing and the channel fails. (A credit message as keepalive could go
// out only once until answered, or it would pile up in a slow peer's receive buffers: a peer
// alive for that one and dead after it would never be found.)
UNET_ALWAYS_INLINE
void Endpoint::timers(Peer& p, Time t, bool recheck) noexcept {
  if (recheck && net_->channel_status(p.ch) != Status::kOk) return fail_peer(p, Status::kClosed);
  if (p.tx) {
    const Status s = p.tx->on_timer(
        t, [&](Seq q, std::uint64_t) { resend(p, q); }, [](Seq, std::uint64_t) {});
    if (s == Status::kRetryExceeded) return fail_peer(p, s);
  }
  const Time interval = p.tx ? p.probe_interval : Time(config_.keepalive);
  const bool silent = p.pending_count > 0 && t - p.last_heard >= interval;
  const bool starved = p.tx && p.credits.stalled();
  if ((silent || starved) && t - p.last_probe >= interval && send_probe(p) == Status::kOk) {
    p.last_probe = t;
    ++stats_.probes;
    if (p.tx) p.probe_interval = std::min(p.probe_interval * 2, config_.reliability.rto_max);
  }
  if (p.credits.should_send_explicit_credit() || p.rx.ack_due(t)) (void)send_credit(p, false);
}

// Core's operation completions: gets finish here; a failed write or send fails its channel.
UNET_ALWAYS_INLINE
void Endpoint::op_completions() noexcept {
  core::OpCompletion c;
  while (net_->completion(c) == Status::kOk) {
    if (c.tag & kGetTag) {
      const auto slot = static_cast<std::uint32_t>(c.tag);
      const Get g = gets_[slot];
      (void)free_gets_->push(slot);
      Peer* p = peer(g.ch);
      if (p && p->gets > 0) --p->gets;
      const Handler* fn = nullptr;
      Status s = c.status;
      if (handlers_.lookup(g.handler, HandlerKind::kReply, fn) == Status::kOk) {
        Message m;
        m.channel = g.ch;
        m.handler = g.handler;
        m.args = std::span<const std::uint64_t>(g.args.data(), g.arg_count);
        m.payload = std::span<const std::byte>(g.local, g.length);
        m.cookie = g.cookie;
        m.status = c.status;
        ++stats_.replies_handled;
        (void)fn->reply(m);
      } else if (s == Status::kOk) {
        ++stats_.unknown_handler;
        s = Status::kNotFound;
      }
      complete(g.ch, g.cookie, s);
      if (c.status != Status::kOk && p) fail_peer(*p, c.status);
    } else if (c.status != Status::kOk) {
      if (Peer* p = peer(c.channel)) fail_peer(*p, c.status);
    }
  }
}

// The channel failed or was closed: everything outstanding on it completes with `status`, and
// later calls on it return kClosed.
void Endpoint::fail_peer(Peer& p, Status status) noexcept {
  if (!p.open) return;
  p.open = false;
  if (const core::BufferId b = take_bundle(p); b != core::kNoBuffer)
    (void)net_->release(b);  // not sent
  if (p.tx) p.tx->abort([](Seq, std::uint64_t) {});
  if (auto it = std::find(open_.begin(), open_.end(), p.ch); it != open_.end()) open_.erase(it);
  while (p.pending_count > 0) {
    const Peer::Pending e = p.slot(p.oldest_token);
    ++p.oldest_token;
    --p.pending_count;
    complete(p.ch, e.cookie, e.status != Status::kOk ? e.status : status);
  }
}

}  // namespace unet::uam
