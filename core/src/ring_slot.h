// Ring slot codec: how one message sits in a slot of a ring channel's receive ring. Pure logic.
//
// A slot (bytes, a multiple of 8) holds one message, written by the peer with one RDMA WRITE:
//   [0, 8)       head: seq (16 bits) | length (15) | imm flag (1) | fallbacks before it (16) |
//                credit (16: the running total of slots freed in the writer's own ring)
//   [8, 16)      imm (32 bits) and zeros: only with the imm flag
//   payload      length bytes, then zeros up to a multiple of 8
//   tail         the head word again
// A slot the writer may use is all zeros (the reader zeroes what a message used before it hands
// the slot back), and a head is never zero (length >= 1). The reader takes a slot only when the
// head holds the sequence number it expects and the tail, at the place the head's length names,
// holds the same word. See core/README.md ("Ring channels") for why a half-written slot is never
// taken.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace unet::core::ring {

inline constexpr std::uint32_t kHeadBytes = 8, kImmBytes = 8, kTailBytes = 8;
// What a message may need besides its payload: head, imm word and tail.
inline constexpr std::uint32_t kOverhead = kHeadBytes + kImmBytes + kTailBytes;
inline constexpr std::uint32_t kMaxLength = (1u << 15) - 1;

// The largest payload a slot of `slot_bytes` carries (slot_bytes a multiple of 8, >= 32),
// with immediate data or without.
constexpr std::uint32_t capacity(std::uint32_t slot_bytes) noexcept {
  return slot_bytes - kOverhead;
}
// len rounded up to 8.
constexpr std::uint32_t pad8(std::uint32_t len) noexcept { return (len + 7u) & ~7u; }
// Where the payload starts, and the bytes a message occupies (and its WRITE carries).
constexpr std::uint32_t payload_offset(bool imm) noexcept {
  return kHeadBytes + (imm ? kImmBytes : 0);
}
constexpr std::uint32_t wire_bytes(std::uint32_t len, bool imm) noexcept {
  return payload_offset(imm) + pad8(len) + kTailBytes;
}

// The fields of a head.
struct Head {
  std::uint16_t seq = 0;        // the message's number on its ring, mod 2^16
  std::uint16_t length = 0;     // payload bytes, 1 .. kMaxLength
  bool imm = false;             // an imm word follows the head
  std::uint16_t fallbacks = 0;  // messages of this channel sent by SEND before it, mod 2^16
  std::uint16_t credit = 0;     // running total of slots freed in the writer's ring, mod 2^16
};

// The same from the writer's running counts: `seq` and `credit` are taken mod 2^16 here, and
// `length` is at most kMaxLength.
[[gnu::always_inline]] constexpr std::uint64_t head_word(std::uint32_t seq, std::uint32_t length,
                                                         bool imm, std::uint16_t fallbacks,
                                                         std::uint32_t credit) noexcept {
  return (seq & 0xffffu) | std::uint64_t{length | (imm ? 0x8000u : 0u)} << 16 |
         std::uint64_t{fallbacks} << 32 | std::uint64_t{credit} << 48;
}
constexpr std::uint64_t head_word(const Head& h) noexcept {
  return head_word(h.seq, h.length, h.imm, h.fallbacks, h.credit);
}

constexpr std::uint16_t seq_of(std::uint64_t w) noexcept { return static_cast<std::uint16_t>(w); }
constexpr std::uint16_t length_of(std::uint64_t w) noexcept {
  return static_cast<std::uint16_t>(w >> 16) & 0x7fff;
}
constexpr bool imm_of(std::uint64_t w) noexcept { return (w >> 31) & 1; }
constexpr std::uint16_t fallbacks_of(std::uint64_t w) noexcept {
  return static_cast<std::uint16_t>(w >> 32);
}
constexpr std::uint16_t credit_of(std::uint64_t w) noexcept {
  return static_cast<std::uint16_t>(w >> 48);
}
// Whether the message whose head is `w` must wait for a SEND of its channel sent before it:
// `sends` SEND arrivals have been taken (or dropped for a full receive queue). A head that names
// fewer is from before a dropped SEND, and is next in order.
constexpr bool waits_for_send(std::uint64_t w, std::uint16_t sends) noexcept {
  return static_cast<std::int16_t>(static_cast<std::uint16_t>(fallbacks_of(w) - sends)) > 0;
}
// Where the tail of the message whose head is `w` sits.
constexpr std::uint32_t tail_offset(std::uint64_t w) noexcept {
  return payload_offset(imm_of(w)) + pad8(length_of(w));
}

// What the reader finds in the slot where it expects sequence number `seq`.
enum class Slot : std::uint8_t {
  kEmpty,       // nothing there yet (zero, or another sequence number: not this lap's message)
  kIncomplete,  // this message's head, but not (yet) the tail that repeats it
  kMessage,     // head and tail: the message is all there
  kMalformed,   // the expected sequence number with a length no correct writer makes
};

// A word the NIC (or the peer) may write while we read it: not torn, not kept in a register. An
// acquire load: what the reader reads after it is not read before it.
inline std::uint64_t load_word(const std::byte* p,
                               std::memory_order o = std::memory_order_acquire) noexcept {
  return std::atomic_ref<const std::uint64_t>(*reinterpret_cast<const std::uint64_t*>(p)).load(o);
}

// Zeroes the first `bytes` of a slot for its next lap: those of one message, wire_bytes() of it
// (a multiple of 8, at least 24: head, a payload word, tail). Word stores the compiler keeps as
// they are (no call to memset for a few words); the first three in a line, as a message of up to
// 8 bytes needs no more.
inline void zero_words(std::byte* slot, std::uint32_t bytes) noexcept {
  auto* w = reinterpret_cast<std::uint64_t*>(slot);
  const std::uint32_t n = bytes / 8;
  std::atomic_ref<std::uint64_t>(w[0]).store(0, std::memory_order_relaxed);
  std::atomic_ref<std::uint64_t>(w[1]).store(0, std::memory_order_relaxed);
  std::atomic_ref<std::uint64_t>(w[2]).store(0, std::memory_order_relaxed);
  for (std::uint32_t k = 3; k < n; ++k)
    std::atomic_ref<std::uint64_t>(w[k]).store(0, std::memory_order_relaxed);
}

// Reads the slot (8-byte aligned, slot_bytes long) where the reader expects `seq`: the head, the
// tail at the place it names, and the head again. The words may be caught half written (a CPU
// copy under rxe, or an emulated one, stores byte by byte); what makes that safe is in
// core/README.md ("Ring channels"). A length past the slot is malformed at once (no honest head,
// even half written, names one); a length of 0 only once the tail repeats it. Reads nothing
// outside the slot.
inline Slot read_slot(const std::byte* slot, std::uint32_t slot_bytes, std::uint16_t seq,
                      std::uint64_t& head) noexcept {
  head = load_word(slot);
  if (head == 0 || seq_of(head) != seq) return Slot::kEmpty;
  if (length_of(head) > capacity(slot_bytes)) return Slot::kMalformed;
  if (load_word(slot + tail_offset(head)) != head || load_word(slot) != head)
    return Slot::kIncomplete;
  return length_of(head) == 0 ? Slot::kMalformed : Slot::kMessage;
}

}  // namespace unet::core::ring
