// splitmix64: the examples' seeded generator (Steele, Lea and Flood's SplitMix64 finalizer). A pure
// function of its input, so an entry of the input data is a function of its global index and the
// data do not depend on how many processes share it.
#pragma once

#include <cstdint>

namespace unet::uam::examples {

constexpr std::uint64_t splitmix64(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace unet::uam::examples
