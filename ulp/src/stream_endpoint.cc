// StreamEndpoint set-up and the application's calls.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "stream_impl.h"
#include "unet/core/always_inline.h"
#include "unet/core/wait_until.h"
#include "unet/verbs/deadline.h"

namespace unet::ulp {

namespace {

// Copies `n` bytes at rcv_read out of the receive buffer (in two pieces at the wrap) and moves
// rcv_read past them.
template <class Conn>
UNET_ALWAYS_INLINE void copy_received(Conn& c, std::byte* to, std::uint32_t n) noexcept {
  const std::uint32_t at = (c.rcv_read - (c.irs + 1)) & c.rmask;
  const std::uint32_t first = std::min(n, c.rmask + 1 - at);
  copy_bytes(to, c.rbuf.get() + at, first);
  if (n > first) copy_bytes(to + first, c.rbuf.get(), n - first);
  c.rcv_read += n;
}

}  // namespace

StreamEndpoint::StreamEndpoint(const core::EndpointConfig& net, const StreamConfig& config)
    : config_(config), zero_copy_done_(std::size_t{config.max_connections} * kMaxZeroCopySends) {
  if (config.max_connections == 0 || config.max_listeners == 0 || config.accept_backlog == 0)
    throw std::invalid_argument(
        "StreamEndpoint: connections, listeners and backlog must be positive");
  if (config.ack_every == 0 || config.ack_delay.count() < 0 ||
      config.ack_delay >= config.rtt.min_rto)
    throw std::invalid_argument(
        "StreamEndpoint: ack_every must be positive, and ack_delay at least 0 and below "
        "rtt.min_rto");
  if (config.send_buffer < 1024 || config.recv_buffer < 1024 || config.send_buffer > (1u << 30) ||
      config.recv_buffer > (1u << 30))
    throw std::invalid_argument("StreamEndpoint: buffers must be 1 KiB .. 1 GiB");
  config.rtt.validate();
  // The timeouts are added to the clock: milliseconds::max() (or anything past a century) means
  // never, and a negative one is zero.
  for (auto* t : {&config_.connect_timeout, &config_.dead_peer_timeout, &config_.time_wait})
    *t = verbs::clamp_timer(*t);
  net_ = std::make_unique<core::Endpoint>(net);
  if (net_->max_message() < kMinSegment)
    throw std::invalid_argument(
        "StreamEndpoint: the endpoint's max_message() is too small for a segment");
  mss_ = net_->max_message() - static_cast<std::uint32_t>(kSegmentHeaderBytes);
  // Never advertise more than half the posted receive buffers can hold: UD drops what finds none
  // (RC would hold the sender back with RNR waits).
  window_cap_ = std::max<std::uint32_t>(1, net.free_queue_depth / 2) * mss_;
  kept_budget_ = net.free_queue_depth / 4;
  conns_.reserve(config.max_connections);
  for (std::uint32_t i = 0; i < config.max_connections; ++i) {
    conns_.push_back(std::make_unique<Conn>(config.send_buffer, config.recv_buffer, mss_, config));
    conns_.back()->id = i;
  }
  listeners_.reserve(config.max_listeners);
  conn_sockets_.resize(config.max_connections);
  listener_fds_.resize(config.max_listeners);
  isn_salt_ = static_cast<std::uint32_t>(core::CycleClock::now());
  net_->set_upcall([this](const core::Descriptor& d) { arrival(d); });
}

StreamEndpoint::~StreamEndpoint() = default;

ChannelId StreamEndpoint::accept_peer(const core::ChannelOffer& offer, std::string_view peer_half) {
  const ChannelId peer = net_->accept_offer(offer, peer_half);
  if (const std::uint32_t limit = net_->max_message(peer); limit < kMinSegment) {
    (void)net_->close_channel(peer);
    throw std::length_error(
        "StreamEndpoint: the peer takes messages of at most " + std::to_string(limit) +
        " bytes (its MTU or buffer size); a segment needs " + std::to_string(kMinSegment));
  }
  return peer;
}

// A free connection, reset for a new peer (its id in `id`); nullptr when all are in use.
StreamEndpoint::Conn* StreamEndpoint::new_conn(ChannelId peer, std::uint16_t local,
                                               std::uint16_t remote, ConnId& id) noexcept {
  for (std::uint32_t i = 0; i < conns_.size(); ++i) {
    Conn& c = *conns_[i];
    if (c.used) continue;
    id = i;
    c.used = true;
    c.released = c.accepted = c.in_backlog = false;
    c.listener = 0;
    c.peer = peer;
    // The peer's buffers or path MTU may be smaller than ours (core's per-channel limit).
    const std::uint32_t limit = net_->max_message(peer);
    c.mss = limit > kSegmentHeaderBytes ? std::min<std::uint32_t>(mss_, limit - kSegmentHeaderBytes)
                                        : mss_;
    c.lport = local;
    c.rport = remote;
    c.state = StreamState::kClosed;
    c.error = Status::kOk;
    c.iss = isn_salt_ += 0x9E3779B9u;  // a different start for every connection
    c.snd_una = c.iss;
    c.snd_nxt = c.iss;
    c.snd_max = c.iss;
    c.snd_end = c.iss + 1;
    c.snd_wnd = c.mss;
    c.fin_queued = c.fin_sent = false;
    c.irs = c.rcv_nxt = c.rcv_read = 0;
    c.peer_fin = c.ack_pending = c.send_full = false;
    c.ack_owed = 0;
    c.held.clear();
    c.sacked.clear();
    c.dup_count = 0;
    c.rtt = core::RttEstimator(config_.rtt);
    c.cc = NewReno(c.mss, config_.initial_window_segments);
    c.rto_deadline = Time{};
    c.expiries = 0;
    c.timing = false;
    c.last_heard = c.last_keepalive = clock_.now();
    c.stats = StreamStats{};
    seen_channel_changes_ = kLookAgain;  // its channel may have failed already
    return &c;
  }
  return nullptr;
}

void StreamEndpoint::free_conn(Conn& c) noexcept {
  drop_fd(c.id);  // the id is invalid from here on (or the application never had it)
  while (c.kept_count > 0) drop_kept(c);  // unread: nobody will read it now
  retire_zero_copy(c);
  if (c.zc_count > 0) return;  // the device still reads a zero-copy send: poll() frees it later
  c.used = false;
}

Status StreamEndpoint::listen(std::uint16_t port) noexcept {
  for (auto& l : listeners_)
    if (l->port == port) return Status::kInvalidState;
  if (port == 0 || listeners_.size() >= config_.max_listeners)
    return port == 0 ? Status::kInvalidArgument : Status::kNoResource;
  try {
    listeners_.push_back(std::make_unique<Listener>(port, config_.accept_backlog));  // set-up
  } catch (const std::bad_alloc&) {
    return Status::kNoResource;
  }
  return Status::kOk;
}

Status StreamEndpoint::accept(std::uint16_t port, ConnId& out) noexcept {
  for (auto& l : listeners_) {
    if (l->port != port) continue;
    ConnId id;
    if (!l->ready.pop_into(id)) return Status::kNoResource;
    conns_[id]->accepted = true;
    conns_[id]->in_backlog = false;
    out = id;
    if (SocketFd* fd = listener_fds_[static_cast<std::size_t>(&l - listeners_.data())].get())
      fd->set(!l->ready.empty());
    return Status::kOk;
  }
  return Status::kNotFound;
}

Status StreamEndpoint::accept(std::uint16_t port, ConnId& out,
                              std::chrono::milliseconds timeout) noexcept {
  Status s = Status::kNoResource;
  const Status w = core::wait_until(
      *net_, timeout, [this] { return poll(); },
      [&] {
        s = accept(port, out);
        return s != Status::kNoResource;
      });
  return w == Status::kOk ? s : w;
}

Status StreamEndpoint::connect(ChannelId peer, std::uint16_t port, ConnId& out) noexcept {
  if (Status s = net_->channel_status(peer); s != Status::kOk) return s;
  if (port == 0) return Status::kInvalidArgument;
  std::uint16_t local = 0;
  for (int tries = 0; tries < 16384 && local == 0;
       ++tries) {  // an ephemeral port unused with this peer
    const std::uint16_t p = next_port_;
    next_port_ = next_port_ == 65535 ? 49152 : next_port_ + 1;
    if (!find(peer, p, port)) local = p;
  }
  ConnId id = kNoConn;
  Conn* c = local ? new_conn(peer, local, port, id) : nullptr;
  if (!c) return Status::kNoResource;
  c->deadline = clock_.now() + config_.connect_timeout;
  step(*c, StreamEvent::kConnect);
  out = id;
  (void)net_->flush();
  return Status::kOk;
}

Status StreamEndpoint::send(ConnId id, std::span<const std::byte> data,
                            std::size_t& accepted) noexcept {
  accepted = 0;
  Conn* c = get(id);
  if (!c) return Status::kNotFound;
  if (c->error != Status::kOk) return c->error;
  if ((c->state != StreamState::kEstablished && c->state != StreamState::kCloseWait) ||
      c->fin_queued)
    return Status::kInvalidState;
  const std::uint32_t room = (c->smask + 1) - c->queued();
  const auto n = static_cast<std::uint32_t>(std::min<std::size_t>(room, data.size()));
  if (n == 0) {
    c->send_full = !data.empty();
    return data.empty() ? Status::kOk : Status::kNoResource;
  }
  // Copy into the ring at snd_end, in at most two pieces.
  const std::uint32_t at = (c->snd_end - c->data_start()) & c->smask;
  const std::uint32_t first = std::min(n, c->smask + 1 - at);
  copy_bytes(c->sbuf.get() + at, data.data(), first);
  if (n > first) copy_bytes(c->sbuf.get(), data.data() + first, n - first);
  c->snd_end += n;
  c->send_full = false;
  accepted = n;
  output(*c);
  (void)net_->flush();
  refresh(id);
  return Status::kOk;
}

// The oldest kept arrival is read (or unwanted): its buffer goes back to the free queue.
void StreamEndpoint::drop_kept(Conn& c) noexcept {
  (void)net_->release(c.kept_front().buffer);
  c.kept_first = (c.kept_first + 1) % Conn::kMaxKept;
  --c.kept_count;
  --kept_total_;
}

Status StreamEndpoint::recv(ConnId id, std::span<std::byte> out, std::size_t& got) noexcept {
  got = 0;
  Conn* c = get(id);
  if (!c) return Status::kNotFound;
  const std::uint32_t avail = c->unread();
  if (avail == 0) {
    if (c->error != Status::kOk) return c->error;
    return c->peer_fin ? Status::kClosed : Status::kNoResource;
  }
  const auto n = static_cast<std::uint32_t>(std::min<std::size_t>(avail, out.size()));
  const std::uint32_t before = receive_window(*c);
  if (c->kept_count == 0) {  // all of it in the receive buffer: the usual case of small reads
    copy_received(*c, out.data(), n);
  } else {  // in sequence order: kept arrivals from their buffers, the rest from rbuf
    for (std::uint32_t done = 0; done < n;) {
      std::uint32_t m = n - done;
      if (c->kept_count == 0) {
        copy_received(*c, out.data() + done, m);
      } else if (Conn::Kept& k = c->kept_front(); k.seq == c->rcv_read) {
        m = std::min(m, k.len);
        copy_bytes(out.data() + done, k.at, m);
        k.at += m;
        k.seq += m;
        k.len -= m;
        c->rcv_read += m;
        if (k.len == 0) drop_kept(*c);
      } else {
        m = std::min(m, k.seq - c->rcv_read);
        copy_received(*c, out.data() + done, m);
      }
      done += m;
    }
  }
  got = n;
  // Reading opened the window from (nearly) shut: tell the peer now, or it waits for a probe.
  if (before < mss_ && receive_window(*c) >= mss_) c->ack_pending = true;
  refresh(id);
  return Status::kOk;
}

Status StreamEndpoint::shutdown(ConnId id) noexcept {
  Conn* c = get(id);
  if (!c) return Status::kNotFound;
  if (c->fin_queued) return Status::kOk;
  Transition t;
  if (transition(c->state, StreamEvent::kClose, t) != Status::kOk) return Status::kInvalidState;
  step(*c, StreamEvent::kClose);
  (void)net_->flush();
  refresh(id);
  return Status::kOk;
}

Status StreamEndpoint::close(ConnId id) noexcept {
  Conn* c = get(id);
  if (!c) return Status::kNotFound;
  if (c->state == StreamState::kClosed || c->error != Status::kOk) {
    c->released = true;
    free_conn(*c);
    return Status::kOk;
  }
  Status s = shutdown(id);
  c->released = true;  // finishes in the background; freed when it reaches kClosed
  drop_fd(id);
  return s == Status::kInvalidState ? Status::kOk : s;
}

Status StreamEndpoint::abort(ConnId id) noexcept {
  Conn* c = get(id);
  if (!c) return Status::kNotFound;
  Transition t;
  if (transition(c->state, StreamEvent::kAbort, t) == Status::kOk) step(*c, StreamEvent::kAbort);
  (void)net_->flush();
  c->released = true;
  free_conn(*c);
  return Status::kOk;
}

Status StreamEndpoint::state(ConnId id, StreamState& out) const noexcept {
  const Conn* c = get(id);
  if (!c) return Status::kNotFound;
  out = c->state;
  return Status::kOk;
}

std::optional<StreamStats> StreamEndpoint::stats(ConnId id) const noexcept {
  const Conn* c = get(id);
  if (!c) return std::nullopt;
  StreamStats s = c->stats;  // the counters, plus the live control state read now
  s.srtt = c->rtt.srtt();
  s.rto = c->rtt.rto();
  s.cwnd = c->cc.cwnd();
  s.ssthresh = c->cc.ssthresh();
  s.peer_window = c->snd_wnd;
  s.mss = c->mss;
  s.state = c->state;
  return s;
}

int StreamEndpoint::next_timer_ms() const noexcept {
  const Time t = clock_.now();
  Time next = Time::max();
  auto at = [&](Time when) {
    if (when != Time{} && when < next) next = when;
  };
  for (const auto& p : conns_) {
    const Conn& c = *p;
    if (!c.used || c.state == StreamState::kClosed) continue;
    at(c.rto_deadline);
    if (c.state == StreamState::kSynSent || c.state == StreamState::kSynReceived ||
        c.state == StreamState::kTimeWait)
      at(c.deadline);
    else
      at(std::max(c.last_heard, c.last_keepalive) + config_.dead_peer_timeout / 4);
    if (c.ack_pending) at(t);
    if (c.ack_owed > 0) at(c.ack_due);
  }
  if (next == Time::max()) return -1;
  if (next <= t) return 0;
  return verbs::clamp_ms(std::chrono::ceil<std::chrono::milliseconds>(next - t));
}

Status StreamEndpoint::wait(ConnId id, std::chrono::milliseconds timeout) noexcept {
  Conn* c = get(id);
  if (!c) return Status::kNotFound;
  auto is_open = [c] {
    return c->state == StreamState::kEstablished || c->state == StreamState::kCloseWait;
  };
  const bool was_open = is_open();
  const std::uint32_t completions = zero_copy_done_.size();
  // Something to read, the peer's FIN, an error, the connection just opened, room to send again,
  // or closed.
  auto news = [&] {
    return c->unread() > 0 || c->peer_fin || c->error != Status::kOk || (is_open() && !was_open) ||
           (c->send_full && c->queued() <= c->smask / 2) || c->state == StreamState::kClosed ||
           zero_copy_done_.size() > completions;
  };
  return core::wait_until(
      *net_, timeout, [this] { return poll(); }, news);
}

}  // namespace unet::ulp
