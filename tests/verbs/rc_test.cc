// Device: RC SEND/RECV, RDMA WRITE/READ, doorbell batching, UC, and the named errors.
#include <gtest/gtest.h>

#include <algorithm>
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
  // A one-sided write from a_ that must be refused: remote access error, target unchanged.
  void expect_refused_write(const verbs::RemoteKey& where, const Buffer& target) {
    Buffer local(pd_, target.bytes.size());
    local.fill(0xee);
    auto w = local.send(IBV_WR_RDMA_WRITE, local.bytes.size());
    ASSERT_EQ(a_->post_send(w.remote(where).wr), Status::kOk);
    EXPECT_EQ(verbs::status_of(wait_one(*cq_)), Status::kRemoteAccessError);
    EXPECT_TRUE(target.matches(0x33, target.bytes.size())) << "target memory was modified";
  }
  std::unique_ptr<QueuePair> a_, b_;
};

class RcSendRecv : public Rc, public ::testing::WithParamInterface<std::size_t> {};

TEST_P(RcSendRecv, DeliversContentIntact) {
  connect_pair(*a_, *b_);
  const std::size_t n = GetParam();
  Buffer src(pd_, n), dst(pd_, n);
  src.fill(0x5a);
  auto r = dst.recv(n, 0, 2);
  ASSERT_EQ(b_->post_recv(r.wr), Status::kOk);
  auto s = src.send(IBV_WR_SEND, n, 0, 1);
  ASSERT_EQ(a_->post_send(s.wr), Status::kOk);
  // Both completions land on the shared CQ, in either order.
  bool sent = false, received = false;
  for (int i = 0; i < 2; ++i) {
    verbs::WorkCompletion wc = wait_one(*cq_);
    ASSERT_EQ(verbs::status_of(wc), Status::kOk);
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
  auto r = dst.recv(64);
  ASSERT_EQ(b_->post_recv(r.wr), Status::kOk);
  char msg[64];
  for (int i = 0; i < 64; ++i) msg[i] = static_cast<char>(0x5a + i * 7);
  // lkey 0: inline data is copied at post time and never read through a key. Unsignaled: only
  // the receive completes.
  verbs::SendRequest s(IBV_WR_SEND, msg, sizeof msg, 0, 0, IBV_SEND_INLINE);
  ASSERT_EQ(a.post_send(s.wr), Status::kOk);
  std::memset(msg, 0, sizeof msg);
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
  std::vector<std::unique_ptr<verbs::RecvRequest>> r;
  std::vector<std::unique_ptr<verbs::SendRequest>> s;
  for (int i = 0; i < kN; ++i) {
    auto off = static_cast<std::size_t>(i) * 8;
    r.push_back(
        std::make_unique<verbs::RecvRequest>(dst.bytes.data() + off, 8, dst.mr->lkey(), 100 + i));
    // Selective signaling: only the last send of the batch completes.
    s.push_back(std::make_unique<verbs::SendRequest>(IBV_WR_SEND, src.bytes.data() + off, 8,
                                                     src.mr->lkey(), i,
                                                     i + 1 == kN ? IBV_SEND_SIGNALED : 0));
    if (i > 0) {
      r[i - 1]->wr.next = &r[i]->wr;
      s[i - 1]->wr.next = &s[i]->wr;
    }
  }
  ASSERT_EQ(b_->post_recv(r[0]->wr), Status::kOk);
  ASSERT_EQ(a_->post_send(s[0]->wr), Status::kOk);
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
  auto w = local.send(IBV_WR_RDMA_WRITE, kN, 0, 7);
  ASSERT_EQ(a_->post_send(w.remote(remote.key()).wr), Status::kOk);
  verbs::WorkCompletion wc = wait_one(*cq_);
  ASSERT_EQ(verbs::status_of(wc), Status::kOk);
  EXPECT_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
  EXPECT_TRUE(remote.matches(0x11, kN));

  remote.fill(0x77);
  std::fill(local.bytes.begin(), local.bytes.end(), 0);
  auto rd = local.send(IBV_WR_RDMA_READ, kN, 0, 8);
  ASSERT_EQ(a_->post_send(rd.remote(remote.key()).wr), Status::kOk);
  wc = wait_one(*cq_);
  ASSERT_EQ(verbs::status_of(wc), Status::kOk);
  EXPECT_EQ(wc.opcode, IBV_WC_RDMA_READ);
  EXPECT_TRUE(local.matches(0x77, kN));
}

// The READ depths asked for are what the QP gets, up to the device's limits (initiator and
// responder apart: mlx5 allows 16 of each, rxe more).
TEST_F(Rc, ReadDepthsAreTheAskedOnesClampedToTheDevice) {
  verbs::PathParams p = path();
  p.max_rd_atomic = 16;
  p.max_dest_rd_atomic = 255;
  connect_pair(*a_, *b_, p);
  std::uint8_t init = 0, resp = 0;
  ASSERT_EQ(a_->read_depth(init, resp), Status::kOk);
  const verbs::DeviceLimits& l = ctx_->limits();
  EXPECT_EQ(init, std::min<std::uint32_t>(16, l.max_qp_init_rd_atom));
  EXPECT_EQ(resp, std::min<std::uint32_t>(255, l.max_qp_rd_atom));
  EXPECT_GT(init, 1) << "rxe and mlx5 both allow more than one READ in flight";
}

// The path's traffic class is what the QP's address vector carries, and on InfiniBand its
// service level too (RoCE has no SL field on the wire: rxe keeps none).
TEST_F(Rc, PathServiceLevelAndTrafficClassReachTheQp) {
  verbs::PathParams p = path();
  p.sl = 3;
  p.traffic_class = 106;
  connect_pair(*a_, *b_, p);
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  ASSERT_EQ(ibv_query_qp(a_->native(), &attr, IBV_QP_AV, &init), 0);
  if (ctx_->port(1).link_layer == verbs::LinkLayer::kInfiniBand) {
    EXPECT_EQ(attr.ah_attr.sl, 3);
  }
  EXPECT_EQ(attr.ah_attr.grh.traffic_class, 106);
  Buffer src(pd_, 64), dst(pd_, 64);
  src.fill(0x3c);
  auto r = dst.recv(64, 0, 2);
  ASSERT_EQ(b_->post_recv(r.wr), Status::kOk);
  auto s = src.send(IBV_WR_SEND, 64, 0, 1);
  ASSERT_EQ(a_->post_send(s.wr), Status::kOk);
  for (int i = 0; i < 2; ++i) EXPECT_EQ(verbs::status_of(wait_one(*cq_)), Status::kOk);
  EXPECT_TRUE(dst.matches(0x3c, 64));
}

TEST_F(Rc, PostingOnAQpInResetIsInvalidState) {
  Buffer buf(pd_, 64);
  ASSERT_EQ(a_->state(), verbs::QpState::kReset);
  auto s = buf.send(IBV_WR_SEND, 64);
  EXPECT_EQ(a_->post_send(s.wr), Status::kInvalidState);
  auto r = buf.recv(64);
  EXPECT_EQ(a_->post_recv(r.wr), Status::kInvalidState);
  // Nothing was queued: the CQ stays empty.
  verbs::WorkCompletion wc;
  std::size_t n = 99;
  ASSERT_EQ(cq_->poll({&wc, 1}, n), Status::kOk);
  EXPECT_EQ(n, 0u);
}

TEST_F(Rc, WriteWithAWrongRkeyIsARemoteAccessErrorAndChangesNothing) {
  connect_pair(*a_, *b_);
  Buffer target(pd_, 4096);
  target.fill(0x33);
  verbs::RemoteKey guessed = target.key();
  guessed.rkey ^= 0x5a5a00;
  expect_refused_write(guessed, target);
}

TEST_F(Rc, WritePastTheEndOfARegionIsARemoteAccessErrorAndChangesNothing) {
  connect_pair(*a_, *b_);
  Buffer target(pd_, 4096);
  target.fill(0x33);
  verbs::RemoteKey shifted = target.key();
  shifted.addr += 100;  // the last 100 bytes fall outside the region
  expect_refused_write(shifted, target);
}

TEST_F(Rc, SendWithNoReceivePostedAndRnrRetryZeroFails) {
  verbs::PathParams p = path();
  p.rnr_retry = 0;
  p.min_rnr_timer = 1;
  connect_pair(*a_, *b_, p);
  Buffer src(pd_, 32);
  auto s = src.send(IBV_WR_SEND, 32);
  ASSERT_EQ(a_->post_send(s.wr), Status::kOk);
  EXPECT_EQ(verbs::status_of(wait_one(*cq_)), Status::kRnrRetryExceeded);
}

TEST_F(Rc, MovingToErrorFlushesPostedReceives) {
  connect_pair(*a_, *b_);
  Buffer dst(pd_, 64);
  auto r = dst.recv(64, 0, 42);
  ASSERT_EQ(b_->post_recv(r.wr), Status::kOk);
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
  auto r = dst.recv(kN, 0, 1);
  ASSERT_EQ(b->post_recv(r.wr), Status::kOk);
  auto s = src.send(IBV_WR_SEND, kN, 0, 2);
  ASSERT_EQ(a->post_send(s.wr), Status::kOk);
  for (int i = 0; i < 2; ++i) ASSERT_EQ(verbs::status_of(wait_one(*cq_)), Status::kOk);
  EXPECT_TRUE(dst.matches(0x21, kN));

  auto w = src.send(IBV_WR_RDMA_WRITE, kN, 0, 3);
  ASSERT_EQ(a->post_send(w.remote(target.key()).wr), Status::kOk);
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
