// Device: rdma_cm listen/connect/accept/disconnect between two threads, and flush on disconnect.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <future>
#include <string>

#include "kernel_files.h"
#include "unet/verbs/connection_manager.h"
#include "unet/verbs/error.h"
#include "verbs_fixture.h"

namespace unet::test {
namespace {

class Cm : public VerbsTest {
 protected:
  void SetUp() override {
    VerbsTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    UNET_REQUIRE_CM_ADDRESS();  // rdma_cm needs an IP address on the device's netdev
    config_.send_cq = cq_;
    server_cq_ = std::make_shared<verbs::CompletionQueue>(ctx_, 64);
    server_config_.send_cq = server_cq_;
  }
  verbs::QpConfig config_, server_config_;
  std::shared_ptr<verbs::CompletionQueue> server_cq_;
};

TEST_F(Cm, ConnectAcceptExchangeAndDisconnect) {
  verbs::CmListener listener(cm_address(), 0);
  ASSERT_NE(listener.port(), 0);
  Buffer sbuf(pd_, 128), cbuf(pd_, 128);
  auto server = std::async(std::launch::async, [&] {
    auto conn = listener.accept(pd_, server_config_);
    // Receive one message, answer it, then wait for the client to hang up.
    auto r = sbuf.recv(128);
    EXPECT_EQ(conn->qp().post_recv(r.wr), Status::kOk);
    return conn;
  });
  auto client = verbs::cm_connect(cm_address(), listener.port(), pd_, config_);
  auto sconn = server.get();
  ASSERT_TRUE(client->connected());
  ASSERT_TRUE(sconn->connected());
  EXPECT_EQ(client->qp().state(), verbs::QpState::kRts);

  cbuf.fill(0x61);
  auto s = cbuf.send(IBV_WR_SEND, 128);
  ASSERT_EQ(client->qp().post_send(s.wr), Status::kOk);
  EXPECT_EQ(verbs::status_of(wait_one(*cq_)), Status::kOk);
  verbs::WorkCompletion wc = wait_one(*server_cq_);
  ASSERT_EQ(verbs::status_of(wc), Status::kOk);
  EXPECT_EQ(wc.byte_len, 128u);
  EXPECT_TRUE(sbuf.matches(0x61, 128));

  // Flush on disconnect: a receive still posted on the server completes with kFlushed.
  auto r = sbuf.recv(128, 0, 77);
  ASSERT_EQ(sconn->qp().post_recv(r.wr), Status::kOk);
  // The initiator's DISCONNECTED follows the peer's reply, so the peer waits concurrently.
  auto peer = std::async(std::launch::async, [&] { return sconn->wait_disconnected(10s); });
  client->disconnect(10s);
  EXPECT_FALSE(client->connected());
  EXPECT_EQ(peer.get(), Status::kOk);
  EXPECT_FALSE(sconn->connected());
  wc = wait_one(*server_cq_);
  EXPECT_EQ(wc.wr_id, 77u);
  EXPECT_EQ(verbs::status_of(wc), Status::kFlushed);
}

// READ depths over rdma_cm: the accepting end settles both directions within what each end asked
// and its device allows; the connecting end gets the mirror image.
TEST_F(Cm, ReadDepthsAreNegotiatedWithinTheDeviceAndThePeer) {
  verbs::CmListener listener(cm_address(), 0);
  verbs::CmParams server_p;
  server_p.responder_resources = 255;
  server_p.initiator_depth = 255;
  verbs::CmParams client_p;
  client_p.responder_resources = 2;  // the client takes 2 (a power of two: rxe rounds up)
  client_p.initiator_depth = 16;
  auto server = std::async(std::launch::async,
                           [&] { return listener.accept(pd_, server_config_, server_p); });
  auto client = verbs::cm_connect(cm_address(), listener.port(), pd_, config_, client_p);
  auto sconn = server.get();
  const verbs::DeviceLimits& l = ctx_->limits();
  std::uint8_t c_init = 0, c_resp = 0, s_init = 0, s_resp = 0;
  ASSERT_EQ(client->qp().read_depth(c_init, c_resp), Status::kOk);
  ASSERT_EQ(sconn->qp().read_depth(s_init, s_resp), Status::kOk);
  EXPECT_EQ(c_init, std::min<std::uint32_t>(16, l.max_qp_init_rd_atom));
  EXPECT_EQ(s_resp, c_init) << "what the client issues, the server takes";
  EXPECT_EQ(s_init, 2) << "the server issues more READs than the client takes";
  EXPECT_EQ(c_resp, 2);
  auto peer = std::async(std::launch::async, [&] { return sconn->wait_disconnected(10s); });
  client->disconnect(10s);
  EXPECT_EQ(peer.get(), Status::kOk);
}

// A type of service given to the connecting end becomes its path's traffic class (RoCE).
TEST_F(Cm, TypeOfServiceBecomesThePathsTrafficClass) {
  verbs::CmListener listener(cm_address(), 0);
  verbs::CmParams p;
  p.tos = 106;
  auto server =
      std::async(std::launch::async, [&] { return listener.accept(pd_, server_config_); });
  auto client = verbs::cm_connect(cm_address(), listener.port(), pd_, config_, p);
  auto sconn = server.get();
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  ASSERT_EQ(ibv_query_qp(client->qp().native(), &attr, IBV_QP_AV, &init), 0);
  if (ctx_->port(1).link_layer == verbs::LinkLayer::kEthernet) {
    EXPECT_EQ(attr.ah_attr.grh.traffic_class, 106);
  }
  auto peer = std::async(std::launch::async, [&] { return sconn->wait_disconnected(10s); });
  client->disconnect(10s);
  EXPECT_EQ(peer.get(), Status::kOk);
}

// rdma_cm over IPv6: the device netdev's link-local address (with its scope), where the device
// has a GID for it (rxe and RoCE NICs do: index 0).
TEST_F(Cm, ConnectsOverIpv6) {
  const std::string ndev =
      read_first_line("/sys/class/infiniband/" + ctx_->name() + "/ports/1/gid_attrs/ndevs/0");
  ASSERT_FALSE(ndev.empty());
  std::string a6;
  if (FILE* f =
          popen(("ip -6 -o addr show dev " + ndev + " scope link | awk '{print $4}' | cut -d/ -f1")
                    .c_str(),
                "r")) {
    char buf[128] = {};
    if (std::fgets(buf, sizeof buf, f)) a6 = buf;
    pclose(f);
  }
  while (!a6.empty() && (a6.back() == '\n' || a6.back() == ' ')) a6.pop_back();
  ASSERT_FALSE(a6.empty()) << "no IPv6 link-local address on " << ndev;
  const std::string host = a6 + "%" + ndev;
  verbs::CmListener listener(host, 0);
  ASSERT_NE(listener.port(), 0);
  auto server =
      std::async(std::launch::async, [&] { return listener.accept(pd_, server_config_); });
  auto client = verbs::cm_connect(host, listener.port(), pd_, config_);
  auto sconn = server.get();
  ASSERT_TRUE(client->connected());
  Buffer sbuf(pd_, 64), cbuf(pd_, 64);
  auto r = sbuf.recv(64);
  ASSERT_EQ(sconn->qp().post_recv(r.wr), Status::kOk);
  cbuf.fill(0x6a);
  auto s = cbuf.send(IBV_WR_SEND, 64);
  ASSERT_EQ(client->qp().post_send(s.wr), Status::kOk);
  EXPECT_EQ(verbs::status_of(wait_one(*cq_)), Status::kOk);
  EXPECT_EQ(verbs::status_of(wait_one(*server_cq_)), Status::kOk);
  EXPECT_TRUE(sbuf.matches(0x6a, 64));
  auto peer = std::async(std::launch::async, [&] { return sconn->wait_disconnected(10s); });
  client->disconnect(10s);
  EXPECT_EQ(peer.get(), Status::kOk);
}

TEST_F(Cm, ConnectToNoListenerFailsWithinTheTimeout) {
  std::uint16_t port;
  {
    verbs::CmListener probe(cm_address(), 0);
    port = probe.port();
  }
  auto t0 = std::chrono::steady_clock::now();
  verbs::CmParams p;
  p.timeout = 2s;
  EXPECT_THROW((void)verbs::cm_connect(cm_address(), port, pd_, config_, p), verbs::Error);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 8s);
}

TEST_F(Cm, AcceptTimesOut) {
  verbs::CmListener listener(cm_address(), 0);
  verbs::CmParams p;
  p.timeout = 200ms;
  try {
    (void)listener.accept(pd_, server_config_, p);
    FAIL() << "accepted nothing";
  } catch (const verbs::Error& e) {
    EXPECT_EQ(e.error_number(), ETIMEDOUT) << e.what();
  }
}

}  // namespace
}  // namespace unet::test
