// libFuzzer target: what a peer can put in a ring slot, in the ring and buffer-size fields of its
// offer and in the ring grant of its rdma_cm private data. The slot is a heap block of exactly its
// size (ASan catches a read past it); the reader's verdict must agree with the head it returns;
// each offer field either parses (a valid geometry, a buffer size in range) with the line cut
// before it, or is refused with nothing changed; a grant is no ring, a valid one, or refused with
// nothing changed.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string_view>

#include "offer_limit.h"
#include "ring_offer.h"
#include "ring_slot.h"

namespace ring = unet::core::ring;
namespace offer = unet::core::offer;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 4) return 0;
  // Slot size from the first byte: 32..2048 in steps of 8; the expected seq from the next two.
  const std::uint32_t slot_bytes = ring::kMinSlotBytes + 8u * (data[0] % 253);
  const auto seq = static_cast<std::uint16_t>(data[1] | data[2] << 8);
  struct Free {
    void operator()(std::byte* p) const noexcept { std::free(p); }
  };
  // malloc: aligned for any word, and exactly slot_bytes long.
  const std::unique_ptr<std::byte[], Free> slot(static_cast<std::byte*>(std::malloc(slot_bytes)));
  if (!slot) return 0;
  std::memset(slot.get(), 0, slot_bytes);
  std::memcpy(slot.get(), data + 3, std::min<std::size_t>(size - 3, slot_bytes));
  std::uint64_t head = 0;
  const ring::Slot s = ring::read_slot(slot.get(), slot_bytes, seq, head);
  // Incomplete (a head of length 0 among them: half written, or malformed once its tail repeats
  // it) and taken heads name this seq and a tail inside the slot; a taken one carries a payload.
  if (s == ring::Slot::kMessage || s == ring::Slot::kIncomplete) {
    if (ring::seq_of(head) != seq || ring::length_of(head) > ring::capacity(slot_bytes) ||
        ring::tail_offset(head) + ring::kTailBytes > slot_bytes)
      std::abort();
  }
  if (s == ring::Slot::kMessage && ring::length_of(head) == 0) std::abort();
  if (s == ring::Slot::kMessage &&
      ring::wire_bytes(ring::length_of(head), ring::imm_of(head)) > slot_bytes)
    std::abort();

  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string_view line = text;
  ring::Geometry g{3, 5};
  if (ring::split_offer(line, g)) {
    if (g.slots != 3 && (!ring::valid(g) || line.size() >= text.size())) std::abort();
    if (g.slots == 3 && (g.slot_bytes != 5 || line != text)) std::abort();
  } else if (line != text || g.slots != 3 || g.slot_bytes != 5) {
    std::abort();
  }
  // The buffer-size field of an offer line (offer_limit.h): taken whole or not at all.
  std::string_view rest = text;
  std::uint32_t buffer = 7;
  if (offer::split_buffer_field(rest, buffer)) {
    if (buffer == 0 && rest != text) std::abort();
    if (buffer != 0 && (buffer > offer::kMaxBuffer || rest.size() >= text.size())) std::abort();
    if (buffer == 7 && rest == text) std::abort();  // neither taken nor cleared
  } else if (rest != text || buffer != 7) {
    std::abort();
  }
  // The whole input as private data (a heap copy of exactly its size: no read past it).
  const std::unique_ptr<std::byte[]> priv(new std::byte[size]);
  std::memcpy(priv.get(), data, size);
  ring::Grant grant{{3, 5}, 9, 11};
  if (ring::decode_grant(std::span<const std::byte>(priv.get(), size), grant)) {
    if (grant.geometry.slots != 0 && (!ring::valid(grant.geometry) || grant.addr == 0))
      std::abort();
    if (grant.geometry.slots == 0 && (grant.addr != 0 || grant.rkey != 0)) std::abort();
  } else if (grant.geometry.slots != 3 || grant.addr != 9 || grant.rkey != 11) {
    std::abort();
  }
  return 0;
}
