// DatagramEndpoint: UDP-like datagrams with ports over one U-Net UD endpoint.
//
// Ports are bound on the endpoint; send_to(src_port, peer, dst_port, bytes) sends a datagram of up
// to kMaxDatagram (64 KiB) bytes to a port at a peer (a UD channel, set up like core's). A
// datagram larger than one UD message is cut into fragments of the path MTU less the 20-byte
// header (datagram_header.h) and reassembled at the receiver in bounded memory (reassembler.h).
// Unreliable like UDP: a datagram arrives whole or not at all — never partial or corrupted (the
// transport checks each packet's ICRC; reassembly takes each fragment once and only from the
// datagram it names). What is lost, late or unwanted is dropped and counted in stats(): a
// datagram for an unbound port, a full port queue, an incomplete datagram past the reassembly
// timeout, a malformed header. send_to refuses an oversize datagram (kInvalidArgument) and one
// the send path cannot take whole right now (kNoResource, nothing sent).
//
// Arrivals wait in the bound port's queue (up to port_queue datagrams) until recv_from copies
// them out; a one-fragment datagram stays in its segment buffer until then, so a port that is not
// read holds buffers — bounded by port_queue. Progress: poll(), or wait(port, timeout), or an
// epoll loop on the endpoint's fd() or on each port's own port_fd() (see there).
// Threading as core::Endpoint: one thread. Set-up throws; the data path returns Status and does
// not allocate.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "unet/core/descriptor_ring.h"
#include "unet/core/endpoint.h"
#include "unet/core/poll_clock.h"
#include "unet/ulp/datagram_header.h"
#include "unet/ulp/reassembler.h"
#include "unet/ulp/socket_fd.h"

namespace unet::ulp {

// A peer is a core UD channel.
using core::ChannelId;

// The datagram layer's own settings (the network's are core::EndpointConfig, UD).
struct DatagramConfig {
  std::uint32_t port_queue = 64;  // datagrams waiting per bound port
  std::uint32_t max_ports = 64;   // ports bound at once
  ReassemblyConfig reassembly;
};

// Counters of one datagram endpoint; every drop is in one of them. Every fragment received is
// counted once more, as malformed, unbound_drops, or (whole datagrams) delivered or
// queue_full_drops, or by reassembly: fragments_received == malformed + unbound_drops + delivered
// + queue_full_drops + ReassemblyStats::held + duplicates + inconsistent + no_slot.
struct DatagramStats {
  std::uint64_t sent = 0;  // datagrams sent
  std::uint64_t fragments_sent = 0;
  std::uint64_t delivered = 0;  // datagrams queued on a port
  std::uint64_t received = 0;   // datagrams taken by recv_from
  std::uint64_t fragments_received = 0;
  std::uint64_t unbound_drops = 0;     // fragments for a port nobody bound (n for n fragments)
  std::uint64_t queue_full_drops = 0;  // datagrams dropped because their port's queue was full
  std::uint64_t malformed = 0;         // messages the header codec refused
};

// Who sent a datagram that recv_from returned.
struct DatagramInfo {
  ChannelId peer = core::kNoChannel;
  std::uint16_t src_port = 0;
  std::uint32_t length = 0;
};

// The datagram endpoint (see the top of this file).
class DatagramEndpoint {
 public:
  // `net` must be a UD configuration (throws std::invalid_argument otherwise).
  explicit DatagramEndpoint(const core::EndpointConfig& net, const DatagramConfig& config = {});
  ~DatagramEndpoint();
  DatagramEndpoint(const DatagramEndpoint&) = delete;
  DatagramEndpoint& operator=(const DatagramEndpoint&) = delete;

  // The core endpoint underneath (do not poll it directly), and the counters of this layer and
  // of reassembly.
  core::Endpoint& net() noexcept { return *net_; }
  const DatagramStats& stats() const noexcept { return stats_; }
  const ReassemblyStats& reassembly_stats() const noexcept { return reassembly_.stats(); }

  // Peers: UD channels, set up like core's (throw on failure). accept_peer also throws
  // std::length_error, with the channel closed, when the peer's MTU or buffer size leaves a
  // fragment less than kMinStride bytes or splits a 64 KiB datagram into more fragments than the
  // send path holds.
  core::ChannelOffer offer_peer() { return net_->offer_channel(); }
  ChannelId accept_peer(const core::ChannelOffer& offer, std::string_view peer_half);

  // Binds `port`: kInvalidState when bound already, kNoResource when max_ports are bound.
  Status bind(std::uint16_t port) noexcept;
  // Unbinds `port`, dropping what waits in its queue; kNotFound when not bound.
  Status unbind(std::uint16_t port) noexcept;

  // Payload bytes one fragment carries (the path MTU less the header): to any peer, and to
  // `peer`, whose MTU or buffer size may make it smaller (0 for no open peer). Each fragment
  // states its stride, so the receiver reassembles whatever the sender chose.
  std::uint32_t stride() const noexcept { return stride_; }
  std::uint32_t stride(ChannelId peer) const noexcept;
  // Sends `data` (0..kMaxDatagram bytes) from bound port `src_port` to `dst_port` at `peer`.
  Status send_to(std::uint16_t src_port, ChannelId peer, std::uint16_t dst_port,
                 std::span<const std::byte> data) noexcept;
  // Takes the oldest datagram waiting on `port` into `out`: kOk with `info`; kNoResource when
  // none waits; kInvalidArgument (datagram kept, info.length tells the size) when `out` is too
  // small; kNotFound for an unbound port.
  Status recv_from(std::uint16_t port, std::span<std::byte> out, DatagramInfo& info) noexcept;

  // For epoll/select, two ways.
  //
  // Per port: port_fd(port, fd) gives bound `port` its own file descriptor (socket_fd.h), made on
  // the first call (the same fd after) and closed by unbind(port) or the destructor. It is
  // readable while a datagram waits on the port (level-triggered: recv_from draining the queue
  // clears it), and also while the endpoint has device work poll() must do. kNotFound for an
  // unbound port (nothing created); kNoResource when the kernel refuses an fd (EMFILE...). The
  // loop: add the port fds to your epoll (EPOLLIN); when any fires, poll(), recv_from the ports
  // until kNoResource, then arm() and poll() once more (the device-work member stays readable
  // until arm(), and something may have come in before it), serve again, and go back to
  // epoll_wait with next_timer_ms() as its timeout.
  //
  // Per endpoint: fd() turns readable when the endpoint may have work (an arrival or a
  // completion) for any of its ports. Once it fires: poll(), serve the ports, then arm() before
  // waiting on it again (arm() consumes the events and re-arms; poll once more after it, as
  // something may have come in between).
  Status port_fd(std::uint16_t port, int& out) noexcept;
  int fd() const noexcept { return net_->notify_fd(); }
  Status arm() noexcept { return net_->arm(); }
  // Milliseconds until reassembly needs a poll() to expire incomplete datagrams; -1 when nothing
  // is being reassembled. Pass it to epoll_wait as its timeout.
  int next_timer_ms() const noexcept;

  // Progress: sends, arrivals, reassembly timeouts, and every core::kServiceInterval the
  // device's events (core's service_channels()). Returns the work done, or < 0 on a device error.
  int poll() noexcept;
  // Polls until a datagram waits on `port` or `timeout` passes (kTimeout).
  Status wait(std::uint16_t port, std::chrono::milliseconds timeout) noexcept;

 private:
  struct Entry;
  struct Port;
  bool fits_send_path(std::uint32_t stride) const noexcept;
  void arrival(const core::Descriptor& d) noexcept;
  void deliver(Port& port, const Entry& e) noexcept;
  void drop(const Entry& e) noexcept;
  static void refresh(Port& port) noexcept;
  Port* find(std::uint16_t port) noexcept;

  DatagramConfig config_;
  DatagramStats stats_;
  std::unique_ptr<core::Endpoint> net_;
  std::uint32_t stride_ = 0;
  std::uint32_t next_id_ = 0;
  Time next_service_{};  // when poll() next runs core's service_channels() (device events)
  Reassembler reassembly_;
  core::PollClock clock_;  // poll()'s reading inside poll(): its arrivals and expiries
  // Bound ports (at most max_ports), with their fds: after net_, so the fds close first.
  std::vector<std::unique_ptr<Port>> ports_;
};

}  // namespace unet::ulp
