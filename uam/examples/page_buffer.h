// PageBuffer<T>: an uninitialized array of T on whole pages of its own.
//
// Memory that store() and get() read or write is registered through the endpoint's registration
// cache, which registers whole pages and merges a new range with any cached one sharing a page.
// Buffers on pages of their own, cut into page-aligned chunks, keep those registrations apart:
// each chunk is registered once instead of a growing union being registered again per chunk.
//
// core::Endpoint offers no way to invalidate the cache, so memory that went through store() or
// get() must stay allocated while the endpoint lives: freed and mapped again at the same address,
// it would hit a stale registration of the old pages. The examples keep such buffers until the
// worker's program returns.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <span>
#include <type_traits>

namespace unet::uam::examples {

inline constexpr std::size_t kPageBytes = 4096;

template <class T>
class PageBuffer {
  static_assert(std::is_trivial_v<T>);

 public:
  PageBuffer() = default;
  explicit PageBuffer(std::size_t n) : size_(n) {
    const std::size_t bytes = (n * sizeof(T) + kPageBytes - 1) / kPageBytes * kPageBytes;
    if (bytes == 0) return;
    data_.reset(static_cast<T*>(std::aligned_alloc(kPageBytes, bytes)));
    if (!data_) throw std::bad_alloc();
  }

  T* data() noexcept { return data_.get(); }
  const T* data() const noexcept { return data_.get(); }
  std::size_t size() const noexcept { return size_; }
  T& operator[](std::size_t i) noexcept { return data_[i]; }
  const T& operator[](std::size_t i) const noexcept { return data_[i]; }
  T* begin() noexcept { return data(); }
  T* end() noexcept { return data() + size_; }
  const T* begin() const noexcept { return data(); }
  const T* end() const noexcept { return data() + size_; }
  std::span<T> span() noexcept { return {data(), size_}; }

 private:
  struct Free {
    void operator()(T* p) const noexcept { std::free(p); }
  };
  std::unique_ptr<T[], Free> data_;
  std::size_t size_ = 0;
};

}  // namespace unet::uam::examples
