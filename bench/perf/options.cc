#include "options.h"

#include <algorithm>
#include <utility>

namespace unet::perf {
namespace {

std::string range_error(std::string_view flag, std::int64_t v, std::int64_t lo, std::int64_t hi) {
  return std::string(flag) + " " + std::to_string(v) + " is out of range (" + std::to_string(lo) +
         " .. " + std::to_string(hi) + ")";
}

// The settings line as key/value pairs, in order.
using Settings = std::vector<std::pair<std::string, std::string>>;

Settings settings_of(const PerfConfig& c) {
  return {
      {"test", std::string(test_info(c.test).name)},
      {"size", c.all_sizes ? "all" : std::to_string(c.sizes.front())},
      {"iters", std::to_string(c.iterations)},
      {"transport", std::string(transport_name(c.transport))},
      {"mode", std::string(mode_name(c.mode))},
      {"inline", c.inline_size ? std::to_string(*c.inline_size) : "default"},
      {"batch", std::to_string(c.batch)},
      {"warmup", std::to_string(c.warmup)},
      {"cm", c.rdma_cm ? "1" : "0"},
      {"window", std::to_string(c.window)},
      {"coalesce", c.coalesce ? "1" : "0"},
      {"ring", c.ring ? "1" : "0"},
  };
}

std::string_view flag_of(std::string_view key) noexcept {
  if (key == "test") return "--test";
  if (key == "size") return "-s/-a";
  if (key == "iters") return "-n";
  if (key == "transport") return "-c";
  if (key == "mode") return "--mode";
  if (key == "inline") return "-I";
  if (key == "batch") return "--batch";
  if (key == "warmup") return "--warmup";
  if (key == "cm") return "-R";
  if (key == "window") return "--window";
  if (key == "coalesce") return "--coalesce";
  if (key == "ring") return "--ring";
  return "?";
}

constexpr std::string_view kSettingsTag = "unet-perf/1";

}  // namespace

std::string_view transport_name(core::Transport t) noexcept {
  return t == core::Transport::kUd ? "UD" : "RC";
}
std::string_view mode_name(core::Mode m) noexcept {
  return m == core::Mode::kDirectAccess ? "direct" : "base";
}

std::vector<std::uint32_t> am_sweep(std::uint32_t limit) {
  std::vector<std::uint32_t> sizes;
  for (std::uint32_t s = 2; s < limit; s *= 2) sizes.push_back(s);
  if (limit >= 1) sizes.push_back(limit);
  return sizes;
}

std::variant<PerfConfig, std::string> make_config(const RawFlags& f) {
  PerfConfig c;
  if (f.test.empty()) return "--test is required (" + test_names(", ") + ")";
  const TestInfo* test = find_test(f.test);
  if (!test) return "unknown --test '" + f.test + "' (one of " + test_names(", ") + ")";
  c.test = test->kind;
  const bool direct = test->family == Family::kDirectAccess;

  if (f.hosts.size() > 1)
    return "at most one host argument (the server's address), got " +
           std::to_string(f.hosts.size());
  c.host = f.hosts.empty() ? "" : f.hosts.front();
  c.device = f.device;
  if (f.ib_port < 1 || f.ib_port > 255) return range_error("-i", f.ib_port, 1, 255);
  c.ib_port = static_cast<std::uint8_t>(f.ib_port);
  if (f.gid_index < -1 || f.gid_index > 255) return range_error("-x", f.gid_index, -1, 255);
  if (f.gid_index >= 0) c.gid_index = static_cast<std::uint32_t>(f.gid_index);
  if (f.tcp_port < 1 || f.tcp_port > 65535) return range_error("-p", f.tcp_port, 1, 65535);
  c.tcp_port = static_cast<std::uint16_t>(f.tcp_port);
  if (f.sl < 0 || f.sl > 15) return range_error("-S", f.sl, 0, 15);
  c.sl = static_cast<std::uint8_t>(f.sl);
  if (f.traffic_class < 0 || f.traffic_class > 255)
    return range_error("-T", f.traffic_class, 0, 255);
  c.traffic_class = static_cast<std::uint8_t>(f.traffic_class);

  if (f.connection.empty()) {
    c.transport = test->transport;
  } else if (f.connection == "RC") {
    c.transport = core::Transport::kRc;
  } else if (f.connection == "UD") {
    c.transport = core::Transport::kUd;
  } else {
    return "-c must be RC or UD, not '" + f.connection + "'";
  }
  if (c.transport == core::Transport::kRc && c.test == TestKind::kDgramLat)
    return "-c RC: dgram_lat runs on UD only (ulp's DatagramEndpoint is a U-Net protocol over UD); "
           "drop -c RC";
  if (c.transport == core::Transport::kUd && direct)
    return "-c UD: " + f.test + " needs RC (RDMA WRITE and READ are RC operations)";
  c.rdma_cm = f.rdma_cm;
  if (c.rdma_cm && c.is_ulp() && c.transport == core::Transport::kUd)
    return "-R (rdma_cm) sets up RC channels only; " + f.test +
           " runs on a UD channel set up out of band" +
           (c.test == TestKind::kDgramLat ? "" : " unless -c RC") + ": drop -R";
  if (c.rdma_cm && c.transport == core::Transport::kUd)
    return "-R (rdma_cm) sets up RC channels only; drop -c UD";

  c.mode = test->mode;
  if (!f.mode.empty()) {
    if (f.mode != "base" && f.mode != "direct")
      return "--mode must be base or direct, not '" + f.mode + "'";
    if (c.test == TestKind::kStreamBw)  // either: copied sends, or zero-copy ones (direct)
      c.mode = f.mode == "direct" ? core::Mode::kDirectAccess : core::Mode::kBaseLevel;
    else if (f.mode != mode_name(c.mode))
      return "--mode " + f.mode + " does not fit --test " + f.test + ", a " +
             (direct ? "direct-access" : "base-level") + " test";
  }

  // am_*: -s is the payload, up to uam's limit (UD lowers it to the path MTU: main.cc, sizing.h).
  // dgram_lat: one datagram, at most ulp's 64 KiB; the streams take any size.
  const std::uint64_t max_size = c.is_am()                       ? kMaxAmPayload
                                 : c.test == TestKind::kDgramLat ? kMaxDgram
                                                                 : kMaxSize;
  if (f.all_sizes && f.size)
    return "-a runs every size from 2 to " + std::to_string(max_size) + " bytes; drop -s";
  c.all_sizes = f.all_sizes;
  c.default_size = !f.all_sizes && !f.size;
  if (c.all_sizes && c.is_am()) {
    c.sizes = am_sweep(kMaxAmPayload);
  } else if (c.all_sizes) {
    for (std::uint64_t s = 2; s <= max_size; s *= 2)
      c.sizes.push_back(static_cast<std::uint32_t>(s));
  } else {
    // perftest's defaults: 2 bytes for latency, 64 KiB for bandwidth (am_bw: the largest payload).
    const std::int64_t s =
        f.size.value_or(c.is_latency() ? 2 : std::min<std::int64_t>(65536, max_size));
    if (s < 1 || static_cast<std::uint64_t>(s) > max_size)
      return range_error("-s", s, 1, static_cast<std::int64_t>(max_size)) +
             (c.is_am()                       ? " (an active message's payload)"
              : c.test == TestKind::kDgramLat ? " (one ulp datagram)"
                                              : "");
    c.sizes.push_back(static_cast<std::uint32_t>(s));
  }

  const std::int64_t n = f.iterations.value_or(static_cast<std::int64_t>(test->iterations));
  if (n < static_cast<std::int64_t>(kMinIterations) ||
      n > static_cast<std::int64_t>(kMaxIterations))
    return range_error("-n", n, kMinIterations, kMaxIterations);
  c.iterations = static_cast<std::uint64_t>(n);
  const std::int64_t w = f.warmup.value_or(c.is_latency() ? 100 : 0);
  if (w < 0 || w > static_cast<std::int64_t>(kMaxIterations))
    return range_error("--warmup", w, 0, kMaxIterations);
  c.warmup = static_cast<std::uint64_t>(w);

  if (f.inline_size) {
    // Up to 108 bytes ride inside the descriptor, larger ones are posted inline from their buffer;
    // the endpoint clamps both to what the device takes.
    constexpr std::int64_t limit = 4096;
    if (*f.inline_size < 0 || *f.inline_size > limit)
      return range_error("-I", *f.inline_size, 0, limit);
    c.inline_size = static_cast<std::uint32_t>(*f.inline_size);
  }

  if (f.batch < 1 || f.batch > kMaxBatch) return range_error("--batch", f.batch, 1, kMaxBatch);
  c.batch = static_cast<std::uint32_t>(f.batch);
  if (c.batch > 1 && c.is_latency())
    return "--batch applies to the *_bw tests only (latency keeps one message in flight)";
  if (c.batch > 1 && c.is_ulp())
    return "--batch does not apply to " + f.test +
           " (the stream sends from its own buffer; it decides how many segments go per doorbell)";

  c.events = f.events;
  if (c.events && (c.test == TestKind::kDaWriteLat || c.test == TestKind::kDaWriteBw))
    return "-e is not available for " + f.test +
           " (as in perftest's WRITE tests: the receiver polls memory, no completion reports the "
           "data)";

  if (f.window) {
    if (!c.is_am()) return "--window applies to the am_* tests only (uam's credit window)";
    if (*f.window < 1 || *f.window > kMaxAmWindow)
      return range_error("--window", *f.window, 1, kMaxAmWindow);
    c.window = static_cast<std::uint32_t>(*f.window);
  }
  if (f.coalesce) {
    if (!c.is_am()) return "--coalesce applies to the am_* tests only (uam's message coalescing)";
    c.coalesce = *f.coalesce;
  }
  // Ring channels are RC channels (out of band or rdma_cm): on by default there, off elsewhere.
  c.ring = c.transport == core::Transport::kRc;
  if (f.ring) {
    if (*f.ring && c.transport != core::Transport::kRc)
      return "--ring needs -c RC (ring channels are RC)";
    c.ring = *f.ring;
  }
  if (f.ring_slots || f.ring_slot_bytes) {
    if (!c.ring)
      return "--ring_slots and --ring_slot_bytes shape a ring channel's ring: they need -c RC and "
             "no --noring";
    const core::EndpointConfig d;
    const std::int64_t slots = f.ring_slots.value_or(d.ring_slots);
    const std::int64_t bytes = f.ring_slot_bytes.value_or(d.ring_slot_bytes);
    if (slots < 2 || slots > 16384 || (slots & (slots - 1)) != 0)
      return "--ring_slots must be a power of two in 2..16384, not " + std::to_string(slots);
    if (bytes < 32 || bytes > 32768 || bytes % 8 != 0)
      return "--ring_slot_bytes must be a multiple of 8 in 32..32768, not " + std::to_string(bytes);
    c.ring_slots = static_cast<std::uint32_t>(slots);
    c.ring_slot_bytes = static_cast<std::uint32_t>(bytes);
  }
  c.limits = f.limits;

  if (f.timeout_ms < 1 || f.timeout_ms > 3600000)
    return range_error("--timeout_ms", f.timeout_ms, 1, 3600000);
  c.timeout = std::chrono::milliseconds(f.timeout_ms);

  if (f.oob == "unet") {
    c.oob = OobKind::kUnet;
    if (f.mtu)
      return "-m sets the path MTU of --oob rc_pingpong or ib_send_lat only (unet peers use the "
             "port's)";
  } else if (f.oob == "rc_pingpong" || f.oob == "ib_send_lat") {
    // The peer is an unmodified tool: its message pattern and its exchange, nothing of ours (no
    // settings line, no warm-up unless asked: its -n counts every message).
    c.oob = f.oob == "rc_pingpong" ? OobKind::kRcPingpong : OobKind::kIbSendLat;
    const std::string tool = "--oob " + f.oob;
    if (c.test != TestKind::kEpLat) return tool + " runs --test ep_lat only";
    if (c.transport != core::Transport::kRc) return tool + " is RC: drop -c UD";
    if (c.all_sizes) return tool + " runs one size (the tool's -s); drop -a";
    if (c.rdma_cm && c.oob == OobKind::kRcPingpong)
      return "--oob rc_pingpong uses ibv_rc_pingpong's TCP exchange; drop -R";
    if (!f.warmup) c.warmup = 0;
    if (f.ring && *f.ring) return tool + ": the tool sends and receives by SEND/RECV; drop --ring";
    c.ring = false;
    if (f.mtu) {
      const std::int64_t m = *f.mtu;
      if (m != 256 && m != 512 && m != 1024 && m != 2048 && m != 4096)
        return "-m must be 256, 512, 1024, 2048 or 4096 (the tool's -m), not " + std::to_string(m);
      c.mtu = static_cast<std::uint32_t>(m);
    }
  } else {
    return "--oob must be unet, rc_pingpong or ib_send_lat, not '" + f.oob + "'";
  }
  c.json_path = f.json;
  return c;
}

std::string settings_line(const PerfConfig& c) {
  std::string line(kSettingsTag);
  for (const auto& [k, v] : settings_of(c)) line += " " + k + "=" + v;
  return line + "\n";
}

std::optional<std::string> compare_settings(const PerfConfig& mine, std::string_view peer_line,
                                            bool peer_is_client) {
  while (!peer_line.empty() && (peer_line.back() == '\n' || peer_line.back() == '\r'))
    peer_line.remove_suffix(1);
  const std::string_view peer = peer_is_client ? "the client" : "the server";
  const std::string_view self = peer_is_client ? "the server" : "the client";
  if (peer_line.substr(0, kSettingsTag.size()) != kSettingsTag)
    return "the peer is not unet_perf of this version (its first line: '" +
           std::string(peer_line.substr(0, 60)) + "')";
  Settings theirs;
  std::string_view rest = peer_line.substr(kSettingsTag.size());
  while (!rest.empty()) {
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    if (rest.empty()) break;
    std::string_view tok = rest.substr(0, rest.find(' '));
    rest.remove_prefix(tok.size());
    const auto eq = tok.find('=');
    if (eq == std::string_view::npos)
      return "malformed settings from " + std::string(peer) + ": '" + std::string(tok) + "'";
    theirs.emplace_back(std::string(tok.substr(0, eq)), std::string(tok.substr(eq + 1)));
  }
  for (const auto& [key, value] : settings_of(mine)) {
    const std::string* other = nullptr;
    for (const auto& [k, v] : theirs)
      if (k == key) other = &v;
    if (!other) return std::string(peer) + " sent no '" + key + "' setting";
    if (*other != value)
      return "settings differ: " + key + " (" + std::string(flag_of(key)) + ") is " + value +
             " on " + std::string(self) + " but " + *other + " on " + std::string(peer);
  }
  return std::nullopt;
}

}  // namespace unet::perf
