// store_le, load_le: little-endian stores and loads for wire formats, so a layout does not depend
// on the host's byte order or on struct padding (uam's and ulp's headers use them).
//
// On a little-endian host at run time each is one unaligned load or store (memcpy of the whole
// value, which the compiler turns into a single move): the byte-by-byte form costs a memory access
// per byte, and under emulation (TCG) every access is expensive. In constant evaluation, and on a
// big-endian host, the value goes byte by byte.
#pragma once

#include <bit>
#include <concepts>
#include <cstddef>
#include <cstring>
#include <type_traits>

namespace unet::core {

template <std::unsigned_integral T>
constexpr void store_le(std::byte* p, T v) noexcept {
  if (!std::is_constant_evaluated() && std::endian::native == std::endian::little) {
    std::memcpy(p, &v, sizeof(T));
    return;
  }
  for (std::size_t i = 0; i < sizeof(T); ++i) p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xFF);
}

template <std::unsigned_integral T>
constexpr T load_le(const std::byte* p) noexcept {
  T v = 0;
  if (!std::is_constant_evaluated() && std::endian::native == std::endian::little) {
    std::memcpy(&v, p, sizeof(T));
    return v;
  }
  for (std::size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(static_cast<T>(p[i]) << (8 * i));
  return v;
}

}  // namespace unet::core
