// Unit: GID text forms.
#include "unet/verbs/gid.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <vector>

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

TEST(Gid, SourceOfAnIpv4RoceV2Arrival) {
  // The shape rxe places before a UD payload (seen in the VM): 20 zero bytes, then the IPv4
  // header with its checksum left 0; here from 198.18.0.2 to 198.18.0.1.
  const std::uint8_t seen[40] = {0,    0,    0, 0, 0,   0,  0,    0, 0,   0,    0,    0,    0,    0,
                                 0,    0,    0, 0, 0,   0,  0x45, 0, 0,   0x3c, 0x30, 0xcc, 0x40, 0,
                                 0x40, 0x11, 0, 0, 198, 18, 0,    2, 198, 18,   0,    1};
  EXPECT_EQ(grh_source_gid(seen), mapped(198, 18, 0, 2));
}

TEST(Gid, AnIpv6LookingHeaderIsIpv4OnlyWithAValidChecksum) {
  std::uint8_t grh[40] = {0x60};
  const std::uint8_t ip[20] = {0x45, 0, 0,   0x3c, 0, 0, 0x40, 0,  0x40, 0x11,
                               0,    0, 198, 18,   0, 2, 198,  18, 0,    1};
  std::copy(ip, ip + 20, grh + 20);
  std::uint32_t sum = 0;
  for (int i = 0; i < 20; i += 2) sum += static_cast<std::uint32_t>(grh[20 + i] << 8 | grh[21 + i]);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  grh[30] = static_cast<std::uint8_t>(~sum >> 8);
  grh[31] = static_cast<std::uint8_t>(~sum);
  EXPECT_EQ(grh_source_gid(grh), mapped(198, 18, 0, 2));
  grh[31] ^= 1;  // checksum wrong: a GRH whose source GID happens to contain 0x45
  Gid expect;
  std::copy(grh + 8, grh + 24, expect.raw.begin());
  EXPECT_EQ(grh_source_gid(grh), expect);
}

TEST(Gid, SourceOfAGrhArrival) {
  std::uint8_t grh[40] = {0x60};
  Gid src = mapped(10, 1, 2, 3);
  src.raw[0] = 0xfe;
  std::copy(src.raw.begin(), src.raw.end(), grh + 8);
  EXPECT_EQ(grh_source_gid(grh), src);
}

// A host with two ports, port 1 on eth0 (ifindex 2) with a VLAN eth0.100 (ifindex 5) and port 2
// on eth1 (ifindex 3): each netdev has its link-local GID (RoCE v1 and v2) and its IPv4 one.
std::vector<GidRow> two_ports_and_a_vlan() {
  auto row = [](std::uint32_t index, GidType type, Gid gid, std::uint8_t port,
                std::uint32_t ifindex) {
    GidRow r;
    r.entry = {gid, index, type};
    r.port = port;
    r.ifindex = ifindex;
    return r;
  };
  Gid link_local;
  link_local.raw[0] = 0xfe, link_local.raw[1] = 0x80, link_local.raw[15] = 1;
  return {
      row(0, GidType::kRoceV1, link_local, 1, 2),
      row(1, GidType::kRoceV2, link_local, 1, 2),
      row(2, GidType::kRoceV1, mapped(10, 0, 0, 1), 1, 2),
      row(3, GidType::kRoceV2, mapped(10, 0, 0, 1), 1, 2),
      row(4, GidType::kRoceV1, mapped(10, 1, 0, 1), 1, 5),
      row(5, GidType::kRoceV2, mapped(10, 1, 0, 1), 1, 5),
      row(6, GidType::kRoceV2, Gid{}, 1, 0),  // an empty slot
      row(0, GidType::kRoceV2, link_local, 2, 3),
      row(1, GidType::kRoceV2, mapped(10, 2, 0, 1), 2, 3),
  };
}

TEST(ChooseGid, ThePortsBestGidWithoutANetdev) {
  const auto t = two_ports_and_a_vlan();
  const auto p1 = choose_gid(t, 1, std::nullopt, std::nullopt);
  ASSERT_TRUE(p1.has_value());
  EXPECT_EQ(p1->index, 3u) << "RoCE v2 IPv4-mapped, lowest index on a tie (the VLAN's is 5)";
  const auto p2 = choose_gid(t, 2, std::nullopt, std::nullopt);
  ASSERT_TRUE(p2.has_value());
  EXPECT_EQ(p2->index, 1u) << "port 2's own entries, not port 1's";
  EXPECT_EQ(p2->gid, mapped(10, 2, 0, 1));
}

TEST(ChooseGid, ANetdevNarrowsTheChoiceToItsGids) {
  const auto t = two_ports_and_a_vlan();
  const auto vlan = choose_gid(t, 1, std::nullopt, 5u);
  ASSERT_TRUE(vlan.has_value());
  EXPECT_EQ(vlan->index, 5u);
  EXPECT_EQ(vlan->gid, mapped(10, 1, 0, 1));
  EXPECT_EQ(choose_gid(t, 1, std::nullopt, 2u)->index, 3u);
  EXPECT_FALSE(choose_gid(t, 1, std::nullopt, 3u)) << "eth1 is port 2's";
  EXPECT_FALSE(choose_gid(t, 1, std::nullopt, 9u)) << "no GID on that netdev";
}

TEST(ChooseGid, AnIndexIsTakenAsGivenWithinThePortAndNetdev) {
  const auto t = two_ports_and_a_vlan();
  EXPECT_EQ(choose_gid(t, 1, 0u, std::nullopt)->type, GidType::kRoceV1);
  EXPECT_FALSE(choose_gid(t, 1, 6u, std::nullopt)) << "an empty slot";
  EXPECT_FALSE(choose_gid(t, 1, 9u, std::nullopt)) << "no such index";
  EXPECT_FALSE(choose_gid(t, 1, 3u, 5u)) << "index 3 is eth0's, not the VLAN's";
  EXPECT_EQ(choose_gid(t, 2, 1u, std::nullopt)->gid, mapped(10, 2, 0, 1));
}

}  // namespace
}  // namespace unet::verbs
