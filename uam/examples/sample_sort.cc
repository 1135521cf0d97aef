// sample_sort: sorts K 64-bit keys spread over N worker processes with U-Net Active Messages, the
// way the U-Net paper (von Eicken et al., SOSP 1995) judged its Active Messages: by a parallel
// program. Prints the time of each phase and the total; exits 0 only when the result verified.
//
//   sample_sort --procs 4 --keys 16777216
//
// Each rank starts with K/N keys from a seeded generator (key i of the whole input is
// splitmix64(seed + i), so the input does not depend on N) and then, phase by phase, each phase
// ending at a barrier so that rank 0's clock times the slowest rank:
//   generate   make the keys; count, sum and xor them
//   sample     every rank sends S random keys to rank 0 (requests); rank 0 sorts them and sends
//              the N-1 splitters back to every rank (requests)
//   partition  each key goes to the bucket of the rank that will own its range
//   exchange   each rank tells every peer how many keys it has for it (one request each); each
//              receiver allocates one array for everything it will receive, grants each sender a
//              window of exactly that sender's part and sends it the token (a request of four
//              words); the senders store() their buckets into those windows in chunks (RDMA WRITE,
//              then a handler at the receiver counts the bytes landed); a rank is done when every
//              byte it expects is in and its own stores are acknowledged
//   local sort std::sort of what arrived
//   verify     every rank sends rank 0 its counts, sums, xors, whether it is sorted, its least and
//              greatest key; rank 0 checks the totals against the input's and that
//              max(rank i) <= min(rank i+1)
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "group.h"
#include "launch.h"
#include "options.h"
#include "page_buffer.h"
#include "phase_timer.h"

using namespace unet;
using namespace unet::uam;
using namespace unet::uam::examples;

namespace {

// Handler ids of this program, and the tags of its group messages.
constexpr HandlerId kBucketSize = 1, kWindow = 2, kStored = 3;
constexpr std::uint32_t kTagSamples = 1, kTagSplitters = 2, kTagReport = 3;

struct Params {
  std::uint64_t keys = 0;
  std::uint64_t seed = 0;
  std::uint64_t samples = 0;  // per rank
  std::uint64_t chunk = 0;    // bytes per store
  bool corrupt = false;       // test hook: damage one key after the sort
  std::string device;         // for the report
};

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

struct Checksum {
  std::uint64_t count = 0, sum = 0, xor_all = 0;
  void add(std::uint64_t k) {
    ++count;
    sum += k;
    xor_all ^= k;
  }
  void add(const Checksum& o) {
    count += o.count;
    sum += o.sum;
    xor_all ^= o.xor_all;
  }
  bool operator==(const Checksum&) const = default;
};

// What each rank tells rank 0 at the end (sent as bytes: both ends are this program).
struct Report {
  Checksum before, after;
  std::uint64_t sorted = 0;  // 1 when the rank's keys are in order
  std::uint64_t min = 0, max = 0;
  std::uint64_t bytes_in = 0;  // received from peers by store
};

template <class T>
std::span<const std::byte> bytes_of(std::span<const T> v) {
  return std::as_bytes(v);
}
template <class T>
std::vector<T> from_bytes(const std::vector<std::byte>& b) {
  std::vector<T> v(b.size() / sizeof(T));
  std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}

std::string bytes_text(double bytes) {
  char s[32];
  if (bytes < (1 << 20))
    std::snprintf(s, sizeof s, "%.1f KiB", bytes / 1024);
  else
    std::snprintf(s, sizeof s, "%.1f MiB", bytes / (1 << 20));
  return s;
}

// Rank 0: the verdict over every rank's report. Prints what is wrong; true when all is right.
bool check(const std::vector<Report>& reports, std::uint64_t keys) {
  Checksum before, after;
  bool ok = true, have_prev = false;
  std::uint64_t prev_max = 0;
  for (std::size_t r = 0; r < reports.size(); ++r) {
    const Report& rep = reports[r];
    before.add(rep.before);
    after.add(rep.after);
    if (!rep.sorted) {
      std::printf("FAILED: rank %zu's keys are not in order\n", r);
      ok = false;
    }
    if (rep.after.count == 0) continue;
    if (have_prev && prev_max > rep.min) {
      std::printf("FAILED: rank %zu's least key %#" PRIx64 " is below the greatest key before it %#" PRIx64 "\n", r,
                  rep.min, prev_max);
      ok = false;
    }
    prev_max = rep.max;
    have_prev = true;
  }
  if (before.count != keys) {
    std::printf("FAILED: %" PRIu64 " keys generated, not %" PRIu64 "\n", before.count, keys);
    ok = false;
  }
  if (!(after == before)) {
    std::printf("FAILED: before the sort %" PRIu64 " keys, sum %#" PRIx64 ", xor %#" PRIx64 "; after it %" PRIu64
                " keys, sum %#" PRIx64 ", xor %#" PRIx64 "\n",
                before.count, before.sum, before.xor_all, after.count, after.sum, after.xor_all);
    ok = false;
  }
  if (ok)
    std::printf("verified: %" PRIu64 " keys in order across %zu ranks; count, sum %#" PRIx64 " and xor %#" PRIx64
                " as generated\n",
                after.count, reports.size(), after.sum, after.xor_all);
  return ok;
}

int sample_sort(Group& g, const Params& p) {
  const int n = g.size(), me = g.rank();
  Endpoint& ep = g.endpoint();
  PhaseTimer timer;

  // The handlers first: a peer may send as soon as it leaves the first barrier, and a request for
  // a handler not yet registered fails (kNotFound at the sender).
  std::vector<std::uint64_t> incoming(n, 0);  // bucket sizes, by sender
  std::vector<core::RemoteToken> window(n);   // where to store, by receiver
  int sizes_in = 0, windows_in = 0;
  std::uint64_t bytes_in = 0;
  g.on_request(kBucketSize, [&](Token&, const Message& m) {
    incoming[g.rank_of(m.channel)] = m.args[0];
    ++sizes_in;
    return Disposition::kDone;
  });
  g.on_request(kWindow, [&](Token&, const Message& m) {
    window[g.rank_of(m.channel)] = Group::token(m.args);
    ++windows_in;
    return Disposition::kDone;
  });
  g.on_request(kStored, [&](Token&, const Message& m) {
    bytes_in += m.bulk_length;  // the data is in place when this runs
    return Disposition::kDone;
  });

  // --- generate ---
  const std::uint64_t first = p.keys * me / n, count = p.keys * (me + 1) / n - first;
  std::vector<std::uint64_t> keys(count);
  Checksum before;
  for (std::uint64_t i = 0; i < count; ++i) {
    keys[i] = splitmix64(p.seed * 0x9e3779b97f4a7c15ull + first + i);
    before.add(keys[i]);
  }
  g.barrier();
  timer.end("generate");

  // --- sample: S keys from each rank to rank 0; N-1 splitters back ---
  std::vector<std::uint64_t> samples;
  for (std::uint64_t i = 0; i < p.samples && count > 0; ++i)
    samples.push_back(keys[splitmix64(p.seed ^ (std::uint64_t(me) << 40) ^ i) % count]);
  g.send(0, kTagSamples, bytes_of(std::span<const std::uint64_t>(samples)));
  if (me == 0) {
    std::vector<std::uint64_t> all;
    for (int r = 0; r < n; ++r) {
      auto s = from_bytes<std::uint64_t>(g.recv(r, kTagSamples));
      all.insert(all.end(), s.begin(), s.end());
    }
    std::sort(all.begin(), all.end());
    std::vector<std::uint64_t> split;
    for (int j = 1; j < n; ++j) split.push_back(all.empty() ? 0 : all[all.size() * j / n]);
    for (int r = 0; r < n; ++r) g.send(r, kTagSplitters, bytes_of(std::span<const std::uint64_t>(split)));
  }
  const auto splitters = from_bytes<std::uint64_t>(g.recv(0, kTagSplitters));
  if (splitters.size() != static_cast<std::size_t>(n - 1)) throw std::runtime_error("wrong number of splitters");
  g.barrier();
  timer.end("sample");

  // --- partition: bucket b holds the keys in [splitter b-1, splitter b) ---
  std::vector<std::uint8_t> dest(count);
  std::vector<std::uint64_t> size(n, 0);
  for (std::uint64_t i = 0; i < count; ++i) {
    dest[i] = static_cast<std::uint8_t>(std::upper_bound(splitters.begin(), splitters.end(), keys[i]) -
                                        splitters.begin());
    ++size[dest[i]];
  }
  // Each bucket starts on a page of its own, so its page-aligned chunks register apart.
  constexpr std::uint64_t kKeysPerPage = kPageBytes / sizeof(std::uint64_t);
  std::vector<std::uint64_t> start(n + 1, 0);
  for (int b = 0; b < n; ++b) start[b + 1] = start[b] + (size[b] + kKeysPerPage - 1) / kKeysPerPage * kKeysPerPage;
  PageBuffer<std::uint64_t> parted(start[n]);  // stored from: kept until the program returns
  {
    std::vector<std::uint64_t> at(start.begin(), start.end() - 1);
    for (std::uint64_t i = 0; i < count; ++i) parted[at[dest[i]]++] = keys[i];
  }
  std::vector<std::uint64_t>().swap(keys);
  std::vector<std::uint8_t>().swap(dest);
  g.barrier();
  timer.end("partition");

  // --- exchange ---
  const auto exchange_start = std::chrono::steady_clock::now();
  // 1. Bucket sizes, one request to each peer.
  for (int k = 1; k < n; ++k) {
    const int peer = (me + k) % n;
    const std::uint64_t words[1] = {size[peer]};
    g.request(peer, kBucketSize, words);
  }
  incoming[me] = size[me];
  g.wait_until([&] { return sizes_in == n - 1; }, "the bucket sizes of every rank");

  // 2. One receive array, in rank order; each sender gets a window over exactly its part.
  std::vector<std::uint64_t> offset(n + 1, 0);
  for (int r = 0; r < n; ++r) offset[r + 1] = offset[r] + incoming[r];
  PageBuffer<std::uint64_t> mine(offset[n]);
  std::copy_n(parted.data() + start[me], size[me], mine.data() + offset[me]);
  std::vector<core::RemoteToken> granted(n);
  for (int k = 1; k < n; ++k) {
    const int peer = (me + k) % n;
    if (incoming[peer] > 0) {
      const Status s = ep.net().grant(mine.data() + offset[peer], incoming[peer] * sizeof(std::uint64_t),
                                      core::kRemoteWrite, granted[peer]);
      if (s != Status::kOk) throw std::runtime_error("grant for rank " + std::to_string(peer) + ": " +
                                                     std::string(to_string(s)));
    }
    const auto words = Group::words(granted[peer]);  // length 0: nothing to store
    g.request(peer, kWindow, words);
  }
  g.wait_until([&] { return windows_in == n - 1; }, "a window from every rank");
  const auto stores_start = std::chrono::steady_clock::now();

  // 3. Store the buckets, chunk by chunk round the peers, so that every receiver is fed at once
  // and each channel's credit window keeps its stores flowing.
  const std::uint64_t expect = (offset[n] - incoming[me]) * sizeof(std::uint64_t);
  std::uint64_t bytes_out = 0;
  for (std::uint64_t at = 0;; at += p.chunk) {
    bool more = false;
    for (int k = 1; k < n; ++k) {
      const int peer = (me + k) % n;
      const std::uint64_t len = size[peer] * sizeof(std::uint64_t);
      if (at >= len) continue;
      if (window[peer].length != len) throw std::runtime_error("rank " + std::to_string(peer) + "'s window is wrong");
      const auto bucket = std::as_bytes(std::span<const std::uint64_t>(parted.data() + start[peer], size[peer]));
      g.store(peer, bucket.subspan(at, std::min(p.chunk, len - at)), window[peer], at, kStored);
      bytes_out += std::min(p.chunk, len - at);
      more = true;
    }
    if (!more) break;
  }
  g.wait_until([&] { return bytes_in == expect; }, "every rank's bucket for us");
  if (bytes_in != expect) throw std::runtime_error("more bytes arrived than announced");
  g.quiesce();  // our stores are acknowledged
  const auto stores_end = std::chrono::steady_clock::now();
  for (int r = 0; r < n; ++r)
    if (granted[r].length > 0 && ep.net().revoke(granted[r]) != Status::kOk) throw std::runtime_error("revoke failed");
  g.barrier();
  {
    using S = std::chrono::duration<double>;
    const double windows = S(stores_start - exchange_start).count(), stores = S(stores_end - stores_start).count();
    char note[160];
    std::snprintf(note, sizeof note, "rank 0: %.3f s sizes and windows, %.3f s storing %s (%.1f MiB/s)", windows,
                  stores, bytes_text(double(bytes_out)).c_str(), stores > 0 ? double(bytes_out) / (1 << 20) / stores : 0.0);
    timer.end("exchange", note);
  }

  // --- local sort ---
  std::sort(mine.begin(), mine.end());
  if (p.corrupt && me == n - 1 && mine.size() > 0) mine[mine.size() / 2] ^= 1;  // the test of the checks
  g.barrier();
  timer.end("local sort");

  // --- verify ---
  Report rep;
  rep.before = before;
  for (std::uint64_t k : mine) rep.after.add(k);
  rep.sorted = std::is_sorted(mine.begin(), mine.end());
  rep.min = mine.size() ? *std::min_element(mine.begin(), mine.end()) : 0;
  rep.max = mine.size() ? *std::max_element(mine.begin(), mine.end()) : 0;
  rep.bytes_in = bytes_in;
  g.send(0, kTagReport, std::as_bytes(std::span(&rep, 1)));
  if (me != 0) return rep.sorted ? kExitOk : kExitWrong;
  std::vector<Report> reports;
  for (int r = 0; r < n; ++r) {
    const auto b = g.recv(r, kTagReport);
    if (b.size() != sizeof(Report)) throw std::runtime_error("a malformed report");
    std::memcpy(&reports.emplace_back(), b.data(), sizeof(Report));
  }
  timer.end("verify");

  std::uint64_t moved = 0, least = UINT64_MAX, most = 0;
  for (const Report& r : reports) {
    moved += r.bytes_in;
    least = std::min(least, r.after.count);
    most = std::max(most, r.after.count);
  }
  std::printf("sample_sort: %" PRIu64 " keys (%s) on %d processes, device %s, stores of %s\n", p.keys,
              bytes_text(double(p.keys) * 8).c_str(), n, p.device.empty() ? "(the first)" : p.device.c_str(), bytes_text(double(p.chunk)).c_str());
  timer.print(stdout);
  std::printf("  moved by store: %s in total; keys per rank after the sort: %" PRIu64 " to %" PRIu64 "\n",
              bytes_text(double(moved)).c_str(), least, most);
  const bool ok = check(reports, p.keys);
  std::fflush(stdout);
  return ok ? kExitOk : kExitWrong;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt("sample_sort", "sample sort of 64-bit keys over forked processes, with U-Net Active Messages");
  opt.add("procs", "4", "worker processes (1-8)");
  opt.add("keys", "16777216", "keys to sort, in total");
  opt.add("seed", "1", "seed of the key generator");
  opt.add("samples", "4096", "keys each rank sends rank 0 to choose the splitters");
  opt.add("chunk", "1048576", "bytes per store (a multiple of 4096)");
  opt.add("timeout", "600", "seconds the whole run, and every wait in it, may take");
  opt.add("device", "", "RDMA device (default: $UNET_DEVICE, else the first)");
  opt.add("stats", "0", "1: every rank prints its endpoint's counters to stderr at the end");
  opt.add("corrupt", "0", "test hook: 1 damages one key after the sort, so verification must fail");
  try {
    if (!opt.parse(argc, argv)) return kExitOk;
    Params p;
    p.keys = opt.u64("keys", 1, 1ull << 32);
    p.seed = opt.u64("seed");
    p.samples = opt.u64("samples", 1, 1u << 20);
    p.chunk = opt.u64("chunk", kPageBytes, 1u << 30);
    if (p.chunk % kPageBytes) throw std::invalid_argument("--chunk must be a multiple of 4096");
    p.corrupt = opt.u64("corrupt", 0, 1) == 1;
    LaunchConfig cfg;
    cfg.program = "sample_sort";
    cfg.procs = static_cast<int>(opt.u64("procs", 1, kMaxProcs));
    cfg.timeout = std::chrono::seconds(opt.u64("timeout", 1, 86400));
    cfg.print_stats = opt.u64("stats", 0, 1) == 1;
    // The registration cache holds what a rank stores from: at most its share of the keys.
    const std::uint64_t share = (p.keys / cfg.procs + 1) * sizeof(std::uint64_t);
    cfg.net = LaunchConfig::endpoint_config(share + (cfg.procs + 2) * p.chunk + (64u << 20));
    if (!opt.str("device").empty()) cfg.net.device = opt.str("device");
    p.device = cfg.net.device;
    return launch(cfg, [&](Group& g) { return sample_sort(g, p); });
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "sample_sort: %s (see --help)\n", e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sample_sort: %s\n", e.what());
    return kExitError;
  }
}
