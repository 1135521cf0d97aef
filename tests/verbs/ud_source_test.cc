// Unit: who sent a UD arrival, with and without a GRH, on InfiniBand and on RoCE.
#include "unet/verbs/ud_source.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>

namespace unet::verbs {
namespace {

// An IB/IPv6 GRH (version 6 in byte 0) whose source GID is fe80::1:2.
std::array<std::uint8_t, 40> ib_grh() {
  std::array<std::uint8_t, 40> g{};
  g[0] = 0x60;
  g[8] = 0xfe, g[9] = 0x80, g[22] = 0x01, g[23] = 0x02;
  return g;
}

Gid fe80_1_2() {
  Gid g;
  g.raw[0] = 0xfe, g.raw[1] = 0x80, g.raw[14] = 0x01, g.raw[15] = 0x02;
  return g;
}

TEST(UdSource, WithAGrhTheSourceIsItsGidOnEveryLink) {
  const auto grh = ib_grh();
  for (LinkLayer l : {LinkLayer::kInfiniBand, LinkLayer::kEthernet, LinkLayer::kUnknown}) {
    const std::optional<Gid> s = ud_source(true, l, 7, grh.data());
    ASSERT_TRUE(s.has_value());
    EXPECT_EQ(*s, fe80_1_2()) << "the GRH names the sender, not the LID";
  }
}

TEST(UdSource, WithoutAGrhOnInfiniBandTheSourceLidNamesTheSender) {
  // The slot holds an earlier arrival's GRH: it must not be read.
  const auto stale = ib_grh();
  const std::optional<Gid> s = ud_source(false, LinkLayer::kInfiniBand, 0x1234, stale.data());
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(*s, lid_gid(0x1234));
  EXPECT_NE(*s, fe80_1_2());
  EXPECT_NE(lid_gid(0x1234), lid_gid(0x1235));
}

TEST(UdSource, WithoutAGrhOnRoceOrWithoutALidThereIsNoSender) {
  const auto stale = ib_grh();
  EXPECT_FALSE(ud_source(false, LinkLayer::kEthernet, 0, stale.data()));
  EXPECT_FALSE(ud_source(false, LinkLayer::kEthernet, 5, stale.data()));  // RoCE has no LIDs
  EXPECT_FALSE(ud_source(false, LinkLayer::kUnknown, 5, stale.data()));
  EXPECT_FALSE(ud_source(false, LinkLayer::kInfiniBand, 0, stale.data()));  // LID 0 is no port's
}

TEST(UdSource, LidKeysLookLikeNoPortGid) {
  const Gid k = lid_gid(0xbeef);
  EXPECT_EQ(k.to_hex(), "0000000000000000000000000000beef");
  EXPECT_FALSE(k.is_ipv4_mapped());
  EXPECT_FALSE(k.is_zero());
  EXPECT_TRUE(lid_gid(0).is_zero());
}

}  // namespace
}  // namespace unet::verbs
