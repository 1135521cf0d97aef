// Unit: the fields ib_send_lat (perftest 6.06) exchanges over TCP: version, MTU, address line.
#include <gtest/gtest.h>

#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "ib_send_lat_oob.h"
#include "unet/verbs/error.h"

namespace unet::bench {
namespace {

// Captured from the real tool in ci/rxe-vm (rxe0, -x 1), NUL included.
const std::string kCapturedGid = std::string(
                                     "0000:0001:000012:32c7c4:00000000:00005617b5717000:00:00:00:"
                                     "00:00:00:00:00:00:00:ff:ff:c6:12:00:01:00000000:") +
                                 '\0';

verbs::Gid rxe_gid() {
  verbs::Gid g;
  g.raw[10] = 0xff;
  g.raw[11] = 0xff;
  g.raw[12] = 198;
  g.raw[13] = 18;
  g.raw[15] = 1;
  return g;
}

TEST(PerftestCodec, AddressLineMatchesTheToolsBytes) {
  ASSERT_EQ(kCapturedGid.size(), kPerftestLineGidBytes);
  PerftestAddress a{0, 1, 0x12, 0x32c7c4, 0, 0x00005617b5717000ull, rxe_gid(), 0};
  EXPECT_EQ(encode_perftest_address(a, true), kCapturedGid);
  PerftestAddress b;
  ASSERT_EQ(decode_perftest_address(kCapturedGid, true, b), Status::kOk);
  EXPECT_EQ(b, a);
}

TEST(PerftestCodec, AddressLineWithoutGidIs59BytesAndRoundTrips) {
  PerftestAddress a{0xbeef, 1, 0xabcdef, 0x123456, 0xdeadbeef, 0x0123456789abcdefull, {}, 7};
  std::string line = encode_perftest_address(a, false);
  EXPECT_EQ(line.size(), kPerftestLineBytes);
  EXPECT_EQ(line, std::string("beef:0001:abcdef:123456:deadbeef:0123456789abcdef:00000007") + '\0');
  PerftestAddress b;
  ASSERT_EQ(decode_perftest_address(line, false, b), Status::kOk);
  EXPECT_EQ(b, a);
}

TEST(PerftestCodec, RefusesMalformedAddressLines) {
  auto with = [](std::size_t pos, char c) {
    std::string s = kCapturedGid;
    s[pos] = c;
    return s;
  };
  const std::vector<std::pair<const char*, std::string>> bad = {
      {"empty", ""},
      {"no NUL", kCapturedGid.substr(0, 107)},
      {"one byte more", kCapturedGid + '\0'},
      {"last byte not NUL", with(107, ':')},
      {"LID not hex", with(1, 'g')},
      {"separator", with(4, '-')},
      {"QPN not hex", with(12, ' ')},
      {"VADDR not hex", with(40, 'x')},
      {"GID byte not hex", with(95, 'z')},
      {"missing last ':'", with(106, '0')},
      {"QPN 0", std::string("0000:0001:000000:32c7c4:00000000:00005617b5717000:00:00:00:00:00:00:"
                            "00:00:00:00:ff:ff:c6:12:00:01:00000000:") +
                    '\0'},
      {"no-GID line where a GID line is due",
       encode_perftest_address({0, 1, 2, 3, 0, 0, {}, 0}, false)},
  };
  const PerftestAddress sentinel{1, 2, 3, 4, 5, 6, rxe_gid(), 8};
  for (const auto& [name, bytes] : bad) {
    PerftestAddress out = sentinel;
    const char* why = nullptr;
    EXPECT_EQ(decode_perftest_address(bytes, true, out, &why), Status::kInvalidArgument) << name;
    EXPECT_EQ(out, sentinel) << name;
    EXPECT_NE(why, nullptr) << name;
  }
}

// -R: the 56-byte binary address the real tool SENT on its rdma_cm comm connection (rxe0, -x 1).
TEST(PerftestCodec, BinaryAddressMatchesTheToolsBytes) {
  const std::uint8_t captured[kPerftestDestBytes] = {
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x14, 0x00, 0x44,
      0xcd, 0x4c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x55, 0x77,
      0x92, 0xe7, 0x30, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0xff, 0xff, 0xc6, 0x12, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01};
  PerftestAddress a;
  ASSERT_EQ(decode_perftest_dest(std::as_bytes(std::span(captured)), a), Status::kOk);
  EXPECT_EQ(a, (PerftestAddress{0, 1, 0x14, 0x44cd4c, 0, 0x0000557792e73000ull, rxe_gid(), 0}));
  auto again = encode_perftest_dest(a, 1);
  EXPECT_EQ(std::memcmp(again.data(), captured, sizeof captured), 0);
  EXPECT_EQ(decode_perftest_dest(std::as_bytes(std::span(captured)).first(55), a),
            Status::kInvalidArgument);
}

TEST(PerftestCodec, VersionField) {
  auto v = encode_perftest_version("6.06");
  std::string want = "6.06";
  want.resize(16, '\0');  // not "6.06" + string(12, 0): GCC 12 warns falsely (-Warray-bounds) there
  EXPECT_EQ(std::string(v.data(), v.size()), want);
  std::string out;
  ASSERT_EQ(decode_perftest_version(v, out), Status::kOk);
  EXPECT_EQ(out, "6.06");
  std::array<char, 16> bad{};  // empty
  EXPECT_EQ(decode_perftest_version(bad, out), Status::kInvalidArgument);
  bad.fill('6');  // no NUL
  EXPECT_EQ(decode_perftest_version(bad, out), Status::kInvalidArgument);
  bad = {'6', '.', '0', 'x', '\0'};
  EXPECT_EQ(decode_perftest_version(bad, out), Status::kInvalidArgument);
  bad = {'6', '.', '0', '.', '1', '\0'};
  EXPECT_EQ(decode_perftest_version(bad, out), Status::kInvalidArgument);
  EXPECT_THROW(encode_perftest_version("a version that is too long"), verbs::Error);
  EXPECT_THROW(encode_perftest_version("six"), verbs::Error);
}

TEST(PerftestCodec, MtuField) {
  EXPECT_EQ(encode_perftest_mtu(1024), (std::array<char, 2>{'3', '\0'}));
  EXPECT_EQ(encode_perftest_mtu(256), (std::array<char, 2>{'1', '\0'}));
  EXPECT_EQ(encode_perftest_mtu(4096), (std::array<char, 2>{'5', '\0'}));
  EXPECT_THROW(encode_perftest_mtu(1500), verbs::Error);
  const char ok[2] = {'4', '\0'}, zero[2] = {'0', '\0'}, six[2] = {'6', '\0'},
             nonul[2] = {'3', '3'};
  EXPECT_EQ(decode_perftest_mtu(ok), 2048u);
  EXPECT_EQ(decode_perftest_mtu(zero), 0u);
  EXPECT_EQ(decode_perftest_mtu(six), 0u);
  EXPECT_EQ(decode_perftest_mtu(nonul), 0u);
}

}  // namespace
}  // namespace unet::bench
