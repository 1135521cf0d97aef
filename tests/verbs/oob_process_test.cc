// Device: two processes connect RC QPs through the out-of-band TCP exchange; the client RDMA
// WRITEs into the window the server advertised, then ping-pongs messages checked on both sides.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "unet/verbs/oob.h"
#include "verbs_fixture.h"

extern char** environ;

namespace unet::test {
namespace {

class OobProcess : public VerbsTest {};

// Starts the peer with its stdout on a pipe; returns its pid and the pipe's read end.
pid_t spawn_peer(const std::vector<std::string>& args, int& out_fd) {
  int p[2];
  if (pipe(p) != 0) return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&fa, p[0]);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&fa);
  close(p[1]);
  out_fd = p[0];
  return pid;
}

// Reads the "port N" line the peer prints once it listens (10 s at most).
int read_port(int fd) {
  std::string line;
  char c;
  while (line.size() < 64) {
    pollfd pf{fd, POLLIN, 0};
    if (poll(&pf, 1, 10000) <= 0 || read(fd, &c, 1) != 1) return -1;
    if (c == '\n') break;
    line += c;
  }
  return line.rfind("port ", 0) == 0 ? std::atoi(line.c_str() + 5) : -1;
}

// Waits for the child up to `timeout`, killing it if it overstays. Its exit status, or -1.
int reap(pid_t pid, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  int st = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid, &st, WNOHANG) == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    std::this_thread::sleep_for(10ms);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &st, 0);
  return -1;
}

TEST_F(OobProcess, TwoProcessesConnectAndExchangeCheckedMessages) {
  constexpr std::size_t kSize = 4096;
  constexpr int kCount = 20;
  int out = -1;
  pid_t pid = spawn_peer({UNET_OOB_PEER_PATH, device_name(), "0", std::to_string(kSize),
                          std::to_string(kCount)},
                         out);
  ASSERT_GT(pid, 0) << "could not start " << UNET_OOB_PEER_PATH;
  int port = read_port(out);
  close(out);
  if (port <= 0) {
    reap(pid, 1s);
    FAIL() << "peer did not report its port";
  }

  auto qp = make_qp(verbs::QpType::kRc);
  verbs::PathParams p = path();
  verbs::ConnectionInfo local = qp->local_info(p);
  verbs::OobSocket sock = verbs::OobSocket::connect("127.0.0.1", static_cast<std::uint16_t>(port), 10s);
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
  EXPECT_EQ(reap(pid, 20s), 0) << "the peer process reported a failure";
}

}  // namespace
}  // namespace unet::test
