#include "example_main.h"

#include <gflags/gflags.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "page_buffer.h"
#include "program_flags.h"
#include "unet/boot/endpoint_plan.h"
#include "unet/boot/mesh.h"
#include "unet/verbs/device.h"

// The flags every example has; each program defines its own beside them.
DEFINE_int32(procs, 0, "ranks: forked here (0: 4); under mpirun or srun, 0 or the job's size");
DEFINE_string(launcher, "auto",
              "auto (pmix when mpirun or srun --mpi=pmix started us, else fork), fork or pmix");
DEFINE_uint64(seed, 1, "seed of the input generator");
DEFINE_uint64(chunk, 1048576, "bytes per store or get (a multiple of 4096)");
DEFINE_uint64(timeout, 600, "seconds the whole run, and every wait in it, may take");
DEFINE_string(device, "",
              "RDMA device, or a comma-separated list a rank takes its local rank modulo the "
              "length of (default: $UNET_DEVICE, else every device)");
DEFINE_uint32(stats, 0, "1: every rank prints its endpoint's counters to stderr at the end");
DEFINE_uint32(corrupt, 0,
              "test hook: 1 damages one element of the result, so verification must fail");
DEFINE_int32(kill_rank, -1,
             "test hook: this rank kills itself (SIGKILL) at its second barrier, mid-run "
             "(also spelled --kill-rank)");

namespace unet::uam::examples {

namespace {

// Empty when the devices the ranks will open (UNET_DEVICE: one, or a comma-separated list; unset:
// any) are present; otherwise why not.
std::string missing_device() {
  const auto names = verbs::device_names();
  if (names.empty()) return "no RDMA device (ibv_get_device_list found none)";
  const char* want = std::getenv("UNET_DEVICE");
  std::string list = want ? want : "";
  for (std::size_t at = 0; at < list.size();) {
    const auto comma = std::min(list.find(',', at), list.size());
    const std::string name = list.substr(at, comma - at);
    bool found = name.empty();
    for (const auto& n : names) found = found || n == name;
    if (!found) return "device " + name + " is not present";
    at = comma + 1;
  }
  return {};
}

// --stats: one line of the endpoint's counters (uam, core, registration cache).
void print_stats(const std::string& program, int rank, Endpoint& ep) {
  const Stats& s = ep.stats();
  const core::EndpointStats& c = ep.net().stats();
  const core::RegistrationCacheStats r = ep.net().registration_stats();
  std::fprintf(stderr,
               "%s: rank %d: uam: %" PRIu64 " requests, %" PRIu64 " replies, %" PRIu64
               " stores, %" PRIu64 " gets sent; %" PRIu64 " handled; %" PRIu64
               " credit messages, %" PRIu64 " probes; core: %" PRIu64 " sent, %" PRIu64
               " received, %" PRIu64 " doorbells; registration cache: %" PRIu64 " hits, %" PRIu64
               " misses, %" PRIu64 " evictions, peak %.1f MiB pinned\n",
               program.c_str(), rank, s.requests_sent, s.replies_sent, s.stores_sent, s.gets_issued,
               s.requests_handled, s.credit_messages, s.probes, c.sent, c.received, c.doorbells,
               r.hits, r.misses, r.evictions, double(r.peak_pinned_bytes) / (1 << 20));
}

struct Flags {
  std::string program;
  bool stats = false;
  int kill_rank = -1;
  std::chrono::milliseconds timeout{};
};

// One rank: its endpoint, its channels to every other rank, the program, and the wait for the
// others (our peers may still wait for our acknowledgements until every rank is done).
int rank_main(boot::Job& job, const Program& prog, const Flags& f) {
  boot::PlanRequest req;
  req.transport = core::Transport::kRc;
  req.mode = core::Mode::kDirectAccess;
  req.max_pinned_bytes = prog.max_pinned_bytes(job.size());
  const boot::EndpointPlan plan = boot::plan_for(job, req);
  const std::string where = boot::placement(job, plan.net.device);
  if (job.rank() == 0)
    std::printf("%s: %d ranks (%s): %s\n", f.program.c_str(), job.size(),
                std::string(boot::launcher_name(job.launcher())).c_str(), where.c_str());
  Endpoint ep(plan.net, plan.am);
  Group group(ep, job.rank(), boot::connect_all(job, ep), f.timeout);
  group.set_placement(where);
  if (f.kill_rank == job.rank()) group.kill_at_barrier(2);
  const int code = prog.work(group);
  group.quiesce();
  if (f.stats) print_stats(f.program, job.rank(), ep);
  std::fflush(stdout);
  job.barrier([&] { group.progress(); });
  return code;
}

}  // namespace

int example_main(const char* program, const char* summary, int argc, char** argv,
                 const Setup& setup) {
  if (!cli::parse_flags(&argc, &argv, summary)) return kExitOk;
  try {
    if (argc > 1) throw std::invalid_argument("unexpected argument '" + std::string(argv[1]) + "'");
    CommonParams common;
    common.seed = FLAGS_seed;
    common.chunk = cli::check_range("chunk", FLAGS_chunk, kPageBytes, 1u << 30);
    if (common.chunk % kPageBytes)
      throw std::invalid_argument("--chunk must be a multiple of 4096");
    common.corrupt = cli::check_range("corrupt", FLAGS_corrupt, 0, 1) == 1;
    boot::LaunchConfig cfg;
    cfg.program = program;
    cfg.mode = boot::parse_launch_mode(FLAGS_launcher);
    cfg.procs = cli::check_range("procs", FLAGS_procs, 0, boot::kMaxForkedProcs);
    cfg.timeout = std::chrono::seconds(cli::check_range("timeout", FLAGS_timeout, 1, 86400));
    Flags flags;
    flags.program = program;
    flags.stats = cli::check_range("stats", FLAGS_stats, 0, 1) == 1;
    flags.timeout = cfg.timeout;
    if (FLAGS_kill_rank != -1)
      flags.kill_rank = cli::check_range("kill-rank", FLAGS_kill_rank, 0, boot::kMaxForkedProcs);
    if (!FLAGS_device.empty()) ::setenv("UNET_DEVICE", FLAGS_device.c_str(), 1);
    const Program prog = setup(common);

    if (boot::resolve(cfg.mode) == boot::Launcher::kFork) {
      if (cfg.procs == 0) cfg.procs = 4;
      if (std::string why = missing_device(); !why.empty()) {
        const char* req = std::getenv("UNET_REQUIRE_DEVICE");
        if (req && std::string(req) == "1") {
          std::fprintf(stderr, "%s: UNET_REQUIRE_DEVICE=1 but %s\n", program, why.c_str());
          return kExitError;
        }
        std::fprintf(stderr, "%s: skipped: %s (run under ci/rxe-vm, or set up rxe: ci/rxe-host)\n",
                     program, why.c_str());
        return kExitSkip;
      }
    }
    return boot::run(cfg, [&](boot::Job& job) { return rank_main(job, prog, flags); });
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "%s: %s (see --help)\n", program, e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return kExitError;
  }
}

}  // namespace unet::uam::examples
