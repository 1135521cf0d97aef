// libFuzzer target for unet_perf's flags: make_config() over flag sets built from the input (each
// string either one of the values the flag knows or arbitrary bytes, each number either near its
// range or any 64-bit value). Whatever it accepts must keep the limits options.h documents, its
// settings line must be one "unet-perf/1 key=value..." line that compare_settings() agrees with,
// and the peer lines compare_settings() parses (the rest of the input) must never crash it.
// Whatever it refuses gets one non-empty message, on one line unless a flag value had a newline.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <string_view>
#include <variant>

#include "options.h"

using namespace unet::perf;

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

// One of `known`, or arbitrary bytes (sometimes empty).
std::string pick(FuzzedDataProvider& in, std::initializer_list<const char* const> known) {
  if (in.ConsumeBool()) return in.PickValueInArray(known);
  return in.ConsumeRandomLengthString(64);
}

// A bound of [lo, hi] or its neighbour outside, a value close to the range, or any 64-bit value.
// A test of the table (as pick() chooses among `known`), or arbitrary bytes.
std::string pick_test(FuzzedDataProvider& in) {
  if (!in.ConsumeBool()) return in.ConsumeRandomLengthString(64);
  const auto tests = all_tests();
  return std::string(tests[in.ConsumeIntegralInRange<std::size_t>(0, tests.size() - 1)].name);
}

std::int64_t number(FuzzedDataProvider& in, std::int64_t lo, std::int64_t hi) {
  switch (in.ConsumeIntegralInRange(0, 3)) {
    case 0:
      return in.ConsumeIntegral<std::int64_t>();
    case 1:
      return in.PickValueInArray({lo - 1, lo, hi, hi + 1});
    default:
      return in.ConsumeIntegralInRange<std::int64_t>(lo - 2, hi + 2);
  }
}

std::optional<std::int64_t> maybe(FuzzedDataProvider& in, std::int64_t lo, std::int64_t hi) {
  if (!in.ConsumeBool()) return std::nullopt;
  return number(in, lo, hi);
}

RawFlags flags_from(FuzzedDataProvider& in) {
  RawFlags f;
  f.test = pick_test(in);
  if (in.ConsumeBool()) f.device = in.ConsumeRandomLengthString(32);
  if (in.ConsumeBool()) f.ib_port = number(in, 1, 255);
  if (in.ConsumeBool()) f.gid_index = number(in, -1, 255);
  if (in.ConsumeBool()) f.tcp_port = number(in, 1, 65535);
  f.size = maybe(in, 1, kMaxSize);
  f.all_sizes = in.ConsumeBool();
  f.iterations = maybe(in, kMinIterations, kMaxIterations);
  if (in.ConsumeBool()) f.connection = pick(in, {"RC", "UD"});
  f.inline_size = maybe(in, 0, 4096);
  f.rdma_cm = in.ConsumeBool();
  f.events = in.ConsumeBool();
  if (in.ConsumeBool()) f.mode = pick(in, {"base", "direct"});
  if (in.ConsumeBool()) f.batch = number(in, 1, kMaxBatch);
  f.warmup = maybe(in, 0, kMaxIterations);
  if (in.ConsumeBool()) f.json = in.ConsumeRandomLengthString(32);
  if (in.ConsumeBool()) f.timeout_ms = number(in, 1, 3600000);
  if (in.ConsumeBool()) f.oob = pick(in, {"unet", "rc_pingpong", "ib_send_lat"});
  f.mtu = maybe(in, 256, 4096);
  f.window = maybe(in, 1, kMaxAmWindow);
  if (in.ConsumeBool()) f.coalesce = in.ConsumeBool();
  f.limits = in.ConsumeBool();
  const auto hosts = in.ConsumeIntegralInRange<std::size_t>(0, 2);
  for (std::size_t i = 0; i < hosts; ++i) f.hosts.push_back(in.ConsumeRandomLengthString(32));
  return f;
}

bool has_newline(const RawFlags& f) {
  std::string all = f.test + f.connection + f.mode + f.oob;
  for (const auto& h : f.hosts) all += h;
  return all.find('\n') != std::string::npos;
}

bool is_direct(TestKind t) {
  return t == TestKind::kDaWriteLat || t == TestKind::kDaWriteBw || t == TestKind::kDaReadLat;
}

// The limits options.h and make_config() promise for an accepted configuration.
void check_config(const RawFlags& f, const PerfConfig& c) {
  require(test_info(c.test).name == f.test);
  require(c.host == (f.hosts.empty() ? "" : f.hosts.front()) && f.hosts.size() <= 1);
  require(c.device == f.device && c.json_path == f.json);
  require(c.ib_port >= 1 && f.ib_port == c.ib_port);
  require(c.gid_index ? f.gid_index == *c.gid_index && *c.gid_index <= 255 : f.gid_index == -1);
  require(c.tcp_port >= 1 && f.tcp_port == c.tcp_port);

  const std::uint64_t max_size = c.is_am()                       ? kMaxAmPayload
                                 : c.test == TestKind::kDgramLat ? kMaxDgram
                                                                 : kMaxSize;
  require(!c.sizes.empty() && c.all_sizes == f.all_sizes && !(f.all_sizes && f.size));
  require(c.default_size == (!f.all_sizes && !f.size));
  for (std::uint32_t s : c.sizes) require(s >= 1 && s <= max_size);
  if (c.all_sizes) {
    require(c.sizes.front() == 2 && c.sizes.back() == max_size);
    require(std::is_sorted(c.sizes.begin(), c.sizes.end()) &&
            std::adjacent_find(c.sizes.begin(), c.sizes.end()) == c.sizes.end());
  } else {
    require(c.sizes.size() == 1 && (!f.size || *f.size == c.sizes.front()));
  }

  require(c.iterations >= kMinIterations && c.iterations <= kMaxIterations);
  require(c.warmup <= kMaxIterations);
  require(!c.inline_size || *c.inline_size <= 4096);
  require(c.batch >= 1 && c.batch <= kMaxBatch);
  require(c.batch == 1 || (!c.is_latency() && !c.is_ulp()));
  require(c.window >= 1 && c.window <= kMaxAmWindow);
  require(c.is_am() || (c.window == kDefaultAmWindow && !f.window));
  require(c.is_am() ? c.coalesce == f.coalesce.value_or(true) : c.coalesce && !f.coalesce);
  require(c.timeout.count() >= 1 && c.timeout.count() <= 3600000);

  // ulp: UD unless -c RC, which only the stream takes.
  require(!c.is_ulp() || !f.connection.empty() || c.transport == unet::core::Transport::kUd);
  require(c.test != TestKind::kDgramLat || c.transport == unet::core::Transport::kUd);
  require(!is_direct(c.test) || c.transport == unet::core::Transport::kRc);
  require(!c.rdma_cm ||
          (c.transport == unet::core::Transport::kRc && c.test != TestKind::kDgramLat));
  // Direct-access: the da_* tests, and stream_bw when asked for (its zero-copy sends).
  require((c.mode == unet::core::Mode::kDirectAccess) ==
          (is_direct(c.test) || (c.test == TestKind::kStreamBw && f.mode == "direct")));
  require(!c.events || (c.test != TestKind::kDaWriteLat && c.test != TestKind::kDaWriteBw));
  if (c.oob == OobKind::kUnet) {
    require(c.mtu == 0 && !f.mtu);
  } else {
    require(c.test == TestKind::kEpLat && c.transport == unet::core::Transport::kRc);
    require(!c.all_sizes && (c.mtu == 0 || c.mtu == 256 || c.mtu == 512 || c.mtu == 1024 ||
                             c.mtu == 2048 || c.mtu == 4096));
  }
}

void check_settings(const PerfConfig& c, std::string_view peer_line) {
  const std::string line = settings_line(c);
  require(line.starts_with("unet-perf/1 test=") && line.back() == '\n');
  require(line.find('\n') == line.size() - 1);
  require((line.find(" size=all ") != std::string::npos) == c.all_sizes);
  require(!compare_settings(c, line, true) && !compare_settings(c, line, false));
  // Any peer line: an answer, never a crash; a line that agrees contains our settings.
  if (!compare_settings(c, peer_line, true))
    require(peer_line.starts_with("unet-perf/1") && !compare_settings(c, peer_line, false));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  const RawFlags f = flags_from(in);
  const auto result = make_config(f);
  if (const auto* why = std::get_if<std::string>(&result)) {
    require(!why->empty() && (has_newline(f) || why->find('\n') == std::string::npos));
    return 0;
  }
  const auto& c = std::get<PerfConfig>(result);
  check_config(f, c);
  check_settings(c, in.ConsumeRemainingBytesAsString());
  return 0;
}
