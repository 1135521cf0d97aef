// DescriptorRing<T>: a single-producer, single-consumer ring — the shape of U-Net's queues.
//
// Power-of-two capacity and a mask, free-running 32-bit producer and consumer indices with
// acquire/release ordering (as rdma-core's rxe_queue.h does), so one thread may push while
// another pops. Storage is allocated once at construction; push and pop never allocate, lock or
// make a system call.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>

#include "unet/core/always_inline.h"

namespace unet::core {

template <class T>
class DescriptorRing {
 public:
  // Capacity is `capacity` rounded up to a power of two (at least 1). Throws std::invalid_argument
  // for 0 or more than 2^31 entries.
  explicit DescriptorRing(std::size_t capacity) {
    if (capacity == 0 || capacity > (std::size_t{1} << 31))
      throw std::invalid_argument("DescriptorRing: capacity must be 1 .. 2^31");
    capacity_ = static_cast<std::uint32_t>(std::bit_ceil(capacity));
    mask_ = capacity_ - 1;
    slots_ = std::make_unique<T[]>(capacity_);
  }

  // Slots in the ring (a power of two).
  std::uint32_t capacity() const noexcept { return capacity_; }
  // Entries present. Exact for the producer's or consumer's own thread; a snapshot otherwise.
  [[gnu::always_inline]] std::uint32_t size() const noexcept {
    return tail_.load(std::memory_order_acquire) - head_.load(std::memory_order_acquire);
  }
  // size() == 0 and size() == capacity(), with size()'s caveat.
  bool empty() const noexcept { return size() == 0; }
  bool full() const noexcept { return size() == capacity_; }

  // Producer: appends a copy of `v`; false (nothing changed) when full.
  [[nodiscard]] bool push(const T& v) noexcept {
    std::uint32_t t = tail_.load(std::memory_order_relaxed);
    if (t - head_.load(std::memory_order_acquire) == capacity_) return false;
    slots_[t & mask_] = v;
    tail_.store(t + 1, std::memory_order_release);
    return true;
  }

  // Producer: the slot the next push() would fill, to compose in place; commit() publishes it.
  // nullptr when full.
  [[gnu::always_inline]] T* reserve() noexcept {
    std::uint32_t t = tail_.load(std::memory_order_relaxed);
    if (t - head_.load(std::memory_order_acquire) == capacity_) return nullptr;
    return &slots_[t & mask_];
  }
  // Producer: publishes the slot returned by the last reserve().
  [[gnu::always_inline]] void commit() noexcept {
    tail_.store(tail_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }

  // Consumer: the oldest entry, or nullptr when empty. Valid until pop().
  [[gnu::always_inline]] T* front() noexcept {
    std::uint32_t h = head_.load(std::memory_order_relaxed);
    if (tail_.load(std::memory_order_acquire) == h) return nullptr;
    return &slots_[h & mask_];
  }
  // Consumer: the entry `i` places behind the oldest (i < size()).
  [[gnu::always_inline]] T& at(std::uint32_t i) noexcept {
    return slots_[(head_.load(std::memory_order_relaxed) + i) & mask_];
  }
  // Consumer: drops the oldest `n` entries (n <= size()).
  [[gnu::always_inline]] void pop(std::uint32_t n = 1) noexcept {
    head_.store(head_.load(std::memory_order_relaxed) + n, std::memory_order_release);
  }
  // Consumer: moves the oldest entry to `out`; false when empty.
  [[nodiscard, gnu::always_inline]] bool pop_into(T& out) noexcept {
    T* f = front();
    if (!f) return false;
    out = *f;
    pop();
    return true;
  }

 private:
  alignas(64) std::atomic<std::uint32_t> head_{0};  // consumer index
  alignas(64) std::atomic<std::uint32_t> tail_{0};  // producer index
  std::uint32_t capacity_ = 0;
  std::uint32_t mask_ = 0;
  std::unique_ptr<T[]> slots_;
};

}  // namespace unet::core
