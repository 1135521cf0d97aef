// StreamEndpoint: a TCP-like byte stream over one U-Net UD endpoint, entirely in user space — the
// paper's U-Net TCP, which ran over an unreliable network.
//
// It also runs over an RC endpoint (core::Transport::kRc), as TCP runs over a reliable link: the
// same protocol, one RC channel per peer. A segment is then bound by the endpoint's buffer size
// rather than the path MTU (the device splits it into packets); nothing is lost, so
// retransmission only resends what a timer that fired early took for lost; and a channel that
// fails (the peer stopped answering the device's retries) fails its connections with kClosed at
// the next poll(). What it buys on rxe, where a UD send costs far more than an RC one, is in
// ulp/README.md ("Over RC").
//
// listen(port) / accept(), connect(peer, port) with a three-way handshake (simultaneous open
// works); send() copies into the connection's send buffer and returns how much it took; recv()
// copies out of its receive buffer, or out of the arrivals' own segment buffers: a connection
// keeps up to 16 large in-order arrivals there (the endpoint a quarter of its free queue) rather
// than copying them in first; shutdown() sends FIN once the data is out; close() also gives
// the connection back; abort() resets it. Segments carry byte sequence numbers and cumulative
// acks (segment_header.h); losses are repaired by retransmission with an RFC 6298 timeout
// (core/rtt_estimator.h) and by fast retransmit; NewReno congestion control (congestion.h) and the
// receiver's advertised window bound what is in flight. The connection states follow RFC 793
// (stream_state.h). A peer heard from for no longer than dead_peer_timeout fails the connection
// with kTimeout (keepalives go out at a quarter of it while idle), and a connect that gets no
// answer in connect_timeout fails with kTimeout.
//
// Application control, the paper's point: the send and receive buffer sizes are the
// application's (StreamConfig), the receive buffer is the advertised window, and stats(conn)
// gives the connection's RTT, RTO, congestion window, retransmission and loss counters at any
// time.
//
// Zero-copy sends (send_zero_copy, on a direct-access endpoint) queue application memory by
// reference: segments gather the header with it, and it is the application's again once
// zero_copy_completion() says so.
//
// A segment past a gap is kept at its place in the receive buffer (up to 16 separate ranges) and
// answered with an immediate duplicate ack; filling the gap acknowledges all of it at once.
// Limited transmit (RFC 3042) lets a small window still collect three duplicate acks. A segment
// the window would cut short waits for the next ack while ack_every segments are in flight
// (RFC 1122's silly window avoidance); one the data cuts short goes at once, as with TCP_NODELAY.
// Progress: poll(), or wait(conn, timeout), or an epoll loop on the endpoint's fd() or on each
// connection's conn_fd() and listener's listener_fd() (see there). One thread, as
// core::Endpoint. Set-up throws; the data path returns Status and never allocates (connection
// buffers are allocated at construction, max_connections of each).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "unet/core/descriptor_ring.h"
#include "unet/core/endpoint.h"
#include "unet/core/poll_clock.h"
#include "unet/core/rtt_estimator.h"
#include "unet/ulp/congestion.h"
#include "unet/ulp/segment_header.h"
#include "unet/ulp/socket_fd.h"
#include "unet/ulp/stream_state.h"

namespace unet::ulp {

// A peer is a core channel (UD or RC); a connection has a ConnId (kNoConn: none).
using core::ChannelId;
using Time = std::chrono::nanoseconds;  // since any fixed origin
using ConnId = std::uint32_t;
inline constexpr ConnId kNoConn = UINT32_MAX;

// The stream layer's own settings, the application's to choose (the network's are
// core::EndpointConfig, UD or RC).
struct StreamConfig {
  // Bytes per connection (a power of two is used). The send buffer holds what the peer has not
  // acknowledged, so it should exceed the peer's recv_buffer: then, with a full window in flight,
  // whole segments still wait to go when an ack opens it (ulp/README.md, "Send buffer").
  std::uint32_t send_buffer = 1024 * 1024;
  std::uint32_t recv_buffer = 256 * 1024;  // the most we advertise
  std::uint32_t max_connections = 16;
  std::uint32_t max_listeners = 8;
  std::uint32_t accept_backlog = 8;  // established connections waiting for accept()
  core::RttConfig rtt;
  std::uint32_t initial_window_segments = 4;
  // Timeouts here may be milliseconds::max() for never (verbs::clamp_timer: up to a century).
  std::chrono::milliseconds connect_timeout{3000};
  std::chrono::milliseconds dead_peer_timeout{3000};
  std::uint32_t max_retransmits = 15;  // timeouts in a row before the connection fails
  // Delayed acks (RFC 5681, 4.2): data that arrives in order is acknowledged once `ack_every`
  // segments of it wait, or when the first of them has waited `ack_delay`; data past a gap, a
  // filled gap, a duplicate, a FIN and a reopened window are acknowledged at once, and every
  // segment we send carries the ack anyway. 1: acknowledge in order data at the end of each poll().
  // ack_delay must stay below rtt.min_rto (the peer's, taken to be ours), or the peer's
  // retransmission timer fires before our ack.
  std::uint32_t ack_every = 2;
  std::chrono::microseconds ack_delay{200};
  // TIME_WAIT: long enough for the peer to resend a FIN whose ACK was lost (its RTO); it lasts
  // four of the connection's RTOs instead when that is longer (a slow or lossy path).
  std::chrono::milliseconds time_wait{200};
  // Selective acks (RFC 2018; SACK segments in segment_header.h): acks name up to 3 ranges held
  // past a gap, and a sender in fast recovery resends each hole they reveal on the next ack
  // instead of one hole per round trip (NewReno's partial acks). Both ends should agree; a
  // receiver without it sends none, a sender without it ignores them.
  bool selective_acks = true;
};

// A connection's counters and control state, readable at any time.
struct StreamStats {
  std::uint64_t bytes_sent = 0;      // payload bytes sent for the first time
  std::uint64_t bytes_received = 0;  // payload bytes accepted in order
  std::uint64_t segments_sent = 0;
  std::uint64_t segments_received = 0;
  std::uint64_t retransmitted_segments = 0;
  std::uint64_t timeouts = 0;
  std::uint64_t fast_retransmits = 0;
  std::uint64_t sack_resent = 0;  // holes resent in recovery, revealed by SACK blocks
  std::uint64_t dup_acks = 0;
  std::uint64_t held_out_of_order = 0;  // segments past a gap, kept at their place
  std::uint64_t out_of_order_drops =
      0;                           // segments past a gap seen already or not keepable (16 ranges)
  std::uint64_t window_drops = 0;  // segments beyond our receive window, dropped
  std::uint64_t zero_copy_segments =
      0;  // segments gathered from application memory (send_zero_copy)
  // Arrivals recv() read in their segment buffers, not copied into the receive buffer first.
  std::uint64_t kept_segments = 0;
  std::chrono::nanoseconds srtt{0};
  std::chrono::nanoseconds rto{0};
  std::uint32_t cwnd = 0;
  std::uint32_t ssthresh = 0;
  std::uint32_t peer_window = 0;
  std::uint32_t mss = 0;  // the segment payload: mss() or less when the peer takes less
  StreamState state = StreamState::kClosed;
};

// Counters of the endpoint as a whole (each connection has its StreamStats). Every segment that
// arrives is in exactly one of malformed, stray, refused_syn and segments.
struct StreamEndpointStats {
  std::uint64_t segments = 0;   // segments taken by a connection, or a SYN that opened one
  std::uint64_t malformed = 0;  // segments the codec refused (an empty one too)
  std::uint64_t stray = 0;      // segments for no connection (answered with RST unless RST)
  std::uint64_t resets_sent = 0;
  std::uint64_t refused_syn = 0;  // SYNs with no listener, a full backlog or no free connection
};

// What became of a zero-copy send (StreamEndpoint::send_zero_copy): either way the device no
// longer reads its memory, which is the application's again.
struct ZeroCopyCompletion {
  ConnId conn = kNoConn;
  std::uint64_t tag = 0;
  Status status =
      Status::kOk;  // kOk: the peer acknowledged every byte; else how the connection ended
};

// The stream endpoint (see the top of this file).
class StreamEndpoint {
 public:
  // `net` is a UD or an RC configuration. Throws std::invalid_argument for a bad configuration, and
  // verbs::Error as core::Endpoint does. Allocates every connection's buffers now.
  explicit StreamEndpoint(const core::EndpointConfig& net, const StreamConfig& config = {});
  ~StreamEndpoint();
  StreamEndpoint(const StreamEndpoint&) = delete;
  StreamEndpoint& operator=(const StreamEndpoint&) = delete;

  // The core endpoint underneath (do not poll it directly), the endpoint's counters, and the
  // largest segment payload (UD: the path MTU, RC: the buffer size, less the 20-byte header); a
  // connection to a peer that takes less sends less (StreamStats::mss).
  core::Endpoint& net() noexcept { return *net_; }
  const StreamEndpointStats& stats() const noexcept { return stats_; }
  std::uint32_t mss() const noexcept { return mss_; }

  // Peers: the endpoint's channels, set up like core's (throw on failure). accept_peer also
  // throws std::length_error, with the channel closed, when the peer's MTU or buffer size leaves
  // no room for a segment with a full set of SACK blocks.
  core::ChannelOffer offer_peer(const core::ChannelOptions& options = {}) {
    return net_->offer_channel(options);
  }
  ChannelId accept_peer(const core::ChannelOffer& offer, std::string_view peer_half);

  // --- connections (data path: Status, no allocation) ---
  // Accepts connections to `port` from then on: kInvalidState when listening there already,
  // kInvalidArgument for port 0, kNoResource past max_listeners.
  Status listen(std::uint16_t port) noexcept;
  // An established connection from `port`'s backlog; kNoResource when none waits.
  Status accept(std::uint16_t port, ConnId& out) noexcept;
  // The same, waiting up to `timeout` for a connection to come in (doing the progress work):
  // kTimeout when none did. kNotFound when nothing listens on `port`.
  Status accept(std::uint16_t port, ConnId& out, std::chrono::milliseconds timeout) noexcept;
  // Starts an active open to `port` at `peer`; the connection is usable once state() is
  // kEstablished (wait(conn, ...)). kNoResource when no connection is free.
  Status connect(ChannelId peer, std::uint16_t port, ConnId& out) noexcept;
  // Copies up to data.size() bytes into the send buffer; `accepted` says how many (0 and
  // kNoResource when it is full). kInvalidState before the connection is established or after
  // shutdown; the connection's error once it failed.
  Status send(ConnId c, std::span<const std::byte> data, std::size_t& accepted) noexcept;
  // Zero-copy send (the network endpoint must be direct-access, core::Mode::kDirectAccess):
  // queues all of `data` by reference — nothing is copied into the send buffer or a segment
  // buffer. Each segment is the header gathered with its slice of `data`, and retransmissions are
  // sent from `data` again, so the memory must stay untouched until zero_copy_completion()
  // returns `tag`. Its bytes take room in the send buffer as copied bytes do, and may follow or
  // precede send()'s in the stream. Whole or nothing: kNoResource when the send buffer lacks room
  // for all of it or kMaxZeroCopySends are pending on `c`; kInvalidArgument when empty or larger
  // than the send buffer; kInvalidState on a base-level endpoint and as send().
  static constexpr std::uint32_t kMaxZeroCopySends = 16;
  Status send_zero_copy(ConnId c, std::span<const std::byte> data, std::uint64_t tag) noexcept;
  // The oldest zero-copy completion (of any connection, released ones included); kNoResource
  // when none. A connection's completions come in the order of its sends.
  Status zero_copy_completion(ZeroCopyCompletion& out) noexcept;
  // Copies received bytes out; `got` says how many. kNoResource when none waits; kClosed with
  // got == 0 at the end of the stream (the peer shut down); the connection's error once it
  // failed and nothing is left to read.
  Status recv(ConnId c, std::span<std::byte> out, std::size_t& got) noexcept;
  // No more data from us: FIN after what is queued. The peer may still send.
  Status shutdown(ConnId c) noexcept;
  // shutdown() and give the connection back: its id is invalid afterwards; it finishes the close
  // in the background.
  Status close(ConnId c) noexcept;
  // Reset now (RST to the peer); the id is invalid afterwards.
  Status abort(ConnId c) noexcept;

  // The connection's state now; kNotFound for an invalid id.
  Status state(ConnId c, StreamState& out) const noexcept;
  // Counters and control state (RTT, RTO, cwnd...), a snapshot taken now; empty for an invalid id.
  std::optional<StreamStats> stats(ConnId c) const noexcept;

  // --- readiness, as epoll reports it (kReadable, kWritable: socket_fd.h) ---
  // The bits of `c` that hold now (0 for an invalid id). kReadable: recv() would not return
  // kNoResource — unread bytes, the peer's FIN (end of stream), or the connection's error.
  // kWritable: established or close-wait, not shut down, with room in the send buffer; or failed
  // (so a nonblocking connect's outcome, either way, shows as writable, as TCP's does).
  unsigned readiness(ConnId c) const noexcept;
  // Which bits of `c` signal its conn_fd (default kReadable, back to it when the id is reused):
  // kNotFound for an invalid id, kInvalidArgument for bits other than kReadable | kWritable.
  Status set_interest(ConnId c, unsigned events) noexcept;

  // For epoll/select, two ways.
  //
  // Per socket: conn_fd(c, fd) gives connection `c` its own file descriptor (socket_fd.h),
  // readable while readiness(c) & its interest is non-zero; listener_fd(port, fd) gives listener
  // `port` one, readable while an established connection waits in its backlog for accept(). Each
  // is made on the first call (the same fd after); a conn fd closes at close(c) / abort(c) (when
  // the id turns invalid), a listener fd with the endpoint. Both are level-triggered and also
  // readable while the endpoint has device work poll() must do. kNotFound for an invalid id or a
  // port nobody listens on (nothing created); kNoResource when the kernel refuses an fd (EMFILE).
  // The loop: add the socket fds to your epoll (EPOLLIN); when any fires, poll(), serve the ready
  // sockets (recv until kNoResource, send until it takes less, accept until kNoResource), then
  // arm() and poll() once more (the device-work member stays readable until arm(), and something
  // may have come in before it), serve again, and go back to epoll_wait with next_timer_ms() as
  // its timeout. Readiness is recomputed after every poll() and every call that can change it,
  // with a syscall only when a socket's state flips.
  //
  // Per endpoint: fd() turns readable when the endpoint may have work (an arrival or a
  // completion) for any of its ports and connections. Once it fires: poll(), serve the sockets,
  // then arm() before waiting on it again (arm() consumes the events and re-arms; poll once more
  // after it, as something may have come in between).
  Status conn_fd(ConnId c, int& out) noexcept;
  Status listener_fd(std::uint16_t port, int& out) noexcept;
  int fd() const noexcept { return net_->notify_fd(); }
  Status arm() noexcept { return net_->arm(); }
  // Milliseconds until the next timer (retransmission, keepalive, handshake, TIME_WAIT) needs a
  // poll(), rounded up; -1 when none runs. Pass it to epoll_wait as its timeout.
  int next_timer_ms() const noexcept;

  // Progress: arrivals, acks, retransmissions, output. Work done, or < 0 on a device error.
  int poll() noexcept;
  // Polls until `c` has something for the application (established, data, end of stream, send
  // room after being full, a zero-copy completion, or failure) or `timeout` passes (kTimeout).
  Status wait(ConnId c, std::chrono::milliseconds timeout) noexcept;

 private:
  struct Conn;
  struct PinnedSend;
  struct Listener;
  void arrival(const core::Descriptor& d) noexcept;
  // The members declared inline are the steps of an arrival, of output() and of poll(), defined
  // in stream_io.cc (which alone calls them) and inlined into their callers there.
  inline void on_segment(Conn& c, const SegmentHeader& h,
                         std::span<const std::byte> payload) noexcept;
  inline void on_ack(Conn& c, const SegmentHeader& h, std::size_t payload,
                     std::span<const SackBlock> sack) noexcept;
  void note_sack(Conn& c, std::span<const SackBlock> sack) noexcept;
  void resend_hole(Conn& c) noexcept;
  inline void on_data(Conn& c, const SegmentHeader& h, std::span<const std::byte> payload) noexcept;
  // on_segment()'s short path (header prediction), and the steps it shares with the long one.
  inline bool predicted(Conn& c, const SegmentHeader& h,
                        std::span<const std::byte> payload) noexcept;
  inline void ack_advances(Conn& c, const SegmentHeader& h, std::uint32_t flight) noexcept;
  inline void take(Conn& c, std::span<const std::byte> payload) noexcept;
  inline void owe_ack(Conn& c, bool now) noexcept;
  void on_syn(ChannelId peer, const SegmentHeader& h) noexcept;
  void send_ack_now(Conn& c) noexcept;
  void step(Conn& c, StreamEvent e) noexcept;
  void output(Conn& c) noexcept;
  Status send_segment(Conn& c, std::uint8_t flags, std::uint32_t seq, std::uint32_t len) noexcept;
  inline Status push_segment(Conn& c, std::uint8_t flags, std::uint32_t seq,
                             std::uint32_t len) noexcept;
  Status send_pinned(Conn& c, PinnedSend& z, const SegmentHeader& h, std::uint32_t len) noexcept;
  void segment_sent(Conn& c, std::uint8_t flags) noexcept;
  void zero_copy_completion(const core::OpCompletion& done) noexcept;
  void retire_zero_copy(Conn& c) noexcept;
  Status send_reset(ChannelId peer, const SegmentHeader& to, std::size_t payload) noexcept;
  void retransmit_first(Conn& c) noexcept;
  inline void timers(Conn& c, Time now, bool recheck) noexcept;
  void fail(Conn& c, Status error) noexcept;
  void free_conn(Conn& c) noexcept;
  void drop_kept(Conn& c) noexcept;
  // Inline, in stream_impl.h: on every arrival, send() and recv().
  inline Conn* find(ChannelId peer, std::uint16_t local, std::uint16_t remote) noexcept;
  inline Conn* get(ConnId c) noexcept;
  inline const Conn* get(ConnId c) const noexcept;
  Conn* new_conn(ChannelId peer, std::uint16_t local, std::uint16_t remote, ConnId& id) noexcept;
  inline std::uint32_t receive_window(const Conn& c) const noexcept;  // stream_impl.h
  unsigned readiness(const Conn& c) const noexcept;
  // A connection's fd, and every fd after poll(): nothing at all, not even a call, when none is
  // open.
  void refresh(ConnId c) noexcept {
    if (open_fds_ != 0) refresh_socket(c);
  }
  void refresh_fds() noexcept {
    if (open_fds_ != 0) refresh_sockets();
  }
  void refresh_socket(ConnId c) noexcept;
  void refresh_sockets() noexcept;
  void drop_fd(ConnId c) noexcept;

  StreamConfig config_;
  StreamEndpointStats stats_;
  std::unique_ptr<core::Endpoint> net_;
  std::uint32_t mss_ = 0;
  std::uint32_t window_cap_ = 0;  // what the free queue can absorb at once
  core::PollClock clock_;         // poll()'s reading inside poll(): its arrivals, timers and sends
  Time next_service_{};           // when poll() next runs core's service_channels()
  // The arrival being handled, until a connection keeps its buffer (take()); released after.
  core::BufferId arriving_ = core::kNoBuffer;
  // Arrival buffers connections keep for recv(), and how many they may: a quarter of the free
  // queue, so the posted buffers still hold the largest window we advertise.
  std::uint32_t kept_total_ = 0, kept_budget_ = 0;
  // net_->channel_changes() when poll() last asked each connection's channel for its status;
  // kLookAgain after a connection is made, so the next poll asks.
  static constexpr std::uint64_t kLookAgain = ~std::uint64_t{0};
  std::uint64_t seen_channel_changes_ = kLookAgain;
  std::vector<std::unique_ptr<Conn>> conns_;
  std::vector<std::unique_ptr<Listener>> listeners_;
  core::DescriptorRing<ZeroCopyCompletion> zero_copy_done_;
  std::uint16_t next_port_ = 49152;
  std::uint32_t isn_salt_ = 0;
  // Per-socket fds (after net_, so they close first). A slot per connection id and per listener
  // (listeners_[i] has listener_fds_[i]), all made at construction; an fd only when asked for.
  struct ConnSocket {
    std::unique_ptr<SocketFd> fd;
    unsigned interest = kReadable;
  };
  std::vector<ConnSocket> conn_sockets_;
  std::vector<std::unique_ptr<SocketFd>> listener_fds_;
  std::uint32_t open_fds_ = 0;  // poll() skips the readiness pass when none is open
};

}  // namespace unet::ulp
