// uam::Endpoint sending: requests, replies, stores, gets, credit messages and UD resends. No
// allocation, lock or exception: messages are composed on the stack or in a segment buffer.
#include <algorithm>

#include "endpoint_impl.h"
#include "unet/core/little_endian.h"

namespace unet::uam {

// Room for one message of `bytes` on the send path. A request leaves the reserve for replies and
// credit messages; a reply or credit message may use it. Every open coalesced packet keeps a
// send-queue slot for itself, so sealing one never fails for want of room.
Status Endpoint::room(std::size_t bytes, bool reserve) const noexcept {
  if (!slots_free(1 + (reserve ? kReplySlots : 0))) return Status::kNoResource;
  if (bytes > net_->inline_threshold() && net_->spare_buffers() < 1 + (reserve ? kReplyBuffers : 0))
    return Status::kNoResource;
  return Status::kOk;
}

bool Endpoint::slots_free(std::size_t n) const noexcept {
  return net_->send_queue_space() >= n + bundled_.size();
}

// Hands one message to core: header `h` (checked by the caller) and the payload `body`, written
// once — behind the messages of the channel's open packet when it fits there (coalescing), else
// straight into the descriptor's staging bytes when it fits there, else into a segment buffer,
// which opens a packet when coalescing is on. `copy` (UD) receives the message's bytes too, as
// a packet of its own (no more bit). A message that does not fit the open packet seals it first:
// the channel's messages leave in the order they were put.
UNET_ALWAYS_INLINE
Status Endpoint::put(Peer& p, const Header& h, std::span<const std::byte> body,
                     std::byte* copy) noexcept {
  const std::size_t head = header_bytes(h.arg_count);
  const std::size_t total = head + body.size();
  std::byte* at = nullptr;
  core::BufferId b = core::kNoBuffer;
  if (p.bundle != core::kNoBuffer) {
    if (p.bundle_len + total <= p.max_message) {
      std::byte* base = net_->buffer(p.bundle).data();
      set_more(base + p.bundle_last);
      at = base + p.bundle_len;
      p.bundle_last = p.bundle_len;
      p.bundle_len += static_cast<std::uint32_t>(total);
      ++stats_.coalesced;
    } else if (Status s = seal(p); s != Status::kOk) {
      return s;
    }
  }
  const bool small = !at && total <= net_->inline_threshold();
  if (!at && !small) {
    if (Status s = net_->acquire_buffer(b); s != Status::kOk) return s;
    at = net_->buffer(b).data();
  }
  if (small) at = scratch_.data();
  encode_unchecked(h, at);
  core::copy_bytes(at + head, body.data(), body.size());  // a descriptor's few bytes: no call
  if (copy) std::memcpy(copy, at, total);
  if (small) return net_->send_inline(p.ch, std::span<const std::byte>(at, total));
  if (b == core::kNoBuffer) return Status::kOk;  // joined the open packet
  if (!config_.coalesce) return net_->send(p.ch, b, static_cast<std::uint32_t>(total));
  p.bundle = b;
  p.bundle_len = static_cast<std::uint32_t>(total);
  p.bundle_last = 0;
  bundled_.push_back(p.ch);  // reserved for every channel: no allocation
  return Status::kOk;
}

// Hands the channel's open packet to core. Its send-queue slot was kept (room()); a channel that
// is failing refuses it, and the buffer goes back (UD resends its messages from their copies).
UNET_ALWAYS_INLINE
Status Endpoint::seal(Peer& p) noexcept {
  const core::BufferId b = take_bundle(p);
  if (b == core::kNoBuffer) return Status::kOk;
  const Status s = net_->send(p.ch, b, p.bundle_len);
  if (s != Status::kOk) (void)net_->release(b);
  return s;
}

// Closes the channel's open packet, if any, and returns its buffer (kNoBuffer for none).
core::BufferId Endpoint::take_bundle(Peer& p) noexcept {
  const core::BufferId b = p.bundle;
  if (b == core::kNoBuffer) return b;
  p.bundle = core::kNoBuffer;
  if (auto it = std::find(bundled_.begin(), bundled_.end(), p.ch); it != bundled_.end()) {
    *it = bundled_.back();
    bundled_.pop_back();
  }
  return b;
}

void Endpoint::seal_all() noexcept {
  while (!bundled_.empty()) (void)seal(*peers_[bundled_.back()]);
}

// Hands one message already in wire form (a UD copy) to core, as a packet of its own.
Status Endpoint::put_bytes(ChannelId ch, std::span<const std::byte> message) noexcept {
  if (message.size() <= net_->inline_threshold()) return net_->send_inline(ch, message);
  core::BufferId b;
  if (Status s = net_->acquire_buffer(b); s != Status::kOk) return s;
  std::memcpy(net_->buffer(b).data(), message.data(), message.size());
  const Status s = net_->send(ch, b, static_cast<std::uint32_t>(message.size()));
  if (s != Status::kOk) (void)net_->release(b);
  return s;
}

// Numbers, stamps and sends a message of any sequenced kind (room() was checked). The header
// carries the credits we owe and our cumulative ack.
UNET_ALWAYS_INLINE
Status Endpoint::send_message(Peer& p, Header& h, std::span<const std::byte> payload) noexcept {
  h.payload_length = static_cast<std::uint16_t>(payload.size());
  std::byte* copy = nullptr;
  if (p.tx) {
    Seq seq;
    if (Status s = p.tx->push(0, clock_.time(), seq); s != Status::kOk) return s;
    h.seq = seq;
    copy = p.copy(seq);
    p.copy_len[seq & p.copy_mask] = static_cast<std::uint32_t>(message_bytes(h));
  } else {
    h.seq = p.next_seq++;
  }
  h.credits = p.credits.piggyback();
  h.ack = p.rx.ack();
  // The callers checked the argument count and payload; the rest of check() holds by construction.
  const Status s = put(p, h, payload, copy);
  if (p.tx) {  // UD: numbered and kept, so sent: if it did not go out now the timer resends it
    p.rx.ack_sent();
    return Status::kOk;
  }
  if (s != Status::kOk) {  // RC: only a failing channel refuses (room() was checked)
    --p.next_seq;
    return s;
  }
  p.rx.ack_sent();
  return Status::kOk;
}

Status Endpoint::send_credit(Peer& p, bool probe) noexcept {
  if (!slots_free(1)) return Status::kNoResource;
  Header h;
  h.kind = Kind::kCredit;
  h.probe = probe;
  h.seq = p.tx ? p.tx->next_seq() : p.next_seq;  // lets the peer tell whether it has all before
  h.credits = p.credits.piggyback();
  h.ack = p.rx.ack();
  const Status s = put(p, h, {}, nullptr);
  if (s == Status::kOk) {
    p.rx.ack_sent();
    ++stats_.credit_messages;
  }
  return s;
}

// A probe (see timers()): UD a credit message with the probe bit, RC core's liveness probe. Either
// leaves the send-queue slots that open packets keep.
Status Endpoint::send_probe(Peer& p) noexcept {
  if (p.tx) return send_credit(p, true);
  if (!slots_free(1)) return Status::kNoResource;
  return net_->probe(p.ch);
}

// Checks what every sender checks; kOk when `args` and `payload` may go to an open channel.
Status Endpoint::check_send(ChannelId ch, std::span<const std::uint64_t> args, std::size_t payload,
                            Peer*& out) noexcept {
  Peer* p = peer(ch);
  if (!p) return Status::kNotFound;
  if (!p->open) return Status::kClosed;
  if (args.size() > kMaxArgs || payload > payload_room(p->max_message, args.size()))
    return Status::kInvalidArgument;
  out = p;
  return Status::kOk;
}

// Takes a credit and a pending slot for a request or store; kNoResource when there is none.
Status Endpoint::begin_request(Peer& p, std::size_t bytes) noexcept {
  if (Status s = room(bytes, true); s != Status::kOk) return s;
  if (p.tx && p.tx->outstanding() >= config_.reliability.window) return Status::kNoResource;
  if (p.pending_count >= Peer::kPendingSlots - 1) return Status::kNoResource;
  return p.credits.consume();
}

// Records the request just numbered `seq` as awaiting completion; returns its token.
std::uint8_t Endpoint::track(Peer& p, std::uint64_t cookie) noexcept {
  const std::uint8_t token = p.next_token++;
  p.slot(token) = Peer::Pending{0, cookie, Status::kOk, false};
  ++p.pending_count;
  return token;
}

Status Endpoint::request(ChannelId ch, HandlerId handler, std::span<const std::uint64_t> args,
                         std::span<const std::byte> payload, std::uint64_t cookie) noexcept {
  Peer* p = nullptr;
  if (Status s = check_send(ch, args, payload.size(), p); s != Status::kOk) return s;
  const std::size_t bytes = header_bytes(args.size()) + payload.size();
  if (Status s = begin_request(*p, bytes); s != Status::kOk) return s;
  Header h;
  h.kind = Kind::kRequest;
  h.handler = handler;
  h.arg_count = static_cast<std::uint8_t>(args.size());
  std::copy(args.begin(), args.end(), h.args.begin());
  h.token = p->next_token;
  const Status s = send_message(*p, h, payload);
  if (s != Status::kOk) {  // room() was checked: only a failed channel gets here
    p->credits.undo_consume();
    return s;
  }
  p->slot(track(*p, cookie)).seq = h.seq;
  ++stats_.requests_sent;
  return Status::kOk;
}

Status Endpoint::reply(Token& token, HandlerId handler, std::span<const std::uint64_t> args,
                       std::span<const std::byte> payload) noexcept {
  // Only the running handler's request, and only once: copies share the serial and the answer.
  if (token.serial_ != handling_ || answered_) return Status::kInvalidState;
  Peer* p = nullptr;
  if (Status s = check_send(token.channel_, args, payload.size(), p); s != Status::kOk) return s;
  const std::size_t bytes = header_bytes(args.size()) + payload.size();
  Header h;
  h.token = token.id_;
  if (room(bytes, false) != Status::kOk) {
    // No buffer for a medium reply: the requester learns it through an error reply, which always
    // fits inside a descriptor.
    ++stats_.reply_no_buffer;
    const Status s = send_error(*p, token.id_, Status::kNoResource);
    answered_ = token.replied_ = s == Status::kOk;
    return s == Status::kOk ? Status::kNoResource : s;
  }
  h.kind = Kind::kReply;
  h.handler = handler;
  h.arg_count = static_cast<std::uint8_t>(args.size());
  std::copy(args.begin(), args.end(), h.args.begin());
  const Status s = send_message(*p, h, payload);
  if (s == Status::kOk) {
    answered_ = token.replied_ = true;
    ++stats_.replies_sent;
  }
  return s;
}

// Answers request `token` with error `status` (an unknown handler, no buffer for the reply).
Status Endpoint::send_error(Peer& p, std::uint8_t token, Status status) noexcept {
  if (!slots_free(1)) return Status::kNoResource;
  Header h;
  h.kind = Kind::kErrorReply;
  h.token = token;
  h.arg_count = 1;
  h.args[0] = static_cast<std::uint64_t>(status);
  return send_message(p, h, {});
}

Status Endpoint::store(ChannelId ch, const void* local, std::size_t len,
                       const core::RemoteToken& remote, std::uint64_t offset, HandlerId handler,
                       std::span<const std::uint64_t> args, std::uint64_t cookie) noexcept {
  Peer* p = nullptr;
  if (Status s = check_send(ch, args, kStorePayload, p); s != Status::kOk) return s;
  if (args.size() > 2 || len == 0 || !local) return Status::kInvalidArgument;
  const std::size_t bytes = header_bytes(args.size()) + kStorePayload;
  // The write and the store-done message: two send-queue slots.
  if (!slots_free(2 + kReplySlots)) return Status::kNoResource;
  if (Status s = begin_request(*p, bytes); s != Status::kOk) return s;
  // The channel's open packet goes first, so the write does not overtake messages composed
  // before it (its slot was counted above).
  Status s = seal(*p);
  if (s == Status::kOk) s = net_->write(ch, local, len, remote, offset, kStoreTag);
  if (s != Status::kOk) {
    p->credits.undo_consume();
    return s;
  }
  Header h;
  h.kind = Kind::kStoreDone;
  h.handler = handler;
  h.arg_count = static_cast<std::uint8_t>(args.size());
  std::copy(args.begin(), args.end(), h.args.begin());
  h.token = p->next_token;
  std::array<std::byte, kStorePayload> where;
  core::store_le<std::uint64_t>(where.data(), offset);
  core::store_le<std::uint64_t>(where.data() + 8, len);
  s = send_message(*p, h, where);
  if (s != Status::kOk) {
    // The write is on its way but its notice is not: the channel is failing (room was checked);
    // the store completes with that failure.
    p->credits.undo_consume();
    fail_peer(*p, s);
    return s;
  }
  p->slot(track(*p, cookie)).seq = h.seq;
  ++stats_.stores_sent;
  return Status::kOk;
}

Status Endpoint::get(ChannelId ch, const core::RemoteToken& remote, std::uint64_t offset,
                     void* local, std::size_t len, HandlerId handler,
                     std::span<const std::uint64_t> args, std::uint64_t cookie) noexcept {
  Peer* p = nullptr;
  if (Status s = check_send(ch, args, 0, p); s != Status::kOk) return s;
  if (len == 0 || !local) return Status::kInvalidArgument;
  // The read's send-queue slot, beside those the open packets keep; this channel's packet goes
  // first, so the read does not overtake messages composed before it.
  if (!slots_free(1)) return Status::kNoResource;
  if (Status s = seal(*p); s != Status::kOk) return s;
  std::uint32_t slot;
  if (!free_gets_->pop_into(slot)) return Status::kNoResource;
  Get& g = gets_[slot];
  g = Get{ch,  handler, static_cast<std::uint8_t>(args.size()), {}, static_cast<std::byte*>(local),
          len, cookie};
  std::copy(args.begin(), args.end(), g.args.begin());
  if (Status s = net_->read(ch, local, len, remote, offset, kGetTag | slot); s != Status::kOk) {
    (void)free_gets_->push(slot);
    return s;
  }
  ++p->gets;
  ++stats_.gets_issued;
  return Status::kOk;
}

// UD: sends message `seq` again from its copy. Skipped when the send path is full: the timer
// comes back.
void Endpoint::resend(Peer& p, Seq seq) noexcept {
  const std::uint32_t len = p.copy_len[seq & p.copy_mask];
  if (room(len, false) != Status::kOk) return;
  std::byte* c = p.copy(seq);
  // The credit total is cumulative, so the copy carries the current one. The ack stays as it was
  // sent: an ack newer than the message's place in our stream could complete a request at the
  // peer before the reply we sent after this message arrived there (see arrival()).
  c[6] = static_cast<std::byte>(p.credits.piggyback());
  if (put_bytes(p.ch, std::span<const std::byte>(c, len)) == Status::kOk) ++stats_.retransmitted;
}

}  // namespace unet::uam
