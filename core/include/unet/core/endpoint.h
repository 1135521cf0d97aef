// Endpoint: a process's virtual network interface — U-Net's endpoint on RDMA verbs.
//
// An endpoint owns a protection domain, one completion queue, its queue pairs and its
// communication segment: one registered, pinned region carved into fixed-size buffers. The
// application talks to it through three queues of its own memory, as in the paper:
//   send queue     descriptors the application pushes (send / send_inline); poll() posts the
//                  pending ones as one post list per QP (doorbell batching), signaling selectively
//   receive queue  descriptors for arrivals (receive); small ones carry the payload inside
//   free queue     buffers handed back (release); poll() reposts them as receives in batches
// RC: one QP per channel, all on the endpoint's CQ and one shared receive queue (so one free
// queue serves every channel); the tag of an arrival is its local QP number. UD: one QP per
// endpoint; a channel is a peer's (GID, QPN, Q_Key); the tag is the sender's QPN and GID.
// Arrivals whose tag matches no open channel are dropped and counted, never delivered.
//
// Notification, three ways: poll() (returns how much work it did); wait(timeout), a blocking wait
// on the CQ's completion channel; and notify_fd() for epoll/select, re-armed with arm(). An upcall
// (set_upcall) makes poll() hand each arrival to a handler instead of the receive queue.
//
// Threading: an endpoint is used from one thread — poll, wait, the upcall and the send calls all
// run on it (its queues are SPSC rings, so a second thread may only be the other side of a ring).
// The upcall runs inside poll() on that thread and may call send/release, but not poll or wait.
// Set-up throws verbs::Error; the data path returns Status and never allocates, locks or throws.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "unet/core/buffer_table.h"
#include "unet/core/descriptor.h"
#include "unet/core/descriptor_ring.h"
#include "unet/core/registration_cache_stats.h"
#include "unet/core/remote_token.h"
#include "unet/status.h"

namespace unet::verbs {
class Context;
class ProtectionDomain;
class CompletionQueue;
class SharedReceiveQueue;
class QueuePair;
class MemoryRegion;
class CmConnection;
struct CmParams;
struct QpConfig;
struct ConnectionInfo;
}  // namespace unet::verbs

namespace unet::core {

struct RingChannel;
struct ControlOp;

// RC: reliable, one QP per channel. UD: unreliable datagrams, one QP for every channel.
enum class Transport : std::uint8_t { kRc, kUd };
// Base-level: messages go through the segment. Direct-access: also RDMA WRITE/READ and zero-copy
// sends between application memory and a peer's window.
enum class Mode : std::uint8_t { kBaseLevel, kDirectAccess };

// How to build an endpoint: device, transport, mode, and the sizes of the segment and queues.
// Sizes are clamped to the device; a bad combination makes the constructor throw.
struct EndpointConfig {
  std::string device;  // "" = the first device
  std::uint8_t port = 1;
  std::optional<std::uint32_t> gid_index;  // default: chosen like perftest
  // RoCE: choose among the GIDs of this netdev only ("eth0", or a VLAN's "eth0.100"); on a host
  // with several ports or VLANs both ends then use GIDs that reach each other. Empty: any.
  std::string netdev;
  Transport transport = Transport::kRc;
  Mode mode = Mode::kBaseLevel;
  std::uint32_t buffer_bytes = 4096;     // one segment buffer
  std::uint32_t buffers = 256;           // the segment holds buffers * buffer_bytes
  std::uint32_t free_queue_depth = 128;  // buffers kept posted for arrivals (< buffers)
  std::uint32_t send_queue_depth = 128;  // descriptors the send queue holds
  std::uint32_t recv_queue_depth = 256;  // descriptors the receive queue holds
  std::uint32_t inline_threshold = Descriptor::kInlineBytes;  // clamped to the device's inline
  // Segment-buffer sends up to this many bytes (clamped to the device's inline limit; 0: none)
  // are posted with IBV_SEND_INLINE: the device copies them at post, so the buffer is spare again
  // at once and the send needs no completion.
  std::uint32_t inline_post_limit = 256;
  std::uint32_t max_channels = 64;
  std::uint32_t signal_interval = 16;  // one signaled send in this many, per QP
  // RC: how long a silent peer takes to be declared dead, about 4.096 us * 2^ack_timeout *
  // (retry_count + 1): 0.47 s with the defaults. retry_count 7 would mean "forever" on rxe.
  std::uint8_t ack_timeout = 14;
  std::uint8_t retry_count = 6;
  // RC: how often a send is retried when the peer has no receive posted (7 = forever). 0 makes a
  // single overrun of the peer's free queue fail the channel (kRnrRetryExceeded): flow-control
  // tests use it to prove no overrun happens.
  std::uint8_t rnr_retry = 7;
  // rdma_cm channels: how long close_channel() waits for the disconnect to complete.
  std::chrono::milliseconds disconnect_timeout{2000};
  // RC ring channels (core/README.md, "Ring channels"): a channel (out of band or rdma_cm) grants
  // its peer a ring of ring_slots slots of ring_slot_bytes in our memory (less when buffer_bytes is
  // smaller: a slot carries at most max_message()); messages that fit a slot (ring_slot_bytes - 24
  // bytes) arrive by RDMA WRITE and poll() finds them there, with no receive buffer or
  // completion. ring_slots 0: no rings. At most max_rings channels have one (poll() reads each
  // ring; later channels are plain).
  std::uint32_t ring_slots = 64;        // a power of two, 2..16384
  std::uint32_t ring_slot_bytes = 256;  // a multiple of 8, 32..32768
  std::uint32_t max_rings = 64;
  // Direct-access mode:
  std::size_t max_pinned_bytes = 64u << 20;  // bound of the registration cache
  std::uint32_t max_operations = 256;        // ops and zero-copy sends in flight or unread
  std::uint32_t max_grants = 64;             // remote tokens outstanding
  // Quality of service, as perftest's -S and -T: the service level of every path and address
  // handle (0..15; IB picks the virtual lane from it) and the traffic class of their GRH (RoCE:
  // DSCP << 2 | ECN, from which the switch and NIC choose the priority that PFC protects; rdma_cm
  // connections ask it as their type of service). 0 is the fabric's default, lossy on most RoCE
  // set-ups. rdma_cm takes the service level from the path it resolves: an endpoint with one set
  // refuses rdma_cm channels (EINVAL) rather than ignore it.
  std::uint8_t service_level = 0;
  std::uint8_t traffic_class = 0;
  // RC: RDMA READs in flight per channel (positive; clamped to the device: mlx5 allows 16). A
  // channel takes as many from its peer as its device allows.
  std::uint8_t max_reads = 16;
};

// RC ring channels: the bytes one ring channel of an endpoint built from `config` allocates and
// pins (its ring, control block and send staging, page-aligned); 0 when it makes no rings. An
// endpoint has at most config.max_rings of them.
std::size_t ring_channel_bytes(const EndpointConfig& config) noexcept;

// What happened to a one-sided operation or zero-copy send (direct-access), or to any send that
// failed. Queued on the completion queue, read with Endpoint::completion().
enum class OpKind : std::uint8_t { kSend, kWrite, kRead };
struct OpCompletion {
  std::uint64_t tag = 0;  // the caller's tag (sends from buffers and inline: 0)
  ChannelId channel = kNoChannel;
  OpKind kind = OpKind::kSend;
  Status status = Status::kOk;
};

// Counters; the test of every mechanism reads one.
struct EndpointStats {
  std::uint64_t sent = 0;               // descriptors posted
  std::uint64_t inline_sent = 0;        // ... of which with IBV_SEND_INLINE
  std::uint64_t received = 0;           // descriptors put on the receive queue
  std::uint64_t inline_received = 0;    // ... of which copied into the descriptor
  std::uint64_t unknown_tag_drops = 0;  // arrivals for no open channel, dropped
  // UD arrivals without a GRH where nothing else names the sender (RoCE; IB with no source LID),
  // dropped: their buffer's GRH slot holds an earlier packet's (verbs/ud_source.h).
  std::uint64_t no_grh_drops = 0;
  std::uint64_t recv_overflow_drops = 0;  // arrivals dropped because the receive queue was full
  std::uint64_t send_errors = 0;          // sends completed with an error
  std::uint64_t doorbells = 0;            // post_send calls (each may carry many descriptors)
  std::uint64_t reposts = 0;              // post_recv calls for the free queue
  std::uint64_t upcalls = 0;              // arrivals handed to the upcall
  std::uint64_t wakeups = 0;              // completion-channel events consumed
  std::uint64_t ops_completed = 0;     // one-sided ops and zero-copy sends completed (any status)
  std::uint64_t completion_drops = 0;  // completions lost because the completion queue was full
  std::uint64_t qp_recoveries = 0;     // UD: the QP reset and back in RTS after it failed
  std::uint64_t probes = 0;            // RC liveness probes queued (probe())
  // Arrivals the device failed or flagged (a datagram longer than the buffer: a local length
  // error), dropped and their buffers reposted. UD: when it left the QP out of RTS, poll() brings
  // the QP back (qp_recoveries); RC: the channel it came on failed with it.
  std::uint64_t recv_errors = 0;
  // Ring channels:
  std::uint64_t ring_sent = 0;           // messages written into a peer's ring (of `sent`)
  std::uint64_t ring_received = 0;       // arrivals found in our rings (of `received` + `upcalls`)
  std::uint64_t ring_fallbacks = 0;      // ring-channel messages sent by SEND (too large for a
                                         // slot, no credit, the peer asleep, after an RDMA WRITE)
  std::uint64_t ring_credit_writes = 0;  // freed-slot totals written to a peer's credit word
  std::uint64_t ring_sleeps = 0;         // arm(): looks at a ring peer's published count (READs)
  std::uint64_t ring_protocol_errors = 0;  // malformed ring heads, impossible credits: dropped
  // The device's asynchronous events (service_channels()):
  std::uint64_t device_events = 0;  // read, ours or not (the device's queue is shared)
  std::uint64_t port_errors = 0;    // PORT_ERR on our port
  std::uint64_t gid_changes = 0;    // GID_CHANGE on our port
  std::uint64_t qp_errors = 0;      // QP_FATAL / QP_REQ_ERR / QP_ACCESS_ERR on one of our QPs
};

// How to set up one channel (offer_channel, accept_cm, connect_cm).
struct ChannelOptions {
  // RC: grant the peer a ring (EndpointConfig::ring_slots), in the offer line or in rdma_cm's
  // private data. The channel is a ring channel when both ends grant one; otherwise both use
  // SEND/RECV only.
  bool ring = true;
};

// One side's half of a channel set-up, exchanged out of band (text, one line).
// The QP half of an offer line (ChannelOffer::local, or a peer's half), without the fields core
// adds after it (a ring grant, the buffer size). kInvalidArgument for a malformed line.
Status offer_info(std::string_view line, verbs::ConnectionInfo& out) noexcept;

struct ChannelOffer {
  static constexpr std::size_t kMaxLine = 256;  // the longest `local`, newline included
  std::string local;                            // send this to the peer
  std::uint32_t slot = 0;
  // Names the endpoint that made the offer (a random number of its own): only that endpoint
  // accepts it. It stays here; the peer never sees it.
  std::uint64_t nonce = 0;
};

// How often uam's and ulp's poll() call Endpoint::service_channels() for their endpoint.
inline constexpr std::chrono::milliseconds kServiceInterval{100};

// The endpoint itself (see the top of this file).
class Endpoint {
 public:
  // Opens the device, registers the segment, creates the CQ, SRQ (RC) or QP (UD) and posts the
  // free queue. Throws verbs::Error on a bad config or a failed verbs call.
  explicit Endpoint(const EndpointConfig& config);
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  // The configuration as given, the counters, and the largest payload a descriptor carries
  // (EndpointConfig::inline_threshold clamped to the device and to max_message()).
  const EndpointConfig& config() const noexcept { return config_; }
  const EndpointStats& stats() const noexcept { return stats_; }
  std::uint32_t inline_threshold() const noexcept { return inline_threshold_; }
  // Segment-buffer sends up to this size are posted inline (EndpointConfig::inline_post_limit).
  std::uint32_t inline_post_limit() const noexcept { return inline_post_limit_; }
  // Largest message a send may carry: the buffer size (RC), or the smaller of it and the path MTU
  // (UD). Every send path refuses a longer one (kInvalidArgument), send_inline included:
  // inline_threshold() is never above it.
  std::uint32_t max_message() const noexcept { return max_message_; }
  // The largest message on open channel `ch`: max_message() within the peer's buffer size and,
  // on UD, its path MTU, as its offer (or an rdma_cm channel's private data) states them. Sends
  // on the channel refuse more. 0 for a channel that is not open.
  std::uint32_t max_message(ChannelId ch) const noexcept;
  // The largest RDMA WRITE or READ: the port's max_msg_sz (rxe 8 MiB, mlx5 1 GiB), at most 2 GiB.
  std::uint64_t max_rdma() const noexcept { return max_rdma_; }

  // --- channels (set-up: may throw verbs::Error) ---
  // Starts a channel: RC makes its QP (and, by default, our ring); UD has one QP for all.
  // Returns our half to send the peer: one line of at most ChannelOffer::kMaxLine bytes.
  ChannelOffer offer_channel(const ChannelOptions& options = {});
  // Completes the channel from `offer` and the peer's half; returns its id (the tag). Throws
  // (EINVAL) for an offer this endpoint did not make or accepted already.
  ChannelId accept_offer(const ChannelOffer& offer, std::string_view peer_half);
  // RC channels through rdma_cm instead of an out-of-band exchange: listen on an IP address of the
  // endpoint's device (port 0: any free one; returns the port), accept one channel, or connect to
  // a listening endpoint. Each step waits at most `timeout`, then throws verbs::Error (EPROTO for
  // a peer's malformed private data; EINVAL with a service_level set, which rdma_cm cannot take).
  std::uint16_t listen_cm(std::string_view address, std::uint16_t port);
  ChannelId accept_cm(std::chrono::milliseconds timeout, const ChannelOptions& options = {});
  ChannelId connect_cm(std::string_view address, std::uint16_t port,
                       std::chrono::milliseconds timeout, const ChannelOptions& options = {});
  // Closes a channel: later sends on it fail with kClosed and its arrivals are dropped as unknown.
  // An rdma_cm channel is also disconnected, so its peer sees the close; kTimeout when that took
  // longer than config().disconnect_timeout (the channel is closed all the same).
  Status close_channel(ChannelId ch) noexcept;
  // Control-path progress (not done by poll(), which makes no system call): the device's
  // asynchronous events are read, each with its outcome (a QP that broke outside any work request
  // fails its RC channel, or on UD is recovered at the next poll(); an SRQ error fails every RC
  // channel; a CQ overrun or fatal device error fails the endpoint; port and GID changes are
  // noted, below; stats() counts them); then for rdma_cm channels a peer's disconnect is answered
  // and its channel closed, so a peer's close_channel() completes and later sends here fail with
  // kClosed. Call it now and then, e.g. when poll() was idle. Returns how many channels the
  // peers closed.
  int service_channels() noexcept;
  // What the device's asynchronous events said, as of the last service_channels() (which reads
  // them: see below). port_active(): our port is ACTIVE (as queried when the endpoint was made;
  // a PORT_ERR clears it, PORT_ACTIVE sets it). gid_current(): our GID is still at its index
  // (checked at each GID_CHANGE: on RoCE an address removed takes its GID away; channels made
  // since need the new one). device_failed(): our CQ overran or the device had a fatal error;
  // every channel failed and poll() returns -1.
  bool port_active() const noexcept { return port_active_; }
  bool gid_current() const noexcept { return gid_current_; }
  bool device_failed() const noexcept { return device_failed_; }
  // kOk for an open channel, kClosed for a closed or failed one, kNotFound for no such channel.
  Status channel_status(ChannelId ch) const noexcept;
  // Counts channels closed or failed: a layer that watches channel_status() every poll need look
  // again only when this has moved.
  std::uint64_t channel_changes() const noexcept { return channel_changes_; }
  // Whether `ch` is a ring channel (both ends granted a ring).
  bool ring_channel(ChannelId ch) const noexcept;

  // --- data path (never throws, never allocates) ---
  // Takes a spare buffer to compose a message in (base-level). kNoResource when none is spare.
  Status acquire_buffer(BufferId& out) noexcept;
  // The bytes of buffer `b` (buffer_bytes long; a ring slot's payload room for a ring arrival
  // read in place); empty for an invalid id.
  std::span<std::byte> buffer(BufferId b) noexcept;
  // Pushes a descriptor: `length` bytes of buffer `b`, which the application owns, onto the send
  // queue; the endpoint owns `b` until the send completes.
  Status send(ChannelId ch, BufferId b, std::uint32_t length) noexcept;
  // Pushes a small message carried inside the descriptor (length <= inline_threshold()).
  Status send_inline(ChannelId ch, std::span<const std::byte> payload) noexcept;
  // The same two with 32 bits of immediate data, delivered in the arrival's Descriptor::imm
  // (flag kImm). Emulated endpoints carry their ids in it.
  Status send(ChannelId ch, BufferId b, std::uint32_t length, std::uint32_t imm) noexcept;
  Status send_inline(ChannelId ch, std::span<const std::byte> payload, std::uint32_t imm) noexcept;
  // RC: a liveness probe, a zero-byte RDMA WRITE that the peer's QP acknowledges by itself —
  // no receive buffer of the peer's and none of its software — so probes may repeat while a live
  // peer is slow to poll. A peer that is gone acknowledges nothing: the QP's retries run out
  // (about 0.5 s with the defaults) and the channel fails, as for any send. kInvalidState on UD.
  Status probe(ChannelId ch) noexcept;
  // Progress: posts pending sends, reaps completions, fills the receive queue, reposts freed
  // buffers. Returns how much work it did (0 = idle), or a negative value on a device error.
  // UD: when a send failed at the device (no route while a link is down) the QP is in the error
  // state; poll() resets it and moves it back to RTS with the same number, so the channels stay
  // (stats().qp_recoveries). Sends posted meanwhile complete with kFlushed (channel kNoChannel).
  int poll() noexcept;
  // Posts the pending sends now (poll()'s first step alone), e.g. a reply an upcall pushed.
  // Returns how many were posted, or a negative value on a device error. Not from an upcall.
  // Inline: the layers above call it every poll, mostly with nothing pending.
  int flush() noexcept { return send_queue_.empty() ? 0 : flush_pending(); }
  // Pops the oldest arrival. kNoResource when the receive queue is empty. A non-inline arrival's
  // buffer belongs to the application until release(). Inline: an idle poll loop calls it every
  // time round.
  Status receive(Descriptor& out) noexcept {
    return recv_queue_.pop_into(out) ? Status::kOk : Status::kNoResource;
  }
  // Hands a buffer back to the free queue — or, when the free queue already holds
  // free_queue_depth buffers (one acquired and given back unsent), to the spare buffers.
  // Refused (kInvalidState) unless the application owns it.
  Status release(BufferId b) noexcept {
    if (b >= config_.buffers) return release_ring_slot(b);  // a ring arrival read in place
    // The free queue holds at most free_queue_depth buffers: the device's receive queue has room
    // for that many, and the CQ is sized for that many arrivals. A buffer beyond them (acquired
    // and given back unsent) becomes spare instead.
    if (buffers_.in_free_queue() >= config_.free_queue_depth) return buffers_.give_back(b);
    if (Status s = buffers_.release(b); s != Status::kOk) return s;
    (void)free_queue_.push(b);  // capacity == buffers: cannot be full
    return Status::kOk;
  }

  // --- direct-access mode (kDirectAccess; write/read need RC) ---
  // Grants peers access to exactly [addr, addr+len) with `access` (kRemoteRead | kRemoteWrite),
  // through a dedicated registration. Slow path (registers memory).
  Status grant(void* addr, std::size_t len, unsigned access, RemoteToken& out) noexcept;
  // Revokes a token: a peer's later access fails with a remote access error, memory unchanged.
  Status revoke(const RemoteToken& token) noexcept;
  // RDMA WRITE of [local, local+len) — any memory, registered through the cache — to `offset` in
  // the peer's window `token`. Completes on completion() with `tag`. Up to inline_post_limit()
  // bytes (here and in send_from without a head) are copied when posted instead, unregistered.
  // kNoResource (write, read, send_from): max_operations operations are in flight or completed
  // and not yet read with completion(); poll(), read completions, and try again.
  Status write(ChannelId ch, const void* local, std::size_t len, const RemoteToken& token,
               std::uint64_t offset, std::uint64_t tag) noexcept;
  // RDMA READ from `offset` in the peer's window into [local, local+len).
  Status read(ChannelId ch, void* local, std::size_t len, const RemoteToken& token,
              std::uint64_t offset, std::uint64_t tag) noexcept;
  // Zero-copy send from any memory (no copy into the segment); the memory must stay untouched
  // until its completion() arrives.
  Status send_from(ChannelId ch, const void* local, std::uint32_t len, std::uint64_t tag) noexcept;
  // The same with `head` (up to kMaxSendHead bytes, copied now into registered memory the
  // endpoint keeps per operation) in front of the payload, in one message: a protocol header
  // gathered with application data, neither copied into a segment buffer. head.size() + len must
  // fit max_message().
  static constexpr std::size_t kMaxSendHead = 64;
  Status send_from(ChannelId ch, std::span<const std::byte> head, const void* local,
                   std::uint32_t len, std::uint64_t tag) noexcept;
  // Pops the oldest operation completion; kNoResource when none. Inline, as receive().
  Status completion(OpCompletion& out) noexcept {
    return completions_.pop_into(out) ? Status::kOk : Status::kNoResource;
  }
  // The registration cache's counters (pinned bytes, hits, evictions...).
  RegistrationCacheStats registration_stats() const noexcept;
  // Registers [addr, addr+len) through the registration cache now, so that the first write, read
  // or send_from of it finds the registration instead of making one: for memory a program will
  // move from or into again and again. Slow path (registers memory); the registration stays
  // cached as one an operation made does (the cache's bound may evict it; forget() drops it).
  Status pin(const void* addr, std::size_t len) noexcept;
  // Call before freeing or unmapping memory that write/read/send_from used: the cache forgets
  // its registrations of [addr, addr+len), so new memory at the same address is registered
  // afresh instead of reusing the old pages' keys. Ranges still in use by an operation are
  // dropped when it completes. (Like every registration cache without allocator hooks, it cannot
  // see a free() it is not told about.)
  void forget(const void* addr, std::size_t len) noexcept;

  // --- resources: for layers above that reserve room, and for reports ---
  std::uint32_t send_queue_space() const noexcept {
    return send_queue_.capacity() - send_queue_.size();
  }
  std::uint32_t spare_buffers() const noexcept { return buffers_.spare(); }
  // Freed buffers are reposted as receives once this many wait, or by a poll() that reaped
  // nothing (so up to one fewer may be unposted at any time).
  std::uint32_t repost_batch() const noexcept { return repost_batch_; }
  std::size_t segment_bytes() const noexcept { return segment_bytes_; }  // pinned by the segment
  // Rings allocated: of channels offered or open with one, and of closed ones whose slots the
  // application still holds (their memory goes with the last release()).
  std::uint32_t rings() const noexcept {
    return ring_id_slots_ ? config_.max_rings - static_cast<std::uint32_t>(free_ring_ids_.size())
                          : 0;
  }
  // Arrivals name buffers below this id: segment buffers, then (ring channels) ring slots.
  BufferId buffer_id_limit() const noexcept { return config_.buffers + ring_id_slots_; }
  std::uint32_t queue_pairs() const noexcept { return static_cast<std::uint32_t>(lanes_.size()); }

  // --- notification ---
  // A file descriptor that turns readable when a completion may be waiting; add it to epoll. Once
  // it fires: poll() and take the arrivals, then arm() before waiting on it again.
  int notify_fd() const noexcept;
  // Consumes the fd's pending events and arms the CQ so the next completion makes it readable.
  // Call poll() once after arming: a completion may have come in between.
  Status arm() noexcept;
  // Blocks until an arrival is on the receive queue or was handed to the upcall, or an operation
  // completion is queued, or `timeout` passes (kTimeout). Does the progress work itself.
  Status wait(std::chrono::milliseconds timeout) noexcept;
  // The handler poll() runs for each arrival instead of queueing it (nullptr: queue again). A
  // non-inline arrival's buffer is the application's, to release() — from the handler or later.
  // The descriptor is valid until the handler returns. The handler may send, flush, release and
  // close channels, but not poll() or wait(): arrivals are not taken from inside one.
  using Upcall = std::function<void(const Descriptor&)>;
  void set_upcall(Upcall handler);

 private:
  struct Channel;
  struct Lane;
  struct Verbs;

  std::uint32_t add_lane(verbs::QueuePair& qp, ChannelId ch);
  // Channel `ch` when it is open; else nullptr, and `why` is channel_status()'s answer.
  inline const Channel* open_channel(ChannelId ch, Status& why) const noexcept;
  using CmConnect = std::function<std::unique_ptr<verbs::CmConnection>(const verbs::CmParams&)>;
  ChannelId open_cm(std::chrono::milliseconds timeout, const ChannelOptions& options,
                    const CmConnect& connect);
  verbs::QpConfig rc_qp_config() const;
  inline Status push_buffer(ChannelId ch, BufferId b, std::uint32_t length, std::uint16_t flags,
                            std::uint32_t imm) noexcept;
  inline Status push_inline(ChannelId ch, std::span<const std::byte> payload, std::uint16_t flags,
                            std::uint32_t imm) noexcept;
  // The steps of poll(), declared inline: they are defined in endpoint_data.cc and used only
  // there, where each is inlined into poll() (its callers pay no call and return per step).
  inline int post_pending_sends() noexcept;
  int flush_pending() noexcept;  // flush() with sends pending
  inline int reap() noexcept;
  // Handle completion i of the batch reap() just polled.
  inline void send_completed(std::size_t i) noexcept;
  inline void arrived(std::size_t i) noexcept;
  inline void describe_arrival(Descriptor& d, ChannelId ch, BufferId b, std::uint32_t len, bool imm,
                               std::uint32_t imm_value) noexcept;
  inline void build_wr(const Descriptor& d, Channel& ch, std::uint32_t n) noexcept;
  // reap() for the slow paths of other files (a UD QP's recovery drains the CQ with it).
  int reap_completions() noexcept;
  void arrived_upcall(ChannelId ch, BufferId b, std::uint32_t len, bool imm,
                      std::uint32_t imm_value) noexcept;
  int repost_free_buffers() noexcept;
  void prepare_post_lists() noexcept;
  void retire_through(Lane& lane, std::uint32_t seq, Status status) noexcept;
  void retire_one(Lane& lane, Status status) noexcept;
  Status push_op(ChannelId ch, OpKind kind, const void* local, std::size_t len,
                 const RemoteToken* token, std::uint64_t offset, std::uint64_t tag,
                 std::span<const std::byte> head = {}) noexcept;
  void complete(const OpCompletion& c) noexcept;
  void settle(std::uint32_t what, ChannelId ch, Status status) noexcept;
  Status drain_events() noexcept;
  void fail_lane(Lane& lane, std::uint32_t seq, Status status) noexcept;
  void abort_lane(Lane& lane, Status status) noexcept;
  void post_refused(Lane& lane) noexcept;
  int recover_ud_qp() noexcept;
  void arrival_failed(std::size_t i) noexcept;
  bool ud_failed() const noexcept;
  void service_device() noexcept;  // endpoint_events.cc
  // Ring channels: set-up and slow paths in endpoint_ring.cc, data-path steps in
  // endpoint_data.cc (inlined into poll() and post_pending_sends()).
  bool make_ring(Channel& ch);
  void offer_ring(Channel& ch, std::string& offer_line);
  void refuse_cm_service_level(const char* op) const;
  std::vector<std::byte> cm_private_data(const Channel& ch) const;
  void apply_cm_private_data(Channel& ch, ChannelId id);
  void drop_unopened_ring(Channel& ch) noexcept;
  void open_ring(Channel& ch, ChannelId id, const void* peer_memory, std::uint32_t peer_slots,
                 std::uint32_t peer_slot_bytes);
  void stop_ring(Channel& ch) noexcept;
  void reclaim_ring(Channel& ch) noexcept;
  Status release_ring_slot(BufferId b) noexcept;
  std::span<std::byte> ring_slot(BufferId b) noexcept;
  inline bool ring_route(const Descriptor& d, RingChannel& r) noexcept;
  inline int post_lone(Descriptor& d, Channel& ch, Lane& lane, bool small) noexcept;
  inline void build_ring_wr(const Descriptor& d, RingChannel& r, std::uint32_t n,
                            std::uint32_t lane_seq) noexcept;
  inline int poll_rings() noexcept;
  inline int take_ring(RingChannel& r, std::uint32_t most) noexcept;
  inline void ring_before_send(RingChannel& r) noexcept;
  void ring_malformed(RingChannel& r) noexcept;
  int send_ring_credits() noexcept;
  Status post_control(Channel& ch, const ControlOp& op) noexcept;
  void ring_sleep() noexcept;
  void ring_relook() noexcept;
  void ring_look(RingChannel& r) noexcept;
  void ring_wake() noexcept;

  EndpointConfig config_;
  EndpointStats stats_;
  std::uint32_t inline_threshold_ = 0;
  std::uint64_t channel_changes_ = 0;  // channel_changes()
  std::uint32_t inline_post_limit_ = 0;
  // RC: the last arrival's QP number and its channel (QP numbers 0 and 1 are never RC QPs).
  std::uint32_t last_rc_qpn_ = 0;
  ChannelId last_rc_channel_ = kNoChannel;
  std::uint32_t max_message_ = 0;
  std::uint64_t max_rdma_ = 0;
  std::uint64_t offer_nonce_ = 0;       // in every ChannelOffer this endpoint makes
  std::uint32_t repost_batch_ = 1;      // reposts wait for this many freed buffers
  std::uint32_t recovery_wait_ = 0;     // UD: polls before the next recovery attempt
  std::uint32_t recovery_backoff_ = 0;  // ... and the wait after the next failed one
  std::unique_ptr<Verbs> v_;            // device objects (verbs/ types stay out of this header)
  struct FreeSegment {
    void operator()(std::byte* p) const noexcept;
  };
  std::unique_ptr<std::byte[], FreeSegment> segment_;  // page-aligned: buffers, then UD GRH slots
  std::size_t segment_bytes_ = 0;
  BufferTable buffers_;
  DescriptorRing<Descriptor> send_queue_;
  DescriptorRing<Descriptor> recv_queue_;
  DescriptorRing<BufferId> free_queue_;  // released buffers waiting to be reposted
  DescriptorRing<OpCompletion> completions_;
  std::vector<std::unique_ptr<Channel>> channels_;
  std::vector<std::unique_ptr<Lane>> lanes_;  // one per QP: in-flight sends, signaling state
  Upcall upcall_;
  bool in_upcall_ = false;  // an upcall runs: ring memory is not freed under it
  bool ud_ = false;         // config_.transport == Transport::kUd
  // The device's asynchronous events, as service_channels() last saw them (endpoint_events.cc).
  bool device_failed_ = false;  // our CQ or the device broke: poll() returns -1
  bool port_active_ = true;
  bool gid_current_ = true;
  bool cq_skipped_ = false;  // the last poll() left the CQ for this one (rings brought arrivals)
  // Ring channels: rings by index (ring buffer ids derive from it), the free indices, the rings
  // poll() reads and, for each, the head word of the slot it expects next.
  std::uint32_t ring_id_slots_ = 0;    // max_rings * ring_slots: ids past the segment's buffers
  std::uint32_t ring_slot_shift_ = 0;  // log2(ring_slots)
  std::vector<RingChannel*> rings_;
  std::vector<std::uint32_t> free_ring_ids_;
  std::vector<RingChannel*> polled_;
  std::vector<const std::uint64_t*> heads_;
  bool credits_due_ = false;  // a ring owes its writer a credit update
  bool asleep_ = false;       // arm() told the ring peers we sleep
  std::uint32_t polls_since_arm_ = 0;
};

// A layer's poll() step for core's control path (the device's asynchronous events, rdma_cm
// disconnects): runs ep.service_channels() once `now` reaches `due`, and puts `due` one
// kServiceInterval later. `now` and `due` are on the layer's clock.
inline void service_when_due(Endpoint& ep, std::chrono::nanoseconds now,
                             std::chrono::nanoseconds& due) noexcept {
  if (now < due) [[likely]]
    return;
  due = now + kServiceInterval;
  (void)ep.service_channels();
}

}  // namespace unet::core
