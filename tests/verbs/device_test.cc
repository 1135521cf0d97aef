// Device: discovery, limits, GID choice, clamping, and the errors set-up throws.
#include <gtest/gtest.h>

#include <algorithm>

#include "kernel_files.h"
#include "unet/verbs/error.h"
#include "verbs_fixture.h"

namespace unet::test {
namespace {

using verbs::Context;

class Device : public VerbsTest {};

TEST_F(Device, ListsAndOpensTheDeviceWithSaneLimits) {
  auto names = verbs::device_names();
  EXPECT_NE(std::find(names.begin(), names.end(), ctx_->name()), names.end());
  const verbs::DeviceLimits& l = ctx_->limits();
  EXPECT_GT(l.max_qp_wr, 0u);
  EXPECT_GT(l.max_cqe, 0u);
  EXPECT_GT(l.max_sge, 0u);
  EXPECT_GE(l.phys_port_cnt, 1);
  verbs::PortInfo p = ctx_->port(1);
  EXPECT_TRUE(p.active);
  EXPECT_GE(p.active_mtu, 256u);
}

TEST_F(Device, GidChoiceFollowsPerftest) {
  if (ctx_->port(1).link_layer == verbs::LinkLayer::kEthernet && !gid_index()) {
    // rxe and RoCE NICs with an IPv4 address: the IPv4-mapped RoCE v2 GID.
    EXPECT_EQ(gid_.type, verbs::GidType::kRoceV2);
    EXPECT_TRUE(gid_.gid.is_ipv4_mapped()) << gid_.gid.to_string();
  }
  EXPECT_FALSE(gid_.gid.is_zero());
  // An explicit index overrides the choice and returns that very entry.
  verbs::GidEntry same = verbs::select_gid(*ctx_, 1, gid_.index);
  EXPECT_EQ(same.gid, gid_.gid);
  EXPECT_THROW((void)verbs::select_gid(*ctx_, 1, 100000u), verbs::Error);
}

// A netdev narrows the choice to its GIDs: the device's own netdev gives the same GID, a netdev
// with no GID on this device (lo) none, and a name no netdev has is a named error.
TEST_F(Device, GidChoiceByNetdev) {
  const std::string ndev =
      read_first_line("/sys/class/infiniband/" + ctx_->name() + "/ports/1/gid_attrs/ndevs/" +
                      std::to_string(gid_.index));
  ASSERT_FALSE(ndev.empty());
  EXPECT_EQ(verbs::select_gid(*ctx_, 1, gid_index(), ndev).gid, gid_.gid) << ndev;
  try {
    (void)verbs::select_gid(*ctx_, 1, std::nullopt, "lo");
    FAIL() << "lo has no GID of " << ctx_->name();
  } catch (const verbs::Error& e) {
    EXPECT_EQ(e.error_number(), ENOENT) << e.what();
  }
  try {
    (void)verbs::select_gid(*ctx_, 1, std::nullopt, "no_such_if9");
    FAIL();
  } catch (const verbs::Error& e) {
    EXPECT_EQ(e.error_number(), ENODEV) << e.what();
    EXPECT_NE(std::string(e.what()).find("no_such_if9"), std::string::npos) << e.what();
  }
}

TEST_F(Device, UnknownDeviceAndPortThrowNamedErrors) {
  try {
    (void)Context::open("no_such_dev9");
    FAIL();
  } catch (const verbs::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_dev9"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(ctx_->name()), std::string::npos)
        << "lists present devices: " << e.what();
  }
  EXPECT_THROW((void)ctx_->port(0), verbs::Error);
  EXPECT_THROW((void)ctx_->port(200), verbs::Error);
}

TEST_F(Device, RequestedSizesAreClampedToTheDevice) {
  const verbs::DeviceLimits& l = ctx_->limits();
  verbs::CompletionQueue big(ctx_, 0xffffffffu);
  EXPECT_LE(big.capacity(), l.max_cqe);
  EXPECT_GE(big.capacity(), std::min<std::uint32_t>(l.max_cqe, 1024));

  // Each limit exceeded on its own (all at once can exceed the device's queue memory).
  verbs::QpConfig c;
  c.send_cq = cq_;
  c.max_send_wr = c.max_recv_wr = 0xffffffffu;
  {
    verbs::QueuePair qp(pd_, c);
    EXPECT_LE(qp.caps().max_send_wr, l.max_qp_wr);
    EXPECT_GE(qp.caps().max_send_wr, std::min<std::uint32_t>(l.max_qp_wr, 1024));
    EXPECT_LE(qp.caps().max_recv_wr, l.max_qp_wr);
  }
  c = {};
  c.send_cq = cq_;
  c.max_send_sge = c.max_recv_sge = 0xffffu;
  {
    verbs::QueuePair qp(pd_, c);
    EXPECT_LE(qp.caps().max_send_sge, l.max_sge);
    EXPECT_GE(qp.caps().max_send_sge, std::min<std::uint32_t>(l.max_sge, 2));
  }
  c = {};
  c.send_cq = cq_;
  c.max_inline_data = 1u << 20;
  {
    verbs::QueuePair qp(pd_, c);
    std::uint32_t max_inline = ctx_->max_inline_data(IBV_QPT_RC);
    EXPECT_GT(max_inline, 0u);
    EXPECT_GE(qp.caps().max_inline_data, max_inline);
    EXPECT_LT(qp.caps().max_inline_data, 1u << 20);
  }
}

TEST_F(Device, ChildrenKeepTheirParentsAlive) {
  // Drop every handle but the QP's: it must still work, and destroy in order on release.
  auto qp = make_qp(verbs::QpType::kRc);
  std::weak_ptr<verbs::Context> weak_ctx = ctx_;
  cq_.reset();
  pd_.reset();
  ctx_.reset();
  EXPECT_FALSE(weak_ctx.expired());
  EXPECT_NE(qp->qp_num(), 0u);
  qp.reset();
  EXPECT_TRUE(weak_ctx.expired());
}

}  // namespace
}  // namespace unet::test
