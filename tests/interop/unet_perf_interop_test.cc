// Device: `unet_perf --oob rc_pingpong` against the unmodified ibv_rc_pingpong, both directions —
// the compatibility mode a user points the tool they trust at. Same -s and -n on both sides; the
// tool runs with -c, so it checks our bytes too (a mismatch prints "invalid data in page").
#include <gtest/gtest.h>

#include <chrono>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "interop_support.h"

namespace unet::test {
namespace {

using namespace std::chrono_literals;

constexpr auto kWait = 120s;

std::vector<std::string> tool_args(const Device& dev, int port, const char* size, const char* iters) {
  return {"ibv_rc_pingpong", "-d", dev.name, "-g", std::to_string(dev.gid_index), "-p", std::to_string(port),
          "-s", size, "-n", iters, "-c"};
}

std::vector<std::string> perf_args(const Device& dev, int port, const char* size, const char* iters) {
  return {UNET_PERF_PATH, "--test", "ep_lat", "--oob", "rc_pingpong", "-d", dev.name, "-x",
          std::to_string(dev.gid_index), "-p", std::to_string(port), "-s", size, "-n", iters,
          "--timeout_ms", "60000"};
}

// A row of perftest's latency table for `size` bytes and `iters` iterations.
bool has_latency_row(const std::string& out, long size, long iters) {
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream f(line);
    long b = 0, n = 0;
    double t[7];
    if (!(f >> b >> n) || b != size || n != iters) continue;
    bool all = true;
    for (double& x : t) all = all && static_cast<bool>(f >> x) && x > 0;
    if (all) return true;
  }
  return false;
}

// The tool's closing lines: "<2*size*iters> bytes in ..." and "<iters> iters in ...", no complaint.
void expect_tool_done(const std::string& out, long size, long iters) {
  EXPECT_NE(out.find(std::to_string(2 * size * iters) + " bytes in "), std::string::npos) << out;
  EXPECT_NE(out.find(std::to_string(iters) + " iters in "), std::string::npos) << out;
  EXPECT_EQ(out.find("invalid data"), std::string::npos) << out;
}

TEST(UnetPerfRcPingpong, ToolServerUnetPerfClient) {
  UNET_REQUIRE_DEVICE();
  const Device dev = choose_device();
  Tool server(tool_args(dev, 18571, "4096", "200"));
  ASSERT_TRUE(server.started()) << "could not start ibv_rc_pingpong (package ibverbs-utils)";
  Tool client([&] {  // connect_rc_pingpong retries until the tool listens
    auto a = perf_args(dev, 18571, "4096", "200");
    a.push_back("127.0.0.1");
    return a;
  }());
  ASSERT_TRUE(client.started());
  const int client_rc = client.wait_exit(kWait);
  const std::string out = client.output();
  EXPECT_EQ(client_rc, 0) << out;
  EXPECT_TRUE(has_latency_row(out, 4096, 200)) << out;
  EXPECT_EQ(server.wait_exit(kWait), 0) << server.output();
  expect_tool_done(server.output(), 4096, 200);
}

TEST(UnetPerfRcPingpong, UnetPerfServerToolClient) {
  UNET_REQUIRE_DEVICE();
  const Device dev = choose_device();
  Tool server(perf_args(dev, 18572, "64", "500"));
  ASSERT_TRUE(server.started());
  // The tool's client does not retry its connection: start it again until the server listens.
  std::string tool_out;
  int tool_rc = -1;
  for (auto end = Clock::now() + 30s; Clock::now() < end;) {
    Tool client([&] {
      auto a = tool_args(dev, 18572, "64", "500");
      a.push_back("127.0.0.1");
      return a;
    }());
    ASSERT_TRUE(client.started()) << "could not start ibv_rc_pingpong (package ibverbs-utils)";
    tool_rc = client.wait_exit(kWait);
    tool_out = client.output();
    if (tool_out.find("Couldn't connect") == std::string::npos) break;
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_EQ(tool_rc, 0) << tool_out;
  expect_tool_done(tool_out, 64, 500);
  EXPECT_EQ(server.wait_exit(kWait), 0) << server.output();
}

}  // namespace
}  // namespace unet::test
