// launch(): runs a parallel program as `procs` worker processes on one RDMA device, joined by a
// full mesh of RC channels, and turns their outcome into one exit status.
//
// The parent forks the workers and never opens the device itself. Each worker makes its
// uam::Endpoint and one channel offer per peer and writes them to the parent over a socketpair; the
// parent hands each worker its peers' halves; each worker accepts them and says "ready"; once all
// are ready the parent says "go" (so no worker sends to a QP that is not yet connected), and each
// runs `work` on its Group. A worker then waits until its own operations completed, reports
// "done <code>", and keeps serving its peers (acks, credits) until the parent says "exit", which it
// says once every worker is done. Every wait is bounded by `timeout`; a worker that fails or dies
// makes the parent stop the others and exit non-zero; the parent reaps every child.
//
// Exit status: kExitOk when every worker returned kExitOk; kExitWrong when a worker found a wrong
// result (and none failed otherwise); kExitError for any failure; kExitSkip when there is no RDMA
// device, unless UNET_REQUIRE_DEVICE=1 (then kExitError: CI must not pass by skipping).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

#include "group.h"
#include "options.h"
#include "unet/core/endpoint.h"
#include "unet/uam/endpoint.h"

namespace unet::uam::examples {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitWrong = 3;  // the program ran, and its result failed verification
inline constexpr int kExitSkip = 77;  // no RDMA device (ctest's SKIP_RETURN_CODE)

inline constexpr int kMaxProcs = 8;

struct LaunchConfig {
  std::string program;  // prefixes every message
  int procs = 2;
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  core::EndpointConfig net = endpoint_config(64u << 20);
  Config am;
  bool print_stats = false;  // each worker prints its endpoints' counters to stderr at the end

  // The workers' endpoint: the device named by UNET_DEVICE (else the first), the GID index in
  // UNET_GID_INDEX (else chosen like perftest), direct-access RC, and receive buffers for a full
  // mesh of kMaxProcs; `max_pinned_bytes` bounds the registration cache behind store and get.
  static core::EndpointConfig endpoint_config(std::size_t max_pinned_bytes);
};

// One worker's program: returns kExitOk, or kExitWrong when its result is wrong; throws on failure.
using Work = std::function<int(Group&)>;

int launch(const LaunchConfig& config, const Work& work);

// What every example program reads from the flags example_main() declares for it.
struct CommonParams {
  std::uint64_t seed = 1;
  std::uint64_t chunk = 0;  // bytes per store or get, a multiple of 4096
  bool corrupt = false;     // test hook: damage the result, so verification must fail
};

// Reads the program's own flags (`opt`) and sizes cfg.net with LaunchConfig::endpoint_config;
// returns the workers' program. `cfg` outlives that program, and --device is applied to cfg.net
// after this returns, so the program reads cfg.net.device when it runs.
using Setup =
    std::function<Work(const Options& opt, const CommonParams& common, LaunchConfig& cfg)>;

// The main() of an example program: declares the flags every example has (--procs, --seed, --chunk,
// --timeout, --device, --stats, --corrupt) beside the program's own in `opt`, parses argv, runs
// `setup` and launch(). A bad flag prints a message and returns kExitUsage; any other failure,
// kExitError.
int example_main(Options& opt, int argc, char** argv, const Setup& setup);

}  // namespace unet::uam::examples
