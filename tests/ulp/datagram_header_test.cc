// The datagram header codec: the byte layout, every refusal rule by name, and canonical decoding.
#include "unet/ulp/datagram_header.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

namespace unet::ulp {
namespace {

using Bytes = std::vector<std::byte>;

DatagramHeader sample(std::uint32_t length = 3000, std::uint16_t stride = 1004,
                      std::uint16_t index = 1) {
  DatagramHeader h;
  h.src_port = 0x1234;
  h.dst_port = 0xBEEF;
  h.stride = stride;
  h.id = 0xA1B2C3D4;
  h.length = length;
  h.count = static_cast<std::uint16_t>(fragment_count(length, stride));
  h.index = index;
  return h;
}

Bytes message(const DatagramHeader& h) {
  Bytes b(kDatagramHeaderBytes + h.fragment_bytes());
  EXPECT_EQ(encode(h, h.fragment_bytes(), b), Status::kOk);
  for (std::size_t i = kDatagramHeaderBytes; i < b.size(); ++i) b[i] = static_cast<std::byte>(i);
  return b;
}

TEST(DatagramHeader, LayoutIsLittleEndianAndFixed) {
  const Bytes b = message(sample());
  const std::uint8_t want[] = {0x5D, 0x11, 0x34, 0x12, 0xEF, 0xBE, 0xEC, 0x03, 0xD4, 0xC3,
                               0xB2, 0xA1, 0xB8, 0x0B, 0x00, 0x00, 0x01, 0x00, 0x03, 0x00};
  ASSERT_EQ(b.size(), 20u + 1004u);
  EXPECT_EQ(std::memcmp(b.data(), want, sizeof want), 0);
  DatagramHeader out;
  ASSERT_EQ(decode(b, out), Status::kOk);
  EXPECT_EQ(out, sample());
  EXPECT_EQ(out.offset(), 1004u);
}

TEST(DatagramHeader, FragmentSizes) {
  EXPECT_EQ(fragment_count(0, 100), 1u);
  EXPECT_EQ(fragment_count(100, 100), 1u);
  EXPECT_EQ(fragment_count(101, 100), 2u);
  EXPECT_EQ(fragment_count(kMaxDatagram, kMinStride), kMaxFragments);
  DatagramHeader last = sample(3000, 1004, 2);
  EXPECT_EQ(last.fragment_bytes(), 3000u - 2008u);
  DatagramHeader empty = sample(0, 1004, 0);
  EXPECT_EQ(empty.count, 1);
  EXPECT_EQ(empty.fragment_bytes(), 0u);
  EXPECT_EQ(message(empty).size(), 20u);
}

struct Bad {
  const char* name;
  Bytes bytes;
  DatagramFault fault;
};

Bytes with(Bytes b, std::size_t at, std::uint8_t v) {
  b[at] = static_cast<std::byte>(v);
  return b;
}
Bytes resized(Bytes b, std::size_t n) {
  b.resize(n);
  return b;
}
Bytes raw(DatagramHeader h, std::size_t fragment) {  // encodes without check()
  Bytes b(kDatagramHeaderBytes + fragment);
  DatagramHeader ok = sample(h.length > kMaxDatagram ? 100 : h.length, 1004, 0);
  ok.count = static_cast<std::uint16_t>(fragment_count(ok.length, 1004));
  EXPECT_EQ(encode(ok, ok.fragment_bytes(), b), Status::kOk);
  auto put16 = [&](std::size_t at, std::uint16_t v) {
    b[at] = static_cast<std::byte>(v & 0xFF);
    b[at + 1] = static_cast<std::byte>(v >> 8);
  };
  auto put32 = [&](std::size_t at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) b[at + i] = static_cast<std::byte>((v >> (8 * i)) & 0xFF);
  };
  put16(6, h.stride);
  put32(12, h.length);
  put16(16, h.index);
  put16(18, h.count);
  return b;
}

std::vector<Bad> bad_cases() {
  const Bytes good = message(sample());
  DatagramHeader h = sample();
  DatagramHeader too_long = h;
  too_long.length = kMaxDatagram + 1;
  too_long.count = static_cast<std::uint16_t>(fragment_count(too_long.length, h.stride));
  DatagramHeader small_stride = sample(100, 32, 0);
  small_stride.count = 4;
  DatagramHeader wrong_count = h;
  wrong_count.count = 4;
  DatagramHeader index_past = h;
  index_past.index = 3;
  return {
      {"Empty", {}, DatagramFault::kTooShort},
      {"NineteenBytes", resized(good, 19), DatagramFault::kTooShort},
      {"BadMagic", with(good, 0, 0x5C), DatagramFault::kBadMagic},
      {"Version2", with(good, 1, 0x21), DatagramFault::kBadVersion},
      {"Kind0", with(good, 1, 0x10), DatagramFault::kBadKind},
      {"Kind2", with(good, 1, 0x12), DatagramFault::kBadKind},
      {"TooLong", raw(too_long, 1004), DatagramFault::kTooLong},
      {"StrideBelowMinimum", raw(small_stride, 32), DatagramFault::kBadStride},
      {"CountMismatch", raw(wrong_count, 1004), DatagramFault::kBadCount},
      {"IndexPastCount", raw(index_past, 0), DatagramFault::kBadIndex},
      {"FragmentShort", resized(good, good.size() - 1), DatagramFault::kLengthMismatch},
      {"FragmentLong", resized(good, good.size() + 1), DatagramFault::kLengthMismatch},
  };
}

class DatagramHeaderBad : public ::testing::TestWithParam<Bad> {};

TEST_P(DatagramHeaderBad, RefusedWithItsFaultAndOutputUntouched) {
  DatagramHeader out = sample(7, 1004, 0), before = out;
  DatagramFault fault = DatagramFault::kNone;
  EXPECT_EQ(decode(GetParam().bytes, out, fault), Status::kInvalidArgument);
  EXPECT_EQ(fault, GetParam().fault) << to_string(fault);
  EXPECT_EQ(out, before);
}

INSTANTIATE_TEST_SUITE_P(Rules, DatagramHeaderBad, ::testing::ValuesIn(bad_cases()),
                         [](const auto& param) { return std::string(param.param.name); });

TEST(DatagramHeader, EncodeRefusesWhatDecodeWould) {
  Bytes b(64);
  DatagramHeader h = sample();
  EXPECT_EQ(encode(h, h.fragment_bytes() + 1, b), Status::kInvalidArgument);
  EXPECT_EQ(encode(h, h.fragment_bytes(), std::span(b).first(19)), Status::kInvalidArgument);
  h.index = h.count;
  EXPECT_EQ(encode(h, 0, b), Status::kInvalidArgument);
  EXPECT_EQ(b[0], std::byte{0});  // nothing written
}

// Any one-bit change is either refused or decodes canonically (re-encodes to the same bytes).
TEST(DatagramHeader, MutationsRefusedOrCanonical) {
  std::mt19937 rng(11);
  for (int round = 0; round < 3000; ++round) {
    const auto length = static_cast<std::uint32_t>(rng() % 5000);
    const auto stride = static_cast<std::uint16_t>(64 + rng() % 2000);
    DatagramHeader h = sample(length, stride, 0);
    h.index = static_cast<std::uint16_t>(rng() % h.count);
    Bytes b = message(h);
    b[rng() % b.size()] ^= static_cast<std::byte>(1u << (rng() % 8));
    DatagramHeader out;
    if (decode(b, out) == Status::kOk) {
      Bytes again(kDatagramHeaderBytes);
      ASSERT_EQ(encode(out, b.size() - kDatagramHeaderBytes, again), Status::kOk);
      ASSERT_EQ(std::memcmp(again.data(), b.data(), kDatagramHeaderBytes), 0);
    }
  }
}

}  // namespace
}  // namespace unet::ulp
