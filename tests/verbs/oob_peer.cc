// verbs_oob_peer: the server half of the two-process out-of-band test (oob_process_test.cc).
//
// Listens on 127.0.0.1 (port from argv, 0 = any; it prints "port N" once listening), swaps
// ConnectionInfo with the client, connects an RC QP and exposes a buffer for RDMA WRITE. Then it
// receives `count` messages of `size` bytes, checks each (pattern seeded by its index; message 0
// also checks the client's RDMA WRITE landed first) and echoes it back. Exit 0 only if all checked.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "unet/verbs/completion_queue.h"
#include "unet/verbs/error.h"
#include "unet/verbs/gid.h"
#include "unet/verbs/oob.h"
#include "unet/verbs/queue_pair.h"
#include "unet/verbs/work_request.h"

using namespace unet;
using namespace unet::verbs;
using namespace std::chrono_literals;

namespace {

bool matches(const std::uint8_t* p, std::size_t n, std::uint8_t seed) {
  for (std::size_t i = 0; i < n; ++i)
    if (p[i] != static_cast<std::uint8_t>(seed + i * 7)) return false;
  return true;
}

bool wait_one(CompletionQueue& cq, WorkCompletion& wc) {
  auto deadline = std::chrono::steady_clock::now() + 20s;
  std::size_t n = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (cq.poll({&wc, 1}, n) != Status::kOk) return false;
    if (n) return status_of(wc) == Status::kOk;
  }
  std::fprintf(stderr, "peer: no completion within 20 s\n");
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s DEVICE|'' PORT SIZE COUNT\n", argv[0]);
    return 2;
  }
  std::string device = argv[1];
  auto port = static_cast<std::uint16_t>(std::atoi(argv[2]));
  auto size = static_cast<std::size_t>(std::atol(argv[3]));
  int count = std::atoi(argv[4]);
  try {
    auto ctx = Context::open(device);
    auto pd = std::make_shared<ProtectionDomain>(ctx);
    auto cq = std::make_shared<CompletionQueue>(ctx, 64);
    QpConfig c;
    c.send_cq = cq;
    QueuePair qp(pd, c);
    std::vector<std::uint8_t> msg(size), window(size);
    MemoryRegion msg_mr(pd, msg.data(), size, kDefaultAccess);
    MemoryRegion win_mr(pd, window.data(), size, kDefaultAccess);

    PathParams path;
    const char* gi = std::getenv("UNET_GID_INDEX");
    path.sgid_index = static_cast<std::uint8_t>(
        select_gid(*ctx, 1, gi && *gi ? std::optional<std::uint32_t>(std::atoi(gi)) : std::nullopt)
            .index);
    ConnectionInfo local = qp.local_info(path);
    local.memory = win_mr.remote_key();

    OobListener listener("127.0.0.1", port);
    std::printf("port %u\n", listener.port());
    std::fflush(stdout);
    OobSocket sock = listener.accept(20s);
    ConnectionInfo remote = exchange_as_server(sock, local, 10s);
    qp.connect(local, remote, path);

    const auto len = static_cast<std::uint32_t>(size);
    RecvRequest r(msg.data(), len, msg_mr.lkey());
    SendRequest echo(IBV_WR_SEND, msg.data(), len, msg_mr.lkey());
    for (int i = 0; i < count; ++i) {
      if (qp.post_recv(r.wr) != Status::kOk) return 3;
      // Tell the client the receive is posted, so it never meets an RNR.
      sock.send_all("R", 10s);
      WorkCompletion wc;
      if (!wait_one(*cq, wc) || wc.opcode != IBV_WC_RECV || wc.byte_len != size) {
        std::fprintf(stderr, "peer: receive %d failed\n", i);
        return 4;
      }
      if (!matches(msg.data(), size, static_cast<std::uint8_t>(i))) {
        std::fprintf(stderr, "peer: message %d corrupted\n", i);
        return 5;
      }
      if (i == 0 && !matches(window.data(), size, 0xa0)) {
        std::fprintf(stderr, "peer: the RDMA WRITE did not land before message 0\n");
        return 6;
      }
      if (qp.post_send(echo.wr) != Status::kOk || !wait_one(*cq, wc)) {
        std::fprintf(stderr, "peer: echo %d failed\n", i);
        return 7;
      }
    }
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "peer: %s\n", e.what());
    return 1;
  }
}
