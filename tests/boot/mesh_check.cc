// mesh_check: every rank of a job sends checked active messages to every other rank over the
// channels boot::connect_all() made (RC or UD), forked here or started by mpirun (PMIx). Exits 0
// only when every rank got exactly --messages from each of the others, in order and intact, and
// every request it sent completed kOk; 3 when a check failed; 1 on any failure; 77 without a
// device when forking (1 with UNET_REQUIRE_DEVICE=1).
//
//   mesh_check --transport ud --procs 16                      # forked on this host
//   ci/sim-hosts -np 16 -- mesh_check --transport ud          # under mpirun, two simulated hosts
//
// Rank 0 prints the job's placement, the plan's receive buffers and memory per rank, and the
// largest VmPin and VmRSS any rank had (/proc/self/status), which boot/README.md quotes.
#include <gflags/gflags.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "program_flags.h"
#include "unet/boot/endpoint_plan.h"
#include "unet/boot/launch.h"
#include "unet/boot/mesh.h"
#include "unet/uam/endpoint.h"
#include "unet/verbs/device.h"

DEFINE_string(transport, "ud", "rc or ud");
DEFINE_int32(procs, 0, "ranks forked here (0: 4); under mpirun or srun, 0 or the job's size");
DEFINE_string(launcher, "auto", "auto, fork or pmix");
DEFINE_uint64(messages, 4, "messages each rank sends each other rank");
DEFINE_uint64(size, 64, "payload bytes of each (at most the medium limit)");
DEFINE_uint64(timeout, 300, "seconds every wait may take");
DEFINE_uint32(rings, 1, "RC: 1 ring channels (core's default), 0 plain channels");

using namespace unet;

namespace {

constexpr uam::HandlerId kCheck = 1;

struct Params {
  core::Transport transport = core::Transport::kUd;
  std::uint64_t messages = 4;  // to each peer
  std::uint64_t size = 64;     // payload bytes (clamped to the medium limit)
  bool rings = true;           // RC: core's ring channels (its default), or plain channels
};

std::byte pattern(std::uint64_t from, std::uint64_t to, std::uint64_t seq, std::size_t i) {
  return static_cast<std::byte>((from * 131 + to * 31 + seq * 7 + i) & 0xff);
}

// The core counters that tell why a channel failed or stuck.
std::string counters(const core::EndpointStats& c) {
  std::ostringstream o;
  o << "sent " << c.sent << ", received " << c.received << ", ring sent/received " << c.ring_sent
    << '/' << c.ring_received << ", ring sleeps " << c.ring_sleeps << ", send errors "
    << c.send_errors << ", receive errors " << c.recv_errors << ", ring protocol errors "
    << c.ring_protocol_errors;
  return o.str();
}

// A "VmPin:" / "VmRSS:" figure of this process, in KiB (0 when absent).
std::uint64_t status_kib(const std::string& field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field, 0) == 0) return std::strtoull(line.c_str() + field.size(), nullptr, 10);
  return 0;
}

int check(boot::Job& job, const Params& p) {
  using Clock = std::chrono::steady_clock;
  const int n = job.size(), me = job.rank();
  const auto t_start = Clock::now();
  boot::PlanRequest req;
  req.transport = p.transport;
  req.mode = core::Mode::kBaseLevel;
  boot::EndpointPlan plan = boot::plan_for(job, req);
  if (!p.rings) plan.net.ring_slots = 0;
  uam::Endpoint ep(plan.net, plan.am);
  const std::size_t size = std::min<std::size_t>(p.size, ep.max_payload(3));

  std::vector<int> rank_of;  // by channel id
  std::vector<std::uint64_t> next(n, 0);
  std::uint64_t received = 0, bad = 0, ok = 0, failed = 0;
  std::string first_bad, complain_failed;
  auto complain = [&](const std::string& what) {
    if (bad++ == 0) first_bad = what;
  };
  if (ep.on_request(kCheck, [&](uam::Token&, const uam::Message& m) {
        const int from = m.channel < rank_of.size() ? rank_of[m.channel] : -1;
        if (from < 0 || m.args.size() != 3 || m.args[0] != std::uint64_t(from) ||
            m.args[1] != std::uint64_t(me) || m.args[2] != next[from] || m.payload.size() != size) {
          complain("a message on channel " + std::to_string(m.channel) + " with the wrong header");
          return uam::Disposition::kDone;
        }
        for (std::size_t i = 0; i < size; ++i)
          if (m.payload[i] != pattern(from, me, next[from], i)) {
            complain("message " + std::to_string(next[from]) + " from rank " +
                     std::to_string(from) + " damaged at byte " + std::to_string(i));
            break;
          }
        ++next[from];
        ++received;
        return uam::Disposition::kDone;
      }) != Status::kOk)
    throw std::logic_error("handler registration refused");
  ep.on_completion([&](core::ChannelId ch, std::uint64_t, Status s) {
    if (s == Status::kOk) return void(++ok);
    if (failed++ == 0) {
      const int to = ch < rank_of.size() ? rank_of[ch] : -1;
      complain_failed =
          "a request to rank " + std::to_string(to) + " completed " + std::string(to_string(s));
    }
  });

  const std::vector<core::ChannelId> channels = boot::connect_all(job, ep);
  const auto t_connected = Clock::now();
  for (int r = 0; r < n; ++r)
    if (r != me) {
      if (channels[r] >= rank_of.size()) rank_of.resize(channels[r] + 1, -1);
      rank_of[channels[r]] = r;
    }

  const std::uint64_t expect = p.messages * std::uint64_t(n - 1);
  const auto deadline = Clock::now() + job.timeout();
  auto progress = [&] {
    const int work = ep.poll();
    if (work < 0) throw std::runtime_error("device error while polling");
    if (Clock::now() > deadline) {
      // Say where it stuck: which peers' messages are missing, and the counters that tell why.
      std::ostringstream why;
      why << "timed out: got " << received << " of " << expect << " messages, " << ok + failed
          << " of " << expect << " requests completed; short of peers";
      int listed = 0;
      for (int r = 0; r < n && listed < 8; ++r)
        if (r != me && next[r] < p.messages) why << ' ' << r << " (" << next[r] << ')', ++listed;
      const uam::Stats& a = ep.stats();
      why << "; uam credits sent/received " << a.credit_messages << '/'
          << a.credit_messages_received << ", probes " << a.probes
          << "; core: " << counters(ep.net().stats());
      throw std::runtime_error(why.str());
    }
    return work;
  };
  std::vector<std::byte> payload(size);
  for (std::uint64_t seq = 0; seq < p.messages; ++seq)
    for (int k = 1; k < n; ++k) {
      const int peer = (me + k) % n;
      for (std::size_t i = 0; i < size; ++i) payload[i] = pattern(me, peer, seq, i);
      const std::uint64_t args[3] = {std::uint64_t(me), std::uint64_t(peer), seq};
      for (Status s; (s = ep.request(channels[peer], kCheck, args, payload)) != Status::kOk;) {
        if (s != Status::kNoResource)
          throw std::runtime_error(
              "request to rank " + std::to_string(peer) + ": " + std::string(to_string(s)) +
              (complain_failed.empty() ? "" : " (first: " + complain_failed + ")") +
              "; core: " + counters(ep.net().stats()));
        // Out of send buffers or credit until peers acknowledge: sleep rather than spin, since
        // on UD those acknowledgements need the peers' CPU time (256 ranks share 2 in the VM).
        if (progress() == 0) (void)ep.wait(std::chrono::milliseconds(1));
      }
    }
  while (received + bad < expect || ok + failed < expect)
    if (progress() == 0) (void)ep.wait(std::chrono::milliseconds(5));
  job.barrier([&] { (void)progress(); });  // peers may still wait for our acknowledgements
  const auto t_done = Clock::now();

  std::ostringstream mine;
  mine << received << ' ' << bad << ' ' << ok << ' ' << failed << ' '
       << ep.net().stats().ring_received << ' ' << status_kib("VmPin:") << ' '
       << status_kib("VmRSS:") << ' '
       << (first_bad.empty() ? complain_failed.empty() ? "-" : complain_failed : first_bad);
  const auto reports = job.allgather(mine.str());
  const std::string where = boot::placement(job, plan.net.device);
  if (me != 0)
    return bad == 0 && failed == 0 && received == expect ? boot::kExitOk : boot::kExitWrong;

  bool all_ok = true;
  std::uint64_t pin = 0, rss = 0, by_ring = 0;
  for (int r = 0; r < n; ++r) {
    std::istringstream in(reports[r]);
    std::uint64_t got, nbad, nok, nfail, ring, vpin, vrss;
    std::string why;
    in >> got >> nbad >> nok >> nfail >> ring >> vpin >> vrss;
    by_ring += ring;
    std::getline(in, why);
    pin = std::max(pin, vpin);
    rss = std::max(rss, vrss);
    if (got != expect || nbad || nok != expect || nfail) {
      std::printf("FAILED: rank %d got %" PRIu64 " of %" PRIu64 " messages (%" PRIu64
                  " bad; first problem:%s); %" PRIu64 " of its requests completed ok, %" PRIu64
                  " failed\n",
                  r, got, expect, nbad, why.c_str(), nok, nfail);
      all_ok = false;
    }
  }
  const char* t = p.transport == core::Transport::kRc ? "RC" : "UD";
  std::printf("mesh_check: %d ranks over %s (%s): %s\n", n, t,
              std::string(boot::launcher_name(job.launcher())).c_str(), where.c_str());
  std::printf(
      "  rank 0: plan, endpoint and channels in %.2f s, the messages and the last barrier "
      "in %.2f s\n",
      std::chrono::duration<double>(t_connected - t_start).count(),
      std::chrono::duration<double>(t_done - t_connected).count());
  std::printf(
      "  per rank: %d channels, credit window %u, %u posted receive buffers of %u B (%u per "
      "channel), segment %.2f MiB, pinned %.2f MiB by plan; largest VmPin %.2f MiB, VmRSS "
      "%.1f MiB\n",
      n - 1, unsigned(plan.am.window), plan.net.free_queue_depth, plan.net.buffer_bytes,
      plan.per_channel, double(plan.segment_bytes) / (1 << 20),
      double(plan.pinned_bytes) / (1 << 20), double(pin) / 1024, double(rss) / 1024);
  if (p.transport == core::Transport::kRc)
    std::printf("  ring channels: %" PRIu64
                " arrivals by RDMA WRITE, all ranks (the mesh's messages: %" PRIu64 ")\n",
                by_ring, expect * std::uint64_t(n));
  if (all_ok)
    std::printf("verified: every rank got %" PRIu64
                " messages of %zu B from each of the %d others, "
                "in order and intact, and its %" PRIu64 " requests completed ok\n",
                p.messages, size, n - 1, expect);
  std::fflush(stdout);
  return all_ok ? boot::kExitOk : boot::kExitWrong;
}

}  // namespace

int main(int argc, char** argv) {
  if (!cli::parse_flags(&argc, &argv,
                        "every rank sends checked active messages to every other rank over the "
                        "channels boot::connect_all made"))
    return boot::kExitOk;
  try {
    if (argc > 1) throw std::invalid_argument("unexpected argument '" + std::string(argv[1]) + "'");
    Params p;
    const std::string t = FLAGS_transport;
    if (t != "rc" && t != "ud") throw std::invalid_argument("--transport must be rc or ud");
    p.transport = t == "rc" ? core::Transport::kRc : core::Transport::kUd;
    p.messages = cli::check_range("messages", FLAGS_messages, 1, 1u << 20);
    p.size = cli::check_range("size", FLAGS_size, 0, 1u << 16);
    p.rings = cli::check_range("rings", FLAGS_rings, 0, 1) == 1;
    boot::LaunchConfig cfg;
    cfg.program = "mesh_check";
    cfg.mode = boot::parse_launch_mode(FLAGS_launcher);
    cfg.procs = cli::check_range("procs", FLAGS_procs, 0, boot::kMaxForkedProcs);
    cfg.timeout = std::chrono::seconds(cli::check_range("timeout", FLAGS_timeout, 1, 86400));
    if (boot::resolve(cfg.mode) == boot::Launcher::kFork) {
      if (cfg.procs == 0) cfg.procs = 4;
      if (verbs::device_names().empty()) {
        const char* req = std::getenv("UNET_REQUIRE_DEVICE");
        std::fprintf(stderr, "mesh_check: %s: no RDMA device\n",
                     req && std::string(req) == "1" ? "UNET_REQUIRE_DEVICE=1" : "skipped");
        return req && std::string(req) == "1" ? boot::kExitError : boot::kExitSkip;
      }
    }
    return boot::run(cfg, [&](boot::Job& job) { return check(job, p); });
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "mesh_check: %s (see --help)\n", e.what());
    return boot::kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mesh_check: %s\n", e.what());
    return boot::kExitError;
  }
}
