// Unit: the UAM wire header — byte layout, round trips, and every malformed input refused with the
// rule it breaks and the output left untouched.
#include "unet/uam/wire_header.h"

#include <gtest/gtest.h>

#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

namespace unet::uam {
namespace {

using Bytes = std::vector<std::byte>;

Header sample(Kind kind = Kind::kRequest, std::uint8_t args = 2, std::uint16_t payload = 5) {
  Header h;
  h.kind = kind;
  h.handler = 0x42;
  h.arg_count = args;
  h.payload_length = payload;
  h.credits = 0x81;
  h.token = 0x07;
  h.seq = 0x11223344;
  h.ack = 0xA0B0C0D0;
  for (std::uint8_t i = 0; i < args; ++i) h.args[i] = 0x0102030405060708ull * (i + 1);
  return h;
}

// A whole message: encoded header and arguments, then payload bytes 0, 1, 2...
Bytes message(const Header& h) {
  Bytes b(message_bytes(h));
  EXPECT_EQ(encode(h, b), Status::kOk);
  for (std::size_t i = header_bytes(h.arg_count); i < b.size(); ++i)
    b[i] = static_cast<std::byte>(i);
  return b;
}

Header sentinel() {
  Header h = sample(Kind::kStoreDone, 4, 999);
  h.handler = 0xEE;
  return h;
}

TEST(WireHeader, LayoutIsLittleEndianAndDocumented) {
  const Bytes b = message(sample());
  ASSERT_EQ(b.size(), 16u + 16u + 5u);
  const std::uint8_t expect[32] = {
      0xA5, 0x11, 0x42, 0x02,
      0x05, 0x00, 0x81, 0x07,  // magic, ver|kind, handler, n, len, credits, token
      0x44, 0x33, 0x22, 0x11,
      0xD0, 0xC0, 0xB0, 0xA0,  // seq, ack
      0x08, 0x07, 0x06, 0x05,
      0x04, 0x03, 0x02, 0x01,  // arg 0
      0x10, 0x0E, 0x0C, 0x0A,
      0x08, 0x06, 0x04, 0x02,  // arg 1
  };
  EXPECT_EQ(std::memcmp(b.data(), expect, sizeof expect), 0);
}

TEST(WireHeader, WhatFitsInADescriptor) {
  EXPECT_EQ(header_bytes(0), 16u);
  EXPECT_EQ(header_bytes(3), 40u);
  EXPECT_LE(header_bytes(3), 44u) << "header + 3 words + 4 payload bytes inline";
  EXPECT_GT(header_bytes(4), 44u);
}

TEST(WireHeader, RoundTripsEveryKindArgCountAndExtremes) {
  for (Kind k : {Kind::kRequest, Kind::kReply, Kind::kErrorReply, Kind::kStoreDone}) {
    for (std::uint8_t n = 0; n <= kMaxArgs; ++n) {
      for (std::uint16_t len : {0, 1, 28, 4096}) {
        Header h = sample(k, n, len);
        h.seq = UINT32_MAX;
        h.ack = 0;
        h.handler = 255;
        h.credits = 255;
        h.token = 255;
        if (n) h.args[n - 1] = UINT64_MAX;
        const Bytes b = message(h);
        Header out;
        ASSERT_EQ(decode(b, out), Status::kOk) << static_cast<int>(k) << " n=" << int(n);
        EXPECT_EQ(out, h);
      }
    }
  }
  Header credit;
  credit.kind = Kind::kCredit;
  credit.credits = 9;
  credit.ack = 77;
  credit.probe = true;
  Header out;
  ASSERT_EQ(decode(message(credit), out), Status::kOk);
  EXPECT_EQ(out, credit);
}

TEST(WireHeader, MaximumPayloadLength) {
  Header h = sample(Kind::kReply, 0, UINT16_MAX);
  Header out;
  ASSERT_EQ(decode(message(h), out), Status::kOk);
  EXPECT_EQ(out.payload_length, kMaxPayload);
}

TEST(WireHeader, EncodeRefusesWhatDecodeWouldAndWritesNothing) {
  Bytes buf(64, std::byte{0x5A});
  const Bytes before = buf;
  Header h = sample();
  h.arg_count = 5;
  EXPECT_EQ(encode(h, buf), Status::kInvalidArgument);
  h = sample();
  h.kind = static_cast<Kind>(0);
  EXPECT_EQ(encode(h, buf), Status::kInvalidArgument);
  h = sample();
  h.kind = static_cast<Kind>(6);
  EXPECT_EQ(encode(h, buf), Status::kInvalidArgument);
  h = Header{};
  h.kind = Kind::kCredit;
  h.handler = 1;
  EXPECT_EQ(encode(h, buf), Status::kInvalidArgument);
  EXPECT_EQ(check(h), WireFault::kCreditFields);
  h = sample();
  h.probe = true;
  EXPECT_EQ(encode(h, buf), Status::kInvalidArgument);
  EXPECT_EQ(check(h), WireFault::kProbeNotCredit);
  h = sample(Kind::kRequest, 4, 0);
  EXPECT_EQ(encode(h, std::span(buf).first(header_bytes(4) - 1)), Status::kInvalidArgument);
  EXPECT_EQ(buf, before);
}

// A malformed message: how it is made from a valid one, and the rule it must be refused by.
struct Malformed {
  std::string name;
  Bytes bytes;
  WireFault fault;
};

Bytes with(Bytes b, std::size_t at, std::uint8_t v) {
  b.at(at) = std::byte{v};
  return b;
}
Bytes resized(Bytes b, std::size_t n) {
  b.resize(n, std::byte{0});
  return b;
}
Bytes credit_with(void (*set)(Header&)) {
  Header h;
  h.kind = Kind::kCredit;
  set(h);
  // Built by patching a plain credit message: encode() refuses these.
  Header ok;
  ok.kind = Kind::kCredit;
  Bytes b(header_bytes(h.arg_count) + h.payload_length);
  EXPECT_EQ(encode(ok, b), Status::kOk);
  b[2] = std::byte{h.handler};
  b[3] = std::byte{h.arg_count};
  b[4] = static_cast<std::byte>(h.payload_length & 0xFF);
  b[7] = std::byte{h.token};
  b[8] = static_cast<std::byte>(h.seq & 0xFF);
  return b;
}

std::vector<Malformed> malformed_inputs() {
  const Bytes good = message(sample());                      // 2 args, 5 payload bytes: 37 bytes
  const Bytes bare = message(sample(Kind::kRequest, 0, 0));  // 16 bytes
  return {
      {"Empty", {}, WireFault::kTooShort},
      {"OneByteShortOfFixedHeader", resized(bare, 15), WireFault::kTooShort},
      {"BadMagic", with(good, 0, 0x5A), WireFault::kBadMagic},
      {"ZeroMagic", with(good, 0, 0x00), WireFault::kBadMagic},
      {"VersionZero", with(good, 1, 0x01), WireFault::kBadVersion},
      {"VersionTwo", with(good, 1, 0x21), WireFault::kBadVersion},
      {"VersionFifteen", with(good, 1, 0xF1), WireFault::kBadVersion},
      {"KindZero", with(good, 1, 0x10), WireFault::kBadKind},
      {"KindSix", with(good, 1, 0x16), WireFault::kBadKind},
      {"KindFifteen", with(good, 1, 0x1F), WireFault::kBadKind},
      {"ArgCountFive", with(good, 3, 0x05), WireFault::kBadArgCount},
      {"ArgCountSeven", with(good, 3, 0x07), WireFault::kBadArgCount},
      {"ReservedBit5", with(good, 3, 0x22), WireFault::kReservedBits},
      {"ReservedBit7", with(good, 3, 0x82), WireFault::kReservedBits},
      {"ArgsCutShort", resized(good, 16 + 8 + 4), WireFault::kTooShort},
      {"FourArgsClaimedInBareHeader", with(bare, 3, 0x04), WireFault::kTooShort},
      {"PayloadTruncated", resized(good, good.size() - 1), WireFault::kLengthMismatch},
      {"PayloadLengthTooLarge", with(good, 5, 0x01), WireFault::kLengthMismatch},
      {"TrailingByte", resized(good, good.size() + 1), WireFault::kLengthMismatch},
      {"ArgsButNoRoomForPayload", resized(good, 32), WireFault::kLengthMismatch},
      {"MoreBitOnALoneMessage", with(good, 3, 0x12), WireFault::kLengthMismatch},
      {"MoreBitWithAFollower", resized(with(good, 3, 0x12), good.size() + 16),
       WireFault::kLengthMismatch},
      {"CreditNamingAHandler", credit_with([](Header& h) { h.handler = 3; }),
       WireFault::kCreditFields},
      {"CreditWithAToken", credit_with([](Header& h) { h.token = 1; }), WireFault::kCreditFields},
      {"CreditWithArgs", credit_with([](Header& h) { h.arg_count = 1; }), WireFault::kCreditFields},
      {"CreditWithPayload", credit_with([](Header& h) { h.payload_length = 2; }),
       WireFault::kCreditFields},
      {"ProbeBitOnARequest", with(good, 3, 0x0A), WireFault::kProbeNotCredit},
  };
}

void PrintTo(const Malformed& m, std::ostream* os) { *os << m.name; }

class WireHeaderMalformed : public ::testing::TestWithParam<Malformed> {};

TEST_P(WireHeaderMalformed, RefusedByItsRuleAndOutUntouched) {
  const Malformed& m = GetParam();
  Header out = sentinel();
  WireFault fault = WireFault::kNone;
  EXPECT_EQ(decode(m.bytes, out, fault), Status::kInvalidArgument);
  EXPECT_EQ(fault, m.fault) << "got " << to_string(fault) << ", expected " << to_string(m.fault);
  EXPECT_EQ(out, sentinel()) << "a refused decode changed its output";
}

INSTANTIATE_TEST_SUITE_P(Inputs, WireHeaderMalformed, ::testing::ValuesIn(malformed_inputs()),
                         [](const auto& p) { return p.param.name; });

TEST(WireHeader, AtLeastFifteenMalformedInputs) { EXPECT_GE(malformed_inputs().size(), 15u); }

// Every prefix of a valid message is refused; so is every one-byte mutation that decode accepts
// only if it is canonical (re-encodes to the same bytes) — nothing is silently ignored.
TEST(WireHeader, TruncationsRefusedAndAcceptedMutationsCanonical) {
  std::mt19937 rng(5);
  for (int round = 0; round < 2000; ++round) {
    Header h = sample(Kind::kReply, static_cast<std::uint8_t>(rng() % 5),
                      static_cast<std::uint16_t>(rng() % 40));
    h.seq = rng();
    h.ack = rng();
    Bytes b = message(h);
    Header out;
    for (std::size_t n = 0; n < b.size(); ++n)
      ASSERT_NE(decode(std::span(b).first(n), out), Status::kOk) << "prefix " << n;
    const std::size_t at = rng() % b.size();
    b[at] ^= static_cast<std::byte>(1u << (rng() % 8));
    if (decode(b, out) == Status::kOk) {
      Bytes again(b.size());
      ASSERT_EQ(encode(out, again), Status::kOk);
      ASSERT_EQ(std::memcmp(again.data(), b.data(), header_bytes(out.arg_count)), 0)
          << "byte " << at;
    }
  }
}

// A coalesced packet: three messages back to back, the more bit on all but the last.
Bytes packet(const std::vector<Header>& hs) {
  Bytes out;
  for (std::size_t i = 0; i < hs.size(); ++i) {
    const std::size_t at = out.size();
    const Bytes m = message(hs[i]);
    out.insert(out.end(), m.begin(), m.end());
    if (i + 1 < hs.size()) set_more(out.data() + at);
  }
  return out;
}

TEST(WireHeader, DecodeFrontReadsACoalescedPacketInOrder) {
  std::vector<Header> hs = {sample(Kind::kRequest, 1, 64), sample(Kind::kReply, 0, 0),
                            sample(Kind::kRequest, 4, 3)};
  hs[1].seq = 7;
  hs[2].seq = 8;
  const Bytes b = packet(hs);
  std::span<const std::byte> rest(b);
  for (std::size_t i = 0; i < hs.size(); ++i) {
    Header out;
    std::size_t used = 0;
    WireFault fault = WireFault::kBadMagic;
    ASSERT_EQ(decode_front(rest, out, used, fault), Status::kOk) << "message " << i;
    EXPECT_EQ(fault, WireFault::kNone);
    EXPECT_EQ(used, message_bytes(hs[i]));
    Header expect = hs[i];
    expect.more = i + 1 < hs.size();
    EXPECT_EQ(out, expect) << "message " << i;
    rest = rest.subspan(used);
  }
  EXPECT_TRUE(rest.empty());
  Header lone;
  EXPECT_EQ(decode(b, lone), Status::kInvalidArgument)
      << "decode() takes one message, not a packet";
}

TEST(WireHeader, DecodeFrontRefusesWhatDoesNotEndWhereThePacketEnds) {
  const Header h = sample(Kind::kRequest, 1, 8);
  const Bytes two = packet({h, h});
  const std::size_t first = message_bytes(h);
  Header out = sentinel();
  std::size_t used = 99;
  WireFault fault = WireFault::kNone;
  // The more bit with under a fixed header after it; and the last message cut or padded.
  for (std::size_t size : {first, first + 15, two.size() - 1, two.size() + 1}) {
    Bytes b = two;
    b.resize(size);
    std::span<const std::byte> rest(b);
    Status s = decode_front(rest, out, used, fault);
    if (s == Status::kOk && size > first) {  // the first message is whole: the second is refused
      rest = rest.subspan(used);
      out = sentinel();
      used = 99;
      s = decode_front(rest, out, used, fault);
    }
    EXPECT_EQ(s, Status::kInvalidArgument) << "packet of " << size << " bytes";
    EXPECT_EQ(fault, WireFault::kLengthMismatch);
    EXPECT_EQ(out, sentinel());
    EXPECT_EQ(used, 99u);
  }
}

TEST(WireHeader, EncodeWritesTheMoreBitAndCheckAllowsIt) {
  Header h = sample(Kind::kCredit, 0, 0);
  h.handler = 0;
  h.token = 0;
  h.more = true;
  EXPECT_EQ(check(h), WireFault::kNone);
  Bytes b(16);
  ASSERT_EQ(encode(h, b), Status::kOk);
  EXPECT_EQ(static_cast<std::uint8_t>(b[3]), 0x10);
}

TEST(WireHeader, FaultNames) {
  EXPECT_EQ(to_string(WireFault::kNone), "none");
  EXPECT_EQ(to_string(WireFault::kBadMagic), "bad magic");
  EXPECT_EQ(to_string(WireFault::kProbeNotCredit), "probe bit outside a credit message");
}

}  // namespace
}  // namespace unet::uam
