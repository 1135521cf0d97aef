// Device: the real unet_perf binary, as a server and a client process, for every test; rdma_cm,
// events, UD, a sweep, --json, a settings mismatch and an unreachable server. Each test uses its
// own TCP port. The client retries its connection until --timeout_ms, so the server is started
// first and the client right after it, with no sleep in between.
#include "perf_process.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "parse_json.h"

namespace unet::test {
namespace {

void expect_one_latency_run(const std::string& name, std::vector<std::string> args, int port,
                            double bytes, const std::string& host = "127.0.0.1") {
  Pair p = run_pair(name, args, port, host);
  ASSERT_EQ(p.client, 0) << show(p);
  ASSERT_EQ(p.server, 0) << show(p);
  auto r = rows(p.client_out);
  ASSERT_EQ(r.size(), 1u) << show(p);
  expect_latency_row(r[0], bytes, 200);
  EXPECT_NE(p.client_out.find("warm-up iterations excluded"), std::string::npos) << show(p);
}

void expect_one_bw_run(const std::string& name, std::vector<std::string> args, int port,
                       double bytes) {
  Pair p = run_pair(name, args, port);
  ASSERT_EQ(p.client, 0) << show(p);
  ASSERT_EQ(p.server, 0) << show(p);
  auto r = rows(p.client_out);
  ASSERT_EQ(r.size(), 1u) << show(p);
  expect_bw_row(r[0], bytes, 200);
}

TEST(PerfProcess, EpLatRc) {
  UNET_REQUIRE_DEVICE();
  expect_one_latency_run("ep_lat", {"--test", "ep_lat", "-s", "8", "-n", "200"}, 19101, 8);
}

TEST(PerfProcess, EpLatLargerThanInline) {
  UNET_REQUIRE_DEVICE();
  expect_one_latency_run("ep_lat_4k", {"--test", "ep_lat", "-s", "4096", "-n", "200"}, 19102, 4096);
}

TEST(PerfProcess, EpLatUd) {
  UNET_REQUIRE_DEVICE();
  expect_one_latency_run("ep_lat_ud", {"--test", "ep_lat", "-c", "UD", "-s", "8", "-n", "200"},
                         19103, 8);
}

TEST(PerfProcess, EpLatEvents) {
  UNET_REQUIRE_DEVICE();
  expect_one_latency_run("ep_lat_e", {"--test", "ep_lat", "-e", "-s", "8", "-n", "200"}, 19104, 8);
}

TEST(PerfProcess, EpLatRdmaCm) {
  UNET_REQUIRE_DEVICE();
  UNET_REQUIRE_CM_ADDRESS();
  expect_one_latency_run("ep_lat_cm", {"--test", "ep_lat", "-R", "-s", "8", "-n", "200"}, 19105, 8,
                         cm_address());
}

TEST(PerfProcess, EpBw) {
  UNET_REQUIRE_DEVICE();
  expect_one_bw_run("ep_bw", {"--test", "ep_bw", "-s", "64", "-n", "200"}, 19106, 64);
}

TEST(PerfProcess, EpBwBatchedBuffers) {
  UNET_REQUIRE_DEVICE();
  expect_one_bw_run("ep_bw_batch", {"--test", "ep_bw", "-s", "8192", "-n", "200", "--batch", "8"},
                    19107, 8192);
}

TEST(PerfProcess, EpBwEventsUd) {
  UNET_REQUIRE_DEVICE();
  expect_one_bw_run("ep_bw_ud", {"--test", "ep_bw", "-c", "UD", "-e", "-s", "512", "-n", "200"},
                    19108, 512);
}

TEST(PerfProcess, DaWriteLat) {
  UNET_REQUIRE_DEVICE();
  expect_one_latency_run("da_write_lat", {"--test", "da_write_lat", "-s", "8", "-n", "200"}, 19109,
                         8);
}

TEST(PerfProcess, DaWriteBw) {
  UNET_REQUIRE_DEVICE();
  expect_one_bw_run("da_write_bw",
                    {"--test", "da_write_bw", "-s", "65536", "-n", "200", "--batch", "4"}, 19110,
                    65536);
}

TEST(PerfProcess, DaReadLat) {
  UNET_REQUIRE_DEVICE();
  expect_one_latency_run("da_read_lat", {"--test", "da_read_lat", "-s", "64", "-n", "200"}, 19111,
                         64);
}

TEST(PerfProcess, DaReadLatEvents) {
  UNET_REQUIRE_DEVICE();
  expect_one_latency_run("da_read_lat_e",
                         {"--test", "da_read_lat", "-e", "-s", "4096", "-n", "200"}, 19112, 4096);
}

TEST(PerfProcess, UdSweepSkipsSizesAboveTheMtuWithAReason) {
  UNET_REQUIRE_DEVICE();
  Pair p = run_pair("ep_lat_ud_all",
                    {"--test", "ep_lat", "-c", "UD", "-a", "-n", "5", "--warmup", "0"}, 19113);
  ASSERT_EQ(p.client, 0) << show(p);
  ASSERT_EQ(p.server, 0) << show(p);
  auto r = rows(p.client_out);
  ASSERT_GE(r.size(), 8u) << show(p);  // 2 .. 256 at least: every path MTU is >= 256
  double expect = 2;
  for (const auto& row : r) {
    expect_latency_row(row, expect, 5);
    expect *= 2;
  }
  // Every size above the last one run is skipped, with the reason.
  std::size_t skipped = 0;
  for (std::size_t at = p.client_out.find("bytes skipped: "); at != std::string::npos;
       at = p.client_out.find("bytes skipped: ", at + 1))
    ++skipped;
  EXPECT_EQ(r.size() + skipped, 23u) << show(p);
  EXPECT_NE(p.client_out.find("exceed the UD path MTU"), std::string::npos) << show(p);
}

TEST(PerfProcess, JsonReportIsWrittenAndParses) {
  UNET_REQUIRE_DEVICE();
  const std::string path = ::testing::TempDir() + "perf_report.json";
  std::remove(path.c_str());
  Pair p = run_pair("json", {"--test", "ep_lat", "-s", "8", "-n", "200"}, 19114, "127.0.0.1", {},
                    {"--json", path});
  ASSERT_EQ(p.client, 0) << show(p);
  ASSERT_EQ(p.server, 0) << show(p);
  const std::string text = read_file(path);
  const nlohmann::json doc = parse_json(text);
  const nlohmann::json& results = doc.at("results");
  ASSERT_EQ(results.size(), 1u) << text;
  const nlohmann::json& row = results[0];
  EXPECT_EQ(row.at("MsgSize"), 8);
  EXPECT_EQ(row.at("n_iterations"), 200);
  // The same median as the table.
  auto r = rows(p.client_out);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_NEAR(row.at("t_typical").get<double>(), r[0][4], 0.006);
  EXPECT_EQ(doc.at("config").at("iterations"), 200);
  EXPECT_EQ(doc.at("config").at("role"), "client");
  EXPECT_EQ(doc.at("test_info").at("test"), "ep_lat");
}

// --ring_slot_bytes shapes both sides' rings: 100-byte messages do not fit 64-byte slots and go by
// SEND, 32-byte ones fit and go by WRITE (the counters in --json say which).
TEST(PerfProcess, RingSlotBytesDecideWhichMessagesGoByWrite) {
  UNET_REQUIRE_DEVICE();
  const std::string path = ::testing::TempDir() + "perf_ring_geometry.json";
  for (const auto& [size, by_ring] : {std::pair{"100", false}, std::pair{"32", true}}) {
    std::remove(path.c_str());
    Pair p = run_pair("ring_geometry",
                      {"--test", "ep_lat", "-s", size, "-n", "200", "--ring_slot_bytes", "64"},
                      by_ring ? 19173 : 19174, "127.0.0.1", {}, {"--json", path});
    ASSERT_EQ(p.client, 0) << show(p);
    ASSERT_EQ(p.server, 0) << show(p);
    const std::string text = read_file(path);
    const nlohmann::json doc = parse_json(text);
    EXPECT_EQ(doc.at("config").at("ring_slot_bytes"), 64) << text;
    const nlohmann::json& row = doc.at("results").at(0);
    ASSERT_TRUE(row.contains("endpoint")) << text;
    const nlohmann::json& ep = row["endpoint"];
    const double sent = ep.at("sent").get<double>();
    EXPECT_GT(sent, 200) << text;
    EXPECT_EQ(ep.at("ring_sent").get<double>(), by_ring ? sent : 0) << size << " B: " << text;
    EXPECT_EQ(ep.at("ring_fallbacks").get<double>(), by_ring ? 0 : sent) << size << " B: " << text;
  }
}

TEST(PerfProcess, MismatchedSettingsEndBothSidesWithTheSettingNamed) {
  UNET_REQUIRE_DEVICE();
  Pair p = run_pair("mismatch", {"--test", "ep_lat", "-n", "200"}, 19115, "127.0.0.1", {"-s", "8"},
                    {"-s", "16"});
  EXPECT_EQ(p.client, 1) << show(p);
  EXPECT_EQ(p.server, 1) << show(p);
  const std::string msg = "settings differ: size (-s/-a)";
  EXPECT_NE(p.client_err.find(msg), std::string::npos) << show(p);
  EXPECT_NE(p.server_err.find(msg), std::string::npos) << show(p);
  EXPECT_NE(p.client_err.find("16 on the client"), std::string::npos) << show(p);
  EXPECT_TRUE(rows(p.client_out).empty());
}

TEST(PerfProcess, UnreachableServerFailsWithinTheTimeout) {
  UNET_REQUIRE_DEVICE();
  std::vector<std::string> args = with_device({"--test", "ep_lat"}, 19116);
  args.insert(args.end(), {"--timeout_ms", "2000", "127.0.0.1"});  // the later --timeout_ms wins
  const auto start = std::chrono::steady_clock::now();
  Perf client("unreachable", args);
  const int rc = client.wait(30s);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(rc, 1) << client.err();
  EXPECT_LT(took, 15s);
  EXPECT_NE(client.err().find("127.0.0.1:19116"), std::string::npos) << client.err();
}

TEST(PerfProcess, UnknownDeviceFailsAtOnce) {
  UNET_REQUIRE_DEVICE();
  Perf server("nodev", {"--test", "ep_lat", "-d", "no_such_dev0", "-p", "19117"});
  EXPECT_EQ(server.wait(30s), 1);
  EXPECT_NE(server.err().find("no_such_dev0"), std::string::npos) << server.err();
}

}  // namespace
}  // namespace unet::test
