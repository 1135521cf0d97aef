// RangeSet<N>: at most N disjoint [start, end) ranges of 32-bit sequence numbers, sorted in
// serial-number order (RFC 1982) — what a stream receiver holds past a gap, and what a sender
// learned from SACK blocks that the receiver holds. Ranges that touch or overlap are merged.
// Pure logic, fixed storage: nothing allocates, locks or throws.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "unet/core/serial_number.h"

namespace unet::ulp {

template <std::uint32_t N>
class RangeSet {
 public:
  struct Range {
    std::uint32_t start = 0, end = 0;
    friend bool operator==(const Range&, const Range&) = default;
  };

  std::uint32_t size() const noexcept { return count_; }
  bool empty() const noexcept { return count_ == 0; }
  // Range i in order (i < size()).
  const Range& operator[](std::uint32_t i) const noexcept { return r_[i]; }

  // Adds [start, end) (start before end), merged with every range it touches. false, and nothing
  // changed, when it adds nothing (it lies inside one range) or it needs a range of its own and N
  // are kept already.
  bool add(std::uint32_t start, std::uint32_t end) noexcept {
    std::uint32_t i = 0;
    // i: the first range ending at or past start.
    while (i < count_ && core::seq_lt(r_[i].end, start)) ++i;
    if (i < count_ && !core::seq_lt(end, r_[i].start)) {  // touches range i: merge
      if (!core::seq_lt(start, r_[i].start) && !core::seq_lt(r_[i].end, end)) return false;
      if (core::seq_lt(start, r_[i].start)) r_[i].start = start;
      if (core::seq_lt(r_[i].end, end)) r_[i].end = end;
      while (i + 1 < count_ && !core::seq_lt(r_[i].end, r_[i + 1].start)) {  // swallow the next
        if (core::seq_lt(r_[i].end, r_[i + 1].end)) r_[i].end = r_[i + 1].end;
        std::copy(r_.begin() + i + 2, r_.begin() + count_, r_.begin() + i + 1);
        --count_;
      }
      return true;
    }
    if (count_ == N) return false;
    std::copy_backward(r_.begin() + i, r_.begin() + count_, r_.begin() + count_ + 1);
    r_[i] = {start, end};
    ++count_;
    return true;
  }

  // Forgets everything before `seq`: a range ending at or before it goes, one across it is cut.
  void drop_below(std::uint32_t seq) noexcept {
    std::uint32_t gone = 0;
    while (gone < count_ && !core::seq_lt(seq, r_[gone].end)) ++gone;
    std::copy(r_.begin() + gone, r_.begin() + count_, r_.begin());
    count_ -= gone;
    if (count_ > 0 && core::seq_lt(r_[0].start, seq)) r_[0].start = seq;
  }
  // Removes the first range (size() > 0).
  void pop_front() noexcept {
    std::copy(r_.begin() + 1, r_.begin() + count_, r_.begin());
    --count_;
  }
  void clear() noexcept { count_ = 0; }

  // The range holding `seq`, or nullptr.
  const Range* find(std::uint32_t seq) const noexcept {
    for (std::uint32_t i = 0; i < count_; ++i)
      if (!core::seq_lt(seq, r_[i].start) && core::seq_lt(seq, r_[i].end)) return &r_[i];
    return nullptr;
  }
  // The first range starting after `seq`, or nullptr.
  const Range* next_after(std::uint32_t seq) const noexcept {
    for (std::uint32_t i = 0; i < count_; ++i)
      if (core::seq_lt(seq, r_[i].start)) return &r_[i];
    return nullptr;
  }

 private:
  std::array<Range, N> r_{};
  std::uint32_t count_ = 0;
};

}  // namespace unet::ulp
