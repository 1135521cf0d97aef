// StreamEndpoint internals shared by stream_endpoint.cc (set-up and calls) and stream_io.cc
// (segments, output, timers).
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <memory>

#include "unet/core/descriptor.h"
#include "unet/core/descriptor_ring.h"
#include "unet/core/serial_number.h"
#include "unet/ulp/range_set.h"
#include "unet/ulp/stream_endpoint.h"

namespace unet::ulp {

// The smallest message a segment needs: the header and a full set of SACK blocks (a pure ACK's
// payload).
inline constexpr std::uint32_t kMinSegment =
    static_cast<std::uint32_t>(kSegmentHeaderBytes + kMaxSackBlocks * kSackBlockBytes);

// Copies between the byte rings and segments: a segment that rides in a descriptor and a small
// recv without a call to memcpy.
using core::copy_bytes;

// Serial-number comparisons of 32-bit sequence numbers (RFC 1982).
using core::seq_le;
using core::seq_lt;

// A zero-copy send: [start, start + len) of a connection's sequence space is application memory
// at `addr` (the send buffer's bytes there are unused). It stays on its connection until the peer
// acked it (or the connection ended) and the device finished every send from it (`in_flight`).
struct StreamEndpoint::PinnedSend {
  std::uint32_t start = 0, len = 0;
  const std::byte* addr = nullptr;
  std::uint64_t tag = 0;
  std::uint32_t serial = 0;     // names it in core's operation tags
  std::uint32_t in_flight = 0;  // sends from it the device has not completed
};

// One connection. Sequence space: the SYN takes iss, data starts at iss + 1, our FIN takes the
// number after the last data byte. The send buffer holds [snd_una .. snd_end) of data (the SYN
// and FIN hold no bytes); the receive buffer holds [rcv_read .. rcv_nxt) not yet read.
struct StreamEndpoint::Conn {
  Conn(std::uint32_t send_bytes, std::uint32_t recv_bytes, std::uint32_t segment,
       const StreamConfig& cfg)
      : mss(segment),
        smask(std::bit_ceil(send_bytes) - 1),
        rmask(std::bit_ceil(recv_bytes) - 1),
        // Not zeroed: only bytes written are ever read, and zeroing would touch every page.
        sbuf(std::make_unique_for_overwrite<std::byte[]>(smask + 1)),
        rbuf(std::make_unique_for_overwrite<std::byte[]>(rmask + 1)),
        rtt(cfg.rtt),
        cc(segment, cfg.initial_window_segments) {}

  ConnId id = 0;
  bool used = false;
  bool released = false;       // the application gave it back (close/abort)
  bool accepted = false;       // passive: handed out by accept()
  bool in_backlog = false;     // passive: established, waiting in its listener's queue
  std::uint16_t listener = 0;  // passive: the port it came in on (0: active)
  ChannelId peer = core::kNoChannel;
  std::uint32_t mss = 0;  // the channel's largest message less the header: what the peer takes
  std::uint16_t lport = 0, rport = 0;
  StreamState state = StreamState::kClosed;
  Status error = Status::kOk;

  // Send side.
  std::uint32_t smask, rmask;
  std::unique_ptr<std::byte[]> sbuf, rbuf;
  std::uint32_t iss = 0, snd_una = 0, snd_nxt = 0, snd_end = 0, snd_wnd = 0;
  std::uint32_t snd_max = 0;  // after the highest sequence number ever sent
  bool fin_queued = false, fin_sent = false;
  // Receive side.
  std::uint32_t irs = 0, rcv_nxt = 0, rcv_read = 0;
  // Data that arrived past a gap, already in the receive buffer at its place: [start, end)
  // ranges beyond rcv_nxt. Filling the gap moves rcv_nxt over them. With selective acks, the
  // acks name them (the first kSackSent) in SACK blocks.
  static constexpr std::uint32_t kMaxHeld = 16;
  static constexpr std::uint32_t kSackSent = 3;  // 20 + 3 * 8 bytes: the ack stays in a descriptor
  RangeSet<kMaxHeld> held;
  // Send side, selective acks: what the peer's SACK blocks say it holds past snd_una, and how far
  // the holes between were resent in this recovery.
  RangeSet<kMaxHeld> sacked;
  std::uint32_t sack_resent = 0;
  std::uint32_t dup_count = 0;  // duplicate acks in a row (limited transmit)
  bool peer_fin = false, ack_pending = false, send_full = false;
  std::uint32_t ack_owed = 0;  // in-order segments not acknowledged yet (delayed acks)
  Time ack_due{};              // when the first of them must be acknowledged

  // In-order arrivals recv() reads in their segment buffers (one copy fewer than through the
  // receive buffer): [seq, seq + len) at `at`, oldest first, inside [rcv_read, rcv_nxt). The
  // rest of that range is in the receive buffer, at its place.
  struct Kept {
    core::BufferId buffer = core::kNoBuffer;
    const std::byte* at = nullptr;
    std::uint32_t seq = 0, len = 0;
  };
  static constexpr std::uint32_t kMaxKept = 16;
  static constexpr std::uint32_t kKeepFrom = 512;  // smaller payloads are copied: cheaper
  std::array<Kept, kMaxKept> kept{};
  std::uint32_t kept_first = 0, kept_count = 0;
  Kept& kept_front() noexcept { return kept[kept_first]; }

  // Zero-copy sends, oldest first.
  static constexpr std::uint32_t kMaxZeroCopy = StreamEndpoint::kMaxZeroCopySends;
  std::array<PinnedSend, kMaxZeroCopy> zc{};
  std::uint32_t zc_first = 0, zc_count = 0, zc_serial = 0;
  PinnedSend& zc_at(std::uint32_t i) noexcept { return zc[(zc_first + i) % kMaxZeroCopy]; }
  const PinnedSend& zc_at(std::uint32_t i) const noexcept {
    return zc[(zc_first + i) % kMaxZeroCopy];
  }
  // The zero-copy send holding sequence number `seq`; nullptr when the send buffer holds it.
  PinnedSend* pinned_at(std::uint32_t seq) noexcept {
    for (std::uint32_t i = 0; i < zc_count; ++i) {
      PinnedSend& z = zc_at(i);
      if (seq_le(z.start, seq) && seq_lt(seq, z.start + z.len)) return &z;
    }
    return nullptr;
  }
  // Bytes from `seq` (before snd_end) held in one place: one zero-copy send, or the send buffer
  // up to the next one. A segment never spans two.
  std::uint32_t run(std::uint32_t seq) const noexcept {
    for (std::uint32_t i = 0; i < zc_count; ++i) {
      const PinnedSend& z = zc_at(i);
      if (seq_lt(seq, z.start)) return z.start - seq;
      if (seq_lt(seq, z.start + z.len)) return z.start + z.len - seq;
    }
    return snd_end - seq;
  }

  core::RttEstimator rtt;
  NewReno cc;
  Time rto_deadline{};  // zero: the retransmission timer is off
  std::uint32_t expiries = 0;
  bool timing = false;
  std::uint32_t timed_seq = 0;
  Time timed_at{};
  Time last_heard{};
  Time last_keepalive{};
  Time deadline{};  // connect timeout (SYN states) or TIME_WAIT end
  StreamStats stats;

  std::uint32_t data_start() const noexcept { return iss + 1; }
  // Whether output() has something to send: data not sent yet, or our FIN.
  bool output_due() const noexcept { return seq_lt(snd_nxt, snd_end) || (fin_queued && !fin_sent); }
  std::uint32_t flight() const noexcept { return snd_nxt - snd_una; }
  std::uint32_t queued() const noexcept { return snd_end - snd_una; }  // data not yet acked
  // Nobody will ever hand this connection to the application: free it once it is closed.
  bool orphan() const noexcept { return released || (listener && !accepted && !in_backlog); }
  std::uint32_t unread() const noexcept { return rcv_nxt - rcv_read - (peer_fin ? 1 : 0); }
  std::byte* sbyte(std::uint32_t seq) noexcept {
    return sbuf.get() + ((seq - data_start()) & smask);
  }
};

inline StreamEndpoint::Conn* StreamEndpoint::get(ConnId c) noexcept {
  return c < conns_.size() && conns_[c]->used && !conns_[c]->released ? conns_[c].get() : nullptr;
}
inline const StreamEndpoint::Conn* StreamEndpoint::get(ConnId c) const noexcept {
  return c < conns_.size() && conns_[c]->used && !conns_[c]->released ? conns_[c].get() : nullptr;
}

inline StreamEndpoint::Conn* StreamEndpoint::find(ChannelId peer, std::uint16_t local,
                                                  std::uint16_t remote) noexcept {
  for (auto& c : conns_)
    if (c->used && c->peer == peer && c->lport == local && c->rport == remote) return c.get();
  return nullptr;
}

inline std::uint32_t StreamEndpoint::receive_window(const Conn& c) const noexcept {
  const std::uint32_t room = (c.rmask + 1) - (c.rcv_nxt - c.rcv_read);
  return std::min(room, window_cap_);
}

struct StreamEndpoint::Listener {
  Listener(std::uint16_t p, std::uint32_t backlog) : port(p), ready(backlog) {}
  std::uint16_t port;
  core::DescriptorRing<ConnId> ready;  // established, not yet accepted
};

}  // namespace unet::ulp
