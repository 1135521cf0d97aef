#include "round.h"

namespace unet::perf {

void fill_pattern(std::span<std::byte> out, std::uint64_t seed) noexcept {
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = pattern(seed, i);
}

std::string check_pattern(std::span<const std::byte> in, std::uint64_t seed) {
  for (std::size_t i = 0; i < in.size(); ++i)
    if (in[i] != pattern(seed, i))
      return "byte " + std::to_string(i) + " is " + std::to_string(std::to_integer<int>(in[i])) +
             ", not " + std::to_string(std::to_integer<int>(pattern(seed, i)));
  return "";
}

}  // namespace unet::perf
