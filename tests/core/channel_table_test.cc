// Unit: the channel table demultiplexes tags and finds nothing for a tag it does not hold.
#include "unet/core/channel_table.h"

#include <gtest/gtest.h>

namespace unet::core {
namespace {

verbs::Gid gid(std::uint8_t last) {
  verbs::Gid g;
  g.raw[10] = g.raw[11] = 0xff;
  g.raw[15] = last;
  return g;
}

TEST(ChannelTable, RcTagsAreLocalQpNumbers) {
  ChannelTable t(4);
  ASSERT_EQ(t.add(0x11u, 0), Status::kOk);
  ASSERT_EQ(t.add(0x12u, 1), Status::kOk);
  EXPECT_EQ(t.find(0x11u), 0u);
  EXPECT_EQ(t.find(0x12u), 1u);
  EXPECT_EQ(t.find(0x13u), kNoChannel) << "an unknown tag must find nothing";
  EXPECT_EQ(t.add(0x11u, 2), Status::kInvalidArgument) << "a tag names one channel";
  EXPECT_EQ(t.find(0x11u), 0u) << "a refused add changed the table";
  ASSERT_EQ(t.remove(0x11u), Status::kOk);
  EXPECT_EQ(t.find(0x11u), kNoChannel) << "a closed channel's tag still delivers";
  EXPECT_EQ(t.remove(0x11u), Status::kNotFound);
}

TEST(ChannelTable, UdTagsAreTheSendersQpnAndGid) {
  ChannelTable t(4);
  ASSERT_EQ(t.add(UdTag{0x20, gid(1)}, 0), Status::kOk);
  ASSERT_EQ(t.add(UdTag{0x20, gid(2)}, 1), Status::kOk);  // same QPN, another host
  ASSERT_EQ(t.add(UdTag{0x21, gid(1)}, 2), Status::kOk);  // same host, another QP
  EXPECT_EQ(t.find(UdTag{0x20, gid(1)}), 0u);
  EXPECT_EQ(t.find(UdTag{0x20, gid(2)}), 1u);
  EXPECT_EQ(t.find(UdTag{0x21, gid(1)}), 2u);
  EXPECT_EQ(t.find(UdTag{0x21, gid(2)}), kNoChannel);
  EXPECT_EQ(t.find(0x20u), kNoChannel) << "RC and UD tags are separate";
  ASSERT_EQ(t.remove(UdTag{0x20, gid(1)}), Status::kOk);
  EXPECT_EQ(t.find(UdTag{0x20, gid(1)}), kNoChannel);
  EXPECT_EQ(t.find(UdTag{0x20, gid(2)}), 1u);
}

// The last UD tag found is remembered; adding or removing a tag forgets it, so neither a closed
// channel's tag nor a miss from before an add is answered from memory.
TEST(ChannelTable, TheRememberedUdTagFollowsAddAndRemove) {
  ChannelTable t(4);
  const UdTag a{0x20, gid(1)}, b{0x20, gid(2)};
  EXPECT_EQ(t.find(a), kNoChannel);
  ASSERT_EQ(t.add(a, 3), Status::kOk);
  EXPECT_EQ(t.find(a), 3u) << "a miss remembered across an add";
  EXPECT_EQ(t.find(a), 3u);
  EXPECT_EQ(t.find(b), kNoChannel) << "another GID, one byte apart, matched the remembered tag";
  EXPECT_EQ(t.find(UdTag{0x21, gid(1)}), kNoChannel) << "another QPN matched the remembered tag";
  EXPECT_EQ(t.find(a), 3u);
  ASSERT_EQ(t.remove(a), Status::kOk);
  EXPECT_EQ(t.find(a), kNoChannel) << "a removed tag answered from memory";
}

TEST(ChannelTable, HoldsAtMostMaxChannels) {
  ChannelTable t(2);
  ASSERT_EQ(t.add(1u, 0), Status::kOk);
  ASSERT_EQ(t.add(UdTag{2, gid(2)}, 1), Status::kOk);
  EXPECT_EQ(t.add(3u, 2), Status::kNoResource);
  EXPECT_EQ(t.size(), 2u);
  ASSERT_EQ(t.remove(1u), Status::kOk);
  EXPECT_EQ(t.add(3u, 2), Status::kOk);
}

}  // namespace
}  // namespace unet::core
