#include "report.h"

#include <algorithm>
#include <limits>

#include "json_writer.h"

namespace unet::perf {
namespace {

constexpr double kMB = 1024.0 * 1024.0;  // perftest's 0x100000

std::string_view what_is_measured(TestKind t) noexcept {
  switch (t) {
    case TestKind::kEpLat:
      return "send/recv ping-pong through core::Endpoint";
    case TestKind::kEpBw:
      return "send/recv stream through core::Endpoint; a message counts when the server's credit "
             "for it arrives";
    case TestKind::kDaWriteLat:
      return "RDMA WRITE ping-pong into granted windows, each side polls its last byte";
    case TestKind::kDaWriteBw:
      return "RDMA WRITE stream into a granted window; a message counts at its completion";
    case TestKind::kDaReadLat:
      return "RDMA READ round trips from a granted window";
    case TestKind::kAmLat:
      return "active-message request/reply ping-pong through uam::Endpoint (the reply carries "
             "the same word and bytes)";
    case TestKind::kAmBw:
      return "active-message request stream through uam::Endpoint, no reply; a message counts when "
             "its implicit completion (the server's acknowledgement) arrives";
    case TestKind::kDgramLat:
      return "datagram ping-pong through ulp::DatagramEndpoint (the server echoes each datagram)";
    case TestKind::kStreamLat:
      return "byte-stream ping-pong through ulp::StreamEndpoint (the server reads -s bytes and "
             "sends them back)";
    case TestKind::kStreamBw:
      return "byte stream through ulp::StreamEndpoint; a message counts when the server's "
             "acknowledgement of it is known";
  }
  return "?";
}

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
  std::string b = "# unet_perf " + std::string(test_name(c.test)) + ": " +
                  std::string(transport_name(c.transport)) +
                  (c.mode == core::Mode::kDirectAccess ? " direct-access" : " base-level") + ", " +
                  std::string(what_is_measured(c.test)) + "\n";
  b += "# device " + info.device + ", channel set up " +
       (c.rdma_cm ? "through rdma_cm" : "out of band over TCP") +
       (c.ring ? ", a ring channel (messages that fit a slot by RDMA WRITE)" : "") + ", " +
       (c.events ? "waiting on completion events" : "polling") +
       (c.mode == core::Mode::kDirectAccess
            ? std::string(", one-sided operations (no inline data)")
            : ", inline " + std::to_string(info.inline_threshold) + " bytes in the descriptor, up to " +
                  std::to_string(std::max(info.inline_threshold, info.inline_post_limit)) + " posted inline") +
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
                         : "one connection, send and receive buffers of " +
                               std::to_string(kUlpStreamBuffer / 1024) + " KiB") +
         "\n";
  b += "# " + std::to_string(c.warmup) + " warm-up iterations excluded; ";
  if (c.test == TestKind::kDaReadLat)
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
  JsonWriter w;
  w.begin_object();
  w.key("test_info").begin_object();
  w.key("test").value(test_name(c.test));
  w.key("Device").value(info.device);
  w.key("Connection_type").value(transport_name(c.transport));
  w.key("Mode").value(c.mode == core::Mode::kDirectAccess ? "direct-access" : "base-level");
  w.key("Max_inline_data").value(std::max(info.inline_threshold, info.inline_post_limit));
  w.key("rdma_cm_QPs").value(c.rdma_cm ? "ON" : "OFF");
  w.key("Data_ex_method").value(c.rdma_cm ? "rdma_cm" : "Ethernet");
  w.key("Test with events").value(c.events ? "ON" : "OFF");
  w.end_object();

  w.key("config").begin_object();
  w.key("role").value(c.is_client() ? "client" : "server");
  w.key("host").value(c.host);
  w.key("test").value(test_name(c.test));
  w.key("device").value(c.device);
  w.key("ib_port").value(std::uint32_t{c.ib_port});
  w.key("gid_index");
  if (c.gid_index)
    w.value(*c.gid_index);
  else
    w.null();
  w.key("tcp_port").value(std::uint32_t{c.tcp_port});
  w.key("sl").value(std::uint32_t{c.sl});
  w.key("traffic_class").value(std::uint32_t{c.traffic_class});
  w.key("all_sizes").value(c.all_sizes);
  w.key("sizes").begin_array();
  for (std::uint32_t s : c.sizes) w.value(s);
  w.end_array();
  w.key("iterations").value(c.iterations);
  w.key("warmup").value(c.warmup);
  w.key("transport").value(transport_name(c.transport));
  w.key("mode").value(mode_name(c.mode));
  w.key("inline_size");
  if (c.inline_size)
    w.value(*c.inline_size);
  else
    w.null();
  w.key("rdma_cm").value(c.rdma_cm);
  w.key("ring").value(c.ring);
  if (c.ring_slots != 0) {
    w.key("ring_slots").value(std::uint64_t{c.ring_slots});
    w.key("ring_slot_bytes").value(std::uint64_t{c.ring_slot_bytes});
  }
  w.key("events").value(c.events);
  w.key("batch").value(c.batch);
  w.key("timeout_ms").value(static_cast<std::int64_t>(c.timeout.count()));
  w.key("oob").value(c.oob == OobKind::kUnet        ? "unet"
                     : c.oob == OobKind::kRcPingpong ? "rc_pingpong"
                                                     : "ib_send_lat");
  if (c.is_am()) {
    w.key("am_window").value(c.window);
    w.key("am_args").value(static_cast<std::uint32_t>(kAmArgs));
    w.key("am_max_payload").value(info.am_limit);
  }
  if (c.is_ulp() && c.test != TestKind::kDgramLat)
    w.key("stream_buffer").value(kUlpStreamBuffer);
  w.key("ticks_per_usec").value(info.ticks_per_us);
  w.end_object();

  w.key("results").begin_array();
  for (const SizeResult& r : results) {
    if (!r.skipped.empty()) continue;
    w.begin_object();
    w.key("MsgSize").value(r.bytes);
    w.key("n_iterations").value(r.iterations);
    if (r.latency) {
      const bench::LatencyStats& s = *r.latency;
      w.key("t_min").value(s.min);
      w.key("t_max").value(s.max);
      w.key("t_typical").value(s.median);
      w.key("t_avg").value(s.avg);
      w.key("t_stdev").value(s.stdev);
      w.key("percentile_99").value(s.p99);
      w.key("percentile_99.9").value(s.p999);
    }
    if (r.bandwidth) {
      w.key("BW_peak").value(r.bandwidth->peak_mb_s);
      w.key("BW_average").value(r.bandwidth->avg_mb_s);
      w.key("MsgRate").value(r.bandwidth->msg_rate_mpps);
      w.key("BW_peak_computed").value(r.bandwidth->peak_computed);
    }
    if (r.server_count) w.key("server_count").value(*r.server_count);
    if (r.am_retransmitted) w.key("am_retransmitted").value(*r.am_retransmitted);
    if (r.am_duplicates) w.key("am_duplicates").value(*r.am_duplicates);
    if (r.retransmitted_segments)
      w.key("retransmitted_segments").value(*r.retransmitted_segments);
    if (r.retransmit_timeouts) w.key("retransmit_timeouts").value(*r.retransmit_timeouts);
    if (r.endpoint) {
      const core::EndpointStats& e = *r.endpoint;
      w.key("endpoint").begin_object();
      w.key("sent").value(e.sent);
      w.key("received").value(e.received + e.upcalls);
      w.key("doorbells").value(e.doorbells);
      w.key("ring_sent").value(e.ring_sent);
      w.key("ring_fallbacks").value(e.ring_fallbacks);
      w.key("ring_received").value(e.ring_received);
      w.key("ring_credit_writes").value(e.ring_credit_writes);
      w.key("ring_sleeps").value(e.ring_sleeps);
      w.end_object();
    }
    w.end_object();
  }
  w.end_array();

  w.key("skipped").begin_array();
  for (const SizeResult& r : results) {
    if (r.skipped.empty()) continue;
    w.begin_object();
    w.key("MsgSize").value(r.bytes);
    w.key("reason").value(r.skipped);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return w.str() + "\n";
}

}  // namespace unet::perf
