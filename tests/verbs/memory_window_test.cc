// Device: a type-2 memory window grants a peer access through its own rkey, and revoking it locks
// the peer out with a remote access error, memory unchanged.
//
// Not tested here: that accesses outside the window's range fail. rxe in Linux 6.1 checks an MW
// access only against the bounds of the MR under it (seen: a write below the window succeeded),
// so on rxe a window is not a range limit; core/ grants ranges with dedicated MRs there.
#include <gtest/gtest.h>

#include <algorithm>

#include "unet/verbs/memory_window.h"
#include "verbs_fixture.h"

namespace unet::test {
namespace {

class Window : public VerbsTest {};

TEST_F(Window, BindGrantsRangeAndInvalidateRevokes) {
  if (!ctx_->limits().mw_type2) {
    if (device_required() && ctx_->name().rfind("rxe", 0) == 0) FAIL() << "rxe should support MW type 2";
    GTEST_SKIP() << ctx_->name() << " does not support type-2 memory windows";
  }
  auto owner = make_qp(verbs::QpType::kRc), peer = make_qp(verbs::QpType::kRc);
  verbs::PathParams p = path();
  p.access |= IBV_ACCESS_MW_BIND;
  connect_pair(*owner, *peer, p);
  constexpr std::size_t kN = 8192;
  Buffer target(pd_, kN, verbs::kDefaultAccess | IBV_ACCESS_MW_BIND), src(pd_, kN);
  target.fill(0x10);
  src.fill(0x99);
  verbs::MemoryWindow mw(pd_, verbs::MemoryWindowType::kType2);
  // Grant [4096, 8192) only.
  ASSERT_EQ(owner->post_bind(mw, *target.mr, target.bytes.data() + 4096, 4096,
                             IBV_ACCESS_REMOTE_WRITE, 1),
            Status::kOk);
  verbs::WorkCompletion wc = wait_one(*cq_);
  ASSERT_EQ(verbs::status_of(wc), Status::kOk) << to_string(verbs::status_of(wc));
  std::uint32_t rkey = mw.rkey();

  auto write = [&](std::uint64_t remote, std::size_t n) {
    ibv_sge s = src.sge(n);
    ibv_send_wr w{};
    w.wr_id = 2;
    w.sg_list = &s;
    w.num_sge = 1;
    w.opcode = IBV_WR_RDMA_WRITE;
    w.send_flags = IBV_SEND_SIGNALED;
    w.wr.rdma.remote_addr = remote;
    w.wr.rdma.rkey = rkey;
    EXPECT_EQ(peer->post_send(w), Status::kOk);
    return verbs::status_of(wait_one(*cq_));
  };
  auto base = reinterpret_cast<std::uint64_t>(target.bytes.data());
  EXPECT_EQ(write(base + 4096, 4096), Status::kOk);
  EXPECT_TRUE(target.matches(0x10, 4096)) << "bytes outside the window changed";
  EXPECT_TRUE(std::equal(src.bytes.begin(), src.bytes.begin() + 4096, target.bytes.begin() + 4096))
      << "the window did not receive the write";
}

TEST_F(Window, RevokedWindowRefusesThePeer) {
  if (!ctx_->limits().mw_type2) GTEST_SKIP() << "no type-2 memory windows";
  auto owner = make_qp(verbs::QpType::kRc), peer = make_qp(verbs::QpType::kRc);
  verbs::PathParams p = path();
  p.access |= IBV_ACCESS_MW_BIND;
  connect_pair(*owner, *peer, p);
  Buffer target(pd_, 4096, verbs::kDefaultAccess | IBV_ACCESS_MW_BIND), src(pd_, 4096);
  target.fill(0x10);
  src.fill(0x99);
  verbs::MemoryWindow mw(pd_, verbs::MemoryWindowType::kType2);
  ASSERT_EQ(owner->post_bind(mw, *target.mr, target.bytes.data(), 4096, IBV_ACCESS_REMOTE_WRITE, 1),
            Status::kOk);
  ASSERT_EQ(verbs::status_of(wait_one(*cq_)), Status::kOk);
  std::uint32_t rkey = mw.rkey();
  ASSERT_EQ(owner->post_invalidate(rkey, 3), Status::kOk);
  ASSERT_EQ(verbs::status_of(wait_one(*cq_)), Status::kOk);
  ibv_sge s = src.sge(4096);
  ibv_send_wr w{};
  w.sg_list = &s;
  w.num_sge = 1;
  w.opcode = IBV_WR_RDMA_WRITE;
  w.send_flags = IBV_SEND_SIGNALED;
  w.wr.rdma.remote_addr = reinterpret_cast<std::uint64_t>(target.bytes.data());
  w.wr.rdma.rkey = rkey;
  ASSERT_EQ(peer->post_send(w), Status::kOk);
  EXPECT_EQ(verbs::status_of(wait_one(*cq_)), Status::kRemoteAccessError);
  EXPECT_TRUE(target.matches(0x10, 4096)) << "memory changed after revocation";
}

}  // namespace
}  // namespace unet::test
