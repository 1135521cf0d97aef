// Unit: GID text forms.
#include <gtest/gtest.h>

#include "unet/verbs/gid.h"

namespace unet::verbs {
namespace {

Gid mapped(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d) {
  Gid g;
  g.raw[10] = g.raw[11] = 0xff;
  g.raw[12] = a, g.raw[13] = b, g.raw[14] = c, g.raw[15] = d;
  return g;
}

TEST(Gid, HexIsTheBytesInWireOrderAndRoundTrips) {
  Gid g = mapped(198, 18, 0, 1);
  EXPECT_EQ(g.to_hex(), "00000000000000000000ffffc6120001");
  auto back = Gid::from_hex(g.to_hex());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, g);
  EXPECT_EQ(Gid::from_hex("00000000000000000000FFFFC6120001"), g);
}

TEST(Gid, BadHexIsRefused) {
  EXPECT_FALSE(Gid::from_hex(""));
  EXPECT_FALSE(Gid::from_hex("00000000000000000000ffffc612000"));    // 31 digits
  EXPECT_FALSE(Gid::from_hex("00000000000000000000ffffc61200011"));  // 33 digits
  EXPECT_FALSE(Gid::from_hex("00000000000000000000ffffc612000g"));
  EXPECT_FALSE(Gid::from_hex("00000000:0000000000ffffc6120001"));
}

TEST(Gid, Classification) {
  EXPECT_TRUE(Gid{}.is_zero());
  EXPECT_FALSE(Gid{}.is_ipv4_mapped());
  EXPECT_TRUE(mapped(10, 0, 0, 1).is_ipv4_mapped());
  Gid link_local;
  link_local.raw[0] = 0xfe;
  link_local.raw[1] = 0x80;
  link_local.raw[15] = 1;
  EXPECT_FALSE(link_local.is_ipv4_mapped());
  EXPECT_FALSE(link_local.is_zero());
  EXPECT_EQ(mapped(198, 18, 0, 1).to_string(), "::ffff:198.18.0.1");
  EXPECT_EQ(link_local.to_string(), "fe80::1");
}

}  // namespace
}  // namespace unet::verbs
