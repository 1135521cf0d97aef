// The stream segment header codec: the byte layout, every refusal rule by name, encode and decode
// agreeing on what is refused, and canonical decoding.
#include "unet/ulp/segment_header.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

namespace unet::ulp {
namespace {

using Bytes = std::vector<std::byte>;

SegmentHeader sample(std::uint8_t flags = kAck) {
  SegmentHeader h;
  h.flags = flags;
  h.src_port = 0x1234;
  h.dst_port = 0xBEEF;
  h.seq = 0xA1B2C3D4;
  h.ack = 0x01020304;
  h.window = 0x00010000;
  return h;
}

Bytes message(const SegmentHeader& h, std::size_t payload = 0) {
  Bytes b(kSegmentHeaderBytes + payload);
  EXPECT_EQ(encode(h, payload, b), Status::kOk);
  for (std::size_t i = kSegmentHeaderBytes; i < b.size(); ++i) b[i] = static_cast<std::byte>(i);
  return b;
}

TEST(SegmentHeader, LayoutIsLittleEndianAndFixed) {
  const Bytes b = message(sample(kAck | kFin), 3);
  const std::uint8_t want[] = {0x5E, 0x20, 0x06, 0x00, 0x34, 0x12, 0xEF, 0xBE, 0xD4, 0xC3,
                               0xB2, 0xA1, 0x04, 0x03, 0x02, 0x01, 0x00, 0x00, 0x01, 0x00};
  ASSERT_EQ(b.size(), 23u);
  EXPECT_EQ(std::memcmp(b.data(), want, sizeof want), 0);
  SegmentHeader out;
  SegmentFault fault = SegmentFault::kTooShort;
  ASSERT_EQ(decode(b, out, fault), Status::kOk);
  EXPECT_EQ(fault, SegmentFault::kNone);
  EXPECT_EQ(out, sample(kAck | kFin));
  EXPECT_TRUE(out.has(kFin));
  EXPECT_FALSE(out.has(kSyn));
}

TEST(SegmentHeader, FlagBitsAreThoseOfTheTable) {
  EXPECT_EQ(kSyn, 0x01);
  EXPECT_EQ(kAck, 0x02);
  EXPECT_EQ(kFin, 0x04);
  EXPECT_EQ(kRst, 0x08);
  EXPECT_EQ(kSack, 0x10);
  EXPECT_EQ(kSegmentHeaderBytes, 20u);
}

struct Good {
  const char* name;
  std::uint8_t flags;
  std::size_t payload;
  // Test names then carry the case's name, not its bytes (which hold pointers, new each run).
  friend void PrintTo(const Good& g, std::ostream* os) { *os << g.name; }
};

class SegmentHeaderGood : public ::testing::TestWithParam<Good> {};

TEST_P(SegmentHeaderGood, RoundTrips) {
  const SegmentHeader h = sample(GetParam().flags);
  EXPECT_EQ(check(h, GetParam().payload), SegmentFault::kNone);
  const Bytes b = message(h, GetParam().payload);
  SegmentHeader out;
  ASSERT_EQ(decode(b, out), Status::kOk);
  EXPECT_EQ(out, h);
  EXPECT_EQ(std::span<const std::byte>(b).subspan(kSegmentHeaderBytes).size(), GetParam().payload);
}

INSTANTIATE_TEST_SUITE_P(Allowed, SegmentHeaderGood,
                         ::testing::Values(Good{"FirstSyn", kSyn, 0},
                                           Good{"SynAck", kSyn | kAck, 0}, Good{"PureAck", kAck, 0},
                                           Good{"Data", kAck, 1400}, Good{"FinAck", kFin | kAck, 0},
                                           Good{"FinAckWithData", kFin | kAck, 9},
                                           Good{"Rst", kRst, 0}, Good{"RstAck", kRst | kAck, 0}),
                         [](const auto& param) { return std::string(param.param.name); });

struct Bad {
  const char* name;
  Bytes bytes;
  SegmentFault fault;
  friend void PrintTo(const Bad& b, std::ostream* os) { *os << b.name; }
};

Bytes with(Bytes b, std::size_t at, std::uint8_t v) {
  b[at] = static_cast<std::byte>(v);
  return b;
}
Bytes resized(Bytes b, std::size_t n) {
  b.resize(n);
  return b;
}
// A well-formed message whose flags byte is then overwritten, bypassing encode()'s check.
Bytes raw_flags(std::uint8_t flags, std::size_t payload) {
  return with(message(sample(), payload), 2, flags);
}

// A pure ACK (ack 0x01020304) with SACK `blocks` written as they are, bypassing encode_sack().
Bytes sack_message(std::vector<SackBlock> blocks) {
  Bytes b = message(sample(kAck), blocks.size() * kSackBlockBytes);
  b[2] = static_cast<std::byte>(kAck | kSack);
  for (std::size_t i = 0; i < blocks.size(); ++i)
    for (int k = 0; k < 4; ++k) {
      b[kSegmentHeaderBytes + i * 8 + k] = static_cast<std::byte>(blocks[i].start >> (8 * k));
      b[kSegmentHeaderBytes + i * 8 + 4 + k] = static_cast<std::byte>(blocks[i].end >> (8 * k));
    }
  return b;
}

std::vector<Bad> bad_cases() {
  const Bytes good = message(sample(), 5);
  return {
      {"Empty", {}, SegmentFault::kTooShort},
      {"NineteenBytes", resized(good, 19), SegmentFault::kTooShort},
      {"BadMagic", with(good, 0, 0x5F), SegmentFault::kBadMagic},
      {"DatagramMagic", with(good, 0, 0x5D), SegmentFault::kBadMagic},
      {"Version0", with(good, 1, 0x00), SegmentFault::kBadVersion},
      {"Version1", with(good, 1, 0x10), SegmentFault::kBadVersion},
      {"Version3", with(good, 1, 0x30), SegmentFault::kBadVersion},
      {"Version15", with(good, 1, 0xF0), SegmentFault::kBadVersion},
      {"Byte1Bit0", with(good, 1, 0x21), SegmentFault::kReservedBits},
      {"Byte1Bit3", with(good, 1, 0x28), SegmentFault::kReservedBits},
      {"FlagsBit5", raw_flags(kAck | 0x20, 0), SegmentFault::kReservedBits},
      {"FlagsBit7", raw_flags(kAck | 0x80, 0), SegmentFault::kReservedBits},
      {"Byte3Bit0", with(good, 3, 0x01), SegmentFault::kReservedBits},
      {"Byte3Bit7", with(good, 3, 0x80), SegmentFault::kReservedBits},
      {"SynFin", raw_flags(kSyn | kFin, 0), SegmentFault::kSynAndFin},
      {"SynAckFin", raw_flags(kSyn | kAck | kFin, 0), SegmentFault::kSynAndFin},
      {"SynFinRst", raw_flags(kSyn | kFin | kRst, 0), SegmentFault::kSynAndFin},
      {"SynWithPayload", raw_flags(kSyn, 1), SegmentFault::kPayloadNotAllowed},
      {"SynAckWithPayload", raw_flags(kSyn | kAck, 100), SegmentFault::kPayloadNotAllowed},
      {"RstWithPayload", raw_flags(kRst, 1), SegmentFault::kPayloadNotAllowed},
      {"RstAckWithPayload", raw_flags(kRst | kAck, 7), SegmentFault::kPayloadNotAllowed},
      {"NoFlags", raw_flags(0, 0), SegmentFault::kMissingAck},
      {"NoFlagsWithPayload", raw_flags(0, 10), SegmentFault::kMissingAck},
      {"FinWithoutAck", raw_flags(kFin, 0), SegmentFault::kMissingAck},
      {"FinWithoutAckWithPayload", raw_flags(kFin, 3), SegmentFault::kMissingAck},
      {"SackWithoutAck", raw_flags(kSack | kRst, 0), SegmentFault::kSackNotAllowed},
      {"SackWithFin", raw_flags(kSack | kAck | kFin, 8), SegmentFault::kSackNotAllowed},
      {"SackWithSyn", raw_flags(kSack | kAck | kSyn, 0), SegmentFault::kSackNotAllowed},
      {"SackNoBlocks", raw_flags(kSack | kAck, 0), SegmentFault::kBadSackLength},
      {"SackPartBlock", raw_flags(kSack | kAck, 12), SegmentFault::kBadSackLength},
      {"SackFiveBlocks", raw_flags(kSack | kAck, 40), SegmentFault::kBadSackLength},
      {"SackEmptyBlock", sack_message({{0x01020310, 0x01020310}}), SegmentFault::kBadSackBlock},
      {"SackBlockAtAck", sack_message({{0x01020304, 0x01020400}}), SegmentFault::kBadSackBlock},
      {"SackBlockBeforeAck", sack_message({{0x01020300, 0x01020400}}), SegmentFault::kBadSackBlock},
      {"SackBlockReversed", sack_message({{0x01020400, 0x01020310}}), SegmentFault::kBadSackBlock},
      {"SackSecondBlockBad", sack_message({{0x01020310, 0x01020400}, {0x01020500, 0x01020500}}),
       SegmentFault::kBadSackBlock},
  };
}

class SegmentHeaderBad : public ::testing::TestWithParam<Bad> {};

TEST_P(SegmentHeaderBad, RefusedWithItsFaultAndOutputUntouched) {
  SegmentHeader out = sample(kSyn), before = out;
  SegmentFault fault = SegmentFault::kNone;
  EXPECT_EQ(decode(GetParam().bytes, out, fault), Status::kInvalidArgument);
  EXPECT_EQ(fault, GetParam().fault) << to_string(fault);
  EXPECT_EQ(out, before);
  EXPECT_EQ(decode(GetParam().bytes, out), Status::kInvalidArgument);  // the two-argument form too
  EXPECT_EQ(out, before);
}

INSTANTIATE_TEST_SUITE_P(Rules, SegmentHeaderBad, ::testing::ValuesIn(bad_cases()),
                         [](const auto& param) { return std::string(param.param.name); });

TEST(SegmentHeader, EveryFaultHasADistinctName) {
  const SegmentFault all[] = {SegmentFault::kNone,
                              SegmentFault::kTooShort,
                              SegmentFault::kBadMagic,
                              SegmentFault::kBadVersion,
                              SegmentFault::kReservedBits,
                              SegmentFault::kSynAndFin,
                              SegmentFault::kPayloadNotAllowed,
                              SegmentFault::kMissingAck,
                              SegmentFault::kSackNotAllowed,
                              SegmentFault::kBadSackLength,
                              SegmentFault::kBadSackBlock};
  std::vector<std::string_view> names;
  for (SegmentFault f : all) {
    EXPECT_NE(to_string(f), "unknown segment fault");
    for (std::string_view n : names) EXPECT_NE(n, to_string(f));
    names.push_back(to_string(f));
  }
  EXPECT_EQ(to_string(SegmentFault::kMissingAck), "ACK missing");
}

// For every flags byte, with and without payload: encode() refuses exactly what decode() refuses,
// for the same reason, and writes nothing when it refuses.
TEST(SegmentHeader, EncodeRefusesWhatDecodeWould) {
  int refused = 0;
  for (int flags = 0; flags < 256; ++flags) {
    for (std::size_t payload : {std::size_t{0}, std::size_t{1}, std::size_t{1400}}) {
      const SegmentHeader h = sample(static_cast<std::uint8_t>(flags));
      SegmentHeader out;
      SegmentFault fault = SegmentFault::kNone;
      const Status decoded =
          decode(raw_flags(static_cast<std::uint8_t>(flags), payload), out, fault);
      EXPECT_EQ(check(h, payload), fault) << "flags " << flags << " payload " << payload;
      Bytes b(kSegmentHeaderBytes + payload, std::byte{0xAA});
      EXPECT_EQ(encode(h, payload, b), decoded) << "flags " << flags << " payload " << payload;
      if (decoded != Status::kOk) {
        ++refused;
        EXPECT_EQ(b, Bytes(kSegmentHeaderBytes + payload, std::byte{0xAA}));
      }
    }
  }
  // 224 flag values have reserved bits. Of the 16 without SACK, with no payload 6 are bad (4
  // SYN+FIN, and none and FIN alone without ACK); with payload all but ACK and ACK+FIN (14). The
  // 16 with SACK are bad with all three payloads: none is 1 to 4 blocks.
  EXPECT_EQ(refused, 224 * 3 + 6 + 14 + 14 + 16 * 3);
}

TEST(SegmentHeader, SackBlocksRoundTripAfterTheHeader) {
  const std::vector<SackBlock> blocks = {
      {0x01020400, 0x01020800}, {0x01021000, 0x01021400}, {0x01030000, 0x01030001}};
  SegmentHeader h = sample(kAck | kSack);
  const std::size_t payload = blocks.size() * kSackBlockBytes;
  Bytes b(kSegmentHeaderBytes + payload);
  ASSERT_EQ(encode(h, payload, b), Status::kOk);
  ASSERT_EQ(encode_sack(blocks, h.ack, std::span(b).subspan(kSegmentHeaderBytes)), Status::kOk);
  // The first block's bytes: start then end, little-endian.
  const std::uint8_t first[] = {0x00, 0x04, 0x02, 0x01, 0x00, 0x08, 0x02, 0x01};
  EXPECT_EQ(std::memcmp(b.data() + kSegmentHeaderBytes, first, sizeof first), 0);
  SegmentHeader out;
  ASSERT_EQ(decode(b, out), Status::kOk);
  EXPECT_EQ(out, h);
  std::array<SackBlock, kMaxSackBlocks> got;
  ASSERT_EQ(read_sack(std::span<const std::byte>(b).subspan(kSegmentHeaderBytes), got),
            blocks.size());
  EXPECT_EQ(std::vector<SackBlock>(got.begin(), got.begin() + 3), blocks);
}

TEST(SegmentHeader, EncodeSackRefusesBadBlocksWritingNothing) {
  const std::uint32_t ack = 1000;
  Bytes out(40, std::byte{0xAA});
  const Bytes untouched = out;
  const std::vector<SackBlock> five(5, SackBlock{2000, 3000});
  EXPECT_EQ(encode_sack({}, ack, out), Status::kInvalidArgument);
  EXPECT_EQ(encode_sack(five, ack, out), Status::kInvalidArgument);
  const SackBlock empty[] = {{2000, 2000}}, at_ack[] = {{1000, 2000}},
                  good[] = {{2000, 3000}, {4000, 5000}};
  EXPECT_EQ(encode_sack(empty, ack, out), Status::kInvalidArgument);
  EXPECT_EQ(encode_sack(at_ack, ack, out), Status::kInvalidArgument);
  EXPECT_EQ(encode_sack(good, ack, std::span(out).first(15)), Status::kInvalidArgument);  // short
  EXPECT_EQ(out, untouched);
  EXPECT_EQ(encode_sack(good, ack, out), Status::kOk);
  // Across the wrap: a block just past an ack near 2^32 is after it.
  const SackBlock wrapped[] = {{0xFFFFFFF0u, 0x10}};
  EXPECT_EQ(encode_sack(wrapped, 0xFFFFFF00u, out), Status::kOk);
}

TEST(SegmentHeader, EncodeRefusesAShortBuffer) {
  Bytes b(kSegmentHeaderBytes, std::byte{0});
  EXPECT_EQ(encode(sample(), 0, std::span(b).first(19)), Status::kInvalidArgument);
  EXPECT_EQ(b, Bytes(kSegmentHeaderBytes, std::byte{0}));
  EXPECT_EQ(encode(sample(), 0, b), Status::kOk);  // the header alone fits in exactly 20
  EXPECT_EQ(b[0], std::byte{kSegmentMagic});
}

// Any one-bit change is either refused or decodes canonically (re-encodes to the same bytes).
TEST(SegmentHeader, MutationsRefusedOrCanonical) {
  const std::uint8_t allowed[] = {kSyn, kSyn | kAck, kAck, kAck | kFin, kRst, kRst | kAck};
  std::mt19937 rng(17);
  int accepted = 0, refused = 0;
  for (int round = 0; round < 5000; ++round) {
    SegmentHeader h;
    h.flags = allowed[rng() % std::size(allowed)];
    h.src_port = static_cast<std::uint16_t>(rng());
    h.dst_port = static_cast<std::uint16_t>(rng());
    h.seq = static_cast<std::uint32_t>(rng());
    h.ack = static_cast<std::uint32_t>(rng());
    h.window = static_cast<std::uint32_t>(rng());
    const std::size_t payload = h.has(kSyn) || h.has(kRst) ? 0 : rng() % 40;
    Bytes b = message(h, payload);
    b[rng() % b.size()] ^= static_cast<std::byte>(1u << (rng() % 8));
    SegmentHeader out;
    if (decode(b, out) == Status::kOk) {
      ++accepted;
      EXPECT_EQ(check(out, b.size() - kSegmentHeaderBytes), SegmentFault::kNone);
      Bytes again(kSegmentHeaderBytes);
      ASSERT_EQ(encode(out, b.size() - kSegmentHeaderBytes, again), Status::kOk);
      ASSERT_EQ(std::memcmp(again.data(), b.data(), kSegmentHeaderBytes), 0) << "round " << round;
    } else {
      ++refused;
    }
  }
  EXPECT_GT(accepted, 1000);  // both outcomes really happen
  EXPECT_GT(refused, 500);
}

}  // namespace
}  // namespace unet::ulp
