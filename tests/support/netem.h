// Helpers for fault tests on the two-device veth set-up (ci/rxe-vm --two-dev): run a shell
// command, read a qdisc's drop counter, and the skip-or-fail rule for that set-up.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "device_env.h"

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

// True under ci/rxe-vm --two-dev (rxe0 on veth0, rxe1 on veth1, traffic crossing the pair).
inline bool two_devices() {
  const char* mode = std::getenv("UNET_RXE_MODE");
  return mode && std::string(mode) == "two";
}

}  // namespace unet::test

// In a fault test's SetUp: skip without the two-device set-up, or fail under UNET_REQUIRE_DEVICE=1.
#define UNET_REQUIRE_TWO_DEVICES()                                                        \
  do {                                                                                    \
    if (!::unet::test::two_devices()) {                                                   \
      if (::unet::test::device_required())                                                \
        FAIL() << "UNET_REQUIRE_DEVICE=1 but not run under ci/rxe-vm --two-dev";          \
      GTEST_SKIP() << "needs two rxe devices across a veth pair: ci/rxe-vm --two-dev";    \
    }                                                                                     \
  } while (0)
