// sample_sort: sorts K 64-bit keys spread over N worker processes with U-Net Active Messages, the
// way the U-Net paper (von Eicken et al., SOSP 1995) judged its Active Messages: by a parallel
// program. Prints the time of each phase and the total; exits 0 only when the result verified.
//
//   sample_sort --procs 4 --keys 16777216         (4 ranks forked here)
//   mpirun -np 8 sample_sort --keys 16777216      (the ranks of mpirun's job, through PMIx)
//
// Each rank starts with K/N keys from a seeded generator (key i of the whole input is
// splitmix64(seed + i), so the input does not depend on N) and then, phase by phase, each phase
// ending at a barrier so that rank 0's clock times the slowest rank:
//   generate   make the keys; count, sum and xor them; pick S of them at random as samples;
//              rank 0 grants the array that will gather them and sends every other rank its
//              window of it (a request)
//   sample     each rank store()s its samples into its window (one RDMA WRITE, then a handler
//              at rank 0 counts them in); rank 0 sorts them and sends the N-1 splitters back to
//              every rank (requests)
//   partition  each key goes to the bucket of the rank that will own its range
//   exchange   each rank tells every peer how many keys it has for it (one request each); each
//              receiver allocates one array for everything it will receive, grants each sender a
//              window of exactly that sender's part and sends it the token (a request of four
//              words); the senders store() their buckets into those windows in chunks (RDMA WRITE,
//              then a handler at the receiver counts the bytes landed); a rank is done when every
//              byte it expects is in and its own stores are acknowledged
//   local sort std::sort of what arrived
//   verify     every rank sends rank 0 its counts, sums, xors (of its keys before and after, and of
//              its samples), whether it is sorted, its least and greatest key; rank 0 checks the
//              totals against the input's, its samples against what the ranks sent, and that
//              max(rank i) <= min(rank i+1)
// Rank 0 also times the steps of sample (samples in, sorting them) and of exchange (sizes,
// windows, and the stores between two barriers); after the local sort, the latency steps phase
// runs the latency-bound steps again on their own, many times each (sort_input.h): barriers,
// samples and splitters, bucket sizes. These are the figures bench/compare/cluster_sort.py sets
// beside the same sort written with MPI.

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "example_main.h"
#include "group.h"
#include "page_buffer.h"
#include "phase_timer.h"
#include "sort_input.h"
#include "splitmix64.h"

// This program's flags: --keys and --samples (sort_input.cc); example_main.cc defines the ones
// every example has.

using namespace unet;
using namespace unet::uam;
using namespace unet::uam::examples;

namespace {

// Handler ids of this program, and the tags of its group messages.
constexpr HandlerId kBucketSize = 1, kWindow = 2, kStored = 3, kSampleWindow = 4,
                    kSamplesStored = 5;
constexpr std::uint32_t kTagSplitters = 2, kTagReport = 3;

// The options every example has (seed, chunk, corrupt), and this one's.
struct Params : CommonParams {
  std::uint64_t keys = 0;
  std::uint64_t samples = 0;  // per rank
  std::string device;         // for the report
};

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
  Checksum samples;          // the samples it sent rank 0
  std::uint64_t sorted = 0;  // 1 when the rank's keys are in order
  std::uint64_t min = 0, max = 0;
  std::uint64_t bytes_in = 0;  // received from peers by store
};

template <class T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span<const T>(v));
}
template <class T>
std::vector<T> from_bytes(const std::vector<std::byte>& b) {
  std::vector<T> v(b.size() / sizeof(T));
  std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}

double seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// Rank 0: the verdict over every rank's report. Prints what is wrong; true when all is right.
// `gathered`: the samples that reached rank 0.
bool check(const std::vector<Report>& reports, std::uint64_t keys, const Checksum& gathered) {
  Checksum before, after, samples;
  bool ok = true, have_prev = false;
  std::uint64_t prev_max = 0;
  for (std::size_t r = 0; r < reports.size(); ++r) {
    const Report& rep = reports[r];
    before.add(rep.before);
    after.add(rep.after);
    samples.add(rep.samples);
    if (!rep.sorted) {
      std::printf("FAILED: rank %zu's keys are not in order\n", r);
      ok = false;
    }
    if (rep.after.count == 0) continue;
    if (have_prev && prev_max > rep.min) {
      std::printf("FAILED: rank %zu's least key %#" PRIx64
                  " is below the greatest key before it %#" PRIx64 "\n",
                  r, rep.min, prev_max);
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
    std::printf("FAILED: before the sort %" PRIu64 " keys, sum %#" PRIx64 ", xor %#" PRIx64
                "; after it %" PRIu64 " keys, sum %#" PRIx64 ", xor %#" PRIx64 "\n",
                before.count, before.sum, before.xor_all, after.count, after.sum, after.xor_all);
    ok = false;
  }
  if (!(gathered == samples)) {
    std::printf("FAILED: the ranks sent %" PRIu64 " samples, sum %#" PRIx64 "; rank 0 had %" PRIu64
                ", sum %#" PRIx64 "\n",
                samples.count, samples.sum, gathered.count, gathered.sum);
    ok = false;
  }
  if (ok)
    std::printf("verified: %" PRIu64 " keys in order across %zu ranks; count, sum %#" PRIx64
                " and xor %#" PRIx64 " as generated\n",
                after.count, reports.size(), after.sum, after.xor_all);
  return ok;
}

// One rank of the sort: the phases in order, and what they hand each other.
class SampleSort {
 public:
  // Registers the handlers before anything is sent: a peer may send as soon as it leaves the
  // first barrier, and a request for a handler not yet registered fails (kNotFound at the sender).
  SampleSort(Group& g, const Params& p)
      : g_(g),
        p_(p),
        n_(g.size()),
        me_(g.rank()),
        samples_stored_(n_, 0),
        incoming_(n_, 0),
        window_(n_) {
    g_.on_request(kBucketSize, [this](Token&, const Message& m) {
      incoming_[g_.rank_of(m.channel)] = m.args[0];
      ++sizes_in_;
      return Disposition::kDone;
    });
    g_.on_request(kWindow, [this](Token&, const Message& m) {
      window_[g_.rank_of(m.channel)] = Group::token(m.args);
      ++windows_in_;
      return Disposition::kDone;
    });
    g_.on_request(kStored, [this](Token&, const Message& m) {
      bytes_in_ += m.bulk_length;  // the data is in place when this runs
      return Disposition::kDone;
    });
    g_.on_request(kSampleWindow, [this](Token&, const Message& m) {
      sample_window_ = Group::token(m.args);
      return Disposition::kDone;
    });
    g_.on_request(kSamplesStored, [this](Token&, const Message& m) {
      samples_stored_[g_.rank_of(m.channel)] = m.bulk_length;  // in place, as kStored's
      ++samples_in_;
      return Disposition::kDone;
    });
  }

  // Each phase ends at a barrier, so that rank 0's clock times the slowest rank.
  int run() {
    generate();
    phase_done("generate");
    sample();
    phase_done("sample");
    partition();
    phase_done("partition");
    exchange();
    phase_done("exchange");
    std::sort(mine_.begin(), mine_.end());
    if (p_.corrupt && me_ == n_ - 1 && mine_.size() > 0) mine_[mine_.size() / 2] ^= 1;
    phase_done("local sort");
    // What each latency-bound step costs alone (sort_input.h), on rank 0's clock; before
    // verify(), whose output the launcher forwards while the ranks go on.
    const double us[3] = {time_repeated(kBarrier, [&] { g_.barrier(); }),
                          time_repeated(kSamplesAndSplitters, [&] { samples_and_splitters(); }),
                          time_repeated(kBucketSizes, [&] { bucket_sizes(); })};
    phase_done("latency steps");  // a phase of their own: not verify's time
    if (sample_grant_.length > 0 && g_.endpoint().net().revoke(sample_grant_) != Status::kOk)
      throw std::runtime_error("revoke failed");  // (every rank's stores have landed)
    const int code = verify();
    if (me_ == 0)
      for (int i = 0; const Repeated& r : {kBarrier, kSamplesAndSplitters, kBucketSizes})
        print_repeated(r, us[i++]);
    return code;
  }

 private:
  void phase_done(const char* name) {
    g_.barrier();
    timer_.end(name);
  }

  // Key i of the whole input is splitmix64(seed' + i): this rank makes its share.
  void generate() {
    const std::uint64_t first = p_.keys * me_ / n_;
    keys_.resize(p_.keys * (me_ + 1) / n_ - first);
    for (std::uint64_t i = 0; i < keys_.size(); ++i) {
      keys_[i] = splitmix64(p_.seed * 0x9e3779b97f4a7c15ull + first + i);
      before_.add(keys_[i]);
    }
    // Picked here, so that the sample phase times its messages only (as mpi_sample_sort does).
    const std::uint64_t count = keys_.size();
    samples_ = PageBuffer<std::uint64_t>(count > 0 ? p_.samples : 0);
    for (std::uint64_t i = 0; i < samples_.size(); ++i)
      samples_[i] = keys_[splitmix64(p_.seed ^ (std::uint64_t(me_) << 40) ^ i) % count];
    sample_windows();
    send_sample_windows();
  }

  // Rank 0 grants one array for every rank's samples, and every other rank registers its samples,
  // as a program registers memory it will gather into and store from again and again (the latency
  // steps do). One grant, as a job may hold few: each rank is sent a window of it, set-up as the
  // grant is (send_sample_windows()), and its store() keeps to it, the device to the array.
  void sample_windows() {
    if (me_ != 0) {  // and the others register what they will store from
      if (samples_.size() > 0) {
        const Status s =
            g_.endpoint().net().pin(samples_.data(), samples_.size() * sizeof(std::uint64_t));
        if (s != Status::kOk)
          throw std::runtime_error("registering our samples: " + std::string(to_string(s)));
      }
      return;
    }
    gathered_ = PageBuffer<std::uint64_t>(p_.samples * n_);
    if (n_ == 1) return;
    const Status s =
        g_.endpoint().net().grant(gathered_.data(), p_.samples * sizeof(std::uint64_t) * n_,
                                  core::kRemoteWrite, sample_grant_);
    if (s != Status::kOk)
      throw std::runtime_error("grant for the samples: " + std::string(to_string(s)));
  }

  // Rank 0 sends every other rank its window of the samples' array, once every rank's handlers
  // are registered (the barrier).
  void send_sample_windows() {
    g_.barrier();
    if (me_ != 0 || n_ == 1) return;
    const std::uint64_t part = p_.samples * sizeof(std::uint64_t);
    for (int r = 1; r < n_; ++r) {
      core::RemoteToken w = sample_grant_;
      w.addr += part * r;
      w.length = part;
      g_.request(r, kSampleWindow, Group::words(w));
    }
  }

  // S random keys of each rank go to rank 0, stored into that rank's window of one array (rank 0
  // copies its own there, as MPI_Gather does the root's); rank 0 sorts them in place and sends
  // every other rank the N-1 splitters (requests).
  void sample() {
    const auto t0 = std::chrono::steady_clock::now();
    if (me_ != 0) {
      g_.wait_until([&] { return sample_window_.length > 0; }, "rank 0's window for our samples");
      if (sample_window_.length < samples_.size() * sizeof(std::uint64_t))
        throw std::runtime_error("rank 0's window for our samples is too small");
      send_samples();
      splitters_ = from_bytes<std::uint64_t>(g_.recv(0, kTagSplitters));
    } else {
      std::copy(samples_.begin(), samples_.end(), gathered_.data());
      await_samples();
      std::size_t count = samples_.size();  // ours lead the array
      // A rank without keys sends none: close the gaps its window left.
      for (int r = 1; r < n_; ++r) {
        const std::size_t got = samples_stored_[r] / sizeof(std::uint64_t);
        if (got > p_.samples)
          throw std::runtime_error("rank " + std::to_string(r) + " stored more than its window");
        std::memmove(gathered_.data() + count, gathered_.data() + p_.samples * r,
                     got * sizeof(std::uint64_t));
        count += got;
      }
      const std::span<std::uint64_t> all(gathered_.data(), count);
      gathered_count_ = count;
      const auto t1 = std::chrono::steady_clock::now();
      std::sort(all.begin(), all.end());
      sample_times_ = {1e3 * seconds(t1 - t0),
                       1e3 * seconds(std::chrono::steady_clock::now() - t1)};
      splitters_.clear();
      for (int j = 1; j < n_; ++j) splitters_.push_back(all.empty() ? 0 : all[all.size() * j / n_]);
      for (int r = 1; r < n_; ++r) g_.send(r, kTagSplitters, bytes_of(splitters_));
    }
    if (splitters_.size() != static_cast<std::size_t>(n_ - 1))
      throw std::runtime_error("wrong number of splitters");
  }

  // Our samples into rank 0's window (a request without data when we have none).
  void send_samples() {
    if (samples_.size() == 0)
      g_.request(0, kSamplesStored, {});
    else
      g_.store(0, std::as_bytes(samples_.span()), sample_window_, 0, kSamplesStored);
  }

  // Rank 0: waits until every other rank's samples are in once more.
  void await_samples() {
    samples_due_ += n_ - 1;
    g_.wait_until([&] { return samples_in_ >= samples_due_; }, "the samples of every rank");
  }

  // The sample phase's messages again, without rank 0's sort: the samples into rank 0's windows,
  // the splitters we have back from it.
  void samples_and_splitters() {
    if (me_ != 0) {
      send_samples();
      if (from_bytes<std::uint64_t>(g_.recv(0, kTagSplitters)) != splitters_)
        throw std::runtime_error("other splitters than the sample phase's");
      return;
    }
    await_samples();
    for (int r = 1; r < n_; ++r) g_.send(r, kTagSplitters, bytes_of(splitters_));
  }

  // One request to each peer with how many keys we have for it; returns when every peer's has
  // come. Each peer sends one per call, so the count of all that came tells.
  void bucket_sizes() {
    for (int k = 1; k < n_; ++k) {
      const int peer = (me_ + k) % n_;
      const std::uint64_t words[1] = {size_[peer]};
      g_.request(peer, kBucketSize, words);
    }
    incoming_[me_] = size_[me_];
    sizes_due_ += n_ - 1;
    g_.wait_until([&] { return sizes_in_ >= sizes_due_; }, "the bucket sizes of every rank");
  }

  // Bucket b gets the keys in [splitter b-1, splitter b): rank b's range. Each bucket starts on a
  // page of its own, so the page-aligned chunks it is stored in register apart.
  void partition() {
    // Rank 0 sums the samples it sorted here, outside the sample phase and before the latency
    // steps store them again; verify() checks them against what the ranks sent.
    for (std::size_t i = 0; i < gathered_count_; ++i) gathered_sum_.add(gathered_[i]);
    std::vector<std::uint16_t> dest(keys_.size());
    size_.assign(n_, 0);
    for (std::uint64_t i = 0; i < keys_.size(); ++i) {
      dest[i] = static_cast<std::uint16_t>(
          std::upper_bound(splitters_.begin(), splitters_.end(), keys_[i]) - splitters_.begin());
      ++size_[dest[i]];
    }
    constexpr std::uint64_t kKeysPerPage = kPageBytes / sizeof(std::uint64_t);
    start_.assign(n_ + 1, 0);
    for (int b = 0; b < n_; ++b)
      start_[b + 1] = start_[b] + (size_[b] + kKeysPerPage - 1) / kKeysPerPage * kKeysPerPage;
    parted_ = PageBuffer<std::uint64_t>(start_[n_]);
    std::vector<std::uint64_t> at(start_.begin(), start_.end() - 1);
    for (std::uint64_t i = 0; i < keys_.size(); ++i) parted_[at[dest[i]]++] = keys_[i];
    std::vector<std::uint64_t>().swap(keys_);
  }

  // Sizes, then windows, then the stores themselves; rank 0 times each step, and a barrier
  // before and after the stores makes their time the slowest rank's.
  void exchange() {
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    // 1. How many keys we have for each peer: one request each.
    bucket_sizes();
    const auto t_sizes = Clock::now();

    // 2. One receive array, in rank order; each sender gets a window over exactly its part.
    std::vector<std::uint64_t> offset(n_ + 1, 0);
    for (int r = 0; r < n_; ++r) offset[r + 1] = offset[r] + incoming_[r];
    mine_ = PageBuffer<std::uint64_t>(offset[n_]);
    std::copy_n(parted_.data() + start_[me_], size_[me_], mine_.data() + offset[me_]);
    std::vector<core::RemoteToken> granted(n_);
    for (int k = 1; k < n_; ++k) {
      const int peer = (me_ + k) % n_;
      if (incoming_[peer] > 0) {
        const Status s = g_.endpoint().net().grant(mine_.data() + offset[peer],
                                                   incoming_[peer] * sizeof(std::uint64_t),
                                                   core::kRemoteWrite, granted[peer]);
        if (s != Status::kOk)
          throw std::runtime_error("grant for rank " + std::to_string(peer) + ": " +
                                   std::string(to_string(s)));
      }
      g_.request(peer, kWindow, Group::words(granted[peer]));  // length 0: nothing to store
    }
    g_.wait_until([&] { return windows_in_ == n_ - 1; }, "a window from every rank");
    g_.barrier();  // every rank holds every window: the stores start together
    const auto t1 = Clock::now();

    // 3. The buckets, chunk by chunk round the peers, so that every receiver is fed at once and
    // each channel's credit window keeps its stores flowing.
    const std::uint64_t expect = (offset[n_] - incoming_[me_]) * sizeof(std::uint64_t);
    std::uint64_t out = 0;
    for (std::uint64_t at = 0;; at += p_.chunk) {
      bool more = false;
      for (int k = 1; k < n_; ++k) {
        const int peer = (me_ + k) % n_;
        const std::uint64_t len = size_[peer] * sizeof(std::uint64_t);
        if (at >= len) continue;
        if (window_[peer].length != len)
          throw std::runtime_error("rank " + std::to_string(peer) + "'s window is wrong");
        const auto bucket = std::as_bytes(
            std::span<const std::uint64_t>(parted_.data() + start_[peer], size_[peer]));
        const std::uint64_t piece = std::min(p_.chunk, len - at);
        g_.store(peer, bucket.subspan(at, piece), window_[peer], at, kStored);
        out += piece;
        more = true;
      }
      if (!more) break;
    }
    g_.wait_until([&] { return bytes_in_ >= expect; }, "every rank's bucket for us");
    if (bytes_in_ != expect) throw std::runtime_error("more bytes arrived than announced");
    g_.quiesce();  // our stores are acknowledged
    g_.barrier();  // and every rank's
    const auto t2 = Clock::now();
    store_seconds_ = seconds(t2 - t1);
    for (int r = 0; r < n_; ++r)
      if (granted[r].length > 0 && g_.endpoint().net().revoke(granted[r]) != Status::kOk)
        throw std::runtime_error("revoke failed");
    char note[160];
    std::snprintf(note, sizeof note,
                  "rank 0: sizes %.3f ms, windows %.3f ms, storing %s in %.3f s (%.1f MiB/s)",
                  1e3 * seconds(t_sizes - t0), 1e3 * seconds(t1 - t_sizes),
                  bytes_text(double(out)).c_str(), seconds(t2 - t1),
                  t2 > t1 ? double(out) / (1 << 20) / seconds(t2 - t1) : 0.0);
    exchange_note_ = note;
  }

  // Every rank sends rank 0 its report; rank 0 checks them and prints the run.
  int verify() {
    Report rep;
    rep.before = before_;
    for (std::uint64_t k : samples_) rep.samples.add(k);
    for (std::uint64_t k : mine_) rep.after.add(k);
    rep.sorted = std::is_sorted(mine_.begin(), mine_.end());
    rep.min = mine_.size() ? *std::min_element(mine_.begin(), mine_.end()) : 0;
    rep.max = mine_.size() ? *std::max_element(mine_.begin(), mine_.end()) : 0;
    rep.bytes_in = bytes_in_;
    g_.send(0, kTagReport, std::as_bytes(std::span(&rep, 1)));
    if (me_ != 0) return rep.sorted ? kExitOk : kExitWrong;
    std::vector<Report> reports(n_);
    for (int r = 0; r < n_; ++r) {
      const auto b = g_.recv(r, kTagReport);
      if (b.size() != sizeof(Report)) throw std::runtime_error("a malformed report");
      std::memcpy(&reports[r], b.data(), sizeof(Report));
    }
    timer_.end("verify");
    timer_.annotate("sample", sample_note(sample_times_));
    timer_.annotate("exchange", exchange_note_);

    std::uint64_t moved = 0, least = UINT64_MAX, most = 0;
    for (const Report& r : reports) {
      moved += r.bytes_in;
      least = std::min(least, r.after.count);
      most = std::max(most, r.after.count);
    }
    std::printf("sample_sort: %" PRIu64 " keys (%s) on %d processes, device %s, stores of %s\n",
                p_.keys, bytes_text(double(p_.keys) * 8).c_str(), n_,
                p_.device.empty() ? "(the first)" : p_.device.c_str(),
                bytes_text(double(p_.chunk)).c_str());
    timer_.print(stdout);
    std::printf(
        "  moved by store: %s in total, in %.3f s (%.1f MiB/s, all ranks together); keys "
        "per rank after the sort: %" PRIu64 " to %" PRIu64 "\n",
        bytes_text(double(moved)).c_str(), store_seconds_,
        store_seconds_ > 0 ? double(moved) / (1 << 20) / store_seconds_ : 0.0, least, most);
    const bool ok = check(reports, p_.keys, gathered_sum_);
    std::fflush(stdout);
    return ok ? kExitOk : kExitWrong;
  }

  Group& g_;
  const Params& p_;
  const int n_, me_;
  PhaseTimer timer_;
  std::vector<std::uint64_t> keys_;    // generate .. partition
  PageBuffer<std::uint64_t> samples_;  // stored from: kept until the program returns
  Checksum before_;
  std::vector<std::uint64_t> splitters_;
  std::vector<std::uint64_t> size_, start_;  // bucket sizes and starts in parted_
  // Stored from: kept until the program returns (page_buffer.h says why).
  PageBuffer<std::uint64_t> parted_;
  PageBuffer<std::uint64_t> mine_;  // what we received: our range, sorted in place
  SampleTimes sample_times_;        // rank 0's
  // The samples: rank 0's array of every rank's (stored into: kept until the program returns) and
  // its grant over it; at the others, rank 0's window for theirs.
  PageBuffer<std::uint64_t> gathered_;
  core::RemoteToken sample_grant_;
  core::RemoteToken sample_window_;
  std::size_t gathered_count_ = 0;  // rank 0: how many samples it sorted
  Checksum gathered_sum_;           // and their sum
  std::string exchange_note_;
  double store_seconds_ = 0;  // the stores, from the barrier before them to the one after
  // Written by the handlers.
  std::vector<std::uint64_t> samples_stored_;  // bytes, by sender
  std::uint64_t samples_in_ = 0, samples_due_ = 0;
  std::vector<std::uint64_t> incoming_;    // bucket sizes, by sender
  std::vector<core::RemoteToken> window_;  // where to store, by receiver
  int windows_in_ = 0;
  std::uint64_t sizes_in_ = 0;
  std::uint64_t sizes_due_ = 0;  // bucket_sizes(): what sizes_in_ reaches once all have come
  std::uint64_t bytes_in_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const char* summary =
      "sample sort of 64-bit keys over forked processes or the ranks mpirun started, with U-Net "
      "Active Messages";
  return example_main("sample_sort", summary, argc, argv, [](const CommonParams& common) {
    Params p;
    static_cast<CommonParams&>(p) = common;
    const SortInput in = sort_input();
    p.keys = in.keys;
    p.samples = in.samples;
    Program prog;
    // The registration cache holds what a rank stores from: at most its share of the keys.
    prog.max_pinned_bytes = [p](int ranks) {
      const std::uint64_t share = (p.keys / ranks + 1) * sizeof(std::uint64_t);
      // ... and its samples; rank 0's array of everyone's is a grant of its own.
      return share + (ranks + 2) * p.chunk + p.samples * sizeof(std::uint64_t) + (64u << 20);
    };
    prog.work = [p](Group& g) mutable {
      p.device = g.endpoint().net().config().device;
      return SampleSort(g, p).run();
    };
    return prog;
  });
}
