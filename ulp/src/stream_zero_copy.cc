// StreamEndpoint zero-copy sends: application memory queued by reference, segments gathered from
// it by the device (core's send_from with a head), and its completion once the peer acknowledged
// it and the device is done reading it.
#include "stream_impl.h"

namespace unet::ulp {

namespace {

// core operation tags of zero-copy segments: bit 63, the connection, the send's serial.
constexpr std::uint64_t kZeroCopyTag = 1ull << 63;
constexpr std::uint64_t zero_copy_tag(ConnId c, std::uint32_t serial) noexcept {
  return kZeroCopyTag | std::uint64_t{c} << 32 | serial;
}

}  // namespace

Status StreamEndpoint::send_zero_copy(ConnId id, std::span<const std::byte> data,
                                      std::uint64_t tag) noexcept {
  Conn* c = get(id);
  if (!c) return Status::kNotFound;
  if (net_->config().mode != core::Mode::kDirectAccess) return Status::kInvalidState;
  if (c->error != Status::kOk) return c->error;
  if ((c->state != StreamState::kEstablished && c->state != StreamState::kCloseWait) ||
      c->fin_queued)
    return Status::kInvalidState;
  if (data.empty() || data.size() > c->smask + 1) return Status::kInvalidArgument;
  const auto n = static_cast<std::uint32_t>(data.size());
  if (n > (c->smask + 1) - c->queued() || c->zc_count == Conn::kMaxZeroCopy) {
    c->send_full = true;
    return Status::kNoResource;
  }
  PinnedSend& z = c->zc_at(c->zc_count++);
  z = {c->snd_end, n, data.data(), tag, ++c->zc_serial, 0};
  c->snd_end += n;
  c->send_full = false;
  output(*c);
  (void)net_->flush();
  refresh(id);
  return Status::kOk;
}

Status StreamEndpoint::zero_copy_completion(ZeroCopyCompletion& out) noexcept {
  return zero_copy_done_.pop_into(out) ? Status::kOk : Status::kNoResource;
}

// A segment of `h.seq` and `len` bytes, all inside one zero-copy send (output() cuts segments at
// their edges): the encoded header and the application's bytes gathered into one message.
Status StreamEndpoint::send_pinned(Conn& c, PinnedSend& z, const SegmentHeader& h,
                                   std::uint32_t len) noexcept {
  std::array<std::byte, kSegmentHeaderBytes> head;
  if (Status s = encode(h, len, head); s != Status::kOk) return s;
  const Status s =
      net_->send_from(c.peer, head, z.addr + (h.seq - z.start), len, zero_copy_tag(c.id, z.serial));
  if (s != Status::kOk) return s;
  ++z.in_flight;
  ++c.stats.zero_copy_segments;
  segment_sent(c, h.flags);
  return Status::kOk;
}

// The device finished a send poll() was told of: a zero-copy segment's completion lets go of its
// memory. (Other completions are plain sends that failed; the stream repairs those losses by
// retransmission.)
void StreamEndpoint::zero_copy_completion(const core::OpCompletion& done) noexcept {
  if (!(done.tag & kZeroCopyTag)) return;
  const auto id = static_cast<ConnId>((done.tag & ~kZeroCopyTag) >> 32);
  const auto serial = static_cast<std::uint32_t>(done.tag);
  if (id >= conns_.size()) return;
  Conn& c = *conns_[id];
  for (std::uint32_t i = 0; i < c.zc_count; ++i) {
    PinnedSend& z = c.zc_at(i);
    if (z.serial == serial && z.in_flight > 0) {
      --z.in_flight;
      return;
    }
  }
}

// Reports the zero-copy sends that are over, oldest first: acknowledged by the peer, or their
// connection ended first — and the device no longer reads them. One waits while the completion
// queue is full (the application drains it), so none is ever dropped.
void StreamEndpoint::retire_zero_copy(Conn& c) noexcept {
  while (c.zc_count > 0) {
    const PinnedSend& z = c.zc_at(0);
    const bool acked = seq_le(z.start + z.len, c.snd_una);
    if (z.in_flight > 0 || !(acked || c.state == StreamState::kClosed)) return;
    const Status how = acked ? Status::kOk : c.error != Status::kOk ? c.error : Status::kClosed;
    if (!zero_copy_done_.push({c.id, z.tag, how})) return;
    c.zc_first = (c.zc_first + 1) % Conn::kMaxZeroCopy;
    --c.zc_count;
  }
}

}  // namespace unet::ulp
