// verbs_pingpong: RC SEND/RECV ping-pong latency over unet's verbs layer, measured the way
// perftest's ib_send_lat measures it, so the two can run side by side on one device (ci/main.sh).
//
//   server:  verbs_pingpong -d rxe0 -s 8
//   client:  verbs_pingpong -d rxe0 -s 8 127.0.0.1
//
// The loop has ib_send_lat's shape: separate send and receive CQs, one receive polled at a time,
// the timestamp taken just before each post, every 32nd send signaled and reaped at once,
// latency = half the gap between consecutive posts. `--raw` runs the very same loop calling
// libibverbs directly instead of through unet::verbs, which isolates what the wrapper costs.
// `--exchange`: both sides send, then wait for the other's message; t is one such exchange.
#include <gflags/gflags.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "latency_stats.h"
#include "program_flags.h"
#include "unet/core/cycle_clock.h"
#include "unet/verbs/completion_queue.h"
#include "unet/verbs/error.h"
#include "unet/verbs/oob.h"
#include "unet/verbs/queue_pair.h"
#include "unet/verbs/work_request.h"

DEFINE_string(d, "", "RDMA device (default: the first)");
DEFINE_int32(i, 1, "device port");
DEFINE_int32(x, -1, "GID index (default: chosen like perftest)");
DEFINE_int32(p, 18515, "TCP port of the out-of-band exchange");
DEFINE_uint64(s, 2, "message size in bytes");
DEFINE_uint64(n, 1000, "timed iterations");
DEFINE_uint64(warmup, 100, "untimed iterations before the timed ones");
DEFINE_int32(I, -1, "inline threshold in bytes (default: the device's maximum)");
DEFINE_bool(raw, false, "call libibverbs directly in the timed loop (baseline for the wrapper)");
DEFINE_int32(timeout_ms, 20000, "limit for connecting and for each completion");
DEFINE_bool(exchange, false,
            "both sides send at once, then each waits for the other's message: the time of one "
            "exchange (a two-rank barrier's bound), not half a round trip");

using namespace unet;
using namespace unet::verbs;

namespace {

constexpr int kRxDepth = 64;
constexpr std::size_t kSignalEvery = 32;  // must stay below the send queue depth
static_assert(kSignalEvery < kRxDepth, "the send queue must hold a full unsignaled batch");

struct Connection {
  std::shared_ptr<Context> ctx;
  std::shared_ptr<ProtectionDomain> pd;
  std::shared_ptr<CompletionQueue> send_cq, recv_cq;
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
  c.send_cq = std::make_shared<CompletionQueue>(c.ctx, kRxDepth);
  c.recv_cq = std::make_shared<CompletionQueue>(c.ctx, kRxDepth);
  std::size_t size = FLAGS_s;
  c.buf.assign(2 * size, 0);
  c.mr = std::make_unique<MemoryRegion>(c.pd, c.buf.data(), c.buf.size(), kDefaultAccess);
  QpConfig qc;
  qc.send_cq = c.send_cq;
  qc.recv_cq = c.recv_cq;
  qc.max_send_wr = kRxDepth;
  qc.max_recv_wr = kRxDepth;
  qc.max_inline_data =
      FLAGS_I < 0 ? c.ctx->max_inline_data(IBV_QPT_RC) : static_cast<std::uint32_t>(FLAGS_I);
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

// The data-path calls, through unet::verbs...
struct UnetOps {
  QueuePair& qp;
  CompletionQueue& scq;
  CompletionQueue& rcq;
  bool send(ibv_send_wr& w) { return qp.post_send(w) == Status::kOk; }
  bool recv(ibv_recv_wr& w) { return qp.post_recv(w) == Status::kOk; }
  // 1 = a completion in wc, 0 = none, -1 = polling failed.
  int poll(CompletionQueue& cq, WorkCompletion& wc) {
    std::size_t n = 0;
    return cq.poll({&wc, 1}, n) == Status::kOk ? static_cast<int>(n) : -1;
  }
  int poll_send(WorkCompletion& wc) { return poll(scq, wc); }
  int poll_recv(WorkCompletion& wc) { return poll(rcq, wc); }
};

// ...and straight into libibverbs, for the baseline.
struct RawOps {
  ibv_qp* qp;
  ibv_cq* scq;
  ibv_cq* rcq;
  bool send(ibv_send_wr& w) {
    ibv_send_wr* bad;
    return ibv_post_send(qp, &w, &bad) == 0;
  }
  bool recv(ibv_recv_wr& w) {
    ibv_recv_wr* bad;
    return ibv_post_recv(qp, &w, &bad) == 0;
  }
  int poll_send(WorkCompletion& wc) { return ibv_poll_cq(scq, 1, &wc); }
  int poll_recv(WorkCompletion& wc) { return ibv_poll_cq(rcq, 1, &wc); }
};

// One run: the client's half round trips (with --exchange: whole exchanges) in microseconds
// (empty on the server).
template <class Ops>
std::vector<double> run(Connection& c, Ops ops, bool client, double& ticks_per_us) {
  const std::size_t size = FLAGS_s, total = FLAGS_warmup + FLAGS_n;
  const bool use_inline = size <= c.qp->caps().max_inline_data;
  const auto len = static_cast<std::uint32_t>(size);
  RecvRequest recv_req(c.buf.data() + size, len, c.mr->lkey());
  SendRequest send_req(IBV_WR_SEND, c.buf.data(), len, c.mr->lkey());
  ibv_recv_wr& rwr = recv_req.wr;
  ibv_send_wr& swr = send_req.wr;
  for (int k = 0; k < kRxDepth; ++k)
    if (!ops.recv(rwr)) die("post_recv failed");

  const core::CycleClock clock = core::CycleClock::calibrate();
  ticks_per_us = clock.ticks_per_us();
  const std::uint64_t patience = clock.ticks(std::chrono::milliseconds(FLAGS_timeout_ms));
  std::vector<std::uint64_t> stamps(total + 1);  // preallocated: nothing allocates below
  WorkCompletion wc;

  // Spins until `poll` yields a completion; the deadline is read only every 4096 idle polls so
  // that waiting stays cheap.
  auto wait = [&](auto poll, const char* what) {
    const std::uint64_t deadline = core::CycleClock::now() + patience;
    for (std::uint32_t idle = 0;; ++idle) {
      int n = poll(wc);
      if (n > 0) break;
      if (n < 0) die(std::string("polling failed waiting for ") + what);
      if (idle % 4096 == 4095 && core::CycleClock::now() > deadline)
        die(std::string("no ") + what + " within the timeout");
    }
    if (wc.status != IBV_WC_SUCCESS)
      die(std::string(what) + " completed with " + std::string(to_string(status_of(wc))));
  };
  auto send = [&](std::size_t it) {
    bool signal = (it + 1) % kSignalEvery == 0;
    swr.send_flags = (use_inline ? IBV_SEND_INLINE : 0) | (signal ? IBV_SEND_SIGNALED : 0);
    if (!ops.send(swr)) die("post_send failed");
    if (signal) wait([&](WorkCompletion& w) { return ops.poll_send(w); }, "send completion");
  };
  auto receive = [&] {
    wait([&](WorkCompletion& w) { return ops.poll_recv(w); }, "message from the peer");
    if (!ops.recv(rwr)) die("post_recv failed");
  };

  for (std::size_t it = 0; it < total; ++it) {
    if (client || FLAGS_exchange) {
      stamps[it] = core::CycleClock::now();
      send(it);
      receive();
    } else {
      receive();
      send(it);
    }
  }
  stamps[total] = core::CycleClock::now();
  std::vector<double> times;
  if (client) {
    times.reserve(FLAGS_n);
    for (std::size_t it = FLAGS_warmup; it < total; ++it)
      times.push_back(clock.to_us(stamps[it + 1] - stamps[it]) / (FLAGS_exchange ? 1 : 2));
  }
  return times;
}

}  // namespace

int main(int argc, char** argv) {
  if (!cli::parse_flags(&argc, &argv,
                        "RC send/recv latency over unet's verbs layer (perftest-style)\n"
                        "  server: verbs_pingpong [flags]\n  client: verbs_pingpong [flags] HOST"))
    return 0;
  if (argc > 2) die("at most one host argument");
  if (FLAGS_s == 0 || FLAGS_s > (1u << 30)) die("-s must be between 1 and 1 GiB");
  if (FLAGS_n == 0) die("-n must be positive");
  std::string host = argc == 2 ? argv[1] : "";
  try {
    Connection c = setup(host);
    double ticks_per_us = 0;
    bool client = !host.empty();
    std::vector<double> lat =
        FLAGS_raw ? run(c, RawOps{c.qp->native(), c.send_cq->native(), c.recv_cq->native()}, client,
                        ticks_per_us)
                  : run(c, UnetOps{*c.qp, *c.send_cq, *c.recv_cq}, client, ticks_per_us);
    // Closing handshake (ibv_rc_pingpong's "done"): the server keeps its QP until the client has
    // received the last reply.
    auto timeout = std::chrono::milliseconds(FLAGS_timeout_ms);
    if (!client) {
      if (c.sock->recv_line(timeout) != "done") die("bad closing handshake");
      return 0;
    }
    c.sock->send_all("done\n", timeout);
    std::printf(
        "---------------------------------------------------------------------------------------"
        "\n");
    std::printf(
        " %s: RC SEND/RECV %s, device %s, %s, %zu warm-up iterations excluded\n"
        " cycle counter: %.1f ticks/usec, calibrated against CLOCK_MONOTONIC\n",
        FLAGS_raw ? "raw libibverbs (baseline)" : "unet verbs layer",
        FLAGS_exchange ? "exchange (t: one exchange, both ways at once)" : "ping-pong",
        c.ctx->name().c_str(), FLAGS_s <= c.qp->caps().max_inline_data ? "inline" : "not inline",
        static_cast<std::size_t>(FLAGS_warmup), ticks_per_us);
    bench::print_latency_header(stdout);
    bench::print_latency_row(stdout, FLAGS_s, FLAGS_n, bench::compute_latency(lat));
    std::printf(
        "---------------------------------------------------------------------------------------"
        "\n");
  } catch (const Error& e) {
    die(e.what());
  }
  return 0;
}
