// uam::Endpoint internals shared by endpoint.cc (set-up), endpoint_send.cc and
// endpoint_receive.cc (the data path).
#pragma once

#include <array>
#include <bit>
#include <cstring>
#include <memory>
#include <optional>

#include "unet/core/always_inline.h"
#include "unet/uam/endpoint.h"

namespace unet::uam {

// Send-queue slots and spare buffers a request leaves for replies and credit messages: core
// reaps up to 32 arrivals per poll and each may be answered before the next post.
inline constexpr std::uint32_t kReplySlots = 40;
inline constexpr std::uint32_t kReplyBuffers = 4;
// Tags of core operations: a get's slot, or a store's write (whose success needs no action).
inline constexpr std::uint64_t kGetTag = 1ull << 62;
inline constexpr std::uint64_t kStoreTag = 1ull << 61;
// kept_ entries and done_with(): a buffer whose message holds no credit (a reply, or a short
// request whose credit was returned at arrival).
inline constexpr ChannelId kKeptNoCredit = core::kNoChannel - 1;
// The store-done payload: where the data went (offset, length; little-endian u64 each).
inline constexpr std::size_t kStorePayload = 16;

// One channel's active-message state: both directions of its credit window, sequencing, the
// requests and stores awaiting completion, and (UD) the copies kept for retransmission.
struct Endpoint::Peer {
  static constexpr std::uint32_t kPendingSlots = 128;  // > CreditWindow::kMaxWindow
  struct Pending {
    Seq seq = 0;
    std::uint64_t cookie = 0;
    Status status = Status::kOk;
    bool replied = false;
  };

  Peer(ChannelId c, const Config& cfg, const ReliabilityConfig& rel, bool ud, std::uint32_t limit)
      : ch(c), max_message(limit), credits(cfg.window), rx(rel) {
    if (!ud) return;
    tx = std::make_unique<ReliableSender>(rel);
    copy_mask = std::bit_ceil(rel.window) - 1;
    copies = std::make_unique<std::byte[]>(std::size_t{copy_mask + 1} * max_message);
    copy_len = std::make_unique<std::uint32_t[]>(copy_mask + 1);
  }

  ChannelId ch;
  std::uint32_t max_message;  // core's limit for this channel: within the peer's MTU and buffers
  bool open = true;
  CreditWindow credits;
  ReliableReceiver rx;
  std::unique_ptr<ReliableSender> tx;  // UD
  Seq next_seq = 0;                    // RC: the next sequence number to send
  // Requests and stores awaiting completion, oldest first; slot = token % kPendingSlots.
  std::array<Pending, kPendingSlots> pending{};
  std::uint8_t oldest_token = 0;
  std::uint8_t next_token = 0;
  std::uint32_t pending_count = 0;
  std::uint32_t gets = 0;  // gets in flight
  // UD: the bytes of each unacked message, by seq & copy_mask.
  std::uint32_t copy_mask = 0;
  std::unique_ptr<std::byte[]> copies;
  std::unique_ptr<std::uint32_t[]> copy_len;
  // The open coalesced packet (Config::coalesce): a segment buffer holding whole messages for
  // this channel, not yet handed to core; bundle_last is the offset of the last one.
  core::BufferId bundle = core::kNoBuffer;
  std::uint32_t bundle_len = 0;
  std::uint32_t bundle_last = 0;
  Time last_heard{};      // the last arrival from the peer that could complete requests
  Time last_probe{};      // the last probe sent
  Time probe_interval{};  // UD: backs off while the peer stays unheard or we lack credit

  Pending& slot(std::uint8_t token) noexcept { return pending[token % kPendingSlots]; }
  // True when `token` names a request or store awaiting completion.
  bool awaiting(std::uint8_t token) const noexcept {
    return static_cast<std::uint8_t>(token - oldest_token) < pending_count;
  }
  std::byte* copy(Seq s) noexcept {
    return copies.get() + std::size_t{s & copy_mask} * max_message;
  }
};

// What the messages of one arrived packet did with its buffer: the credit the buffer holds (the
// first request that arrived in it; kKeptNoCredit for none) and how many handlers kept it.
struct Endpoint::Packet {
  BufferId buffer = core::kNoBuffer;
  ChannelId credit = kKeptNoCredit;
  std::uint16_t kept = 0;
};

struct Endpoint::Get {
  ChannelId ch = core::kNoChannel;
  HandlerId handler = 0;
  std::uint8_t arg_count = 0;
  std::array<std::uint64_t, kMaxArgs> args{};
  std::byte* local = nullptr;
  std::size_t length = 0;
  std::uint64_t cookie = 0;
};

}  // namespace unet::uam
