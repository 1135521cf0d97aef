// Device: unet_perf's user-level-protocol tests, dgram_lat, stream_lat and stream_bw, as a real
// server and client process on UD (the stream also on RC): both exit 0, the figures are present and
// sane, and the server counted everything (its count, read back from the client's --json report:
// datagrams or messages echoed, for stream_bw the bytes read); fragmented datagrams, multi-segment
// messages and -e too. A datagram that never comes back ends the client with a timeout that says
// so. Each test uses its own TCP port (19160 ..).
#include <gtest/gtest.h>

#include <algorithm>
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

// Runs a pair with the client writing --json; checks both exit 0, one row of `bytes` and `iters`
// with sane figures, and the server's count `server_count`.
void expect_ulp_run(const std::string& name, std::vector<std::string> args, int port, Kind kind,
                    double bytes, double iters, double server_count) {
  const std::string path = ::testing::TempDir() + "perf_" + name + ".json";
  std::remove(path.c_str());
  Pair p = run_pair(name, args, port, "127.0.0.1", {}, {"--json", path});
  ASSERT_EQ(p.client, 0) << show(p);
  ASSERT_EQ(p.server, 0) << show(p);
  // The report (figures, and a stream's retransmissions) beside any failure below.
  const std::string text = read_file(path);
  SCOPED_TRACE("client's --json report: " + text);
  auto r = rows(p.client_out);
  ASSERT_EQ(r.size(), 1u) << show(p);
  if (kind == Kind::kLat) {
    expect_latency_row(r[0], bytes, iters);
  } else {
    // The table's message rate has 6 decimals, two significant digits at 64 KiB on rxe: the rule
    // BW = rate * size is checked on the report's full-precision figures below.
    ASSERT_EQ(r[0].size(), 5u);
    EXPECT_EQ(r[0][0], bytes);
    EXPECT_EQ(r[0][1], iters);
    EXPECT_GT(r[0][3], 0);
    EXPECT_GE(r[0][2] + 0.01, r[0][3]) << "peak >= average";
  }
  const bool rc = std::find(args.begin(), args.end(), "RC") != args.end();
  const std::string transport = rc ? "RC" : "UD";
  EXPECT_NE(p.client_out.find("# user-level protocol over " + transport), std::string::npos)
      << show(p);
  EXPECT_TRUE(rows(p.server_out).empty()) << "the client measures";

  const nlohmann::json doc = parse_json(text);
  EXPECT_EQ(doc.at("test_info").at("Connection_type"), transport) << text;
  const nlohmann::json& results = doc.at("results");
  ASSERT_EQ(results.size(), 1u) << text;
  const nlohmann::json& row = results[0];
  EXPECT_EQ(row.at("MsgSize"), bytes);
  ASSERT_TRUE(row.contains("server_count")) << text;
  EXPECT_EQ(row["server_count"], server_count) << "the server counted everything";
  // A stream reports what it repaired; datagrams are never repaired.
  const bool stream = args[1] != "dgram_lat";
  EXPECT_EQ(row.contains("retransmitted_segments"), stream) << text;
  EXPECT_EQ(row.contains("retransmit_timeouts"), stream) << text;
  if (kind == Kind::kBw) {
    const double rate = row.at("MsgRate").get<double>(), avg = row.at("BW_average").get<double>();
    EXPECT_GT(rate, 0) << text;
    EXPECT_NEAR(avg, rate * 1e6 * bytes / (1 << 20), avg * 1e-9) << "BW = rate * size\n" << text;
  }
}

TEST(PerfUlpProcess, DgramLat) {
  UNET_REQUIRE_DEVICE();
  expect_ulp_run("dgram_lat", {"--test", "dgram_lat", "-s", "64", "-n", "300"}, 19160, Kind::kLat,
                 64, 300, 400);
}

TEST(PerfUlpProcess, DgramLatLargestDatagramIsFragmented) {
  UNET_REQUIRE_DEVICE();
  expect_ulp_run("dgram_lat_64k",
                 {"--test", "dgram_lat", "-s", "65536", "-n", "100", "--warmup", "10"}, 19161,
                 Kind::kLat, 65536, 100, 110);
}

TEST(PerfUlpProcess, DgramLatEvents) {
  UNET_REQUIRE_DEVICE();
  expect_ulp_run("dgram_lat_e", {"--test", "dgram_lat", "-e", "-s", "8", "-n", "200"}, 19162,
                 Kind::kLat, 8, 200, 300);
}

TEST(PerfUlpProcess, StreamLat) {
  UNET_REQUIRE_DEVICE();
  expect_ulp_run("stream_lat", {"--test", "stream_lat", "-s", "64", "-n", "300"}, 19163, Kind::kLat,
                 64, 300, 400);
}

TEST(PerfUlpProcess, StreamLatManySegmentsPerMessage) {
  UNET_REQUIRE_DEVICE();
  // 50 segments each way at rxe's usual 1024-byte MTU; small enough that a median stays within
  // the latency row's 0.1 s sanity bound on a loaded emulated VM.
  expect_ulp_run("stream_lat_big",
                 {"--test", "stream_lat", "-s", "50000", "-n", "20", "--warmup", "2"}, 19164,
                 Kind::kLat, 50000, 20, 22);
}

TEST(PerfUlpProcess, StreamBwDefaultSize) {
  UNET_REQUIRE_DEVICE();
  expect_ulp_run("stream_bw", {"--test", "stream_bw", "-n", "300"}, 19165, Kind::kBw, 65536, 300,
                 300.0 * 65536);
}

TEST(PerfUlpProcess, StreamBwSmallMessagesWithEventsAndWarmup) {
  UNET_REQUIRE_DEVICE();
  expect_ulp_run("stream_bw_e",
                 {"--test", "stream_bw", "-e", "-s", "1000", "-n", "2000", "--warmup", "100"},
                 19166, Kind::kBw, 1000, 2000, 2100.0 * 1000);
}

// --mode direct: the client's messages go zero-copy from its own memory (send_zero_copy); the
// server's byte count and the first and last messages' content are checked as for copied sends.
TEST(PerfUlpProcess, StreamBwZeroCopy) {
  UNET_REQUIRE_DEVICE();
  expect_ulp_run("stream_bw_zc",
                 {"--test", "stream_bw", "--mode", "direct", "-n", "300", "--warmup", "20"}, 19169,
                 Kind::kBw, 65536, 300, 320.0 * 65536);
}

// The stream over RC (-c RC): one 64 KiB message is one segment; the server counts every byte,
// and the latency test's echoes are checked, as over UD. Datagrams stay UD only.
TEST(PerfUlpProcess, StreamOverRc) {
  UNET_REQUIRE_DEVICE();
  expect_ulp_run("stream_lat_rc", {"--test", "stream_lat", "-c", "RC", "-s", "64", "-n", "300"},
                 19170, Kind::kLat, 64, 300, 400);
  expect_ulp_run("stream_bw_rc", {"--test", "stream_bw", "-c", "RC", "-n", "300", "--warmup", "20"},
                 19171, Kind::kBw, 65536, 300, 320.0 * 65536);
  expect_ulp_run(
      "stream_bw_rc_zc",
      {"--test", "stream_bw", "-c", "RC", "--mode", "direct", "-n", "300", "--warmup", "20"}, 19172,
      Kind::kBw, 65536, 300, 320.0 * 65536);
}

TEST(PerfUlpProcess, DatagramsOverRcAreRefusedBeforeAnyPeer) {
  UNET_REQUIRE_DEVICE();
  Perf rc("ulp_rc", with_device({"--test", "dgram_lat", "-c", "RC"}, 19167));
  EXPECT_EQ(rc.wait(30s), 1);
  EXPECT_NE(rc.err().find("-c RC: dgram_lat runs on UD only"), std::string::npos) << rc.err();
}

// A server that answers nothing (frozen: its session stays open, so only the missing echo tells)
// is what total datagram loss looks like: the client ends with a timeout naming the loss.
TEST(PerfUlpProcess, ALostDatagramIsATimeoutNotAHang) {
  UNET_REQUIRE_DEVICE();
  std::vector<std::string> args =
      with_device({"--test", "dgram_lat", "-s", "64", "-n", "5000000"}, 19168);
  Perf server("dgram_lost_server", args);
  args.insert(args.end(), {"--timeout_ms", "3000", "127.0.0.1"});  // the later --timeout_ms wins
  Perf client("dgram_lost_client", args);
  const auto start = std::chrono::steady_clock::now();
  while (client.out().find("#bytes") == std::string::npos &&
         std::chrono::steady_clock::now() - start < 60s)
    std::this_thread::sleep_for(50ms);
  ASSERT_NE(client.out().find("#bytes"), std::string::npos) << client.err() << server.err();
  // Into the round: the header comes before either side has made its endpoint, agreed the size
  // and swapped channel halves, slow under emulation (bench/perf/README.md): stopped then, the
  // client would fail on that handshake, not on the missing echo. 5M round trips take minutes.
  std::this_thread::sleep_for(3s);
  server.stop_now();
  const auto stopped = std::chrono::steady_clock::now();
  EXPECT_EQ(client.wait(30s), 1) << client.err();
  EXPECT_LT(std::chrono::steady_clock::now() - stopped, 15s);
  EXPECT_NE(client.err().find("no echo of a datagram within 3000 ms (UD loses datagrams"),
            std::string::npos)
      << client.err();
  server.kill_now();
}

}  // namespace
}  // namespace unet::test
