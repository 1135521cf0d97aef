// Device: unet_perf's active-message tests, am_lat and am_bw, as a real server and client process
// on RC and UD: the figures are present and sane, the server counted every message (its count,
// read back from the client's --json report, is warm-up + iterations), and the payload limits,
// sweeps, events, rdma_cm, small and large windows, and the settings check hold. Each test uses
// its own TCP port (19130 ..).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "parse_json.h"
#include "perf_process.h"

namespace unet::test {
namespace {

enum class Kind { kLat, kBw };

// Runs a pair with the client writing --json, checks both exit 0, that the table has one row of
// `bytes` and `iters` with sane figures, and that the server counted iters + warmup messages.
void expect_am_run(const std::string& name, std::vector<std::string> args, int port, Kind kind,
                   double bytes, double iters = 200, double warmup = -1,
                   const std::string& host = "127.0.0.1") {
  if (warmup < 0) warmup = kind == Kind::kLat ? 100 : 0;  // unet_perf's defaults
  const std::string path = ::testing::TempDir() + "perf_" + name + ".json";
  std::remove(path.c_str());
  Pair p = run_pair(name, args, port, host, {}, {"--json", path});
  ASSERT_EQ(p.client, 0) << show(p);
  ASSERT_EQ(p.server, 0) << show(p);
  auto r = rows(p.client_out);
  ASSERT_EQ(r.size(), 1u) << show(p);
  if (kind == Kind::kLat)
    expect_latency_row(r[0], bytes, iters);
  else
    expect_bw_row(r[0], bytes, iters);
  EXPECT_NE(p.client_out.find("# active messages: 1 argument word"), std::string::npos) << show(p);
  EXPECT_TRUE(rows(p.server_out).empty()) << "the client measures";

  const std::string text = read_file(path);
  const nlohmann::json doc = parse_json(text);
  const nlohmann::json& results = doc.at("results");
  ASSERT_EQ(results.size(), 1u) << text;
  const nlohmann::json& row = results[0];
  EXPECT_EQ(row.at("MsgSize"), bytes);
  ASSERT_TRUE(row.contains("server_count")) << text;
  EXPECT_EQ(row["server_count"], iters + warmup) << "every message ran its handler once";
  ASSERT_TRUE(row.contains("am_retransmitted") && row.contains("am_duplicates")) << text;
  if (kind == Kind::kLat) {
    EXPECT_GT(row.at("t_typical").get<double>(), 0) << text;
  } else {
    EXPECT_GT(row.at("MsgRate").get<double>(), 0) << text;
    EXPECT_GT(row.at("BW_average").get<double>(), 0) << text;
  }
}

// The largest payload unet_perf reports for `test` on `transport` (--limits, no peer).
std::uint32_t limit_of(const std::string& test, const std::string& transport) {
  std::vector<std::string> args = with_device({"--test", test, "-c", transport, "--limits"}, 19149);
  Perf probe("limits_" + test + transport, args);
  const int rc = probe.wait(30s);
  const std::string out = probe.out();
  EXPECT_EQ(rc, 0) << out << probe.err();
  unsigned long v = 0;
  EXPECT_EQ(std::sscanf(out.c_str(), "max_size %lu", &v), 1) << out;
  return static_cast<std::uint32_t>(v);
}

TEST(PerfAmProcess, LimitsAreUamsLengthOnRcAndTheMtuOnUd) {
  UNET_REQUIRE_DEVICE();
  EXPECT_EQ(limit_of("am_lat", "RC"), 65535u);
  const std::uint32_t ud = limit_of("am_bw", "UD");
  EXPECT_GE(ud, 256u - 24u) << "every path MTU is at least 256";
  EXPECT_LE(ud, 4096u - 24u);
  EXPECT_EQ(ud % 8, 0u) << "an IB MTU (a power of two) less the 24-byte header";
  // One byte more fails at once, before any peer, naming the limit.
  Perf over("am_over",
            with_device({"--test", "am_lat", "-c", "UD", "-s", std::to_string(ud + 1)}, 19150));
  EXPECT_EQ(over.wait(30s), 1);
  EXPECT_NE(over.err().find("exceeds the largest active-message payload on UD (" +
                            std::to_string(ud) + " bytes"),
            std::string::npos)
      << over.err();
}

TEST(PerfAmProcess, AmLatRc) {
  UNET_REQUIRE_DEVICE();
  expect_am_run("am_lat", {"--test", "am_lat", "-s", "8", "-n", "200"}, 19130, Kind::kLat, 8);
}

TEST(PerfAmProcess, AmLatRcLargestPayload) {
  UNET_REQUIRE_DEVICE();
  expect_am_run("am_lat_max", {"--test", "am_lat", "-s", "65535", "-n", "200", "--warmup", "10"},
                19131, Kind::kLat, 65535, 200, 10);
}

TEST(PerfAmProcess, AmLatUd) {
  UNET_REQUIRE_DEVICE();
  expect_am_run("am_lat_ud", {"--test", "am_lat", "-c", "UD", "-s", "8", "-n", "200"}, 19132,
                Kind::kLat, 8);
}

TEST(PerfAmProcess, AmLatUdLargestPayload) {
  UNET_REQUIRE_DEVICE();
  const std::uint32_t ud = limit_of("am_lat", "UD");
  ASSERT_GT(ud, 0u);
  expect_am_run("am_lat_ud_max",
                {"--test", "am_lat", "-c", "UD", "-s", std::to_string(ud), "-n", "200"}, 19133,
                Kind::kLat, ud);
}

TEST(PerfAmProcess, AmLatEvents) {
  UNET_REQUIRE_DEVICE();
  expect_am_run("am_lat_e", {"--test", "am_lat", "-e", "-s", "64", "-n", "200"}, 19134, Kind::kLat,
                64);
}

TEST(PerfAmProcess, AmLatRdmaCm) {
  UNET_REQUIRE_DEVICE();
  UNET_REQUIRE_CM_ADDRESS();
  expect_am_run("am_lat_cm", {"--test", "am_lat", "-R", "-s", "8", "-n", "200"}, 19135, Kind::kLat,
                8, 200, 100, cm_address());
}

TEST(PerfAmProcess, AmBwRc) {
  UNET_REQUIRE_DEVICE();
  expect_am_run("am_bw", {"--test", "am_bw", "-s", "64", "-n", "200"}, 19136, Kind::kBw, 64);
}

TEST(PerfAmProcess, AmBwRcDefaultIsTheLargestPayloadBatched) {
  UNET_REQUIRE_DEVICE();
  expect_am_run("am_bw_max", {"--test", "am_bw", "-n", "200", "--batch", "8"}, 19137, Kind::kBw,
                65535);
}

TEST(PerfAmProcess, AmBwUd) {
  UNET_REQUIRE_DEVICE();
  expect_am_run("am_bw_ud",
                {"--test", "am_bw", "-c", "UD", "-s", "512", "-n", "200", "--batch", "4"}, 19138,
                Kind::kBw, 512);
}

TEST(PerfAmProcess, AmBwUdDefaultIsTheUdLimitWithTheLargestWindow) {
  UNET_REQUIRE_DEVICE();
  const std::uint32_t ud = limit_of("am_bw", "UD");
  ASSERT_GT(ud, 0u);
  expect_am_run("am_bw_ud_max",
                {"--test", "am_bw", "-c", "UD", "-n", "400", "--window", "127", "--batch", "64"},
                19139, Kind::kBw, ud, 400);
}

TEST(PerfAmProcess, AmBwEventsWithAWindowOfOne) {
  UNET_REQUIRE_DEVICE();
  expect_am_run(
      "am_bw_e",
      {"--test", "am_bw", "-e", "--window", "1", "-s", "4096", "-n", "200", "--warmup", "20"},
      19140, Kind::kBw, 4096, 200, 20);
}

TEST(PerfAmProcess, UdSweepEndsAtTheLargestPayload) {
  UNET_REQUIRE_DEVICE();
  const std::uint32_t ud = limit_of("am_lat", "UD");
  Pair p = run_pair("am_lat_ud_all",
                    {"--test", "am_lat", "-c", "UD", "-a", "-n", "5", "--warmup", "0"}, 19141);
  ASSERT_EQ(p.client, 0) << show(p);
  ASSERT_EQ(p.server, 0) << show(p);
  auto r = rows(p.client_out);
  std::vector<double> sizes;
  for (double s = 2; s < ud; s *= 2) sizes.push_back(s);
  sizes.push_back(ud);
  ASSERT_EQ(r.size(), sizes.size()) << show(p);
  for (std::size_t k = 0; k < r.size(); ++k) expect_latency_row(r[k], sizes[k], 5);
  EXPECT_EQ(p.client_out.find("skipped"), std::string::npos)
      << "the sweep stops at the limit" << show(p);
}

TEST(PerfAmProcess, MismatchedWindowEndsBothSidesWithTheSettingNamed) {
  UNET_REQUIRE_DEVICE();
  Pair p = run_pair("am_mismatch", {"--test", "am_bw", "-s", "64", "-n", "200"}, 19142, "127.0.0.1",
                    {"--window", "4"}, {"--window", "16"});
  EXPECT_EQ(p.client, 1) << show(p);
  EXPECT_EQ(p.server, 1) << show(p);
  const std::string msg =
      "settings differ: window (--window) is 4 on the server but 16 on the client";
  EXPECT_NE(p.client_err.find(msg), std::string::npos) << show(p);
  EXPECT_NE(p.server_err.find(msg), std::string::npos) << show(p);
  EXPECT_TRUE(rows(p.client_out).empty());
}

// A client that dies mid-round ends the server within seconds, not after --timeout_ms: the server
// watches the session while it waits for requests.
TEST(PerfAmProcess, ServerLeavesSoonWhenTheClientDies) {
  UNET_REQUIRE_DEVICE();
  std::vector<std::string> args =
      with_device({"--test", "am_lat", "-s", "8", "-n", "5000000"}, 19143);
  args.insert(args.end(), {"--timeout_ms", "120000"});  // the later --timeout_ms wins
  Perf server("am_dies_server", args);
  args.push_back("127.0.0.1");
  Perf client("am_dies_client", args);
  const auto start = std::chrono::steady_clock::now();
  while (client.out().find("#bytes") == std::string::npos &&
         std::chrono::steady_clock::now() - start < 60s)
    std::this_thread::sleep_for(50ms);
  ASSERT_NE(client.out().find("#bytes"), std::string::npos) << client.err() << server.err();
  std::this_thread::sleep_for(1s);  // into the round (5 million round trips take minutes)
  client.kill_now();
  EXPECT_NE(client.wait(10s), 0);
  const auto killed = std::chrono::steady_clock::now();
  EXPECT_EQ(server.wait(60s), 1) << server.err();
  EXPECT_LT(std::chrono::steady_clock::now() - killed, 15s);
  EXPECT_NE(server.err().find("the client left the round while waiting for"), std::string::npos)
      << server.err();
}

}  // namespace
}  // namespace unet::test
