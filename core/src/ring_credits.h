// Ring credits: how many slots of a ring are free, on each side of a ring channel. Pure logic.
//
// The writer counts the messages it put in the peer's ring (`sent`) and learns the peer's running
// total of slots freed, piggybacked mod 2^16 in the heads of the peer's own ring messages or
// written whole into the writer's credit word. Either may be older than what the writer knows
// already (a head posted before a credit word was written): that is no news. A total ahead of
// `sent` frees slots never written: no correct peer sends one. The reader frees slots in ring
// order: a slot the application keeps (a large arrival read in place) holds back the ones after
// it. Running totals are 32-bit and compared by their difference, so they may wrap; a 16-bit one
// is never more than a few rings behind, far less than 2^15 (slots <= 2^14).
#pragma once

#include <cstdint>
#include <memory>

namespace unet::core::ring {

// The writer's side: slots of the peer's ring it may write.
class SendWindow {
 public:
  // `start`: where the running totals begin (0; tests start them near the wrap).
  explicit SendWindow(std::uint32_t slots, std::uint32_t start = 0) noexcept
      : slots_(slots), sent_(start), freed_(start) {}
  std::uint32_t slots() const noexcept { return slots_; }
  std::uint32_t sent() const noexcept { return sent_; }
  std::uint32_t available() const noexcept { return slots_ - (sent_ - freed_); }
  // Takes a slot (available() > 0); returns the message's number on the ring.
  std::uint32_t take() noexcept { return sent_++; }
  // A freed total from the peer, mod 2^16 (a head's credit field) or whole (the credit word).
  // False (and nothing changed) when it is ahead of what we sent.
  bool update16(std::uint16_t total) noexcept {
    const auto behind = static_cast<std::uint16_t>(static_cast<std::uint16_t>(sent_) - total);
    if (behind >= 0x8000u) return false;
    return advance(sent_ - behind);
  }
  bool update(std::uint64_t total) noexcept {
    const auto t = static_cast<std::uint32_t>(total);
    if (static_cast<std::int32_t>(sent_ - t) < 0) return false;
    return advance(t);
  }

 private:
  // Totals only move forward; an older one (a head written before a credit word) is no news.
  bool advance(std::uint32_t t) noexcept {
    if (static_cast<std::int32_t>(t - freed_) > 0) freed_ = t;
    return true;
  }
  std::uint32_t slots_;
  std::uint32_t sent_;
  std::uint32_t freed_;
};

// The reader's side: which slots the application holds, and the freed total owed to the writer.
class FreeList {
 public:
  // `slots` a power of two; `start` as for SendWindow.
  explicit FreeList(std::uint32_t slots, std::uint32_t start = 0)
      : mask_(slots - 1),
        state_(std::make_unique<std::uint8_t[]>(slots)),
        taken_(start),
        freed_(start),
        reported_(start) {}
  std::uint32_t slots() const noexcept { return mask_ + 1; }
  // Messages taken from the ring so far, and the next one's number.
  std::uint32_t taken() const noexcept { return taken_; }
  // The running total of slots freed in order (what the writer is told).
  std::uint32_t freed() const noexcept { return freed_; }
  // Freed slots not yet reported to the writer; a report is due once half the ring is owed.
  std::uint32_t owed() const noexcept { return freed_ - reported_; }
  bool report_due() const noexcept { return owed() >= (mask_ + 1) / 2; }
  void reported() noexcept { reported_ = freed_; }

  // The next message was taken: its slot is the application's until freed.
  std::uint32_t take() noexcept {
    state_[taken_ & mask_] = kHeld;
    return taken_++;
  }
  // The next message was taken and its slot freed at once (a payload copied out).
  void take_and_free() noexcept {
    if (freed_ == taken_) {  // nothing held: the freed total moves with it
      ++taken_;
      ++freed_;
      return;
    }
    free(take() & mask_);
  }
  // Whether slot index `i` holds a message the application has not freed.
  bool held(std::uint32_t i) const noexcept { return i <= mask_ && state_[i] == kHeld; }
  // Frees slot index `i` (held(i)); the freed total advances over every freed slot in order.
  void free(std::uint32_t i) noexcept {
    state_[i] = kFreed;
    while (freed_ != taken_ && state_[freed_ & mask_] == kFreed) state_[freed_++ & mask_] = kEmpty;
  }

 private:
  static constexpr std::uint8_t kEmpty = 0, kHeld = 1, kFreed = 2;
  std::uint32_t mask_;
  std::unique_ptr<std::uint8_t[]> state_;
  std::uint32_t taken_;
  std::uint32_t freed_;
  std::uint32_t reported_;
};

}  // namespace unet::core::ring
