// Unit: the 52-byte address message ibv_rc_pingpong exchanges over TCP, and its initial content.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "rc_pingpong_oob.h"
#include "unet/verbs/error.h"

namespace unet::bench {
namespace {

// The bytes the real tool sent in ci/rxe-vm (rxe0, GID index 1 = ::ffff:198.18.0.1), NUL included.
constexpr char kCaptured[] = "0000:000012:e9e184:00000000000000000000ffffc6120001";
static_assert(sizeof kCaptured == kRcPingpongMessageBytes);

std::string wire(std::string_view text) {  // `text` and the NUL
  std::string s(text);
  s.push_back('\0');
  return s;
}

verbs::Gid rxe_gid() {
  verbs::Gid g;
  g.raw[10] = 0xff;
  g.raw[11] = 0xff;
  g.raw[12] = 198;
  g.raw[13] = 18;
  g.raw[14] = 0;
  g.raw[15] = 1;
  return g;
}

TEST(RcPingpongCodec, EncodesExactlyWhatTheToolSends) {
  RcPingpongMessage m = encode_rc_pingpong({0, 0x12, 0xe9e184, rxe_gid()});
  EXPECT_EQ(std::string_view(m.data(), m.size()), std::string_view(kCaptured, sizeof kCaptured));
  EXPECT_EQ(m.back(), '\0');
}

TEST(RcPingpongCodec, DecodesTheToolsMessage) {
  RcPingpongAddress a;
  ASSERT_EQ(decode_rc_pingpong({kCaptured, sizeof kCaptured}, a), Status::kOk);
  EXPECT_EQ(a.lid, 0);
  EXPECT_EQ(a.qpn, 0x12u);
  EXPECT_EQ(a.psn, 0xe9e184u);
  EXPECT_EQ(a.gid, rxe_gid());
}

TEST(RcPingpongCodec, RoundTripsEveryFieldAtItsLimits) {
  RcPingpongAddress in{0xffff, 0xffffff, 0, {}};
  for (std::size_t i = 0; i < 16; ++i) in.gid.raw[i] = static_cast<std::uint8_t>(0x10 * i + 15 - i);
  RcPingpongMessage m = encode_rc_pingpong(in);
  RcPingpongAddress out;
  ASSERT_EQ(decode_rc_pingpong(m, out), Status::kOk);
  EXPECT_EQ(out, in);
  EXPECT_EQ(std::string(m.data(), 18), "ffff:ffffff:000000");
}

TEST(RcPingpongCodec, AcceptsUpperCaseHexAsTheToolsSscanfDoes) {
  RcPingpongAddress a;
  ASSERT_EQ(decode_rc_pingpong(wire("BEEF:0000AB:ABCDEF:FE800000000000000000FFFFC6120001"), a),
            Status::kOk);
  EXPECT_EQ(a.lid, 0xbeef);
  EXPECT_EQ(a.qpn, 0xabu);
  EXPECT_EQ(a.psn, 0xabcdefu);
  EXPECT_EQ(a.gid.raw[0], 0xfe);
  EXPECT_EQ(a.gid.raw[15], 0x01);
}

TEST(RcPingpongCodec, EncodeRefusesFieldsWiderThan24Bits) {
  EXPECT_THROW(encode_rc_pingpong({0, 0x1000000, 0, {}}), verbs::Error);
  EXPECT_THROW(encode_rc_pingpong({0, 2, 0x1000000, {}}), verbs::Error);
}

struct Bad {
  const char* name;
  std::string bytes;
};

std::vector<Bad> bad_inputs() {
  const std::string good = wire("0000:000012:e9e184:00000000000000000000ffffc6120001");
  auto with = [&](std::size_t pos, char c) {
    std::string s = good;
    s[pos] = c;
    return s;
  };
  return {
      {"empty", ""},
      {"no NUL (51 bytes)", good.substr(0, 51)},
      {"one byte too many", good + '\0'},
      {"last byte not NUL", with(51, '1')},
      {"first separator", with(4, '-')},
      {"second separator", with(11, ' ')},
      {"third separator", with(18, '.')},
      {"LID not hex", with(2, 'g')},
      {"QPN not hex", with(7, 'x')},
      {"PSN not hex", with(17, ' ')},
      {"GID not hex", with(50, 'z')},
      {"NUL inside the GID", with(30, '\0')},
      {"0x prefix in the QPN", with(6, 'x')},
      {"sign in the PSN", with(12, '+')},
      {"QPN 0", wire("0000:000000:e9e184:00000000000000000000ffffc6120001")},
      {"QPN 1", wire("0000:000001:e9e184:00000000000000000000ffffc6120001")},
      {"short LID shifts the fields", wire("000:0000012:e9e184:00000000000000000000ffffc6120001")},
      {"a unet-oob line",
       std::string("unet-oob/1 lid=0000 qpn=000012 psn=e9e184 gid=000000000").substr(0, 52)},
      {"52 NULs", std::string(52, '\0')},
  };
}

TEST(RcPingpongCodec, RefusesEveryMalformedMessageAndLeavesTheOutputAlone) {
  const RcPingpongAddress sentinel{0x1234, 0x5678, 0x9abc, rxe_gid()};
  for (const Bad& b : bad_inputs()) {
    RcPingpongAddress out = sentinel;
    const char* why = nullptr;
    EXPECT_EQ(decode_rc_pingpong({b.bytes.data(), b.bytes.size()}, out, &why),
              Status::kInvalidArgument)
        << b.name;
    EXPECT_EQ(out, sentinel) << b.name;
    ASSERT_NE(why, nullptr) << b.name;
    EXPECT_GT(std::strlen(why), 0u) << b.name;
  }
  EXPECT_GE(bad_inputs().size(), 10u);
}

TEST(RcPingpongCodec, InitialContentIsTheToolsFillWithPageMarkersUnderChk) {
  std::vector<std::byte> b(3 * 4096 + 5, std::byte{1});
  fill_rc_pingpong_initial(b, false);
  for (std::byte x : b) ASSERT_EQ(x, std::byte{0x7b});
  fill_rc_pingpong_initial(b, true, 4096);
  for (std::size_t i = 0; i < b.size(); ++i)
    ASSERT_EQ(b[i], i % 4096 == 0 ? std::byte{0} : std::byte{0x7b}) << "byte " << i;
}

}  // namespace
}  // namespace unet::bench
