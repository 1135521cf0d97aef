// Helpers for fault tests on the two-device veth set-up (ci/rxe-vm --two-dev): run a shell
// command, read a qdisc's drop counter, the skip-or-fail rule for that set-up, and the amounts
// of traffic the environment may scale.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "device_env.h"
#include "unet/core/endpoint.h"

namespace unet::test {

// Runs `cmd` through the shell; returns its stdout and stderr.
inline std::string run(const std::string& cmd) {
  std::string out;
  if (FILE* f = popen((cmd + " 2>&1").c_str(), "r")) {
    char buf[512];
    while (std::fgets(buf, sizeof buf, f)) out += buf;
    pclose(f);
  }
  return out;
}

// Packets the root qdisc of `dev` has dropped so far ("... (dropped N, overlimits ...)"), or -1.
inline long dropped(const std::string& dev) {
  std::string s = run("tc -s qdisc show dev " + dev);
  auto at = s.find("dropped ");
  return at == std::string::npos ? -1 : std::strtol(s.c_str() + at + 8, nullptr, 10);
}

// The amount in environment variable `name` (a positive integer), or `fallback` when it is unset
// or empty. Anything else throws, naming the variable: a typo must not shrink a test to nothing.
// The sanitizer pass uses these to run the long fault tests with less traffic (tests/README.md).
inline std::uint64_t env_amount(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (*end != '\0' || n == 0 || *v == '-')
    throw std::invalid_argument(std::string(name) + " must be a positive integer, not '" + v + "'");
  return n;
}

// True under ci/rxe-vm --two-dev (rxe0 on veth0, rxe1 on veth1, traffic crossing the pair).
inline bool two_devices() {
  const char* mode = std::getenv("UNET_RXE_MODE");
  return mode && std::string(mode) == "two";
}

// The impairment the layered fault tests put on the link (both ways unless a test says otherwise).
inline constexpr const char* kLossyNetem = "loss 5% duplicate 2% delay 200us reorder 10% 50%";
// ... or, for experiments by hand, the netem arguments in UNET_NETEM (e.g. "loss gemodel 1% 30%
// delay 2ms"; correlated "loss P% C%" drops nothing on the VM's 6.1 kernel, see tests/README.md).
inline std::string lossy_netem() {
  const char* e = std::getenv("UNET_NETEM");
  return e && *e ? std::string(e) : std::string(kLossyNetem);
}

// Puts `netem` on the root qdisc of `devs` for the test (skipping without two devices) and takes
// it off after. Derive from it, naming the devices.
class NetemTest : public ::testing::Test {
 protected:
  explicit NetemTest(std::vector<std::string> devs = {"veth0", "veth1"},
                     std::string netem = lossy_netem())
      : devs_(std::move(devs)), netem_(std::move(netem)) {}
  void SetUp() override;
  void TearDown() override {
    if (two_devices())
      for (const auto& d : devs_) (void)run("tc qdisc del dev " + d + " root");
  }
  // Packets the impaired qdiscs dropped so far.
  long drops() const {
    long n = 0;
    for (const auto& d : devs_) n += dropped(d);
    return n;
  }
  const std::string& netem() const { return netem_; }

 private:
  std::vector<std::string> devs_;
  std::string netem_;
};

// A UD endpoint on `device` sized for the layered fault tests: 512 buffers, half posted.
inline core::EndpointConfig lossy_ud_config(const char* device) {
  core::EndpointConfig c;
  c.device = device;
  c.transport = core::Transport::kUd;
  c.buffers = 512;
  c.free_queue_depth = 256;
  c.send_queue_depth = 128;
  c.recv_queue_depth = 256;
  return c;
}

}  // namespace unet::test

// In a fault test's SetUp: skip without the two-device set-up, or fail under UNET_REQUIRE_DEVICE=1.
#define UNET_REQUIRE_TWO_DEVICES()                                                     \
  do {                                                                                 \
    if (!::unet::test::two_devices()) {                                                \
      if (::unet::test::device_required())                                             \
        FAIL() << "UNET_REQUIRE_DEVICE=1 but not run under ci/rxe-vm --two-dev";       \
      GTEST_SKIP() << "needs two rxe devices across a veth pair: ci/rxe-vm --two-dev"; \
    }                                                                                  \
  } while (0)

inline void unet::test::NetemTest::SetUp() {
  UNET_REQUIRE_TWO_DEVICES();
  for (const auto& d : devs_)
    ASSERT_EQ(run("tc qdisc replace dev " + d + " root netem " + netem_ + " && echo ok"), "ok\n")
        << d;
}
