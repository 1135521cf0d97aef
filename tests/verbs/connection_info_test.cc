// Unit: the out-of-band ConnectionInfo codec accepts exactly what it writes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "unet/verbs/connection_info.h"

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

TEST(ConnectionInfo, RandomPsnIs24Bits) {
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(random_psn() & ~0xffffffu, 0u);
}

}  // namespace
}  // namespace unet::verbs
