// Reassembler: puts fragmented datagrams back together, in bounded memory.
//
// A fixed number of slots, each with room for one whole datagram (kMaxDatagram), allocated at
// construction. A fragment of a datagram not yet seen takes a free slot; with none free, the
// oldest incomplete datagram is evicted (dropped, counted) to make room, and if every slot holds a
// completed datagram the application has not taken yet, the fragment is dropped (counted). A
// datagram is identified by (peer, source port, id); a fragment whose length, stride or count
// disagree with its datagram's first fragment is dropped as inconsistent, and a fragment seen
// before is dropped as a duplicate, so a completed datagram holds exactly one copy of each
// fragment: whole or not at all, never mixed. An incomplete datagram older than the timeout is
// dropped by expire(). Single-fragment datagrams need no slot: the caller delivers them directly.
//
// Time is a parameter (nothing here reads a clock); add/expire/release never allocate or throw.
#pragma once

#include <bitset>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "unet/ulp/datagram_header.h"

namespace unet::ulp {

using Time = std::chrono::nanoseconds;  // since any fixed origin

// How many datagrams may be in reassembly at once, and how long one may take.
struct ReassemblyConfig {
  std::uint32_t slots = 16;  // datagrams in reassembly (or completed, not yet taken) at once
  Time timeout = std::chrono::milliseconds(100);
};

// Counters of one reassembler; every dropped fragment or datagram is in one of them. Every
// fragment added is in exactly one of held, completed (the one that completes its datagram),
// duplicates, inconsistent and no_slot.
struct ReassemblyStats {
  std::uint64_t started = 0;  // datagrams whose first fragment took a slot
  std::uint64_t held = 0;     // fragments kept until the rest of their datagram comes
  std::uint64_t completed = 0;
  std::uint64_t duplicates = 0;    // fragments seen before, dropped
  std::uint64_t inconsistent = 0;  // fragments disagreeing with their datagram, dropped
  std::uint64_t expired = 0;       // incomplete datagrams dropped by the timeout
  std::uint64_t evicted = 0;       // incomplete datagrams dropped to make room
  std::uint64_t no_slot = 0;       // fragments dropped: every slot holds a datagram not yet taken
};

// Bounded reassembly (see the top of this file). One thread; nothing allocates after
// construction.
class Reassembler {
 public:
  // What add() did with a fragment.
  enum class Outcome : std::uint8_t {
    kIncomplete,  // kept; more fragments to come
    kComplete,    // the datagram is whole in `slot` until release(slot)
    kDropped,     // counted in stats()
  };

  // Throws std::invalid_argument for zero slots or a non-positive timeout.
  explicit Reassembler(const ReassemblyConfig& config = {});

  // Adds fragment `h` with bytes `fragment` (h.count > 1, from decode()) from `peer` at `now`.
  Outcome add(std::uint32_t peer, const DatagramHeader& h, std::span<const std::byte> fragment,
              Time now, std::uint32_t& slot) noexcept;
  // The whole datagram in a completed slot.
  std::span<const std::byte> data(std::uint32_t slot) const noexcept;
  // Frees a completed slot.
  void release(std::uint32_t slot) noexcept;
  // Drops every incomplete datagram that started at or before now - timeout; returns how many.
  std::uint32_t expire(Time now) noexcept;

  // Datagrams in reassembly now (incomplete), and the counters.
  std::uint32_t assembling() const noexcept;
  const ReassemblyStats& stats() const noexcept { return stats_; }

 private:
  enum class State : std::uint8_t { kFree, kAssembling, kComplete };
  struct Slot {
    State state = State::kFree;
    std::uint32_t peer = 0;
    std::uint16_t src_port = 0;
    std::uint32_t id = 0;
    std::uint32_t length = 0;
    std::uint16_t stride = 0;
    std::uint16_t count = 0;
    std::uint16_t received = 0;
    Time started{};
    std::bitset<kMaxFragments> seen;
  };
  std::uint32_t take_slot() noexcept;  // a free slot, evicting if needed; UINT32_MAX: none

  ReassemblyConfig config_;
  std::vector<Slot> slots_;
  std::unique_ptr<std::byte[]> memory_;  // slots * kMaxDatagram
  ReassemblyStats stats_;
};

}  // namespace unet::ulp
