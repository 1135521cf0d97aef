// unet_perf: perftest-style benchmarks of unet endpoints, server/client like perftest.
//
//   server:  unet_perf --test ep_lat -d rxe0            (no host argument)
//   client:  unet_perf --test ep_lat -d rxe0 HOST
//
// The tests are the rows of test_table.h (--list-tests prints their names). Flags keep perftest's
// names and meanings (-d -i -x -p -s -a -n -c -I -R -e -F); see --help. The client prints
// perftest's table on stdout; --json FILE writes the same figures and the configuration.
//
// The run, in order: flags -> PerfConfig (options.cc); the device is probed so that a bad -d, -i
// or -x fails at once; the TCP session and the settings check (connect.cc); then per size the
// row's run function (a fresh endpoint and channel, the test, the closing count check: round.h).
#include <gflags/gflags.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "connect.h"
#include "ib_send_lat_oob.h"
#include "latency_stats.h"
#include "launcher.h"
#include "options.h"
#include "program_flags.h"
#include "rc_pingpong_oob.h"
#include "report.h"
#include "round.h"
#include "sizing.h"
#include "test_table.h"
#include "unet/core/cycle_clock.h"
#include "unet/core/endpoint.h"
#include "unet/verbs/device.h"
#include "unet/verbs/error.h"
#include "unet/verbs/gid.h"

// The help is made from the test table (constant-initialized: ready before this runs).
static const std::string test_flag_help = unet::perf::test_help();
DEFINE_string(test, "", test_flag_help.c_str());
DEFINE_bool(list_tests, false,
            "print the test names, one a line, and exit (bench/compare/compare.py reads them)");
DEFINE_string(
    d, "", "RDMA device (default: the first; under mpirun -np 2, UNET_DEVICE or the local rank's)");
DEFINE_int32(i, 1, "port of the device");
DEFINE_int32(x, -1, "GID index (default: chosen like perftest)");
DEFINE_int32(p, 18515, "TCP port of the out-of-band session (and of rdma_cm with -R)");
DEFINE_int32(S, 0, "service level of the paths and address handles (0..15), as perftest's -S");
DEFINE_int32(T, 0,
             "traffic class of the GRH (RoCE: DSCP << 2 | ECN), and with -R the connection's type "
             "of service, as perftest's -T");
DEFINE_int64(
    s, 2,
    "message size in bytes (default 2 for *_lat, 65536 for *_bw); am_*: the payload, up to "
    "65535 (UD: the path MTU less the 24-byte header), default for am_bw the largest; dgram_lat: "
    "one datagram, up to 65536");
DEFINE_bool(
    a, false,
    "run every size from 2 to 8388608 bytes (powers of two); am_*: up to the largest payload");
DEFINE_int64(n, 1000, "timed iterations per size (default 1000; 5000 for da_write_bw)");
DEFINE_string(c, "RC",
              "transport: RC or UD (UD for ep_* and am_*; dgram_lat, stream_lat and stream_bw "
              "default to UD, and the stream runs over RC too)");
DEFINE_int32(
    I, 108,
    "largest inline send (as perftest's -I): up to 108 bytes travel inside the descriptor, "
    "larger ones are posted inline from their segment buffer; clamped to the device "
    "(default: the endpoint's, 108 and 256)");
DEFINE_bool(R, false, "set the channel up through rdma_cm");
DEFINE_bool(e, false, "wait on completion events instead of polling");
DEFINE_bool(F, false, "accepted for perftest compatibility; no effect");
DEFINE_string(mode, "",
              "base or direct (default: the test's own; a mismatch is an error; stream_bw takes "
              "either: direct sends zero-copy)");
DEFINE_int32(batch, 1, "*_bw: descriptors pushed per poll (one doorbell)");
DEFINE_int64(warmup, 100,
             "untimed iterations before the timed ones (default 100 for *_lat, 0 for *_bw)");
DEFINE_string(json, "", "also write the results and the configuration to this JSON file");
DEFINE_int32(timeout_ms, 20000, "limit for every connection step and every wait");
DEFINE_string(
    oob, "unet",
    "the peer: unet (another unet_perf), rc_pingpong (an unmodified ibv_rc_pingpong -g IDX) "
    "or ib_send_lat (an unmodified perftest ib_send_lat, plain or -R), run with the same -s "
    "and -n (and -p/-m if not default); ep_lat, RC, no warm-up unless --warmup is given: "
    "the tool's -n counts every message");
DEFINE_int32(m, 0,
             "--oob rc_pingpong / ib_send_lat: path MTU, as the tool's -m (default: the tool's)");
DEFINE_int32(window, 8, "am_*: uam's credit window, requests outstanding per channel (1..127)");
DEFINE_bool(coalesce, true,
            "am_*: uam coalesces the messages a channel queues between two polls into one packet "
            "(--nocoalesce: one packet per message)");
DEFINE_bool(ring, true,
            "RC channels are ring channels: messages that fit a slot arrive by RDMA WRITE into the "
            "peer's memory, found by polling (--noring: SEND/RECV only)");
DEFINE_int32(ring_slots, 64,
             "ring channels: slots of our ring (a power of two, 2..16384; core's default 64)");
DEFINE_int32(
    ring_slot_bytes, 256,
    "ring channels: bytes per slot (a multiple of 8, 32..32768; core's default 256); larger "
    "messages go by SEND");
DEFINE_bool(
    limits, false,
    "print the largest -s of --test on -c for this device ('max_size N') and the GID index the "
    "library chooses ('gid_index N'), and exit; no peer");

using namespace unet;
using namespace unet::perf;

namespace {

[[noreturn]] void die(const std::string& msg) {
  std::fflush(stdout);
  std::fprintf(stderr, "unet_perf: %s\n", msg.c_str());
  std::exit(1);
}

bool is_default(const char* name) { return gflags::GetCommandLineFlagInfoOrDie(name).is_default; }

RawFlags raw_flags(int argc, char** argv) {
  RawFlags f;
  f.test = FLAGS_test;
  f.device = FLAGS_d;
  f.ib_port = FLAGS_i;
  f.gid_index = FLAGS_x;
  f.tcp_port = FLAGS_p;
  f.sl = FLAGS_S;
  f.traffic_class = FLAGS_T;
  if (!is_default("s")) f.size = FLAGS_s;
  f.all_sizes = FLAGS_a;
  if (!is_default("n")) f.iterations = FLAGS_n;
  if (!is_default("c")) f.connection = FLAGS_c;
  if (!is_default("I")) f.inline_size = FLAGS_I;
  f.rdma_cm = FLAGS_R;
  f.events = FLAGS_e;
  f.mode = FLAGS_mode;
  f.batch = FLAGS_batch;
  if (!is_default("warmup")) f.warmup = FLAGS_warmup;
  f.json = FLAGS_json;
  f.timeout_ms = FLAGS_timeout_ms;
  f.oob = FLAGS_oob;
  if (!is_default("m")) f.mtu = FLAGS_m;
  if (!is_default("window")) f.window = FLAGS_window;
  if (!is_default("coalesce")) f.coalesce = FLAGS_coalesce;
  if (!is_default("ring")) f.ring = FLAGS_ring;
  if (!is_default("ring_slots")) f.ring_slots = FLAGS_ring_slots;
  if (!is_default("ring_slot_bytes")) f.ring_slot_bytes = FLAGS_ring_slot_bytes;
  f.limits = FLAGS_limits;
  for (int k = 1; k < argc; ++k) f.hosts.emplace_back(argv[k]);
  return f;
}

// Opens a tiny endpoint on the configured device and port, so that a bad -d, -i or -x ends the
// run before any networking. Returns the endpoint's inline threshold, inline post limit and
// largest message.
std::tuple<std::uint32_t, std::uint32_t, std::uint32_t> probe_device(const PerfConfig& c) {
  core::EndpointConfig e;
  e.device = c.device;
  place(c, e);
  e.transport = c.transport;
  if (c.inline_size) e.inline_threshold = e.inline_post_limit = *c.inline_size;
  e.buffers = 2;
  e.free_queue_depth = 1;
  e.send_queue_depth = 4;
  e.recv_queue_depth = 4;
  core::Endpoint ep(e);
  return {ep.inline_threshold(), ep.inline_post_limit(), ep.max_message()};
}

// Each row's run function (test_table.h), in the table's order.
#define UNET_PERF_RUN(name, ...) &run_##name,
constexpr SizeResult (*kRun[])(const SizeRun&) = {UNET_PERF_TESTS(UNET_PERF_RUN)};
#undef UNET_PERF_RUN

// --oob rc_pingpong / ib_send_lat: one size of ep_lat against an unmodified tool, which speaks its
// own exchange (bench/interop/) and no session of ours. The tool's connector makes the channel;
// ib_send_lat also needs its closing step after the run.
SizeResult run_with_tool(const PerfConfig& c, const core::CycleClock& clock) {
  const std::uint32_t size = c.sizes.front();
  core::Endpoint ep(endpoint_config(c, size));
  std::optional<bench::IbSendLatPeer> send_lat;
  core::ChannelId ch = core::kNoChannel;
  if (c.oob == OobKind::kRcPingpong) {
    bench::RcPingpongOptions o;
    o.host = c.host;
    o.port = c.tcp_port;
    o.mtu = c.mtu ? c.mtu : bench::kRcPingpongDefaultMtu;
    o.timeout = c.timeout;
    ch = bench::connect_rc_pingpong(ep, o);
  } else {
    bench::IbSendLatOptions o;
    o.host = c.host;
    o.port = c.tcp_port;
    o.mtu = c.mtu;  // 0: the port's active MTU, as the tool's default
    o.timeout = c.timeout;
    o.rdma_cm = c.rdma_cm;
    ch = send_lat.emplace(bench::connect_ib_send_lat(ep, o)).channel();
  }
  Round round{{c, nullptr, size, clock}, ep, ch, {}, {}};
  SizeResult result = ep_lat(round);
  if (send_lat) {
    send_lat->finish(c.timeout);
    if (c.rdma_cm && c.is_client()) {
      // The tool's server disconnects both connections and waits for them to complete.
      const auto end = std::chrono::steady_clock::now() + c.timeout;
      for (int closed = 0; closed < 2 && std::chrono::steady_clock::now() < end;)
        closed += ep.service_channels();
    }
  }
  return result;
}

void write_file(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw PerfError("cannot write --json file " + path);
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok) throw PerfError("cannot write --json file " + path);
}

}  // namespace

int main(int argc, char** argv) {
  if (!cli::parse_flags(&argc, &argv,
                        "perftest-style benchmarks of unet endpoints\n"
                        "  server: unet_perf --test NAME [flags]\n"
                        "  client: unet_perf --test NAME [flags] HOST"))
    return 0;
  if (FLAGS_list_tests) {
    for (const TestInfo& t : all_tests()) std::printf("%s\n", std::string(t.name).c_str());
    return 0;
  }
  RawFlags raw = raw_flags(argc, argv);
  std::unique_ptr<boot::Job> job;  // under mpirun -np 2: rank 0 serves, rank 1 is the client
  try {
    job =
        join_launcher(raw, std::chrono::milliseconds(std::max<std::int64_t>(raw.timeout_ms, 1000)));
  } catch (const std::exception& e) {
    die(e.what());
  }
  auto made = make_config(raw);
  if (auto* err = std::get_if<std::string>(&made)) die(*err);
  PerfConfig cfg = std::get<PerfConfig>(made);

  try {
    RunInfo info;
    info.device = cfg.device.empty() ? "(the first device)" : cfg.device;
    const auto [inline_threshold, inline_post_limit, max_message] = probe_device(cfg);
    const bool no_inline = cfg.mode == core::Mode::kDirectAccess && !cfg.is_ulp();  // da_*: none
    info.inline_threshold = no_inline ? 0 : inline_threshold;
    info.inline_post_limit = no_inline ? 0 : inline_post_limit;
    if (cfg.is_am()) info.am_limit = am_payload_limit(cfg.transport, max_message);
    if (cfg.limits) {
      const std::uint64_t most = cfg.is_am()                             ? info.am_limit
                                 : cfg.test == TestKind::kDgramLat       ? kMaxDgram
                                 : cfg.is_ulp()                          ? kMaxSize
                                 : cfg.transport == core::Transport::kUd ? max_message
                                                                         : kMaxSize;
      std::printf("max_size %llu\n", static_cast<unsigned long long>(most));
      // The GID the library chooses (or -x's), for tools that must use the same one (compare.py
      // gives it to perftest).
      const auto ctx = verbs::Context::open(cfg.device);
      std::printf("gid_index %u\n", verbs::select_gid(*ctx, cfg.ib_port, cfg.gid_index).index);
      return 0;
    }
    if (cfg.is_am())
      if (std::string bad = fit_am_sizes(cfg, info.am_limit); !bad.empty()) die(bad);
    if (!cfg.is_am() && !cfg.is_ulp() && cfg.transport == core::Transport::kUd && !cfg.all_sizes &&
        cfg.sizes.front() > max_message)
      die("-s " + std::to_string(cfg.sizes.front()) +
          " exceeds the largest UD message, the path MTU (" + std::to_string(max_message) +
          " bytes)");
    const core::CycleClock clock = core::CycleClock::calibrate();
    info.ticks_per_us = clock.ticks_per_us();

    std::optional<Session> session;
    if (cfg.oob == OobKind::kUnet) {
      session.emplace(Session::open(cfg));
      session->check_settings(cfg);
    }

    std::fputs(banner(cfg, info).c_str(), stdout);
    std::printf(
        "---------------------------------------------------------------------------------------"
        "\n");
    if (cfg.is_client()) {
      if (cfg.is_latency())
        bench::print_latency_header(stdout);
      else
        print_bw_header(stdout);
    }
    std::fflush(stdout);

    const bool progress = cfg.all_sizes && isatty(STDERR_FILENO);
    std::vector<SizeResult> results;
    for (std::size_t k = 0; k < cfg.sizes.size(); ++k) {
      const std::uint32_t size = cfg.sizes[k];
      if (progress)
        std::fprintf(stderr, "\r# %u bytes (%zu of %zu)...   ", size, k + 1, cfg.sizes.size());
      if (session)
        results.push_back(kRun[static_cast<std::size_t>(cfg.test)]({cfg, &*session, size, clock}));
      else
        results.push_back(run_with_tool(cfg, clock));
      const SizeResult& r = results.back();
      if (!r.skipped.empty())
        std::printf("# %u bytes skipped: %s\n", size, r.skipped.c_str());
      else if (r.latency)
        bench::print_latency_row(stdout, size, r.iterations, *r.latency);
      else if (r.bandwidth)
        print_bw_row(stdout, size, r.iterations, *r.bandwidth);
      std::fflush(stdout);
    }
    if (progress) std::fprintf(stderr, "\r\n");
    std::printf(
        "---------------------------------------------------------------------------------------"
        "\n");
    if (!cfg.json_path.empty()) write_file(cfg.json_path, report_json(cfg, info, results));
  } catch (const PerfError& e) {
    die(e.what());
  } catch (const verbs::Error& e) {
    die(e.what());
  } catch (const std::exception& e) {  // uam's set-up: std::invalid_argument, std::length_error
    die(e.what());
  }
  return 0;
}
