// Unit: the address attributes a UD address handle and an RC path are made of.
#include "unet/verbs/address_handle.h"

#include <gtest/gtest.h>

namespace unet::verbs {
namespace {

TEST(AhAttr, ServiceLevelAndTrafficClassAreSet) {
  RemotePort r;
  r.lid = 0x21;
  r.gid.raw[15] = 7;
  r.sgid_index = 3;
  r.port = 2;
  r.hop_limit = 9;
  r.sl = 5;
  r.traffic_class = 106;  // DSCP 26, ECN 2
  const ibv_ah_attr a = make_ah_attr(r);
  EXPECT_EQ(a.dlid, 0x21);
  EXPECT_EQ(a.port_num, 2);
  EXPECT_EQ(a.sl, 5);
  ASSERT_EQ(a.is_global, 1);
  EXPECT_EQ(a.grh.dgid.raw[15], 7);
  EXPECT_EQ(a.grh.sgid_index, 3);
  EXPECT_EQ(a.grh.hop_limit, 9);
  EXPECT_EQ(a.grh.traffic_class, 106);
}

TEST(AhAttr, WithoutAGrhTheServiceLevelStillCountsAndNoGrhIsFilled) {
  RemotePort r;
  r.lid = 4;
  r.global = false;
  r.sl = 15;
  r.traffic_class = 8;
  const ibv_ah_attr a = make_ah_attr(r);
  EXPECT_EQ(a.is_global, 0);
  EXPECT_EQ(a.sl, 15);
  EXPECT_EQ(a.grh.traffic_class, 0) << "no GRH, no traffic class";
  EXPECT_EQ(a.grh.hop_limit, 0);
}

TEST(AhAttr, DefaultsAreTheFabricsDefaultClass) {
  const ibv_ah_attr a = make_ah_attr(RemotePort{});
  EXPECT_EQ(a.sl, 0);
  EXPECT_EQ(a.grh.traffic_class, 0);
}

}  // namespace
}  // namespace unet::verbs
