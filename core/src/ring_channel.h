// RingChannel: the ring half of an RC ring channel — our receive ring, the peer's ring we write
// into, the credits of both, and the control words the two sides exchange by RDMA.
//
// Memory, one page-aligned block per channel:
//   [ring: slots * slot_bytes][control: 64 B]   registered for the peer (remote write + read):
//                                               its rkey covers exactly these bytes
//   [staging: lane depth * 32 B]                local only: each ring send's head and tail
// Control words (ours, in our memory):
//   credit        the peer writes its ring's freed total here (our SendWindow)
//   peer_asleep   the peer writes 1 here before it sleeps, 0 once it is awake again
//   published     messages (ring or SEND) we committed to the peer; the peer reads it
//   peer_published where our READ of the peer's `published` lands
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "ring_credits.h"
#include "ring_slot.h"
#include "unet/core/descriptor.h"
#include "unet/verbs/memory_region.h"

namespace unet::core {

struct RingControl {
  std::uint64_t credit = 0;
  std::uint64_t peer_asleep = 0;
  std::uint64_t published = 0;
  std::uint64_t peer_published = 0;
  std::uint64_t unused[4] = {};
};
static_assert(sizeof(RingControl) == 64);

// Control words the NIC writes or reads while we use them: loads and stores that are not torn
// and not kept in a register.
inline std::uint64_t load_word(const std::uint64_t& w,
                               std::memory_order o = std::memory_order_acquire) noexcept {
  return std::atomic_ref<const std::uint64_t>(w).load(o);
}
inline void store_word(std::uint64_t& w, std::uint64_t v,
                       std::memory_order o = std::memory_order_relaxed) noexcept {
  std::atomic_ref<std::uint64_t>(w).store(v, o);
}

// An operation on a ring channel's QP posted outside the send queue: an 8-byte WRITE of `value`
// (a credit total or the sleep flag), an 8-byte READ into `local` (the peer's published count),
// or a zero-byte WRITE (a probe whose completion wakes a sleeping endpoint).
struct ControlOp {
  enum class Kind : std::uint8_t { kWriteWord, kReadWord, kProbe };
  Kind kind = Kind::kProbe;
  std::uint64_t remote = 0;
  std::uint32_t rkey = 0;
  std::uint64_t value = 0;
  std::uint64_t* local = nullptr;
  std::uint32_t lkey = 0;
  bool signal = false;
};

struct RingChannel {
  struct FreeBlock {
    void operator()(std::byte* p) const noexcept;
  };
  RingChannel(std::uint32_t n, std::uint32_t bytes)
      : slots(n), slot_bytes(bytes), rx(n), held(std::make_unique<std::uint32_t[]>(n)) {}

  // Our receive ring.
  std::unique_ptr<std::byte[], FreeBlock> block;
  std::size_t block_bytes = 0;
  std::unique_ptr<verbs::MemoryRegion> remote_mr;  // ring + control
  std::unique_ptr<verbs::MemoryRegion> local_mr;   // staging
  std::byte* ring = nullptr;
  RingControl* control = nullptr;
  std::byte* staging = nullptr;
  std::uint32_t staging_mask = 0;
  std::uint32_t slots;
  std::uint32_t slot_bytes;
  ring::FreeList rx;
  // Each slot the application holds (read in place): the bytes its message used, and kHeldImm
  // when an imm word sits before the payload. Recorded at arrival: the peer could rewrite the head.
  static constexpr std::uint32_t kHeldImm = 1u << 16;
  std::unique_ptr<std::uint32_t[]> held;
  std::uint32_t holding = 0;          // slots the application holds
  std::uint16_t fallbacks_taken = 0;  // SEND arrivals of this channel taken
  std::uint32_t arrived = 0;          // every arrival of this channel (ring or SEND)

  // The peer's ring, which we write.
  std::uint64_t peer_ring = 0;
  std::uint32_t peer_rkey = 0;
  std::uint32_t peer_slot_bytes = 0;
  std::uint64_t peer_control = 0;    // address of the peer's RingControl
  ring::SendWindow tx{0};            // set from the peer's offer
  std::uint16_t fallbacks_sent = 0;  // our messages to the peer sent by SEND
  std::uint32_t published = 0;       // our messages to the peer, ring or SEND
  bool after_write = false;          // an RDMA WRITE went since our last message: next by SEND
  std::uint32_t inline_payload = 0;  // ring WRITEs of payloads up to this size are posted inline
  std::uint32_t fit = 0;             // the largest payload the peer's slots take
  std::uint32_t fit_inline = 0;      // ... and posted inline: min(fit, inline_payload)

  // Sleep (Endpoint::arm): whether the peer has been told we sleep, and whether the last look at
  // its `published` found nothing of it on the way.
  bool told_asleep = false;
  bool sleep_clean = false;
  bool reading = false;        // the READ is posted and not yet seen complete
  std::uint32_t read_seq = 0;  // its lane sequence number

  // Polling: this ring's index in the endpoint's polled set, and its id among the endpoint's
  // rings (ring buffer ids derive from it).
  std::uint32_t polled = UINT32_MAX;
  std::uint32_t index = 0;
  ChannelId channel = kNoChannel;

  std::byte* slot(std::uint32_t seq) noexcept {
    return ring + std::size_t{seq & (slots - 1)} * slot_bytes;
  }
  // slot(seq + 1) from s == slot(seq), by adding: the control block follows the last slot.
  std::byte* next_slot(std::byte* s) noexcept {
    s += slot_bytes;
    return s == reinterpret_cast<std::byte*>(control) ? ring : s;
  }
  const std::uint64_t& head(std::uint32_t seq) noexcept {
    return *reinterpret_cast<const std::uint64_t*>(slot(seq));
  }
};

}  // namespace unet::core
