// store_le, load_le: little-endian stores and loads for wire formats, explicit byte by byte, so a
// layout does not depend on the host's byte order or on struct padding (uam's and ulp's headers
// use them).
#pragma once

#include <concepts>
#include <cstddef>

namespace unet::core {

template <std::unsigned_integral T>
constexpr void store_le(std::byte* p, T v) noexcept {
  for (std::size_t i = 0; i < sizeof(T); ++i) p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xFF);
}

template <std::unsigned_integral T>
constexpr T load_le(const std::byte* p) noexcept {
  T v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(static_cast<T>(p[i]) << (8 * i));
  return v;
}

}  // namespace unet::core
