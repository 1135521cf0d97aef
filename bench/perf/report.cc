#include "report.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

namespace unet::perf {
namespace {

constexpr double kMB = 1024.0 * 1024.0;  // perftest's 0x100000

}  // namespace

BwResult compute_bw(std::span<const std::uint64_t> posted, std::span<const std::uint64_t> completed,
                    std::uint64_t bytes, double ticks_per_us) {
  BwResult r;
  const std::size_t n = std::min(posted.size(), completed.size());
  if (n == 0 || ticks_per_us <= 0) return r;
  const double total_us = static_cast<double>(completed[n - 1] - posted[0]) / ticks_per_us;
  if (total_us <= 0) return r;
  r.avg_mb_s = static_cast<double>(bytes) * static_cast<double>(n) / total_us * 1e6 / kMB;
  r.msg_rate_mpps = static_cast<double>(n) / total_us;  // per microsecond = millions per second
  if (n > kMaxPeakIterations) return r;
  double best = std::numeric_limits<double>::infinity();  // fewest ticks per message
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i; j < n; ++j) {
      if (completed[j] < posted[i]) continue;  // cannot happen with one clock; never divide by it
      const double per_msg =
          static_cast<double>(completed[j] - posted[i]) / static_cast<double>(j - i + 1);
      best = std::min(best, per_msg);
    }
  if (best > 0 && best < std::numeric_limits<double>::infinity()) {
    r.peak_mb_s = static_cast<double>(bytes) / (best / ticks_per_us) * 1e6 / kMB;
    r.peak_computed = true;
  }
  return r;
}

bench::LatencyStats round_trip_latency(std::span<const std::uint64_t> stamps, std::uint64_t warmup,
                                       double ticks_per_us, Figure figure) {
  std::vector<double> us;
  us.reserve(stamps.size() > warmup ? stamps.size() - warmup - 1 : 0);
  for (std::size_t k = warmup; k + 1 < stamps.size(); ++k) {
    const double rtt = static_cast<double>(stamps[k + 1] - stamps[k]) / ticks_per_us;
    us.push_back(figure == Figure::kRoundTrip ? rtt : rtt / 2);
  }
  return bench::compute_latency(us);
}

void print_bw_header(std::FILE* out) {
  std::fprintf(
      out, " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n");
}

void print_bw_row(std::FILE* out, std::uint64_t bytes, std::uint64_t iterations,
                  const BwResult& r) {
  std::fprintf(out, " %-7llu    %-10llu       %-7.2f            %-7.2f\t\t   %-7.6f\n",
               static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(iterations),
               r.peak_mb_s, r.avg_mb_s, r.msg_rate_mpps);
}

std::string banner(const PerfConfig& c, const RunInfo& info) {
  std::string b = "# unet_perf " + std::string(test_info(c.test).name) + ": " +
                  std::string(transport_name(c.transport)) +
                  (c.mode == core::Mode::kDirectAccess ? " direct-access" : " base-level") + ", " +
                  std::string(test_info(c.test).what) + "\n";
  b += "# device " + info.device + ", channel set up " +
       (c.rdma_cm ? "through rdma_cm" : "out of band over TCP") +
       (c.ring ? ", a ring channel (messages that fit a slot by RDMA WRITE)" : "") + ", " +
       (c.events ? "waiting on completion events" : "polling") +
       (c.mode == core::Mode::kDirectAccess
            ? std::string(", one-sided operations (no inline data)")
            : ", inline " + std::to_string(info.inline_threshold) +
                  " bytes in the descriptor, up to " +
                  std::to_string(std::max(info.inline_threshold, info.inline_post_limit)) +
                  " posted inline") +
       (c.is_latency() ? ""
                       : ", --batch " + std::to_string(c.batch) + " (descriptors per doorbell)") +
       "\n";
  if (c.is_am())
    b += "# active messages: 1 argument word + -s payload bytes behind a " +
         std::to_string(uam::header_bytes(0)) + "-byte header; payload up to " +
         std::to_string(info.am_limit) + " bytes on " + std::string(transport_name(c.transport)) +
         "; credit window " + std::to_string(c.window) + " requests\n";
  if (c.is_ulp())
    b += "# user-level protocol over " + std::string(transport_name(c.transport)) + ": " +
         std::string(c.test == TestKind::kDgramLat
                         ? "datagrams up to 64 KiB, fragmented to the path MTU, never resent"
                         : "one connection, send buffer " +
                               std::to_string(kUlpStreamSendBuffer / 1024) +
                               " KiB, receive buffer " +
                               std::to_string(kUlpStreamRecvBuffer / 1024) + " KiB") +
         "\n";
  b += "# " + std::to_string(c.warmup) + " warm-up iterations excluded; ";
  if (test_info(c.test).figure == Figure::kRoundTrip)
    b += "latency is the full READ round trip (as ib_read_lat); t_typical is the median\n";
  else if (c.is_latency())
    b += "latency is half the round trip; t_typical is the median\n";
  else
    b += "MB = 2^20 bytes; BW peak is the best time per message over any run of consecutive "
         "messages\n";
  char clock[96];
  std::snprintf(clock, sizeof clock,
                "# cycle counter: %.1f ticks/usec, calibrated against CLOCK_MONOTONIC\n",
                info.ticks_per_us);
  return b + clock;
}

std::string report_json(const PerfConfig& c, const RunInfo& info,
                        std::span<const SizeResult> results) {
  using Json = nlohmann::ordered_json;  // fields in the order written here
  const auto or_null = [](const auto& v) { return v ? Json(*v) : Json(nullptr); };
  // Each part is built apart and moved in at the end: an ordered_json object is a vector, so a
  // reference to one of its fields does not survive the next field added.
  Json ti;
  ti["test"] = test_info(c.test).name;
  ti["Device"] = info.device;
  ti["Connection_type"] = transport_name(c.transport);
  ti["Mode"] = c.mode == core::Mode::kDirectAccess ? "direct-access" : "base-level";
  ti["Max_inline_data"] = std::max(info.inline_threshold, info.inline_post_limit);
  ti["rdma_cm_QPs"] = c.rdma_cm ? "ON" : "OFF";
  ti["Data_ex_method"] = c.rdma_cm ? "rdma_cm" : "Ethernet";
  ti["Test with events"] = c.events ? "ON" : "OFF";

  Json cfg;
  cfg["role"] = c.is_client() ? "client" : "server";
  cfg["host"] = c.host;
  cfg["test"] = test_info(c.test).name;
  cfg["device"] = c.device;
  cfg["ib_port"] = std::uint32_t{c.ib_port};
  cfg["gid_index"] = or_null(c.gid_index);
  cfg["tcp_port"] = std::uint32_t{c.tcp_port};
  cfg["sl"] = std::uint32_t{c.sl};
  cfg["traffic_class"] = std::uint32_t{c.traffic_class};
  cfg["all_sizes"] = c.all_sizes;
  cfg["sizes"] = c.sizes;
  cfg["iterations"] = c.iterations;
  cfg["warmup"] = c.warmup;
  cfg["transport"] = transport_name(c.transport);
  cfg["mode"] = mode_name(c.mode);
  cfg["inline_size"] = or_null(c.inline_size);
  cfg["rdma_cm"] = c.rdma_cm;
  cfg["ring"] = c.ring;
  if (c.ring_slots != 0) {
    cfg["ring_slots"] = std::uint64_t{c.ring_slots};
    cfg["ring_slot_bytes"] = std::uint64_t{c.ring_slot_bytes};
  }
  cfg["events"] = c.events;
  cfg["batch"] = c.batch;
  cfg["timeout_ms"] = static_cast<std::int64_t>(c.timeout.count());
  cfg["oob"] = c.oob == OobKind::kUnet         ? "unet"
               : c.oob == OobKind::kRcPingpong ? "rc_pingpong"
                                               : "ib_send_lat";
  if (c.is_am()) {
    cfg["am_window"] = c.window;
    cfg["am_args"] = static_cast<std::uint32_t>(kAmArgs);
    cfg["am_max_payload"] = info.am_limit;
  }
  if (c.is_ulp() && c.test != TestKind::kDgramLat) {
    cfg["stream_send_buffer"] = kUlpStreamSendBuffer;
    cfg["stream_recv_buffer"] = kUlpStreamRecvBuffer;
  }
  cfg["ticks_per_usec"] = info.ticks_per_us;

  Json rows = Json::array(), skipped = Json::array();
  for (const SizeResult& r : results) {
    if (!r.skipped.empty()) {
      skipped.push_back({{"MsgSize", r.bytes}, {"reason", r.skipped}});
      continue;
    }
    Json& row = rows.emplace_back();
    row["MsgSize"] = r.bytes;
    row["n_iterations"] = r.iterations;
    if (r.latency) {
      const bench::LatencyStats& s = *r.latency;
      row["t_min"] = s.min;
      row["t_max"] = s.max;
      row["t_typical"] = s.median;
      row["t_avg"] = s.avg;
      row["t_stdev"] = s.stdev;
      row["percentile_99"] = s.p99;
      row["percentile_99.9"] = s.p999;
    }
    if (r.bandwidth) {
      row["BW_peak"] = r.bandwidth->peak_mb_s;
      row["BW_average"] = r.bandwidth->avg_mb_s;
      row["MsgRate"] = r.bandwidth->msg_rate_mpps;
      row["BW_peak_computed"] = r.bandwidth->peak_computed;
    }
    if (r.server_count) row["server_count"] = *r.server_count;
    if (r.am_retransmitted) row["am_retransmitted"] = *r.am_retransmitted;
    if (r.am_duplicates) row["am_duplicates"] = *r.am_duplicates;
    if (r.retransmitted_segments) row["retransmitted_segments"] = *r.retransmitted_segments;
    if (r.retransmit_timeouts) row["retransmit_timeouts"] = *r.retransmit_timeouts;
    if (r.endpoint) {
      const core::EndpointStats& e = *r.endpoint;
      row["endpoint"] = {{"sent", e.sent},
                         {"received", e.received + e.upcalls},
                         {"doorbells", e.doorbells},
                         {"ring_sent", e.ring_sent},
                         {"ring_fallbacks", e.ring_fallbacks},
                         {"ring_received", e.ring_received},
                         {"ring_credit_writes", e.ring_credit_writes},
                         {"ring_sleeps", e.ring_sleeps}};
    }
  }
  Json doc;
  doc["test_info"] = std::move(ti);
  doc["config"] = std::move(cfg);
  doc["results"] = std::move(rows);
  doc["skipped"] = std::move(skipped);
  // Non-finite figures are written as null. Device and host names come from the command line and a
  // skip reason may quote them: any bytes, so invalid UTF-8 becomes U+FFFD instead of a throw.
  return doc.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace unet::perf
