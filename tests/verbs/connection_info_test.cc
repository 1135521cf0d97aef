// Unit: the out-of-band ConnectionInfo codec accepts exactly what it writes.
#include "unet/verbs/connection_info.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace unet::verbs {
namespace {

ConnectionInfo sample() {
  ConnectionInfo i;
  i.lid = 0x1234;
  i.qpn = 0xabcdef;
  i.psn = 0x123456;
  i.gid = *Gid::from_hex("00000000000000000000ffffc6120001");
  i.mtu = 1024;
  i.qkey = 0x11111111;
  i.memory = {0x7f0000001000, 0xdeadbeef, 1 << 20};
  return i;
}

TEST(ConnectionInfo, RoundTrips) {
  ConnectionInfo in = sample(), out;
  std::string line = encode(in);
  EXPECT_EQ(line.back(), '\n');
  EXPECT_LE(line.size(), kConnectionInfoMaxLine);
  ASSERT_EQ(decode(line, out), Status::kOk);
  EXPECT_EQ(out, in);
  // Without the newline too.
  ConnectionInfo out2;
  ASSERT_EQ(decode(std::string_view(line).substr(0, line.size() - 1), out2), Status::kOk);
  EXPECT_EQ(out2, in);
}

TEST(ConnectionInfo, FieldsAreMaskedToTheirWidth) {
  ConnectionInfo in = sample(), out;
  in.qpn = 0xff123456;  // QPNs and PSNs are 24 bits
  in.psn = 0xff000001;
  ASSERT_EQ(decode(encode(in), out), Status::kOk);
  EXPECT_EQ(out.qpn, 0x123456u);
  EXPECT_EQ(out.psn, 0x000001u);
}

TEST(ConnectionInfo, MalformedLinesAreRefusedAndLeaveTheOutputUntouched) {
  const std::string good = encode(sample());
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  std::vector<std::string> bad = {
      "",
      "\n",
      good.substr(0, good.size() / 2),
      replace("unet-oob/1", "unet-oob/2"),
      replace("lid=1234", "lid=12345"),
      replace("lid=1234", "lid=123"),
      replace("qpn=abcdef", "qpn=ABCDEF"),
      replace("qpn=abcdef", "qpn=000000"),  // QPN 0 is never a peer
      replace("psn=123456", "psn=12 456"),
      replace("gid=0000", "gid=000"),
      replace("ffffc6120001", "FFFFC6120001"),  // encode() writes lowercase hex, the GID too
      replace("mtu=1024", "mtu=01024"),         // nor leading zeros: one spelling per value
      replace("mtu=1024", "mtu=1000"),
      replace("mtu=1024", "mtu=99999"),
      replace("mtu=1024", "mtu="),
      replace("qkey=11111111", "qkey=1111111x"),
      replace(" rkey=", "  rkey="),
      replace("len=", "length="),
      good.substr(0, good.size() - 1) + " extra\n",
      good + good,
      std::string(kConnectionInfoMaxLine + 1, 'a'),
  };
  for (const auto& line : bad) {
    ConnectionInfo out;
    out.lid = 0x7777;
    EXPECT_EQ(decode(line, out), Status::kInvalidArgument) << "accepted: " << line;
    EXPECT_EQ(out.lid, 0x7777) << "output changed by a refused line: " << line;
  }
}

// Found by verbs/fuzz/connection_info_fuzz (its round-trip check): decode() took these spellings
// of valid values, which encode() never writes: "mtu=0000" for an unset MTU, and a GID with an
// uppercase digit. Each is refused; the line encode() writes for the same values is accepted.
TEST(ConnectionInfo, FuzzRegressionOnlyEncodesSpellingIsAccepted) {
  const struct {
    const char* line;
    const char* from;
    const char* to;
  } cases[] = {
      {"unet-oob/1 lid=0000 qpn=000011 psn=000000 gid=fe800000000000000000000000000001 "
       "mtu=0000 qkey=00000000 addr=0000000000000000 rkey=00000000 len=0000000000000000",
       "mtu=0000", "mtu=0"},
      {"unet-oob/1 lid=1234 qpn=abcdef psn=123456 gid=00000000000000000000Ffffc6120001 "
       "mtu=1024 qkey=11111111 addr=00007f0000001000 rkey=deadbeef len=0000000000100000\n",
       "Ffff", "ffff"},
  };
  for (const auto& c : cases) {
    ConnectionInfo out;
    EXPECT_EQ(decode(c.line, out), Status::kInvalidArgument) << c.line;
    std::string canonical = c.line;
    canonical.replace(canonical.find(c.from), std::string_view(c.from).size(), c.to);
    ASSERT_EQ(decode(canonical, out), Status::kOk) << canonical;
    if (canonical.back() != '\n') canonical += '\n';
    EXPECT_EQ(encode(out), canonical);
  }
}

TEST(ConnectionInfo, RandomPsnIs24Bits) {
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(random_psn() & ~0xffffffu, 0u);
}

}  // namespace
}  // namespace unet::verbs
