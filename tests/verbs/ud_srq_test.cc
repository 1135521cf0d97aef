// Device: UD sends through an address handle (GRH accounted for), and a shared receive queue
// feeding several RC QPs (the arrival's QP number says which).
#include <gtest/gtest.h>

#include <thread>

#include "unet/verbs/address_handle.h"
#include "verbs_fixture.h"

namespace unet::test {
namespace {

using verbs::QpType;

// Two UD QPs on this device, ready to send, and an address handle from a to b.
class Ud : public VerbsTest {
 protected:
  void SetUp() override {
    VerbsTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    a_ = make_qp(QpType::kUd);
    b_ = make_qp(QpType::kUd);
    verbs::PathParams p = path();
    verbs::ConnectionInfo ia = a_->local_info(p);
    ib_ = b_->local_info(p);
    a_->connect(ia, ib_, p);
    b_->connect(ib_, ia, p);
    verbs::RemotePort rp;
    rp.gid = ib_.gid;
    rp.lid = ib_.lid;
    rp.sgid_index = static_cast<std::uint8_t>(gid_.index);
    ah_ = std::make_unique<verbs::AddressHandle>(pd_, rp);
  }
  std::unique_ptr<verbs::QueuePair> a_, b_;
  verbs::ConnectionInfo ib_;
  std::unique_ptr<verbs::AddressHandle> ah_;
};

TEST_F(Ud, SendThroughAnAddressHandleArrivesAfterTheGrh) {
  ASSERT_EQ(ib_.qkey, verbs::kDefaultQkey);
  constexpr std::size_t kN = 512;
  Buffer src(pd_, kN), dst(pd_, verbs::kGrhBytes + kN);
  src.fill(0x42);
  auto r = dst.recv(verbs::kGrhBytes + kN, 0, 9);
  ASSERT_EQ(b_->post_recv(r.wr), Status::kOk);
  auto w = src.send(IBV_WR_SEND, kN, 0, 8);
  ASSERT_EQ(a_->post_send(w.datagram(ah_->native(), ib_.qpn, ib_.qkey).wr), Status::kOk);

  bool got = false;
  for (int i = 0; i < 2; ++i) {
    verbs::WorkCompletion wc = wait_one(*cq_);
    ASSERT_EQ(verbs::status_of(wc), Status::kOk);
    if (wc.opcode != IBV_WC_RECV) continue;
    got = true;
    EXPECT_EQ(wc.byte_len, verbs::kGrhBytes + kN);  // the GRH counts in byte_len
    EXPECT_EQ(wc.src_qp, a_->qp_num());             // UD tells the sender's QPN
    EXPECT_TRUE(wc.wc_flags & IBV_WC_GRH);
    EXPECT_TRUE(dst.matches(0x42, kN, verbs::kGrhBytes));
  }
  EXPECT_TRUE(got);
}

TEST_F(Ud, AWrongQkeyIsDroppedNotDelivered) {
  Buffer src(pd_, 16), dst(pd_, verbs::kGrhBytes + 16);
  auto r = dst.recv(verbs::kGrhBytes + 16);
  ASSERT_EQ(b_->post_recv(r.wr), Status::kOk);
  auto w = src.send(IBV_WR_SEND, 16);
  ASSERT_EQ(a_->post_send(w.datagram(ah_->native(), ib_.qpn, ib_.qkey + 1).wr), Status::kOk);
  verbs::WorkCompletion wc = wait_one(*cq_);  // the send completes locally (UD is unreliable)
  EXPECT_EQ(wc.opcode, IBV_WC_SEND);
  std::this_thread::sleep_for(200ms);
  std::size_t n = 99;
  ASSERT_EQ(cq_->poll({&wc, 1}, n), Status::kOk);
  EXPECT_EQ(n, 0u) << "a datagram with the wrong Q_Key was delivered";
}

// The noexcept transitions a data path makes: a UD QP sent to ERROR and RESET comes back to RTS
// with restart() and carries a datagram again; an RC QP cannot be restarted without its peer.
TEST_F(Ud, AQpInErrorRestartsAndSendsAgain) {
  ASSERT_EQ(b_->enter_error(), Status::kOk);
  EXPECT_EQ(b_->state(), verbs::QpState::kError);
  ASSERT_EQ(b_->enter_reset(), Status::kOk);
  EXPECT_EQ(b_->state(), verbs::QpState::kReset);
  ASSERT_EQ(b_->restart(7, path()), Status::kOk);
  EXPECT_EQ(b_->state(), verbs::QpState::kRts);
  ASSERT_EQ(a_->enter_error(), Status::kOk);
  ASSERT_EQ(a_->restart(9, path()), Status::kOk) << "restart() from ERROR, through RESET";
  Buffer src(pd_, 32), dst(pd_, verbs::kGrhBytes + 32);
  src.fill(0x5a);
  auto r = dst.recv(verbs::kGrhBytes + 32, 0, 3);
  ASSERT_EQ(b_->post_recv(r.wr), Status::kOk);
  auto w = src.send(IBV_WR_SEND, 32, 0, 4);
  ASSERT_EQ(a_->post_send(w.datagram(ah_->native(), ib_.qpn, ib_.qkey).wr), Status::kOk);
  bool got = false;
  for (int i = 0; i < 2; ++i) {
    verbs::WorkCompletion wc = wait_one(*cq_);
    ASSERT_EQ(verbs::status_of(wc), Status::kOk);
    if (wc.opcode == IBV_WC_RECV) got = dst.matches(0x5a, 32, verbs::kGrhBytes);
  }
  EXPECT_TRUE(got) << "no datagram through the restarted QPs";
  auto rc = make_qp(QpType::kRc);
  EXPECT_EQ(rc->restart(1, path()), Status::kInvalidState);
  EXPECT_EQ(rc->state(), verbs::QpState::kReset) << "a refused restart moved the QP";
}

class Srq : public VerbsTest {};

TEST_F(Srq, OneReceivePoolServesSeveralQps) {
  auto srq = std::make_shared<verbs::SharedReceiveQueue>(pd_, 64);
  EXPECT_GE(srq->max_wr(), 64u);
  auto recv_cq = std::make_shared<verbs::CompletionQueue>(ctx_, 64);
  auto x = make_qp(QpType::kRc, recv_cq, srq), y = make_qp(QpType::kRc, recv_cq, srq);
  auto px = make_qp(QpType::kRc), py = make_qp(QpType::kRc);
  connect_pair(*x, *px);
  connect_pair(*y, *py);

  constexpr int kBufs = 8;
  constexpr std::size_t kN = 256;
  Buffer pool(pd_, kBufs * kN);
  std::vector<std::unique_ptr<verbs::RecvRequest>> r;
  for (int i = 0; i < kBufs; ++i) {
    r.push_back(
        std::make_unique<verbs::RecvRequest>(pool.bytes.data() + i * kN, kN, pool.mr->lkey(), i));
    if (i > 0) r[i - 1]->wr.next = &r[i]->wr;
  }
  ASSERT_EQ(srq->post_recv(r[0]->wr), Status::kOk);
  // Receives go to the SRQ, not the QP.
  EXPECT_EQ(x->post_recv(r[0]->wr), Status::kInvalidState);

  Buffer src(pd_, kN);
  src.fill(3);
  auto send = [&](verbs::QueuePair& qp, std::uint64_t id) {
    auto w = src.send(IBV_WR_SEND, kN, 0, id);
    return qp.post_send(w.wr);
  };
  ASSERT_EQ(send(*px, 1), Status::kOk);
  ASSERT_EQ(send(*py, 2), Status::kOk);
  ASSERT_EQ(send(*px, 3), Status::kOk);
  int from_x = 0, from_y = 0;
  for (int i = 0; i < 3; ++i) {
    verbs::WorkCompletion wc = wait_one(*recv_cq);
    ASSERT_EQ(verbs::status_of(wc), Status::kOk);
    ASSERT_LT(wc.wr_id, static_cast<std::uint64_t>(kBufs));
    EXPECT_TRUE(pool.matches(3, kN, wc.wr_id * kN));
    if (wc.qp_num == x->qp_num())
      ++from_x;
    else if (wc.qp_num == y->qp_num())
      ++from_y;
    else
      ADD_FAILURE() << "arrival on unknown QP " << wc.qp_num;
  }
  EXPECT_EQ(from_x, 2);
  EXPECT_EQ(from_y, 1);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(verbs::status_of(wait_one(*cq_)), Status::kOk);  // sends
}

}  // namespace
}  // namespace unet::test
