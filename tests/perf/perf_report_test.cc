// Unit: perftest's bandwidth arithmetic, the JSON writer (escaping, commas, numbers) and the shape
// of the --json report.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <variant>
#include <vector>

#include "json_check.h"
#include "json_writer.h"
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

TEST(PerfJson, StringsAreEscaped) {
  EXPECT_EQ(json_quote("plain"), "\"plain\"");
  EXPECT_EQ(json_quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(json_quote("l1\nl2\tx\r\b\f"), "\"l1\\nl2\\tx\\r\\b\\f\"");
  EXPECT_EQ(json_quote(std::string("nul\0bell\x07", 9)), "\"nul\\u0000bell\\u0007\"");
  EXPECT_EQ(json_quote("\x1f"), "\"\\u001f\"");
  EXPECT_EQ(json_quote("µs"), "\"µs\"");  // UTF-8 passes through
  EXPECT_EQ(json_quote(""), "\"\"");
}

TEST(PerfJson, WriterPlacesCommasAndFormatsValues) {
  JsonWriter w;
  w.begin_object();
  w.key("a").value(1);
  w.key("b").begin_array().value(true).value(false).null().value("x").end_array();
  w.key("c").begin_object().end_object();
  w.key("d").value(2.5);
  w.key("e").value(std::uint64_t{18446744073709551615ull});
  w.key("f").value(std::nan(""));
  w.key("g").value(-0.125);
  w.key("k\"ey")
      .begin_array()
      .begin_object()
      .key("z")
      .value(std::int64_t{-3})
      .end_object()
      .end_array();
  w.end_object();
  EXPECT_EQ(w.str(),
            "{\"a\":1,\"b\":[true,false,null,\"x\"],\"c\":{},\"d\":2.5,\"e\":18446744073709551615,"
            "\"f\":null,\"g\":-0.125,\"k\\\"ey\":[{\"z\":-3}]}");
  test::JsonReader reader;
  EXPECT_TRUE(reader.parse(w.str()).has_value()) << reader.error();
}

TEST(PerfJson, DoublesReadBackExactly) {
  for (double d : {0.1, 12.345678901234567, 1e-9, 123456789.0, 0.0}) {
    JsonWriter w;
    w.begin_array().value(d).end_array();
    test::JsonReader reader;
    auto doc = reader.parse(w.str());
    ASSERT_TRUE(doc.has_value()) << w.str();
    EXPECT_EQ(doc->array.at(0).number, d) << w.str();
  }
}

PerfConfig config(const std::string& test, std::vector<std::string> hosts = {"127.0.0.1"}) {
  RawFlags f;
  f.test = test;
  f.hosts = std::move(hosts);
  f.device = "rxe\"0";  // a name that needs escaping
  auto r = make_config(f);
  return std::get<PerfConfig>(r);
}

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
  const std::string text = report_json(c, info, results);
  test::JsonReader reader;
  auto doc = reader.parse(text);
  ASSERT_TRUE(doc.has_value()) << reader.error() << "\n" << text;

  const test::Json* ti = doc->get("test_info");
  ASSERT_TRUE(ti);
  EXPECT_EQ(ti->get("test")->string, "ep_lat");
  EXPECT_EQ(ti->get("Device")->string, "rxe\"0");
  EXPECT_EQ(ti->get("Connection_type")->string, "RC");
  EXPECT_EQ(ti->get("Max_inline_data")->number, 44);

  const test::Json* cfg = doc->get("config");
  ASSERT_TRUE(cfg);
  EXPECT_EQ(cfg->get("role")->string, "client");
  EXPECT_EQ(cfg->get("iterations")->number, 1000);
  EXPECT_EQ(cfg->get("warmup")->number, 100);
  EXPECT_EQ(cfg->get("gid_index")->kind, test::Json::Kind::kNull);
  EXPECT_EQ(cfg->get("timeout_ms")->number, 20000);
  for (const char* k :
       {"test", "device", "ib_port", "tcp_port", "all_sizes", "sizes", "transport", "mode",
        "inline_size", "rdma_cm", "events", "batch", "oob", "host", "ticks_per_usec"})
    EXPECT_TRUE(cfg->get(k)) << k;

  const test::Json* res = doc->get("results");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->array.size(), 1u);
  const test::Json& row = res->array[0];
  EXPECT_EQ(row.get("MsgSize")->number, 2);
  EXPECT_EQ(row.get("n_iterations")->number, 1000);
  EXPECT_EQ(row.get("t_min")->number, 1.5);
  EXPECT_EQ(row.get("t_max")->number, 9.25);
  EXPECT_EQ(row.get("t_typical")->number, 2.0);
  EXPECT_EQ(row.get("t_avg")->number, 2.5);
  EXPECT_EQ(row.get("t_stdev")->number, 0.75);
  EXPECT_EQ(row.get("percentile_99")->number, 8.0);
  EXPECT_EQ(row.get("percentile_99.9")->number, 9.0);
  EXPECT_FALSE(row.get("BW_peak"));

  const test::Json* skipped = doc->get("skipped");
  ASSERT_TRUE(skipped);
  ASSERT_EQ(skipped->array.size(), 1u);
  EXPECT_EQ(skipped->array[0].get("MsgSize")->number, 4096);
  EXPECT_EQ(skipped->array[0].get("reason")->string, results[1].skipped);
}

TEST(PerfJson, BandwidthReportHasPerftestsFields) {
  PerfConfig c = config("ep_bw", {});
  std::vector<SizeResult> results(1);
  results[0].bytes = 65536;
  results[0].iterations = 1000;
  results[0].bandwidth = BwResult{90.5, 86.25, 0.00138, true};
  test::JsonReader reader;
  auto doc = reader.parse(report_json(c, RunInfo{"rxe0", 44, 1.0}, results));
  ASSERT_TRUE(doc.has_value()) << reader.error();
  EXPECT_EQ(doc->get("config")->get("role")->string, "server");
  const test::Json& row = doc->get("results")->array.at(0);
  EXPECT_EQ(row.get("BW_peak")->number, 90.5);
  EXPECT_EQ(row.get("BW_average")->number, 86.25);
  EXPECT_EQ(row.get("MsgRate")->number, 0.00138);
  EXPECT_TRUE(row.get("BW_peak_computed")->boolean);
  EXPECT_FALSE(row.get("t_typical"));
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
  test::JsonReader reader;
  auto doc = reader.parse(report_json(c, info, results));
  ASSERT_TRUE(doc.has_value()) << reader.error();
  EXPECT_EQ(doc->get("test_info")->get("test")->string, "am_bw");
  EXPECT_EQ(doc->get("config")->get("am_window")->number, 16);
  EXPECT_EQ(doc->get("config")->get("am_args")->number, 1);
  EXPECT_EQ(doc->get("config")->get("am_max_payload")->number, 65535);
  const test::Json& row = doc->get("results")->array.at(0);
  EXPECT_EQ(row.get("server_count")->number, 1000);
  EXPECT_EQ(row.get("am_retransmitted")->number, 7);
  EXPECT_EQ(row.get("am_duplicates")->number, 3);
  EXPECT_EQ(row.get("MsgRate")->number, 0.03);
  // Other tests have neither the count nor the window.
  auto ep = reader.parse(report_json(config("ep_bw", {}), info, std::vector<SizeResult>(1)));
  ASSERT_TRUE(ep.has_value());
  EXPECT_FALSE(ep->get("results")->array.at(0).get("server_count"));
  EXPECT_FALSE(ep->get("results")->array.at(0).get("am_retransmitted"));
  EXPECT_FALSE(ep->get("config")->get("am_window"));
}

TEST(PerfJson, NamesThePeerTool) {
  for (const char* oob : {"unet", "rc_pingpong", "ib_send_lat"}) {
    RawFlags f;
    f.test = "ep_lat";
    f.hosts = {"127.0.0.1"};
    f.oob = oob;
    test::JsonReader reader;
    auto doc = reader.parse(
        report_json(std::get<PerfConfig>(make_config(f)), RunInfo{"rxe0", 44, 1.0}, {}));
    ASSERT_TRUE(doc.has_value()) << reader.error();
    EXPECT_EQ(doc->get("config")->get("oob")->string, oob);
  }
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
