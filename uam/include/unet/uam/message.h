// Message, Token, RequestHandler, ReplyHandler, CompletionHandler: what an active-message
// handler is given, and the handler types.
//
// A handler runs inside uam::Endpoint::poll() (or wait()), on the endpoint's thread, once per
// message, in the order its channel delivered them. It gets the message's argument words (0..4)
// and its payload: a short payload rides inside the descriptor and is valid for the handler's
// duration only; a medium one (and any message that came in a coalesced packet) sits in a
// segment buffer (Message::buffer) and is valid until the handler returns kDone — or, if it
// returns kKept, until the application calls uam::Endpoint::release(buffer), once per kept
// message (the messages of one packet share its buffer). A kept request buffer still holds its
// sender's credit, so a peer stalls if too many are kept.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "unet/core/descriptor.h"
#include "unet/status.h"
#include "unet/uam/handler_table.h"

namespace unet::uam {

// core's ids, as handlers see them.
using core::BufferId;
using core::ChannelId;

// What a handler is given: one message's words, payload and, per kind, the extra fields below.
struct Message {
  ChannelId channel = core::kNoChannel;
  HandlerId handler = 0;
  std::span<const std::uint64_t> args;  // 0..4 words
  std::span<const std::byte> payload;   // a get: the local memory the data was read into
  BufferId buffer = core::kNoBuffer;    // the segment buffer holding the payload (or kNoBuffer)
  std::uint64_t cookie = 0;             // reply and get handlers: the cookie of the request/get
  Status status = Status::kOk;          // get handlers: the read's outcome
  std::uint64_t bulk_offset = 0;        // store handlers: where the data landed in our window
  std::uint64_t bulk_length = 0;        // ... and how many bytes
};

// What a handler does with a medium payload's buffer.
enum class Disposition : std::uint8_t {
  kDone,  // the buffer goes back to the free queue when the handler returns
  kKept,  // the application keeps it and calls Endpoint::release(buffer) later (medium only)
};

// Who sent a request and how to answer it; given to request handlers only. A request is answered
// at most once, and only while its handler runs: reply() through this token or any copy of it
// takes the first answer, and refuses (kInvalidState, nothing sent) a second one and any after the
// handler returned. There are no deferred replies: a request whose handler returns without a reply
// is acknowledged implicitly and completes at the requester, where a later reply could only be a
// stray. A copy may be kept; it can no longer answer.
class Token {
 public:
  // The channel the request came on, and whether reply() answered through this copy.
  ChannelId channel() const noexcept { return channel_; }
  bool replied() const noexcept { return replied_; }

 private:
  friend class Endpoint;
  Token(ChannelId ch, std::uint8_t id, std::uint64_t serial) noexcept
      : channel_(ch), id_(id), serial_(serial) {}
  ChannelId channel_;
  std::uint8_t id_;
  bool replied_ = false;
  std::uint64_t serial_;  // which handler run it belongs to (Endpoint::handling_)
};

// Request handlers (requests and stores) may reply through the token.
using RequestHandler = std::function<Disposition(Token&, const Message&)>;
// Reply handlers (replies and gets).
using ReplyHandler = std::function<Disposition(const Message&)>;
// Called exactly once per request, store and get with its cookie: kOk once the peer ran its
// handler (and any reply handler here has run) or the get's data is in place; otherwise the error
// (an unknown handler at the peer is kNotFound; a failed or closed channel its transport status).
using CompletionHandler = std::function<void(ChannelId, std::uint64_t cookie, Status)>;

}  // namespace unet::uam
