// verbs_pingpong: RC SEND/RECV ping-pong latency over unet's verbs layer, measured the way
// perftest's ib_send_lat measures it (half round trip, server = the side without a host), so that
// the two can be run side by side on one device. The main job (ci/main.sh) does exactly that.
//
//   server:  verbs_pingpong -d rxe0 -s 8
//   client:  verbs_pingpong -d rxe0 -s 8 127.0.0.1
#include <gflags/gflags.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "latency_stats.h"
#include "unet/verbs/completion_queue.h"
#include "unet/verbs/error.h"
#include "unet/verbs/oob.h"
#include "unet/verbs/queue_pair.h"

DEFINE_string(d, "", "RDMA device (default: the first)");
DEFINE_int32(i, 1, "device port");
DEFINE_int32(x, -1, "GID index (default: chosen like perftest)");
DEFINE_int32(p, 18515, "TCP port of the out-of-band exchange");
DEFINE_uint64(s, 2, "message size in bytes");
DEFINE_uint64(n, 1000, "timed iterations");
DEFINE_uint64(warmup, 100, "untimed iterations before the timed ones");
DEFINE_int32(I, -1, "inline threshold in bytes (default: the device's maximum)");
DEFINE_int32(timeout_ms, 20000, "limit for connecting and for each completion");

using namespace unet;
using namespace unet::verbs;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kRxDepth = 64;

struct Connection {
  std::shared_ptr<Context> ctx;
  std::shared_ptr<ProtectionDomain> pd;
  std::shared_ptr<CompletionQueue> cq;
  std::unique_ptr<QueuePair> qp;
  std::vector<std::uint8_t> buf;  // [0, size) send, [size, 2 size) receive
  std::unique_ptr<MemoryRegion> mr;
  std::optional<OobSocket> sock;  // kept for the closing handshake
};

[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "verbs_pingpong: %s\n", msg.c_str());
  std::exit(1);
}

Connection setup(const std::string& host) {
  Connection c;
  c.ctx = Context::open(FLAGS_d);
  c.pd = std::make_shared<ProtectionDomain>(c.ctx);
  c.cq = std::make_shared<CompletionQueue>(c.ctx, 2 * kRxDepth + 16);
  std::size_t size = FLAGS_s;
  c.buf.assign(2 * size, 0);
  c.mr = std::make_unique<MemoryRegion>(c.pd, c.buf.data(), c.buf.size(), kDefaultAccess);
  QpConfig qc;
  qc.send_cq = c.cq;
  qc.max_send_wr = kRxDepth;
  qc.max_recv_wr = kRxDepth;
  std::uint32_t inline_max = c.ctx->max_inline_data(IBV_QPT_RC);
  qc.max_inline_data = FLAGS_I < 0 ? inline_max : static_cast<std::uint32_t>(FLAGS_I);
  c.qp = std::make_unique<QueuePair>(c.pd, qc);

  PathParams path;
  path.port = static_cast<std::uint8_t>(FLAGS_i);
  auto gid = select_gid(*c.ctx, path.port,
                        FLAGS_x >= 0 ? std::optional<std::uint32_t>(FLAGS_x) : std::nullopt);
  path.sgid_index = static_cast<std::uint8_t>(gid.index);
  ConnectionInfo local = c.qp->local_info(path), remote;
  auto timeout = std::chrono::milliseconds(FLAGS_timeout_ms);
  if (host.empty()) {
    OobListener l("", static_cast<std::uint16_t>(FLAGS_p));
    c.sock.emplace(l.accept(timeout));
    remote = exchange_as_server(*c.sock, local, timeout);
  } else {
    c.sock.emplace(OobSocket::connect(host, static_cast<std::uint16_t>(FLAGS_p), timeout));
    remote = exchange_as_client(*c.sock, local, timeout);
  }
  c.qp->connect(local, remote, path);
  return c;
}

// One ping-pong run: returns the client's per-iteration half round trips in microseconds.
std::vector<double> run(Connection& c, bool client) {
  const std::size_t size = FLAGS_s, total = FLAGS_warmup + FLAGS_n;
  const bool use_inline = size <= c.qp->caps().max_inline_data;
  ibv_sge send_sge{reinterpret_cast<std::uint64_t>(c.buf.data()), static_cast<std::uint32_t>(size), c.mr->lkey()};
  ibv_sge recv_sge{reinterpret_cast<std::uint64_t>(c.buf.data() + size), static_cast<std::uint32_t>(size), c.mr->lkey()};
  ibv_recv_wr rwr{};
  rwr.sg_list = &recv_sge;
  rwr.num_sge = 1;
  for (int k = 0; k < kRxDepth; ++k)
    if (c.qp->post_recv(rwr) != Status::kOk) die("post_recv failed");
  ibv_send_wr swr{};
  swr.sg_list = &send_sge;
  swr.num_sge = 1;
  swr.opcode = IBV_WR_SEND;

  std::vector<Clock::time_point> stamps(total + 1);  // preallocated: nothing allocates below
  std::size_t unsignaled = 0;
  auto deadline_step = std::chrono::milliseconds(FLAGS_timeout_ms);
  auto send = [&] {
    // Selective signaling: one signaled send in every kRxDepth/2 keeps the send queue drained.
    bool signal = ++unsignaled == kRxDepth / 2;
    if (signal) unsignaled = 0;
    swr.send_flags = (use_inline ? IBV_SEND_INLINE : 0) | (signal ? IBV_SEND_SIGNALED : 0);
    if (c.qp->post_send(swr) != Status::kOk) die("post_send failed");
  };
  auto wait_recv = [&] {
    WorkCompletion wc[8];
    auto deadline = Clock::now() + deadline_step;
    for (;;) {
      std::size_t n = 0;
      if (c.cq->poll(wc, n) != Status::kOk) die("poll failed");
      bool got = false;
      for (std::size_t k = 0; k < n; ++k) {
        if (status_of(wc[k]) != Status::kOk)
          die(std::string("completion error: ") + std::string(to_string(status_of(wc[k]))));
        if (wc[k].opcode == IBV_WC_RECV) got = true;
      }
      if (got) break;
      if (n == 0 && Clock::now() > deadline) die("no message from the peer within the timeout");
    }
    if (c.qp->post_recv(rwr) != Status::kOk) die("post_recv failed");
  };

  for (std::size_t it = 0; it < total; ++it) {
    if (client) {
      stamps[it] = Clock::now();
      send();
      wait_recv();
    } else {
      wait_recv();
      send();
    }
  }
  stamps[total] = Clock::now();
  std::vector<double> half_rtt;
  if (client) {
    half_rtt.reserve(FLAGS_n);
    for (std::size_t it = FLAGS_warmup; it < total; ++it)
      half_rtt.push_back(std::chrono::duration<double, std::micro>(stamps[it + 1] - stamps[it]).count() / 2);
  }
  return half_rtt;
}

}  // namespace

int main(int argc, char** argv) {
  gflags::SetUsageMessage("RC send/recv latency over unet's verbs layer (perftest-style)\n"
                          "  server: verbs_pingpong [flags]\n  client: verbs_pingpong [flags] HOST");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (argc > 2) die("at most one host argument");
  if (FLAGS_s == 0 || FLAGS_s > (1u << 30)) die("-s must be between 1 and 1 GiB");
  if (FLAGS_n == 0) die("-n must be positive");
  std::string host = argc == 2 ? argv[1] : "";
  try {
    Connection c = setup(host);
    std::vector<double> lat = run(c, !host.empty());
    // Closing handshake (ibv_rc_pingpong's "done"): the server keeps its QP until the client has
    // received the last reply.
    auto timeout = std::chrono::milliseconds(FLAGS_timeout_ms);
    if (host.empty()) {
      if (c.sock->recv_line(timeout) != "done") die("bad closing handshake");
    } else {
      c.sock->send_all("done\n", timeout);
    }
    if (!host.empty()) {
      std::printf("---------------------------------------------------------------------------------------\n");
      std::printf(" unet verbs layer: RC SEND/RECV ping-pong, device %s, %s, %zu warm-up iterations excluded\n",
                  c.ctx->name().c_str(), FLAGS_s <= c.qp->caps().max_inline_data ? "inline" : "not inline",
                  static_cast<std::size_t>(FLAGS_warmup));
      bench::print_latency_header(stdout);
      bench::print_latency_row(stdout, FLAGS_s, FLAGS_n, bench::compute_latency(lat));
      std::printf("---------------------------------------------------------------------------------------\n");
    }
  } catch (const Error& e) {
    die(e.what());
  }
  return 0;
}
