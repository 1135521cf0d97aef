// Device: UD sends through an address handle (GRH accounted for), and a shared receive queue
// feeding several RC QPs (the arrival's QP number says which).
#include <gtest/gtest.h>

#include <thread>

#include "unet/verbs/address_handle.h"
#include "verbs_fixture.h"

namespace unet::test {
namespace {

using verbs::QpType;

class Ud : public VerbsTest {};

TEST_F(Ud, SendThroughAnAddressHandleArrivesAfterTheGrh) {
  auto a = make_qp(QpType::kUd), b = make_qp(QpType::kUd);
  verbs::PathParams p = path();
  verbs::ConnectionInfo ia = a->local_info(p), ib = b->local_info(p);
  a->connect(ia, ib, p);
  b->connect(ib, ia, p);
  ASSERT_EQ(ib.qkey, verbs::kDefaultQkey);

  constexpr std::size_t kN = 512;
  Buffer src(pd_, kN), dst(pd_, verbs::kGrhBytes + kN);
  src.fill(0x42);
  ibv_sge rs = dst.sge(verbs::kGrhBytes + kN);
  ibv_recv_wr r{};
  r.wr_id = 9;
  r.sg_list = &rs;
  r.num_sge = 1;
  ASSERT_EQ(b->post_recv(r), Status::kOk);

  verbs::RemotePort rp;
  rp.gid = ib.gid;
  rp.lid = ib.lid;
  rp.sgid_index = static_cast<std::uint8_t>(gid_.index);
  verbs::AddressHandle ah(pd_, rp);
  ibv_sge ss = src.sge(kN);
  ibv_send_wr w{};
  w.wr_id = 8;
  w.sg_list = &ss;
  w.num_sge = 1;
  w.opcode = IBV_WR_SEND;
  w.send_flags = IBV_SEND_SIGNALED;
  w.wr.ud.ah = ah.native();
  w.wr.ud.remote_qpn = ib.qpn;
  w.wr.ud.remote_qkey = ib.qkey;
  ASSERT_EQ(a->post_send(w), Status::kOk);

  bool got = false;
  for (int i = 0; i < 2; ++i) {
    verbs::WorkCompletion wc = wait_one(*cq_);
    ASSERT_EQ(verbs::status_of(wc), Status::kOk);
    if (wc.opcode != IBV_WC_RECV) continue;
    got = true;
    EXPECT_EQ(wc.byte_len, verbs::kGrhBytes + kN);  // the GRH counts in byte_len
    EXPECT_EQ(wc.src_qp, a->qp_num());               // UD tells the sender's QPN
    EXPECT_TRUE(wc.wc_flags & IBV_WC_GRH);
    EXPECT_TRUE(dst.matches(0x42, kN, verbs::kGrhBytes));
  }
  EXPECT_TRUE(got);
}

TEST_F(Ud, AWrongQkeyIsDroppedNotDelivered) {
  auto a = make_qp(QpType::kUd), b = make_qp(QpType::kUd);
  verbs::PathParams p = path();
  verbs::ConnectionInfo ia = a->local_info(p), ib = b->local_info(p);
  a->connect(ia, ib, p);
  b->connect(ib, ia, p);
  Buffer src(pd_, 16), dst(pd_, verbs::kGrhBytes + 16);
  ibv_sge rs = dst.sge(verbs::kGrhBytes + 16);
  ibv_recv_wr r{};
  r.sg_list = &rs;
  r.num_sge = 1;
  ASSERT_EQ(b->post_recv(r), Status::kOk);
  verbs::RemotePort rp;
  rp.gid = ib.gid;
  rp.sgid_index = static_cast<std::uint8_t>(gid_.index);
  verbs::AddressHandle ah(pd_, rp);
  ibv_sge ss = src.sge(16);
  ibv_send_wr w{};
  w.sg_list = &ss;
  w.num_sge = 1;
  w.opcode = IBV_WR_SEND;
  w.send_flags = IBV_SEND_SIGNALED;
  w.wr.ud.ah = ah.native();
  w.wr.ud.remote_qpn = ib.qpn;
  w.wr.ud.remote_qkey = ib.qkey + 1;
  ASSERT_EQ(a->post_send(w), Status::kOk);
  verbs::WorkCompletion wc = wait_one(*cq_);  // the send completes locally (UD is unreliable)
  EXPECT_EQ(wc.opcode, IBV_WC_SEND);
  std::this_thread::sleep_for(200ms);
  std::size_t n = 99;
  ASSERT_EQ(cq_->poll({&wc, 1}, n), Status::kOk);
  EXPECT_EQ(n, 0u) << "a datagram with the wrong Q_Key was delivered";
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
  ibv_sge rs[kBufs];
  ibv_recv_wr r[kBufs]{};
  for (int i = 0; i < kBufs; ++i) {
    rs[i] = pool.sge(kN, static_cast<std::size_t>(i) * kN);
    r[i] = {static_cast<std::uint64_t>(i), i + 1 < kBufs ? &r[i + 1] : nullptr, &rs[i], 1};
  }
  ASSERT_EQ(srq->post_recv(r[0]), Status::kOk);
  // Receives go to the SRQ, not the QP.
  EXPECT_EQ(x->post_recv(r[0]), Status::kInvalidState);

  Buffer src(pd_, kN);
  src.fill(3);
  auto send = [&](verbs::QueuePair& qp, std::uint64_t id) {
    ibv_sge s = src.sge(kN);
    ibv_send_wr w{};
    w.wr_id = id;
    w.sg_list = &s;
    w.num_sge = 1;
    w.opcode = IBV_WR_SEND;
    w.send_flags = IBV_SEND_SIGNALED;
    return qp.post_send(w);
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
    if (wc.qp_num == x->qp_num()) ++from_x;
    else if (wc.qp_num == y->qp_num()) ++from_y;
    else ADD_FAILURE() << "arrival on unknown QP " << wc.qp_num;
  }
  EXPECT_EQ(from_x, 2);
  EXPECT_EQ(from_y, 1);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(verbs::status_of(wait_one(*cq_)), Status::kOk);  // sends
}

}  // namespace
}  // namespace unet::test
