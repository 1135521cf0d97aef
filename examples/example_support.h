// example_support.h: what the four examples share and none of them is about — which device to
// use, the exit-code rule, deadlines, bounded waits, and running an example's two sides at once.
//
// Exit codes of every example: 0 when everything was checked; 1 on any failure, with the reason on
// stderr; 77 (ctest's "skipped") when there is no RDMA device — unless UNET_REQUIRE_DEVICE=1, which
// makes that a failure too (CI's rule, as in tests/support/device_env.h). UNET_DEVICE names the
// device (default: the first), UNET_GID_INDEX forces a GID index.
#pragma once

#include <unet/core/endpoint.h>
#include <unet/verbs/device.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <future>
#include <stdexcept>
#include <string>
#include <vector>

namespace example {

using namespace std::chrono_literals;
using unet::Status;

// A failure: thrown up to run_example(), which prints it and exits 1.
[[noreturn]] inline void fail(const std::string& why) { throw std::runtime_error(why); }
inline void check(bool ok, const std::string& why) {
  if (!ok) fail(why);
}
// Data-path calls return a Status (kNoResource means "retry after progress"); set-up calls throw.
inline void check(Status s, const std::string& what) {
  if (s != Status::kOk) fail(what + ": " + std::string(to_string(s)));
}

// Every wait of the examples ends at a deadline: a lost message fails the example, never hangs it.
class Deadline {
 public:
  explicit Deadline(std::chrono::milliseconds budget = 30s)
      : end_(std::chrono::steady_clock::now() + budget) {}
  std::chrono::milliseconds left() const {
    return std::max(
        0ms, std::chrono::ceil<std::chrono::milliseconds>(end_ - std::chrono::steady_clock::now()));
  }
  void check(const std::string& waiting_for) const {
    if (std::chrono::steady_clock::now() >= end_) fail("timed out waiting for " + waiting_for);
  }

 private:
  std::chrono::steady_clock::time_point end_;
};

// Waits until `done()` holds. `ep.wait()` (core::Endpoint, uam::Endpoint) does the progress work —
// posts sends, reaps completions, runs handlers — and sleeps on the completion channel while there
// is none, waking when something arrives or completes.
template <class Endpoint, class Done>
void await(Endpoint& ep, const Deadline& deadline, const std::string& what, Done done) {
  while (!done()) {
    deadline.check(what);
    if (Status s = ep.wait(deadline.left()); s != Status::kTimeout) check(s, "waiting for " + what);
  }
}

// An endpoint configuration on the chosen device; everything else is core's default.
inline unet::core::EndpointConfig endpoint_config(unet::core::Transport transport) {
  unet::core::EndpointConfig c;
  if (const char* dev = std::getenv("UNET_DEVICE"); dev && *dev) c.device = dev;
  if (const char* gid = std::getenv("UNET_GID_INDEX"); gid && *gid)
    c.gid_index = static_cast<std::uint32_t>(std::strtoul(gid, nullptr, 10));
  c.transport = transport;
  return c;
}

// Runs an example's two sides at once, `server` on a second thread and `client` on this one. Each
// side uses only its own endpoint, as it would in its own process on its own machine. Fails with
// what went wrong on either side.
inline void run_both(const std::function<void()>& server, const std::function<void()>& client) {
  std::future<void> other = std::async(std::launch::async, server);
  std::string why;
  try {
    client();
  } catch (const std::exception& e) {
    why = std::string("client: ") + e.what();
  }
  try {
    other.get();  // the server ends by its own deadline even when the client failed
  } catch (const std::exception& e) {
    why += (why.empty() ? "server: " : "; server: ") + std::string(e.what());
  }
  if (!why.empty()) fail(why);
}

// main() of every example: the device check and its exit code, then `run`, which returns a line
// saying what was checked.
inline int run_example(const char* name, const std::function<std::string()>& run) {
  std::string missing;
  const std::vector<std::string> devices = unet::verbs::device_names();
  const char* want = std::getenv("UNET_DEVICE");
  if (devices.empty())
    missing = "no RDMA device (ibv_get_device_list found none)";
  else if (want && *want && std::find(devices.begin(), devices.end(), want) == devices.end())
    missing = std::string("UNET_DEVICE=") + want + " is not present";
  if (!missing.empty()) {
    const char* required = std::getenv("UNET_REQUIRE_DEVICE");
    if (required && std::string(required) == "1") {
      std::fprintf(stderr, "%s: FAIL: UNET_REQUIRE_DEVICE=1 but %s\n", name, missing.c_str());
      return 1;
    }
    std::printf("%s: skipped: %s (SoftRoCE will do: see ci/rxe-host)\n", name, missing.c_str());
    return 77;
  }
  try {
    std::printf("%s: OK: %s\n", name, run().c_str());
    return 0;
  } catch (const std::exception& e) {  // a failed check, or a set-up call's unet::verbs::Error
    std::fprintf(stderr, "%s: FAIL: %s\n", name, e.what());
    return 1;
  }
}

}  // namespace example
