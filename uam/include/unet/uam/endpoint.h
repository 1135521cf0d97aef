// uam::Endpoint: U-Net Active Messages over one core::Endpoint (RC or UD).
//
// A message names a handler that runs on arrival with up to four 64-bit argument words and a
// payload. request() queues one for a channel (it goes out at the next poll() or flush()); the
// request handler may answer it once with reply(); a handler that does not reply is acknowledged
// implicitly. Every request, store and get completes exactly once, through the completion
// handler (message.h).
//
// Flow control: a window of W credits per channel (credit_window.h). A request or store takes
// one; with none left it returns kNoResource and the caller retries after poll(). Credits come
// back in every header the peer sends, or in an explicit credit message when W/2 are owed. The
// receive buffers an endpoint keeps posted are budgeted per channel, so a peer that keeps to its
// credits can never find the free queue empty: opening a channel that would break the budget
// throws. Over RC the hardware is reliable and the window is credits only.
//
// Reliability over UD (reliability.h): every message but a credit message carries a sequence
// number; the peer acknowledges cumulatively (piggybacked, or delayed explicit); unacknowledged
// messages are resent from a copy kept here, with backoff; duplicates and out-of-order arrivals
// are dropped, so each handler runs exactly once and in order per channel. After
// ReliabilityConfig::max_retries expiries without progress the channel fails.
//
// Bulk (direct-access RC endpoints): store() = RDMA WRITE into the peer's window, then a
// store-done message on the same QP, which RC delivers after the data — its handler runs at the
// receiver with the data in place. get() = RDMA READ; its handler runs here when the data is in.
//
// Progress: poll(), or wait(timeout). Peer failure (a failed RC QP, an rdma_cm disconnect, UD
// retries exhausted) completes every outstanding request, store and get of that channel with an
// error, and later calls on it return kClosed; other channels keep working. A silent RC peer with
// requests outstanding is probed every `keepalive` while it stays silent, so its death is noticed
// even when we are idle.
// Over UD a probe (backing off from rto_initial) also asks a peer for credits or acks we lost.
//
// Threading: one thread, like core::Endpoint. Handlers run inside poll()/wait() and may call
// request(), reply() (request handlers), store(), get() and release(), but not poll() or wait().
// Set-up throws (verbs::Error, std::invalid_argument, and std::length_error when a channel would
// break the receive-buffer budget); the data path returns Status, and never allocates or throws.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "unet/core/endpoint.h"
#include "unet/core/poll_clock.h"
#include "unet/uam/credit_window.h"
#include "unet/uam/handler_table.h"
#include "unet/uam/message.h"
#include "unet/uam/reliability.h"
#include "unet/uam/wire_header.h"

namespace unet::uam {

// One entry of the handler table: a request handler or a reply handler (one id space).
struct Handler {
  RequestHandler request;
  ReplyHandler reply;
  explicit operator bool() const noexcept { return request || reply; }
};

// The active-message layer's own settings (the network's are core::EndpointConfig).
struct Config {
  std::uint8_t window = CreditWindow::kDefaultWindow;  // credits per channel, 1..127
  // UD only: the sender's retransmission window is raised to 2 * window if smaller.
  ReliabilityConfig reliability;
  // RC: how long a peer with requests outstanding may stay silent before it is probed, and the
  // interval of probes while it stays silent (core's probe(): its QP answers, or the channel fails
  // once the QP's retries run out). UD probes back off from reliability.rto_initial to rto_max.
  // milliseconds::max(): never (verbs::clamp_timer).
  std::chrono::milliseconds keepalive{50};
  // Coalescing: messages queued for one channel between two polls share a packet while they fit
  // (wire_header.h), so a burst of medium messages costs one send, one receive buffer and one
  // completion per packet instead of per message. The first message that needs a segment buffer
  // opens the channel's packet; later ones, of any size, join it in order; poll() or flush()
  // sends it. Messages that fit inside a descriptor and find no open packet go alone, as before.
  bool coalesce = true;
};

// Counters of one uam endpoint, over all its channels. Every arrival is counted: a packet the
// codec refuses (malformed, the rest of it dropped) or that comes for a channel no longer open
// (closed_drops); every message decoded lands in exactly one of credit_messages_received,
// bad_credits, duplicates, out_of_order, overruns, stray_replies, error_replies,
// unknown_handler, requests_handled and replies_handled (the last two count gets too).
struct Stats {
  std::uint64_t requests_sent = 0;
  std::uint64_t replies_sent = 0;
  std::uint64_t stores_sent = 0;
  std::uint64_t gets_issued = 0;
  std::uint64_t requests_handled = 0;          // request and store handlers run
  std::uint64_t replies_handled = 0;           // reply handlers run (gets included)
  std::uint64_t completed_ok = 0;              // completion handler calls with kOk
  std::uint64_t completed_error = 0;           // ... with an error
  std::uint64_t credit_messages = 0;           // explicit credit/ack messages sent
  std::uint64_t credit_messages_received = 0;  // ... and received
  std::uint64_t error_replies = 0;  // error replies to an awaiting request (it fails with them)
  std::uint64_t unknown_handler =
      0;                           // requests for an unregistered handler (answered with an error)
  std::uint64_t malformed = 0;     // arrivals the wire codec refused (dropped), empty ones too
  std::uint64_t closed_drops = 0;  // arrivals for a channel that failed or closed, dropped
  // Well-formed but impossible arrivals, dropped; each should stay 0 with a correct peer:
  std::uint64_t bad_credits = 0;    // credit totals returning credits never spent
  std::uint64_t overruns = 0;       // requests beyond the peer's window
  std::uint64_t stray_replies = 0;  // replies to no awaiting request, or a second reply
  std::uint64_t bad_acks = 0;       // acks of messages never sent
  std::uint64_t out_of_order = 0;   // RC: sequence numbers out of order
  std::uint64_t protocol_errors() const noexcept {
    return bad_credits + overruns + stray_replies + bad_acks + out_of_order;
  }
  std::uint64_t retransmitted = 0;    // UD resends
  std::uint64_t duplicates = 0;       // UD duplicates and out-of-order arrivals dropped
  std::uint64_t reply_no_buffer = 0;  // medium replies turned into kNoResource error replies
  std::uint64_t probes = 0;           // UD: credit messages asking for credits, RC: core probes
  std::uint64_t coalesced = 0;        // messages sent behind another in one packet (coalesce)
};

// The active-message endpoint (see the top of this file).
class Endpoint {
 public:
  // Makes the core endpoint from `net`; `config` as above. Throws std::invalid_argument for a bad
  // window or reliability configuration, a send queue too small for the reply reserve, or buffers
  // too small for a header with four words (core's max_message() below 48 bytes).
  Endpoint(const core::EndpointConfig& net, const Config& config = {});
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  // The core endpoint underneath (for its counters and resources; do not poll it directly), the
  // configuration, and the counters.
  core::Endpoint& net() noexcept { return *net_; }
  const Config& config() const noexcept { return config_; }
  const Stats& stats() const noexcept { return stats_; }

  // --- channels: core's set-up calls, plus the active-message state (throw on failure) ---
  // Opening a channel throws when the receive-buffer budget is exceeded (open channels *
  // (2W + ceil(W/2) + 2) + the repost batch must fit in core's free_queue_depth), or when the
  // peer's MTU or buffer size leaves the channel no room for a header with four words.
  core::ChannelOffer offer_channel(const core::ChannelOptions& options = {});
  ChannelId accept_offer(const core::ChannelOffer& offer, std::string_view peer_half);
  std::uint16_t listen_cm(std::string_view address, std::uint16_t port);
  ChannelId accept_cm(std::chrono::milliseconds timeout, const core::ChannelOptions& options = {});
  ChannelId connect_cm(std::string_view address, std::uint16_t port,
                       std::chrono::milliseconds timeout, const core::ChannelOptions& options = {});
  // Closes the channel: its outstanding requests, stores and gets complete with kClosed.
  Status close_channel(ChannelId ch) noexcept;
  // kOk while the channel works; kClosed once closed or failed; kNotFound for no such channel.
  Status channel_status(ChannelId ch) const noexcept;

  // --- handlers (ids 0..255, one id space; HandlerTable's rules) ---
  // Register a request handler (requests and stores) or a reply handler (replies and gets) at
  // `id`: kInvalidState when `id` is taken, kInvalidArgument for an empty function.
  [[nodiscard]] Status on_request(HandlerId id, RequestHandler fn);
  [[nodiscard]] Status on_reply(HandlerId id, ReplyHandler fn);
  // Unregisters `id` (kNotFound when free). Not from a handler. Requests for it are then answered
  // with an unknown-handler error.
  [[nodiscard]] Status remove_handler(HandlerId id) { return handlers_.remove(id); }
  // The handler every request, store and get completes through, once each (message.h).
  void on_completion(CompletionHandler fn);

  // --- data path ---
  // Largest payload a request or reply with `arg_count` words may carry (medium limit): on any
  // channel, and on channel `ch`, whose peer's MTU or buffer size may bound it lower (0 for no
  // such channel).
  std::uint32_t max_payload(std::size_t arg_count) const noexcept {
    return payload_room(net_->max_message(), arg_count);
  }
  std::uint32_t max_payload(ChannelId ch, std::size_t arg_count) const noexcept {
    return payload_room(net_->max_message(ch), arg_count);
  }
  // Queues a request to run `handler` at the peer; it goes out at the next poll() (or flush()), so
  // a burst of requests leaves with one doorbell. kNoResource (nothing queued, retry after poll())
  // when the channel has no credit or the send path no room; kInvalidArgument for more than 4
  // words or a payload over max_payload(ch, words); kClosed on a closed or failed channel.
  Status request(ChannelId ch, HandlerId handler, std::span<const std::uint64_t> args,
                 std::span<const std::byte> payload = {}, std::uint64_t cookie = 0) noexcept;
  // From inside a request handler: answers its request, running reply handler `handler` at the
  // requester. kInvalidState (nothing sent) for a second reply through any copy of the token, or
  // once the handler returned (message.h); kInvalidArgument as for request().
  Status reply(Token& token, HandlerId handler, std::span<const std::uint64_t> args,
               std::span<const std::byte> payload = {}) noexcept;
  // RDMA WRITE of [local, local+len) to `offset` in the peer's window `remote`, then the
  // store-done message running request handler `handler` there (at most 2 words). `local` must
  // stay untouched until the store completes. Takes a credit. Direct-access RC only.
  Status store(ChannelId ch, const void* local, std::size_t len, const core::RemoteToken& remote,
               std::uint64_t offset, HandlerId handler, std::span<const std::uint64_t> args,
               std::uint64_t cookie = 0) noexcept;
  // RDMA READ of `len` bytes at `offset` in the peer's window into `local`; reply handler
  // `handler` runs here with the data in Message::payload (and Message::status). No credit.
  Status get(ChannelId ch, const core::RemoteToken& remote, std::uint64_t offset, void* local,
             std::size_t len, HandlerId handler, std::span<const std::uint64_t> args,
             std::uint64_t cookie = 0) noexcept;
  // Gives back a medium payload's buffer a handler kept (its request's credit goes home with it).
  // Messages of one coalesced packet share its buffer: each handler that kept it releases it
  // once, and it goes back with the last release.
  Status release(BufferId buffer) noexcept;

  // Progress: sends, arrivals (handlers run here), acks, credits, timers. Returns the work done
  // (0 = idle) or a negative value on a device error.
  int poll() noexcept;
  // Posts what request(), store(), get() and reply() queued, now (poll() does it too). Not from a
  // handler. Returns how many packets went out, or a negative value on a device error.
  int flush() noexcept {
    if (!bundled_.empty()) seal_all();  // inline: poll() flushes twice, mostly with no open packet
    return net_->flush();
  }
  // Polls until some handler or completion ran, or `timeout` passed (kTimeout). Sleeps on the
  // completion channel when idle, waking for the next timer (millisecond granularity).
  Status wait(std::chrono::milliseconds timeout) noexcept;
  // Requests, stores and gets of `ch` not yet completed.
  std::uint32_t outstanding(ChannelId ch) const noexcept;

 private:
  struct Peer;
  struct Packet;
  struct Get;
  static std::uint32_t payload_room(std::uint32_t max_message, std::size_t arg_count) noexcept {
    if (arg_count > kMaxArgs || max_message < header_bytes(arg_count)) return 0;
    const std::size_t room = max_message - header_bytes(arg_count);
    return static_cast<std::uint32_t>(room < kMaxPayload ? room : kMaxPayload);
  }
  // endpoint_send.cc
  Status room(std::size_t bytes, bool reserve) const noexcept;
  // Whether `n` send-queue slots are free beside the one each open coalesced packet keeps.
  bool slots_free(std::size_t n) const noexcept;
  // Steps declared inline are defined in the one file that calls them and inlined there
  // (core/always_inline.h): the send and arrival of a message pay no call per step.
  inline Status put(Peer& p, const Header& h, std::span<const std::byte> body,
                    std::byte* copy) noexcept;
  inline Status seal(Peer& p) noexcept;
  BufferId take_bundle(Peer& p) noexcept;
  void seal_all() noexcept;
  Status put_bytes(ChannelId ch, std::span<const std::byte> message) noexcept;
  inline Status send_message(Peer& p, Header& h, std::span<const std::byte> payload) noexcept;
  Status send_credit(Peer& p, bool probe) noexcept;
  Status send_probe(Peer& p) noexcept;
  Status send_error(Peer& p, std::uint8_t token, Status status) noexcept;
  Status check_send(ChannelId ch, std::span<const std::uint64_t> args, std::size_t payload,
                    Peer*& out) noexcept;
  Status begin_request(Peer& p, std::size_t bytes) noexcept;
  std::uint8_t track(Peer& p, std::uint64_t cookie) noexcept;
  void resend(Peer& p, Seq seq) noexcept;
  // endpoint_receive.cc
  void arrival(const core::Descriptor& d) noexcept;
  inline void message(Peer& p, const Header& h, std::span<const std::byte> payload, Packet& pk,
                      Time t) noexcept;
  inline Disposition run_request(Peer& p, const Header& h, std::span<const std::byte> payload,
                                 Packet& pk) noexcept;
  inline Disposition run_reply(Peer& p, const Header& h, std::span<const std::byte> payload,
                               BufferId buffer) noexcept;
  inline void apply_ack(Peer& p, Seq ack, bool in_step, Time now) noexcept;
  inline void timers(Peer& p, Time now, bool recheck) noexcept;
  inline void op_completions() noexcept;
  void fail_peer(Peer& p, Status status) noexcept;
  void complete(ChannelId ch, std::uint64_t cookie, Status s) noexcept;
  inline void done_with(const Packet& pk) noexcept;
  Peer* peer(ChannelId ch) noexcept { return ch < peers_.size() ? peers_[ch].get() : nullptr; }
  ChannelId adopt(ChannelId ch);

  Config config_;
  Stats stats_;
  std::unique_ptr<core::Endpoint> net_;
  bool ud_ = false;
  core::PollClock clock_;  // inside poll(), its reading: arrivals and their handlers' replies
  std::uint32_t per_channel_budget_ = 0;
  std::vector<std::unique_ptr<Peer>> peers_;  // by channel id
  std::vector<ChannelId> open_;               // channels with a live peer, for the timers
  HandlerTable<Handler> handlers_;
  CompletionHandler on_completion_;
  std::vector<ChannelId> kept_;           // by buffer: the channel whose request it holds
  std::vector<std::uint16_t> kept_refs_;  // by buffer: handlers that kept it, not yet released
  std::vector<ChannelId> bundled_;        // channels with an open coalesced packet
  std::vector<Get> gets_;
  std::unique_ptr<core::DescriptorRing<std::uint32_t>> free_gets_;
  std::uint64_t work_ = 0;  // handlers and completions run (for wait())
  // Reply-once (message.h): the serial of the request handler running now (0: none) and whether
  // its request was answered; a token of any other serial is past its handler.
  std::uint64_t handling_ = 0;
  std::uint64_t serials_ = 0;
  bool answered_ = false;
  Time next_service_{};  // when poll() next runs core's service_channels()
  // core's channel_changes() when the timers last looked at every channel's status; a new peer
  // sets it to kLookAgain, so the next poll looks.
  static constexpr std::uint64_t kLookAgain = ~std::uint64_t{0};
  std::uint64_t seen_channel_changes_ = kLookAgain;
  std::array<std::byte, core::Descriptor::kInlineBytes> scratch_{};
};

}  // namespace unet::uam
