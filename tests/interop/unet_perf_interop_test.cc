// Device: `unet_perf --oob rc_pingpong` against the unmodified ibv_rc_pingpong, and `unet_perf
// --oob ib_send_lat` against perftest's ib_send_lat (plain and -R), both directions — the
// compatibility modes a user points the tools they trust at. Same -s and -n on both sides;
// ibv_rc_pingpong runs with -c, so it checks our bytes too (a mismatch prints "invalid data in
// page").
#include <gtest/gtest.h>

#include <chrono>
#include <ostream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "interop_support.h"

namespace unet::test {
namespace {

using namespace std::chrono_literals;

constexpr auto kWait = 120s;

std::vector<std::string> tool_args(const Device& dev, int port, const char* size,
                                   const char* iters) {
  return {"ibv_rc_pingpong",
          "-d",
          dev.name,
          "-g",
          std::to_string(dev.gid_index),
          "-p",
          std::to_string(port),
          "-s",
          size,
          "-n",
          iters,
          "-c"};
}

std::vector<std::string> perf_args(const Device& dev, int port, const char* size,
                                   const char* iters) {
  return {UNET_PERF_PATH,
          "--test",
          "ep_lat",
          "--oob",
          "rc_pingpong",
          "-d",
          dev.name,
          "-x",
          std::to_string(dev.gid_index),
          "-p",
          std::to_string(port),
          "-s",
          size,
          "-n",
          iters,
          "--timeout_ms",
          "60000"};
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

// The tool's own result row for `size` and `iters`: its figures must be numbers unless it says
// its clock calibration failed (under emulation perftest's cycle-counter fit sometimes falls below
// r^2 0.9, and it prints "inf" whatever the peer did).
bool tool_reported(const std::string& out, long size, long iters) {
  if (has_latency_row(out, size, iters)) return true;
  if (out.find("Correlation coefficient r^2") == std::string::npos) return false;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream f(line);
    long b = 0, n = 0;
    if (f >> b >> n && b == size && n == iters) return true;
  }
  return false;
}

// The tool's closing lines: "<2*size*iters> bytes in ..." and "<iters> iters in ...", no complaint.
void expect_tool_done(const std::string& out, long size, long iters) {
  EXPECT_NE(out.find(std::to_string(2 * size * iters) + " bytes in "), std::string::npos) << out;
  EXPECT_NE(out.find(std::to_string(iters) + " iters in "), std::string::npos) << out;
  EXPECT_EQ(out.find("invalid data"), std::string::npos) << out;
}

// Runs a tool's client against a unet_perf server that may not listen yet: its client does not
// retry, so it is started again while it reports that it could not connect.
std::pair<int, std::string> run_tool_client(const std::vector<std::string>& args) {
  std::string out;
  int rc = -1;
  for (auto end = Clock::now() + 30s; Clock::now() < end;) {
    Tool client(args);
    if (!client.started()) return {-1, "could not start " + args.front()};
    rc = client.wait_exit(kWait);
    out = client.output();
    const bool not_up = out.find("Couldn't connect") != std::string::npos ||
                        out.find("Unable to perform rdma_client") != std::string::npos;
    if (!not_up) break;
    std::this_thread::sleep_for(200ms);
  }
  return {rc, out};
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
  const auto [tool_rc, tool_out] = run_tool_client([&] {
    auto a = tool_args(dev, 18572, "64", "500");
    a.push_back("127.0.0.1");
    return a;
  }());
  EXPECT_EQ(tool_rc, 0) << tool_out;
  expect_tool_done(tool_out, 64, 500);
  EXPECT_EQ(server.wait_exit(kWait), 0) << server.output();
}

struct SendLatCase {
  bool rdma_cm;
  int port;
};

void PrintTo(const SendLatCase& c, std::ostream* os) {
  *os << (c.rdma_cm ? "-R" : "TCP") << ", port " << c.port;
}

class UnetPerfIbSendLat : public ::testing::TestWithParam<SendLatCase> {};

std::vector<std::string> ib_send_lat_args(const Device& dev, const SendLatCase& c) {
  std::vector<std::string> a = {"ib_send_lat",
                                "-d",
                                dev.name,
                                "-x",
                                std::to_string(dev.gid_index),
                                "-p",
                                std::to_string(c.port),
                                "-s",
                                "8",
                                "-n",
                                "500",
                                "-F"};
  if (c.rdma_cm) a.push_back("-R");
  return a;
}

std::vector<std::string> perf_send_lat_args(const Device& dev, const SendLatCase& c) {
  auto a = perf_args(dev, c.port, "8", "500");
  a[4] = "ib_send_lat";  // --oob
  if (c.rdma_cm) a.push_back("-R");
  return a;
}

TEST_P(UnetPerfIbSendLat, ToolServerUnetPerfClient) {
  UNET_REQUIRE_DEVICE();
  const SendLatCase c = GetParam();
  const Device dev = choose_device();
  const std::string host = c.rdma_cm ? device_ipv4(dev) : "127.0.0.1";
  if (host.empty()) GTEST_SKIP() << "the device's GID is not IPv4-mapped: no address for rdma_cm";
  Tool server(ib_send_lat_args(dev, c));
  ASSERT_TRUE(server.started()) << "could not start ib_send_lat (package perftest)";
  auto args = perf_send_lat_args(dev, c);
  args.push_back(host);
  Tool client(args);  // the connector retries until the tool listens
  ASSERT_TRUE(client.started());
  const int rc = client.wait_exit(kWait);
  EXPECT_EQ(rc, 0) << client.output() << "\n--- ib_send_lat:\n" << server.output();
  EXPECT_TRUE(has_latency_row(client.output(), 8, 500)) << client.output();
  EXPECT_EQ(server.wait_exit(kWait), 0) << server.output();
}

TEST_P(UnetPerfIbSendLat, UnetPerfServerToolClient) {
  UNET_REQUIRE_DEVICE();
  const SendLatCase c = GetParam();
  const Device dev = choose_device();
  const std::string host = c.rdma_cm ? device_ipv4(dev) : "127.0.0.1";
  if (host.empty()) GTEST_SKIP() << "the device's GID is not IPv4-mapped: no address for rdma_cm";
  Tool server(perf_send_lat_args(dev, c));
  ASSERT_TRUE(server.started());
  auto args = ib_send_lat_args(dev, c);
  args.push_back(host);
  const auto [rc, out] = run_tool_client(args);
  EXPECT_EQ(rc, 0) << out << "\n--- unet_perf:\n" << server.output();
  EXPECT_TRUE(tool_reported(out, 8, 500)) << out;  // the tool's own table
  EXPECT_EQ(server.wait_exit(kWait), 0) << server.output();
}

INSTANTIATE_TEST_SUITE_P(Modes, UnetPerfIbSendLat,
                         ::testing::Values(SendLatCase{false, 18573}, SendLatCase{true, 18574}),
                         [](const ::testing::TestParamInfo<SendLatCase>& i) {
                           return std::string(i.param.rdma_cm ? "RdmaCm" : "Tcp");
                         });

}  // namespace
}  // namespace unet::test
