// Unit: perftest's bandwidth arithmetic, the ping-pong latency of every *_lat test, and the --json
// report: its shape, its strings escaped
// (any bytes), its numbers read back exactly and non-finite ones as null.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "parse_json.h"
#include "report.h"

namespace unet::perf {
namespace {

// n messages, one posted every `gap` ticks, each completed `lag` ticks after it was posted.
void steady(std::size_t n, std::uint64_t gap, std::uint64_t lag, std::vector<std::uint64_t>& posted,
            std::vector<std::uint64_t>& completed) {
  posted.resize(n);
  completed.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    posted[i] = 1000 + i * gap;
    completed[i] = posted[i] + lag;
  }
}

// Stamps 0, 100, 300, 600, 1000 at 10 ticks per microsecond: round trips of 10, 20, 30, 40 us.
TEST(PerfLatency, HalfRoundTripsInMicrosecondsWithoutTheWarmup) {
  const std::vector<std::uint64_t> stamps{0, 100, 300, 600, 1000};
  const bench::LatencyStats half = round_trip_latency(stamps, 1, 10.0);
  EXPECT_EQ(half.samples, 3u) << "the first (warm-up) round trip is left out";
  EXPECT_DOUBLE_EQ(half.min, 10.0);
  EXPECT_DOUBLE_EQ(half.max, 20.0);
  EXPECT_DOUBLE_EQ(half.avg, 15.0);
  const bench::LatencyStats full = round_trip_latency(stamps, 2, 10.0, Figure::kRoundTrip);
  EXPECT_EQ(full.samples, 2u);
  EXPECT_DOUBLE_EQ(full.min, 30.0);
  EXPECT_DOUBLE_EQ(full.max, 40.0);
  const bench::LatencyStats none = round_trip_latency(stamps, 4, 10.0);
  EXPECT_EQ(none.samples, 0u) << "all of them warm-up";
}

TEST(PerfBw, AverageAndRateFromFirstPostToLastCompletion) {
  std::vector<std::uint64_t> p, c;
  // 1000 ticks per microsecond; 100 messages of 1 MiB, one every 10 us, each done 10 us later:
  // first post to last completion = 99 * 10 + 10 = 1000 us.
  steady(100, 10000, 10000, p, c);
  BwResult r = compute_bw(p, c, 1u << 20, 1000.0);
  EXPECT_DOUBLE_EQ(r.avg_mb_s, 100.0 / 1000e-6);  // 100 MiB in 1 ms
  EXPECT_DOUBLE_EQ(r.msg_rate_mpps, 0.1);         // 100 messages in 1000 us
  // Peak: the best run is the whole one, 1000 us / 100 = 10 us per message (i = 0, j = 99);
  // a single message takes 10 us too. 1 MiB / 10 us.
  ASSERT_TRUE(r.peak_computed);
  EXPECT_DOUBLE_EQ(r.peak_mb_s, 1.0 / 10e-6);
  EXPECT_GE(r.peak_mb_s, r.avg_mb_s);
}

TEST(PerfBw, PeakIsTheBestRunOfConsecutiveMessages) {
  // Four messages of 2^20 bytes, 1 tick per microsecond. Messages 1 and 2 go fast: posted at 100
  // and 101, completed at 102 and 103 -> (103 - 100) / 2 = 1.5 us per message, the best run.
  std::vector<std::uint64_t> p = {0, 100, 101, 200}, c = {50, 102, 103, 300};
  BwResult r = compute_bw(p, c, 1u << 20, 1.0);
  ASSERT_TRUE(r.peak_computed);
  EXPECT_DOUBLE_EQ(r.peak_mb_s, 1.0 / 1.5e-6);
  EXPECT_DOUBLE_EQ(r.avg_mb_s, 4.0 / 300e-6);  // 4 MiB from 0 to 300 us
  EXPECT_DOUBLE_EQ(r.msg_rate_mpps, 4.0 / 300.0);
}

TEST(PerfBw, CoarseCompletionsStillGiveAPeak) {
  // ep_bw completes messages in groups (one credit covers several): all four at 40.
  std::vector<std::uint64_t> p = {0, 10, 20, 30}, c = {40, 40, 40, 40};
  BwResult r = compute_bw(p, c, 1000, 1.0);
  EXPECT_DOUBLE_EQ(r.peak_mb_s, 1000.0 / 10e-6 / (1 << 20));  // 4 messages in 40 us
  EXPECT_DOUBLE_EQ(r.avg_mb_s, r.peak_mb_s);
}

TEST(PerfBw, PeakIsLeftOutAboveTheLimitLikePerftest) {
  std::vector<std::uint64_t> p, c;
  steady(kMaxPeakIterations + 1, 10, 10, p, c);
  BwResult r = compute_bw(p, c, 64, 1.0);
  EXPECT_FALSE(r.peak_computed);
  EXPECT_EQ(r.peak_mb_s, 0.0);
  EXPECT_GT(r.avg_mb_s, 0.0);
}

TEST(PerfBw, EmptyOrDegenerateInputGivesZeros) {
  std::vector<std::uint64_t> none;
  EXPECT_EQ(compute_bw(none, none, 64, 1.0).avg_mb_s, 0.0);
  std::vector<std::uint64_t> p = {5}, c = {5};
  EXPECT_EQ(compute_bw(p, c, 64, 1.0).avg_mb_s, 0.0);  // zero time: no division by zero
}

TEST(PerfBw, RowLooksLikePerftests) {
  char buf[256] = {};
  std::FILE* f = fmemopen(buf, sizeof buf - 1, "w");
  print_bw_row(f, 65536, 1000, BwResult{90.5, 86.25, 0.00138, true});
  std::fclose(f);
  unsigned long long bytes = 0, iters = 0;
  double peak = 0, avg = 0, rate = 0;
  ASSERT_EQ(std::sscanf(buf, "%llu %llu %lf %lf %lf", &bytes, &iters, &peak, &avg, &rate), 5)
      << buf;
  EXPECT_EQ(bytes, 65536u);
  EXPECT_EQ(iters, 1000u);
  EXPECT_DOUBLE_EQ(peak, 90.5);
  EXPECT_DOUBLE_EQ(avg, 86.25);
  EXPECT_DOUBLE_EQ(rate, 0.00138);
}

PerfConfig config(const std::string& test, std::vector<std::string> hosts = {"127.0.0.1"}) {
  RawFlags f;
  f.test = test;
  f.hosts = std::move(hosts);
  f.device = "rxe\"0";  // a name that needs escaping
  auto r = make_config(f);
  return std::get<PerfConfig>(r);
}

using nlohmann::json;
using test::parse_json;

TEST(PerfJson, LatencyReportHasPerftestsFieldsAndTheConfiguration) {
  PerfConfig c = config("ep_lat");
  RunInfo info{"rxe\"0", 44, 2600.5};
  std::vector<SizeResult> results(2);
  results[0].bytes = 2;
  results[0].iterations = 1000;
  results[0].latency = bench::LatencyStats{1000, 1.5, 9.25, 2.0, 2.5, 0.75, 8.0, 9.0};
  results[1].bytes = 4096;
  results[1].iterations = 1000;
  results[1].skipped = "4096 bytes exceed the UD path MTU (1024 bytes)";
  const json doc = parse_json(report_json(c, info, results));

  const json& ti = doc.at("test_info");
  EXPECT_EQ(ti.at("test"), "ep_lat");
  EXPECT_EQ(ti.at("Device"), "rxe\"0");
  EXPECT_EQ(ti.at("Connection_type"), "RC");
  EXPECT_EQ(ti.at("Max_inline_data"), 44);

  const json& cfg = doc.at("config");
  EXPECT_EQ(cfg.at("role"), "client");
  EXPECT_EQ(cfg.at("iterations"), 1000);
  EXPECT_EQ(cfg.at("warmup"), 100);
  EXPECT_TRUE(cfg.at("gid_index").is_null());
  EXPECT_EQ(cfg.at("timeout_ms"), 20000);
  for (const char* k :
       {"test", "device", "ib_port", "tcp_port", "all_sizes", "sizes", "transport", "mode",
        "inline_size", "rdma_cm", "events", "batch", "oob", "host", "ticks_per_usec"})
    EXPECT_TRUE(cfg.contains(k)) << k;

  const json& res = doc.at("results");
  ASSERT_EQ(res.size(), 1u);
  const json& row = res[0];
  EXPECT_EQ(row.at("MsgSize"), 2);
  EXPECT_EQ(row.at("n_iterations"), 1000);
  EXPECT_EQ(row.at("t_min"), 1.5);
  EXPECT_EQ(row.at("t_max"), 9.25);
  EXPECT_EQ(row.at("t_typical"), 2.0);
  EXPECT_EQ(row.at("t_avg"), 2.5);
  EXPECT_EQ(row.at("t_stdev"), 0.75);
  EXPECT_EQ(row.at("percentile_99"), 8.0);
  EXPECT_EQ(row.at("percentile_99.9"), 9.0);
  EXPECT_FALSE(row.contains("BW_peak"));

  const json& skipped = doc.at("skipped");
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped[0].at("MsgSize"), 4096);
  EXPECT_EQ(skipped[0].at("reason"), results[1].skipped);
}

TEST(PerfJson, BandwidthReportHasPerftestsFields) {
  PerfConfig c = config("ep_bw", {});
  std::vector<SizeResult> results(1);
  results[0].bytes = 65536;
  results[0].iterations = 1000;
  results[0].bandwidth = BwResult{90.5, 86.25, 0.00138, true};
  const json doc = parse_json(report_json(c, RunInfo{"rxe0", 44, 1.0}, results));
  EXPECT_EQ(doc.at("config").at("role"), "server");
  const json& row = doc.at("results").at(0);
  EXPECT_EQ(row.at("BW_peak"), 90.5);
  EXPECT_EQ(row.at("BW_average"), 86.25);
  EXPECT_EQ(row.at("MsgRate"), 0.00138);
  EXPECT_EQ(row.at("BW_peak_computed"), true);
  EXPECT_FALSE(row.contains("t_typical"));
}

TEST(PerfJson, AmReportHasTheServersCountAndTheWindow) {
  RawFlags f;
  f.test = "am_bw";
  f.hosts = {"127.0.0.1"};
  f.window = 16;
  PerfConfig c = std::get<PerfConfig>(make_config(f));
  std::vector<SizeResult> results(1);
  results[0].bytes = 64;
  results[0].iterations = 1000;
  results[0].bandwidth = BwResult{2.5, 2.0, 0.03, true};
  results[0].server_count = 1000;
  results[0].am_retransmitted = 7;
  results[0].am_duplicates = 3;
  RunInfo info{"rxe0", 44, 1.0};
  info.am_limit = 65535;
  const json doc = parse_json(report_json(c, info, results));
  EXPECT_EQ(doc.at("test_info").at("test"), "am_bw");
  EXPECT_EQ(doc.at("config").at("am_window"), 16);
  EXPECT_EQ(doc.at("config").at("am_args"), 1);
  EXPECT_EQ(doc.at("config").at("am_max_payload"), 65535);
  const json& row = doc.at("results").at(0);
  EXPECT_EQ(row.at("server_count"), 1000);
  EXPECT_EQ(row.at("am_retransmitted"), 7);
  EXPECT_EQ(row.at("am_duplicates"), 3);
  EXPECT_EQ(row.at("MsgRate"), 0.03);
  // Other tests have neither the count nor the window.
  const json ep = parse_json(report_json(config("ep_bw", {}), info, std::vector<SizeResult>(1)));
  EXPECT_FALSE(ep.at("results").at(0).contains("server_count"));
  EXPECT_FALSE(ep.at("results").at(0).contains("am_retransmitted"));
  EXPECT_FALSE(ep.at("config").contains("am_window"));
}

TEST(PerfJson, NamesThePeerTool) {
  for (const char* oob : {"unet", "rc_pingpong", "ib_send_lat"}) {
    RawFlags f;
    f.test = "ep_lat";
    f.hosts = {"127.0.0.1"};
    f.oob = oob;
    const json doc =
        parse_json(report_json(std::get<PerfConfig>(make_config(f)), RunInfo{"rxe0", 44, 1.0}, {}));
    EXPECT_EQ(doc.at("config").at("oob"), oob);
  }
}

// Names come from the command line and skip reasons may quote them: quotes, backslashes, control
// characters and UTF-8 read back unchanged; bytes that are not UTF-8 become U+FFFD, and the
// report stays JSON.
TEST(PerfJson, StringsOfAnyBytesKeepTheReportValid) {
  const std::string odd = std::string("a\"b\\c l1\nl2\tx\r\b\f nul\0bell\x07\x1f µs", 31);
  RawFlags f;
  f.test = "ep_lat";
  f.hosts = {odd};
  f.device = odd;
  PerfConfig c = std::get<PerfConfig>(make_config(f));
  std::vector<SizeResult> results(1);
  results[0].bytes = 8;
  results[0].skipped = "not UTF-8: \xff\xfe, cut short: \xc3";
  const json doc = parse_json(report_json(c, RunInfo{odd, 44, 1.0}, results));
  EXPECT_EQ(doc.at("test_info").at("Device"), odd);
  EXPECT_EQ(doc.at("config").at("device"), odd);
  EXPECT_EQ(doc.at("config").at("host"), odd);
  EXPECT_EQ(doc.at("skipped").at(0).at("reason"),
            "not UTF-8: \xef\xbf\xbd\xef\xbf\xbd, cut short: \xef\xbf\xbd");
}

// Figures read back exactly (the shortest text that does), counters up to 2^64 - 1 too, and a
// figure that is not finite is null.
TEST(PerfJson, NumbersReadBackExactlyAndNonFiniteOnesAsNull) {
  std::vector<SizeResult> results(1);
  results[0].bytes = 8;
  results[0].iterations = 1000;
  results[0].latency = bench::LatencyStats{1000,   0.1, 12.345678901234567, 1e-9, 123456789.0,
                                           -0.125, 0.0, std::nan("")};
  results[0].endpoint = core::EndpointStats{};
  results[0].endpoint->sent = std::numeric_limits<std::uint64_t>::max();
  const json doc = parse_json(report_json(config("ep_lat"), RunInfo{"rxe0", 44, 1.0}, results));
  const json& row = doc.at("results").at(0);
  EXPECT_EQ(row.at("t_min").get<double>(), 0.1);
  EXPECT_EQ(row.at("t_max").get<double>(), 12.345678901234567);
  EXPECT_EQ(row.at("t_typical").get<double>(), 1e-9);
  EXPECT_EQ(row.at("t_avg").get<double>(), 123456789.0);
  EXPECT_EQ(row.at("t_stdev").get<double>(), -0.125);
  EXPECT_EQ(row.at("percentile_99").get<double>(), 0.0);
  EXPECT_TRUE(row.at("percentile_99.9").is_null());
  EXPECT_EQ(row.at("endpoint").at("sent").get<std::uint64_t>(),
            std::numeric_limits<std::uint64_t>::max());
}

TEST(PerfBanner, StatesWarmupExclusionAndWhatIsMeasured) {
  RunInfo info{"rxe0", 44, 2600.0};
  std::string b = banner(config("ep_lat"), info);
  EXPECT_EQ(b.rfind("# unet_perf ep_lat: RC base-level", 0), 0u) << b;
  EXPECT_NE(b.find("100 warm-up iterations excluded"), std::string::npos) << b;
  EXPECT_NE(b.find("half the round trip"), std::string::npos) << b;
  b = banner(config("da_read_lat"), info);
  EXPECT_NE(b.find("full READ round trip"), std::string::npos) << b;
  for (std::size_t at = 0; at < b.size(); at = b.find('\n', at) + 1) EXPECT_EQ(b[at], '#') << b;
  info.am_limit = 1000;
  b = banner(config("am_lat", {}), info);
  EXPECT_EQ(b.rfind("# unet_perf am_lat: RC base-level, active-message request/reply", 0), 0u) << b;
  EXPECT_NE(
      b.find(
          "1 argument word + -s payload bytes behind a 16-byte header; payload up to 1000 bytes"),
      std::string::npos)
      << b;
  EXPECT_NE(b.find("credit window 8 requests"), std::string::npos) << b;
  EXPECT_NE(b.find("half the round trip"), std::string::npos) << b;
  for (std::size_t at = 0; at < b.size(); at = b.find('\n', at) + 1) EXPECT_EQ(b[at], '#') << b;
}

}  // namespace
}  // namespace unet::perf
