// Device: RC SEND/RECV, RDMA WRITE/READ, doorbell batching, and the named errors.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "verbs_fixture.h"

namespace unet::test {
namespace {

using verbs::QpType;
using verbs::QueuePair;

class Rc : public VerbsTest {
 protected:
  void SetUp() override {
    VerbsTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    a_ = make_qp(QpType::kRc);
    b_ = make_qp(QpType::kRc);
  }
  std::unique_ptr<QueuePair> a_, b_;
};

class RcSendRecv : public Rc, public ::testing::WithParamInterface<std::size_t> {};

TEST_P(RcSendRecv, DeliversContentIntact) {
  connect_pair(*a_, *b_);
  const std::size_t n = GetParam();
  Buffer src(pd_, n), dst(pd_, n);
  src.fill(0x5a);
  ibv_sge rs = dst.sge(n);
  ibv_recv_wr rwr{};
  rwr.wr_id = 2;
  rwr.sg_list = &rs;
  rwr.num_sge = 1;
  ASSERT_EQ(b_->post_recv(rwr), Status::kOk);
  ibv_sge ss = src.sge(n);
  ibv_send_wr swr{};
  swr.wr_id = 1;
  swr.sg_list = &ss;
  swr.num_sge = 1;
  swr.opcode = IBV_WR_SEND;
  swr.send_flags = IBV_SEND_SIGNALED;
  ASSERT_EQ(a_->post_send(swr), Status::kOk);
  // Both completions land on the shared CQ, in either order.
  bool sent = false, received = false;
  for (int i = 0; i < 2; ++i) {
    verbs::WorkCompletion wc = wait_one(*cq_);
    ASSERT_EQ(verbs::status_of(wc), Status::kOk) << to_string(verbs::status_of(wc));
    if (wc.wr_id == 1) {
      sent = true;
      EXPECT_EQ(wc.opcode, IBV_WC_SEND);
    } else {
      received = true;
      EXPECT_EQ(wc.opcode, IBV_WC_RECV);
      EXPECT_EQ(wc.byte_len, n);
      EXPECT_EQ(wc.qp_num, b_->qp_num());
    }
  }
  EXPECT_TRUE(sent && received);
  EXPECT_TRUE(dst.matches(0x5a, n));
}

INSTANTIATE_TEST_SUITE_P(Sizes, RcSendRecv, ::testing::Values(1, 4096, 1 << 20),
                         [](const auto& p) { return std::to_string(p.param) + "B"; });

TEST_F(Rc, InlineSendNeedsNoRegisteredSource) {
  verbs::QpConfig c;
  c.send_cq = cq_;
  c.max_inline_data = 64;
  QueuePair a(pd_, c);
  ASSERT_GE(a.caps().max_inline_data, 64u);
  connect_pair(a, *b_);
  Buffer dst(pd_, 64);
  ibv_sge rs = dst.sge(64);
  ibv_recv_wr rwr{};
  rwr.sg_list = &rs;
  rwr.num_sge = 1;
  ASSERT_EQ(b_->post_recv(rwr), Status::kOk);
  char msg[64];
  for (int i = 0; i < 64; ++i) msg[i] = static_cast<char>(0x5a + i * 7);
  ibv_sge ss{reinterpret_cast<std::uint64_t>(msg), 64, 0};  // lkey unused for inline data
  ibv_send_wr swr{};
  swr.sg_list = &ss;
  swr.num_sge = 1;
  swr.opcode = IBV_WR_SEND;
  swr.send_flags = IBV_SEND_INLINE;  // unsignaled: only the receive completes
  ASSERT_EQ(a.post_send(swr), Status::kOk);
  std::memset(msg, 0, sizeof msg);  // the data was copied at post time
  verbs::WorkCompletion wc = wait_one(*cq_);
  ASSERT_EQ(verbs::status_of(wc), Status::kOk);
  EXPECT_EQ(wc.opcode, IBV_WC_RECV);
  EXPECT_TRUE(dst.matches(0x5a, 64));
}

TEST_F(Rc, PostListIsOneDoorbellAndDeliversInOrder) {
  connect_pair(*a_, *b_);
  constexpr int kN = 16;
  Buffer src(pd_, kN * 8), dst(pd_, kN * 8);
  src.fill(1);
  ibv_sge rs[kN], ss[kN];
  ibv_recv_wr rwr[kN]{};
  ibv_send_wr swr[kN]{};
  for (int i = 0; i < kN; ++i) {
    rs[i] = dst.sge(8, static_cast<std::size_t>(i) * 8);
    rwr[i] = {static_cast<std::uint64_t>(100 + i), i + 1 < kN ? &rwr[i + 1] : nullptr, &rs[i], 1};
    ss[i] = src.sge(8, static_cast<std::size_t>(i) * 8);
    swr[i].wr_id = static_cast<std::uint64_t>(i);
    swr[i].next = i + 1 < kN ? &swr[i + 1] : nullptr;
    swr[i].sg_list = &ss[i];
    swr[i].num_sge = 1;
    swr[i].opcode = IBV_WR_SEND;
    // Selective signaling: only the last send of the batch completes.
    swr[i].send_flags = i + 1 == kN ? IBV_SEND_SIGNALED : 0;
  }
  ASSERT_EQ(b_->post_recv(rwr[0]), Status::kOk);
  ASSERT_EQ(a_->post_send(swr[0]), Status::kOk);
  int recvs = 0, sends = 0;
  while (recvs + sends < kN + 1) {
    verbs::WorkCompletion wc = wait_one(*cq_);
    ASSERT_EQ(verbs::status_of(wc), Status::kOk);
    if (wc.opcode == IBV_WC_RECV) {
      EXPECT_EQ(wc.wr_id, static_cast<std::uint64_t>(100 + recvs)) << "out of order";
      ++recvs;
    } else {
      EXPECT_EQ(wc.wr_id, static_cast<std::uint64_t>(kN - 1));
      ++sends;
    }
  }
  EXPECT_EQ(sends, 1);
  EXPECT_TRUE(dst.matches(1, kN * 8));
}

TEST_F(Rc, RdmaWriteAndReadMoveBytesOneSided) {
  connect_pair(*a_, *b_);
  constexpr std::size_t kN = 64 * 1024;
  Buffer local(pd_, kN), remote(pd_, kN);
  local.fill(0x11);
  verbs::RemoteKey rk = remote.mr->remote_key();
  ibv_sge s = local.sge(kN);
  ibv_send_wr w{};
  w.wr_id = 7;
  w.sg_list = &s;
  w.num_sge = 1;
  w.opcode = IBV_WR_RDMA_WRITE;
  w.send_flags = IBV_SEND_SIGNALED;
  w.wr.rdma.remote_addr = rk.addr;
  w.wr.rdma.rkey = rk.rkey;
  ASSERT_EQ(a_->post_send(w), Status::kOk);
  verbs::WorkCompletion wc = wait_one(*cq_);
  ASSERT_EQ(verbs::status_of(wc), Status::kOk);
  EXPECT_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
  EXPECT_TRUE(remote.matches(0x11, kN));

  remote.fill(0x77);
  std::fill(local.bytes.begin(), local.bytes.end(), 0);
  w.opcode = IBV_WR_RDMA_READ;
  w.wr_id = 8;
  ASSERT_EQ(a_->post_send(w), Status::kOk);
  wc = wait_one(*cq_);
  ASSERT_EQ(verbs::status_of(wc), Status::kOk);
  EXPECT_EQ(wc.opcode, IBV_WC_RDMA_READ);
  EXPECT_TRUE(local.matches(0x77, kN));
}

TEST_F(Rc, PostingOnAQpInResetIsInvalidState) {
  Buffer buf(pd_, 64);
  ibv_sge s = buf.sge(64);
  ibv_send_wr w{};
  w.sg_list = &s;
  w.num_sge = 1;
  w.opcode = IBV_WR_SEND;
  ASSERT_EQ(a_->state(), verbs::QpState::kReset);
  EXPECT_EQ(a_->post_send(w), Status::kInvalidState);
  ibv_recv_wr r{};
  r.sg_list = &s;
  r.num_sge = 1;
  EXPECT_EQ(a_->post_recv(r), Status::kInvalidState);
  // Nothing was queued: the CQ stays empty.
  verbs::WorkCompletion wc;
  std::size_t n = 99;
  ASSERT_EQ(cq_->poll({&wc, 1}, n), Status::kOk);
  EXPECT_EQ(n, 0u);
}

TEST_F(Rc, WriteWithAWrongRkeyIsARemoteAccessErrorAndChangesNothing) {
  connect_pair(*a_, *b_);
  constexpr std::size_t kN = 4096;
  Buffer local(pd_, kN), target(pd_, kN);
  local.fill(0xee);
  target.fill(0x33);
  ibv_sge s = local.sge(kN);
  ibv_send_wr w{};
  w.sg_list = &s;
  w.num_sge = 1;
  w.opcode = IBV_WR_RDMA_WRITE;
  w.send_flags = IBV_SEND_SIGNALED;
  w.wr.rdma.remote_addr = target.mr->remote_key().addr;
  w.wr.rdma.rkey = target.mr->rkey() ^ 0x5a5a00;  // a guessed key
  ASSERT_EQ(a_->post_send(w), Status::kOk);
  verbs::WorkCompletion wc = wait_one(*cq_);
  EXPECT_EQ(verbs::status_of(wc), Status::kRemoteAccessError) << to_string(verbs::status_of(wc));
  EXPECT_TRUE(target.matches(0x33, kN)) << "target memory was modified";
}

TEST_F(Rc, WritePastTheEndOfARegionIsARemoteAccessErrorAndChangesNothing) {
  connect_pair(*a_, *b_);
  constexpr std::size_t kN = 4096;
  Buffer local(pd_, kN), target(pd_, kN);
  local.fill(0xee);
  target.fill(0x33);
  ibv_sge s = local.sge(kN);
  ibv_send_wr w{};
  w.sg_list = &s;
  w.num_sge = 1;
  w.opcode = IBV_WR_RDMA_WRITE;
  w.send_flags = IBV_SEND_SIGNALED;
  w.wr.rdma.remote_addr = target.mr->remote_key().addr + 100;  // the last 100 bytes fall outside
  w.wr.rdma.rkey = target.mr->rkey();
  ASSERT_EQ(a_->post_send(w), Status::kOk);
  verbs::WorkCompletion wc = wait_one(*cq_);
  EXPECT_EQ(verbs::status_of(wc), Status::kRemoteAccessError) << to_string(verbs::status_of(wc));
  EXPECT_TRUE(target.matches(0x33, kN)) << "target memory was modified";
}

TEST_F(Rc, SendWithNoReceivePostedAndRnrRetryZeroFails) {
  verbs::PathParams p = path();
  p.rnr_retry = 0;
  p.min_rnr_timer = 1;
  connect_pair(*a_, *b_, p);
  Buffer src(pd_, 32);
  ibv_sge s = src.sge(32);
  ibv_send_wr w{};
  w.sg_list = &s;
  w.num_sge = 1;
  w.opcode = IBV_WR_SEND;
  w.send_flags = IBV_SEND_SIGNALED;
  ASSERT_EQ(a_->post_send(w), Status::kOk);
  verbs::WorkCompletion wc = wait_one(*cq_);
  EXPECT_EQ(verbs::status_of(wc), Status::kRnrRetryExceeded) << to_string(verbs::status_of(wc));
}

TEST_F(Rc, MovingToErrorFlushesPostedReceives) {
  connect_pair(*a_, *b_);
  Buffer dst(pd_, 64);
  ibv_sge rs = dst.sge(64);
  ibv_recv_wr r{};
  r.wr_id = 42;
  r.sg_list = &rs;
  r.num_sge = 1;
  ASSERT_EQ(b_->post_recv(r), Status::kOk);
  b_->to_error();
  verbs::WorkCompletion wc = wait_one(*cq_);
  EXPECT_EQ(wc.wr_id, 42u);
  EXPECT_EQ(verbs::status_of(wc), Status::kFlushed);
}

class Uc : public VerbsTest {};

TEST_F(Uc, SendAndWriteDeliverOnAnUnreliableConnection) {
  auto a = make_qp(QpType::kUc), b = make_qp(QpType::kUc);
  connect_pair(*a, *b);
  ASSERT_EQ(a->state(), verbs::QpState::kRts);
  constexpr std::size_t kN = 3000;  // several MTU-sized packets
  Buffer src(pd_, kN), dst(pd_, kN), target(pd_, kN);
  src.fill(0x21);
  ibv_sge rs = dst.sge(kN);
  ibv_recv_wr r{};
  r.wr_id = 1;
  r.sg_list = &rs;
  r.num_sge = 1;
  ASSERT_EQ(b->post_recv(r), Status::kOk);
  ibv_sge ss = src.sge(kN);
  ibv_send_wr w{};
  w.wr_id = 2;
  w.sg_list = &ss;
  w.num_sge = 1;
  w.opcode = IBV_WR_SEND;
  w.send_flags = IBV_SEND_SIGNALED;
  ASSERT_EQ(a->post_send(w), Status::kOk);
  for (int i = 0; i < 2; ++i) ASSERT_EQ(verbs::status_of(wait_one(*cq_)), Status::kOk);
  EXPECT_TRUE(dst.matches(0x21, kN));

  w.wr_id = 3;
  w.opcode = IBV_WR_RDMA_WRITE;
  w.wr.rdma.remote_addr = target.mr->remote_key().addr;
  w.wr.rdma.rkey = target.mr->rkey();
  ASSERT_EQ(a->post_send(w), Status::kOk);
  verbs::WorkCompletion wc = wait_one(*cq_);
  ASSERT_EQ(verbs::status_of(wc), Status::kOk);
  EXPECT_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
  // UC completes a write locally, with no acknowledgement: wait for the bytes themselves.
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!target.matches(0x21, kN) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  EXPECT_TRUE(target.matches(0x21, kN));
}

}  // namespace
}  // namespace unet::test
