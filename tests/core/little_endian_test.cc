// store_le / load_le: the byte layout is little-endian whatever the path (memcpy at run time on a
// little-endian host, byte by byte in constant evaluation), at any alignment.
#include "unet/core/little_endian.h"

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>

namespace unet::core {
namespace {

constexpr std::array<std::byte, 8> constant_bytes() {
  std::array<std::byte, 8> b{};
  store_le<std::uint64_t>(b.data(), 0x0807060504030201ull);
  return b;
}
static_assert(constant_bytes()[0] == std::byte{1} && constant_bytes()[7] == std::byte{8});
static_assert(load_le<std::uint32_t>(constant_bytes().data() + 1) == 0x05040302u);

TEST(LittleEndian, StoresLowByteFirstAtEveryAlignment) {
  for (std::size_t at = 0; at < 8; ++at) {
    std::array<std::byte, 24> buf{};
    store_le<std::uint64_t>(buf.data() + at, 0x8877665544332211ull);
    store_le<std::uint32_t>(buf.data() + at + 8, 0xDDCCBBAAu);
    store_le<std::uint16_t>(buf.data() + at + 12, std::uint16_t{0xFFEE});
    const std::uint8_t want[] = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
                                 0x88, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF};
    for (std::size_t i = 0; i < sizeof want; ++i)
      EXPECT_EQ(static_cast<std::uint8_t>(buf[at + i]), want[i])
          << "offset " << at << " byte " << i;
    for (std::size_t i = 0; i < at; ++i)
      EXPECT_EQ(buf[i], std::byte{0}) << "wrote before offset " << at;
    for (std::size_t i = at + sizeof want; i < buf.size(); ++i)
      EXPECT_EQ(buf[i], std::byte{0}) << "wrote past the value at offset " << at;
  }
}

TEST(LittleEndian, LoadsWhatWasStoredAtEveryAlignment) {
  for (std::size_t at = 0; at < 8; ++at) {
    std::array<std::byte, 16> buf{};
    for (std::size_t i = 0; i < 8; ++i) buf[at + i] = static_cast<std::byte>(0xF0 + i);
    EXPECT_EQ(load_le<std::uint64_t>(buf.data() + at), 0xF7F6F5F4F3F2F1F0ull);
    EXPECT_EQ(load_le<std::uint32_t>(buf.data() + at), 0xF3F2F1F0u);
    EXPECT_EQ(load_le<std::uint16_t>(buf.data() + at), 0xF1F0u);
    EXPECT_EQ(load_le<std::uint8_t>(buf.data() + at), 0xF0u);
  }
}

}  // namespace
}  // namespace unet::core
