// Fault: RC between two rxe devices across a real veth pair with netem loss and duplication
// (ci/rxe-vm --two-dev). The transport must deliver every message once, in order and intact, and
// the qdisc must really have dropped packets (else the test proved nothing).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

#include "netem.h"
#include "unet/verbs/completion_queue.h"
#include "unet/verbs/gid.h"
#include "unet/verbs/memory_region.h"
#include "unet/verbs/queue_pair.h"
#include "unet/verbs/work_request.h"

namespace unet::test {
namespace {

using namespace std::chrono_literals;

struct Side {
  std::shared_ptr<verbs::Context> ctx;
  std::shared_ptr<verbs::ProtectionDomain> pd;
  std::shared_ptr<verbs::CompletionQueue> cq;
  std::unique_ptr<verbs::QueuePair> qp;
  verbs::PathParams path;
};

class LossyLink : public ::testing::Test {
 protected:
  void SetUp() override {
    UNET_REQUIRE_TWO_DEVICES();
    for (auto [side, dev] : {std::pair{&a_, "rxe0"}, std::pair{&b_, "rxe1"}}) {
      side->ctx = verbs::Context::open(dev);
      side->pd = std::make_shared<verbs::ProtectionDomain>(side->ctx);
      side->cq = std::make_shared<verbs::CompletionQueue>(side->ctx, 256);
      verbs::QpConfig c;
      c.send_cq = side->cq;
      c.max_send_wr = c.max_recv_wr = 128;
      side->qp = std::make_unique<verbs::QueuePair>(side->pd, c);
      side->path.sgid_index = static_cast<std::uint8_t>(verbs::select_gid(*side->ctx, 1).index);
      side->path.timeout = 10;  // ~4 ms: losses at the tail of a burst wait for this timer
      side->path.retry_cnt = 7;
    }
    verbs::ConnectionInfo ia = a_.qp->local_info(a_.path), ib = b_.qp->local_info(b_.path);
    ASSERT_NE(ia.gid, ib.gid) << "both devices have the same GID: traffic would not cross the veth";
    a_.qp->connect(ia, ib, a_.path);
    b_.qp->connect(ib, ia, b_.path);
    ASSERT_EQ(run("tc qdisc replace dev veth0 root netem loss 5% duplicate 2% && echo ok"), "ok\n");
  }
  void TearDown() override {
    if (std::getenv("UNET_RXE_MODE")) (void)run("tc qdisc del dev veth0 root");
  }
  Side a_, b_;  // a_ receives on rxe0, b_ sends from rxe1
};

TEST_F(LossyLink, RcDeliversEveryMessageOnceInOrderIntact) {
  constexpr std::uint32_t kMessages = 600, kSize = 2048, kSlots = 64, kWindow = 32;
  std::vector<std::uint8_t> rx(kSlots * kSize), tx(kWindow * kSize);
  verbs::MemoryRegion rx_mr(a_.pd, rx.data(), rx.size(), verbs::kDefaultAccess);
  verbs::MemoryRegion tx_mr(b_.pd, tx.data(), tx.size(), verbs::kDefaultAccess);
  auto post_rx = [&](std::uint32_t slot) {
    verbs::RecvRequest r(&rx[slot * kSize], kSize, rx_mr.lkey(), slot);
    return a_.qp->post_recv(r.wr);
  };
  for (std::uint32_t i = 0; i < kSlots; ++i) ASSERT_EQ(post_rx(i), Status::kOk);
  long drops_before = dropped("veth0");

  std::uint32_t sent = 0, acked = 0, received = 0;
  auto deadline = std::chrono::steady_clock::now() + 90s;
  verbs::WorkCompletion wc[16];
  while (received < kMessages && std::chrono::steady_clock::now() < deadline) {
    while (sent < kMessages && sent - acked < kWindow) {
      std::uint8_t* m = &tx[(sent % kWindow) * kSize];
      std::memcpy(m, &sent, sizeof sent);  // sequence number, then a pattern seeded by it
      for (std::uint32_t k = sizeof sent; k < kSize; ++k)
        m[k] = static_cast<std::uint8_t>(sent * 31 + k);
      verbs::SendRequest w(IBV_WR_SEND, m, kSize, tx_mr.lkey(), sent);
      ASSERT_EQ(b_.qp->post_send(w.wr), Status::kOk);
      ++sent;
    }
    std::size_t n = 0;
    ASSERT_EQ(b_.cq->poll(wc, n), Status::kOk);
    for (std::size_t k = 0; k < n; ++k) {
      ASSERT_EQ(verbs::status_of(wc[k]), Status::kOk) << "send " << wc[k].wr_id;
      ASSERT_EQ(wc[k].wr_id, acked) << "send completions out of order";
      ++acked;
    }
    ASSERT_EQ(a_.cq->poll(wc, n), Status::kOk);
    for (std::size_t k = 0; k < n; ++k) {
      ASSERT_EQ(verbs::status_of(wc[k]), Status::kOk);
      ASSERT_EQ(wc[k].byte_len, kSize);
      const std::uint8_t* m = &rx[wc[k].wr_id * kSize];
      std::uint32_t seq;
      std::memcpy(&seq, m, sizeof seq);
      ASSERT_EQ(seq, received) << "message lost, duplicated or reordered";
      for (std::uint32_t b = sizeof seq; b < kSize; ++b)
        ASSERT_EQ(m[b], static_cast<std::uint8_t>(seq * 31 + b))
            << "message " << seq << " corrupted at " << b;
      ++received;
      ASSERT_EQ(post_rx(static_cast<std::uint32_t>(wc[k].wr_id)), Status::kOk);
    }
  }
  EXPECT_EQ(received, kMessages);
  // Let the last send completions arrive.
  while (acked < sent && std::chrono::steady_clock::now() < deadline) {
    std::size_t n = 0;
    ASSERT_EQ(b_.cq->poll(wc, n), Status::kOk);
    for (std::size_t k = 0; k < n; ++k) {
      ASSERT_EQ(verbs::status_of(wc[k]), Status::kOk);
      ++acked;
    }
  }
  EXPECT_EQ(acked, kMessages);
  long drops = dropped("veth0") - drops_before;
  EXPECT_GT(drops, 0) << "netem dropped nothing: the traffic did not cross veth0";
  std::printf("lossy link: %u messages of %u B delivered in order; netem dropped %ld packets\n",
              received, kSize, drops);
}

}  // namespace
}  // namespace unet::test
