// uam::Endpoint set-up: the core endpoint, channels with their active-message state, handlers.
#include <stdexcept>
#include <string>

#include "endpoint_impl.h"
#include "unet/verbs/deadline.h"

namespace unet::uam {

namespace {

ReliabilityConfig sender_config(const Config& c) {
  ReliabilityConfig r = c.reliability;
  // Sequenced traffic in flight to one peer: up to W requests plus up to W replies.
  if (r.window < 2u * c.window) r.window = 2u * c.window;
  r.validate();
  return r;
}

}  // namespace

Endpoint::Endpoint(const core::EndpointConfig& net, const Config& config) : config_(config) {
  if (config.window == 0 || config.window > CreditWindow::kMaxWindow)
    throw std::invalid_argument("uam::Endpoint: window must be 1..127");
  config_.reliability = sender_config(config);
  config_.keepalive = verbs::clamp_timer(config.keepalive);  // max(): never; added to the clock
  if (net.send_queue_depth < 2 * kReplySlots)
    throw std::invalid_argument("uam::Endpoint: send_queue_depth must be at least " +
                                std::to_string(2 * kReplySlots) + " (the reply reserve is " +
                                std::to_string(kReplySlots) + ")");
  net_ = std::make_unique<core::Endpoint>(net);
  // Every message must fit core's max_message(): the largest header at least, so that
  // max_payload() never goes below zero.
  if (net_->max_message() < header_bytes(kMaxArgs))
    throw std::invalid_argument("uam::Endpoint: the endpoint's max_message() is " +
                                std::to_string(net_->max_message()) +
                                " bytes; a message header with " + std::to_string(kMaxArgs) +
                                " words needs " + std::to_string(header_bytes(kMaxArgs)));
  ud_ = net.transport == core::Transport::kUd;
  // Receive buffers one peer can take at once: W requests (or stores), replies to our W
  // requests, and the explicit credit/ack messages those provoke (one per W/2, plus UD probes;
  // RC probes take no receive buffer).
  const std::uint32_t w = config_.window;
  per_channel_budget_ = 2 * w + (w + 1) / 2 + 2;
  peers_.resize(net.max_channels);
  open_.reserve(net.max_channels);
  kept_.assign(net_->buffer_id_limit(), core::kNoChannel);  // segment buffers and ring slots
  kept_refs_.assign(net_->buffer_id_limit(), 0);
  bundled_.reserve(net.max_channels);
  gets_.resize(net.max_operations);
  free_gets_ = std::make_unique<core::DescriptorRing<std::uint32_t>>(net.max_operations);
  for (std::uint32_t i = 0; i < net.max_operations; ++i) (void)free_gets_->push(i);
  net_->set_upcall([this](const core::Descriptor& d) { arrival(d); });
}

Endpoint::~Endpoint() = default;

// Refuses a channel the receive-buffer budget cannot carry, before core makes it.
static void check_budget(std::size_t open, std::uint32_t budget, const core::Endpoint& net) {
  const std::uint64_t need = (open + 1) * std::uint64_t{budget} + net.repost_batch() - 1;
  if (need > net.config().free_queue_depth)
    throw std::length_error(
        "uam::Endpoint: " + std::to_string(open + 1) + " channels need " + std::to_string(need) +
        " posted receive buffers (" + std::to_string(budget) +
        " each, for the credit window, plus the repost batch); free_queue_depth is " +
        std::to_string(net.config().free_queue_depth));
}

ChannelId Endpoint::adopt(ChannelId ch) {
  if (ch >= peers_.size()) throw std::out_of_range("uam::Endpoint: channel id beyond max_channels");
  // The peer's MTU or buffers may bound the channel below ours; every header must still fit.
  const std::uint32_t limit = net_->max_message(ch);
  if (limit < header_bytes(kMaxArgs)) {
    (void)net_->close_channel(ch);
    throw std::length_error("uam::Endpoint: the channel carries at most " + std::to_string(limit) +
                            " bytes (the peer's MTU or buffer size); a message header with " +
                            std::to_string(kMaxArgs) + " words needs " +
                            std::to_string(header_bytes(kMaxArgs)));
  }
  auto p = std::make_unique<Peer>(ch, config_, config_.reliability, ud_, limit);
  p->last_heard = clock_.now();
  p->probe_interval = config_.reliability.rto_initial;
  peers_[ch] = std::move(p);
  open_.push_back(ch);
  seen_channel_changes_ = kLookAgain;
  return ch;
}

core::ChannelOffer Endpoint::offer_channel(const core::ChannelOptions& options) {
  check_budget(open_.size(), per_channel_budget_, *net_);
  return net_->offer_channel(options);
}

ChannelId Endpoint::accept_offer(const core::ChannelOffer& offer, std::string_view peer_half) {
  check_budget(open_.size(), per_channel_budget_, *net_);
  return adopt(net_->accept_offer(offer, peer_half));
}

std::uint16_t Endpoint::listen_cm(std::string_view address, std::uint16_t port) {
  return net_->listen_cm(address, port);
}

ChannelId Endpoint::accept_cm(std::chrono::milliseconds timeout,
                              const core::ChannelOptions& options) {
  check_budget(open_.size(), per_channel_budget_, *net_);
  return adopt(net_->accept_cm(timeout, options));
}

ChannelId Endpoint::connect_cm(std::string_view address, std::uint16_t port,
                               std::chrono::milliseconds timeout,
                               const core::ChannelOptions& options) {
  check_budget(open_.size(), per_channel_budget_, *net_);
  return adopt(net_->connect_cm(address, port, timeout, options));
}

Status Endpoint::close_channel(ChannelId ch) noexcept {
  Peer* p = peer(ch);
  if (!p) return Status::kNotFound;
  if (p->open) fail_peer(*p, Status::kClosed);
  return net_->close_channel(ch);
}

Status Endpoint::channel_status(ChannelId ch) const noexcept {
  if (ch >= peers_.size() || !peers_[ch]) return Status::kNotFound;
  return peers_[ch]->open ? Status::kOk : Status::kClosed;
}

Status Endpoint::on_request(HandlerId id, RequestHandler fn) {
  if (!fn) return Status::kInvalidArgument;
  return handlers_.add(id, HandlerKind::kRequest, Handler{std::move(fn), {}});
}

Status Endpoint::on_reply(HandlerId id, ReplyHandler fn) {
  if (!fn) return Status::kInvalidArgument;
  return handlers_.add(id, HandlerKind::kReply, Handler{{}, std::move(fn)});
}

void Endpoint::on_completion(CompletionHandler fn) { on_completion_ = std::move(fn); }

std::uint32_t Endpoint::outstanding(ChannelId ch) const noexcept {
  if (ch >= peers_.size() || !peers_[ch]) return 0;
  return peers_[ch]->pending_count + peers_[ch]->gets;
}

}  // namespace unet::uam
