// Device: a type-2 memory window grants a peer access through its own rkey, and revoking it locks
// the peer out with a remote access error, memory unchanged.
//
// Not tested here: that accesses outside the window's range fail. rxe in Linux 6.1 checks an MW
// access only against the bounds of the MR under it (seen: a write below the window succeeded),
// so on rxe a window is not a range limit; core/ grants ranges with dedicated MRs there.
#include "unet/verbs/memory_window.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "verbs_fixture.h"

namespace unet::test {
namespace {

constexpr std::size_t kN = 8192;

class Window : public VerbsTest {
 protected:
  void SetUp() override {
    VerbsTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (!ctx_->limits().mw_type2) {
      if (device_required() && ctx_->name().rfind("rxe", 0) == 0)
        FAIL() << "rxe should support MW type 2";
      GTEST_SKIP() << ctx_->name() << " does not support type-2 memory windows";
    }
    owner_ = make_qp(verbs::QpType::kRc);
    peer_ = make_qp(verbs::QpType::kRc);
    verbs::PathParams p = path();
    p.access |= IBV_ACCESS_MW_BIND;
    connect_pair(*owner_, *peer_, p);
    target_ = std::make_unique<Buffer>(pd_, kN, verbs::kDefaultAccess | IBV_ACCESS_MW_BIND);
    src_ = std::make_unique<Buffer>(pd_, kN);
    target_->fill(0x10);
    src_->fill(0x99);
    mw_ = std::make_unique<verbs::MemoryWindow>(pd_, verbs::MemoryWindowType::kType2);
  }

  // Binds the window to [offset, offset + n) of the target, for remote writes.
  void bind(std::size_t offset, std::size_t n) {
    ASSERT_EQ(owner_->post_bind(*mw_, *target_->mr, target_->bytes.data() + offset, n,
                                IBV_ACCESS_REMOTE_WRITE, 1),
              Status::kOk);
    ASSERT_EQ(verbs::status_of(wait_one(*cq_)), Status::kOk);
  }

  // The peer writes n bytes at target + offset with `rkey`; the completion's status.
  Status peer_write(std::uint32_t rkey, std::size_t offset, std::size_t n) {
    auto w = src_->send(IBV_WR_RDMA_WRITE, n, 0, 2);
    w.remote({reinterpret_cast<std::uint64_t>(target_->bytes.data()), rkey, kN}, offset);
    EXPECT_EQ(peer_->post_send(w.wr), Status::kOk);
    return verbs::status_of(wait_one(*cq_));
  }

  std::unique_ptr<verbs::QueuePair> owner_, peer_;
  std::unique_ptr<Buffer> target_, src_;
  std::unique_ptr<verbs::MemoryWindow> mw_;
};

TEST_F(Window, BindGrantsAccessThroughTheWindowsKey) {
  bind(4096, 4096);
  EXPECT_NE(mw_->rkey(), target_->mr->rkey());
  EXPECT_EQ(peer_write(mw_->rkey(), 4096, 4096), Status::kOk);
  EXPECT_TRUE(target_->matches(0x10, 4096)) << "bytes outside the window changed";
  EXPECT_TRUE(
      std::equal(src_->bytes.begin(), src_->bytes.begin() + 4096, target_->bytes.begin() + 4096))
      << "the window did not receive the write";
}

TEST_F(Window, RevokedWindowRefusesThePeer) {
  bind(0, 4096);
  std::uint32_t rkey = mw_->rkey();
  ASSERT_EQ(owner_->post_invalidate(rkey, 3), Status::kOk);
  ASSERT_EQ(verbs::status_of(wait_one(*cq_)), Status::kOk);
  EXPECT_EQ(peer_write(rkey, 0, 4096), Status::kRemoteAccessError);
  EXPECT_TRUE(target_->matches(0x10, kN)) << "memory changed after revocation";
}

}  // namespace
}  // namespace unet::test
