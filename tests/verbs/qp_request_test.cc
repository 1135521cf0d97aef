// Unit: the smaller QP requests made when a device refuses a deep queue of large inline WQEs.
#include <gtest/gtest.h>

#include <cerrno>
#include <vector>

#include "qp_init_attr.h"

namespace unet::verbs {
namespace {

TEST(QpRequest, TheSendDepthHalvesDownTo16AndTheInlineSizeStays) {
  ibv_qp_cap cap{1024, 64, 2, 1, 256};
  std::vector<std::uint32_t> depths;
  while (shrink_send_queue(cap, EINVAL)) depths.push_back(cap.max_send_wr);
  EXPECT_EQ(depths, (std::vector<std::uint32_t>{512, 256, 128, 64, 32, 16}));
  EXPECT_EQ(cap.max_inline_data, 256u);
  EXPECT_EQ(cap.max_recv_wr, 64u);
  ibv_qp_cap odd{100, 1, 1, 1, 64};
  ASSERT_TRUE(shrink_send_queue(odd, ENOMEM));
  EXPECT_EQ(odd.max_send_wr, 50u);
}

TEST(QpRequest, OtherRefusalsOrNoInlineAreNotRetried) {
  ibv_qp_cap cap{1024, 64, 2, 1, 256};
  EXPECT_FALSE(shrink_send_queue(cap, EPERM));
  EXPECT_FALSE(shrink_send_queue(cap, ENOSPC));
  EXPECT_EQ(cap.max_send_wr, 1024u);
  ibv_qp_cap plain{1024, 64, 2, 1, 0};
  EXPECT_FALSE(shrink_send_queue(plain, EINVAL))
      << "without inline data the depth alone was refused";
}

TEST(QpRequest, CreateShrinkingStopsAtTheFirstQpTheDeviceTakes) {
  ibv_qp_init_attr attr{};
  attr.cap = {1024, 64, 2, 1, 256};
  std::vector<std::uint32_t> asked;
  // A device that takes at most 128 WQEs of this size.
  const bool made = create_shrinking(attr, [&](ibv_qp_init_attr& a) {
    asked.push_back(a.cap.max_send_wr);
    errno = a.cap.max_send_wr > 128 ? EINVAL : 0;
    return a.cap.max_send_wr <= 128;
  });
  EXPECT_TRUE(made);
  EXPECT_EQ(asked, (std::vector<std::uint32_t>{1024, 512, 256, 128}));
  EXPECT_EQ(attr.cap.max_send_wr, 128u);
  attr.cap = {1024, 64, 2, 1, 256};
  EXPECT_FALSE(create_shrinking(attr, [&](ibv_qp_init_attr&) {
    errno = EINVAL;
    return false;
  })) << "a device that takes nothing: the last refusal stands";
  EXPECT_EQ(attr.cap.max_send_wr, 16u);
}

}  // namespace
}  // namespace unet::verbs
