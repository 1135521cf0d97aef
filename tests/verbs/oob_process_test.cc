// Device: two processes connect RC QPs through the out-of-band TCP exchange; the client RDMA
// WRITEs into the window the server advertised, then ping-pongs messages checked on both sides.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "child_process.h"
#include "unet/verbs/oob.h"
#include "verbs_fixture.h"

namespace unet::test {
namespace {

class OobProcess : public VerbsTest {};

TEST_F(OobProcess, TwoProcessesConnectAndExchangeCheckedMessages) {
  constexpr std::size_t kSize = 4096;
  constexpr int kCount = 20;
  ChildProcess peer(
      {UNET_OOB_PEER_PATH, device_name(), "0", std::to_string(kSize), std::to_string(kCount)});
  const std::optional<std::string> line = peer.read_line(10s);  // "port N" once it listens
  ASSERT_TRUE(line && line->rfind("port ", 0) == 0) << "peer did not report its port";
  const int port = std::atoi(line->c_str() + 5);
  ASSERT_GT(port, 0) << *line;

  auto qp = make_qp(verbs::QpType::kRc);
  verbs::PathParams p = path();
  verbs::ConnectionInfo local = qp->local_info(p);
  verbs::OobSocket sock =
      verbs::OobSocket::connect("127.0.0.1", static_cast<std::uint16_t>(port), 10s);
  verbs::ConnectionInfo remote = verbs::exchange_as_client(sock, local, 10s);
  EXPECT_EQ(remote.memory.length, kSize);
  qp->connect(local, remote, p);

  Buffer wbuf(pd_, kSize), msg(pd_, kSize), echo(pd_, kSize);
  wbuf.fill(0xa0);
  auto w = wbuf.send(IBV_WR_RDMA_WRITE, kSize, 0, 0, 0);  // unsignaled, ordered before SEND #0
  ASSERT_EQ(qp->post_send(w.remote(remote.memory).wr), Status::kOk);

  for (int i = 0; i < kCount; ++i) {
    auto r = echo.recv(kSize);
    ASSERT_EQ(qp->post_recv(r.wr), Status::kOk);
    char ready;
    sock.recv_exact({&ready, 1}, 10s);  // the peer has posted its receive
    msg.fill(static_cast<std::uint8_t>(i));
    auto s = msg.send(IBV_WR_SEND, kSize);
    ASSERT_EQ(qp->post_send(s.wr), Status::kOk);
    for (int k = 0; k < 2; ++k) ASSERT_EQ(verbs::status_of(wait_one(*cq_)), Status::kOk);
    ASSERT_TRUE(echo.matches(static_cast<std::uint8_t>(i), kSize)) << "echo " << i << " corrupted";
  }
  const std::optional<int> st = peer.wait(20s);
  ASSERT_TRUE(st.has_value()) << "the peer process did not end";
  EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 0) << "the peer process reported a failure";
}

}  // namespace
}  // namespace unet::test
