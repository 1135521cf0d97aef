// mpi_sample_sort: uam/examples/sample_sort.cc written with MPI, for bench/compare/cluster_sort.py
// to set beside it phase by phase: the same input (key i of the whole input is splitmix64(seed' +
// i)), the same samples and splitters, the same phases each ending at a barrier, rank 0's clock,
// and the same lines of output. MPI does the communication: MPI_Gather of the samples and
// MPI_Bcast of the splitters, MPI_Alltoall of the bucket sizes, MPI_Alltoallv of the buckets
// (between two barriers, as the unet sort's stores), MPI_Reduce and MPI_Gather for the check, and
// MPI_Barrier for the barriers.
//
//   mpirun -np 8 mpi_sample_sort --keys 16777216
//
// Exits 0 only when the result verified (3 when it did not, 2 on a value out of range).
#include <gflags/gflags.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "phase_timer.h"
#include "program_flags.h"
#include "sort_input.h"
#include "splitmix64.h"

// --keys and --samples are uam_sample_sort's (sort_input.cc); the seed is this program's.
DEFINE_uint64(seed, 1, "seed of the input keys");

using unet::uam::examples::bytes_text;
using unet::uam::examples::kBarrier;
using unet::uam::examples::kBucketSizes;
using unet::uam::examples::kSamplesAndSplitters;
using unet::uam::examples::PhaseTimer;
using unet::uam::examples::print_repeated;
using unet::uam::examples::Repeated;
using unet::uam::examples::sample_note;
using unet::uam::examples::SampleTimes;
using unet::uam::examples::splitmix64;
using unet::uam::examples::time_repeated;

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

struct Params {
  std::uint64_t keys = 16777216;
  std::uint64_t samples = 4096;
  std::uint64_t seed = 1;
};

// The flags' values; throws std::invalid_argument for one out of its range.
Params params() {
  const unet::uam::examples::SortInput in = unet::uam::examples::sort_input();
  Params p;
  p.keys = in.keys;
  p.samples = in.samples;
  p.seed = FLAGS_seed;
  return p;
}

class Sort {
 public:
  Sort(const Params& p, int me, int n) : p_(p), me_(me), n_(n) {}

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
    phase_done("local sort");
    // Before verify(), whose output the launcher forwards while the ranks go on (as sample_sort).
    const double us[3] = {time_repeated(kBarrier, [] { MPI_Barrier(MPI_COMM_WORLD); }),
                          time_repeated(kSamplesAndSplitters, [&] { samples_and_splitters(); }),
                          time_repeated(kBucketSizes, [&] { bucket_sizes(); })};
    phase_done("latency steps");  // a phase of their own: not verify's time
    const int code = verify();
    if (me_ == 0)
      for (int i = 0; const Repeated& r : {kBarrier, kSamplesAndSplitters, kBucketSizes})
        print_repeated(r, us[i++]);
    return code;
  }

 private:
  void phase_done(const char* name) {
    MPI_Barrier(MPI_COMM_WORLD);
    timer_.end(name);
  }

  void generate() {
    const std::uint64_t first = p_.keys * me_ / n_;
    keys_.resize(p_.keys * (me_ + 1) / n_ - first);
    for (std::uint64_t i = 0; i < keys_.size(); ++i) {
      keys_[i] = splitmix64(p_.seed * 0x9e3779b97f4a7c15ull + first + i);
      sum_before_ += keys_[i];
      xor_before_ ^= keys_[i];
    }
    const std::uint64_t count = keys_.size();  // the samples, picked here as sample_sort does
    samples_.resize(p_.samples);
    for (std::uint64_t i = 0; i < p_.samples; ++i)
      samples_[i] = count ? keys_[splitmix64(p_.seed ^ (std::uint64_t(me_) << 40) ^ i) % count] : 0;
  }

  void sample() {
    const auto t0 = Clock::now();
    std::vector<std::uint64_t> all(me_ == 0 ? p_.samples * n_ : 0);
    MPI_Gather(samples_.data(), static_cast<int>(p_.samples), MPI_UINT64_T, all.data(),
               static_cast<int>(p_.samples), MPI_UINT64_T, 0, MPI_COMM_WORLD);
    splitters_.resize(n_ - 1);
    if (me_ == 0) {
      const auto t1 = Clock::now();
      std::sort(all.begin(), all.end());
      for (int j = 1; j < n_; ++j) splitters_[j - 1] = all[all.size() * j / n_];
      sample_times_ = {1e3 * seconds(t1 - t0), 1e3 * seconds(Clock::now() - t1)};
    }
    MPI_Bcast(splitters_.data(), n_ - 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  }

  // The sample phase's messages again, without rank 0's sort (as sample_sort's).
  void samples_and_splitters() {
    std::vector<std::uint64_t> all(me_ == 0 ? p_.samples * n_ : 0);
    MPI_Gather(samples_.data(), static_cast<int>(p_.samples), MPI_UINT64_T, all.data(),
               static_cast<int>(p_.samples), MPI_UINT64_T, 0, MPI_COMM_WORLD);
    MPI_Bcast(splitters_.data(), n_ - 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  }

  // How many keys we have for each rank, to each; how many each has for us, into recv_count_.
  void bucket_sizes() {
    recv_count_.resize(n_);
    MPI_Alltoall(send_count_.data(), 1, MPI_INT, recv_count_.data(), 1, MPI_INT, MPI_COMM_WORLD);
  }

  void partition() {
    std::vector<std::uint16_t> dest(keys_.size());
    send_count_.assign(n_, 0);
    for (std::uint64_t i = 0; i < keys_.size(); ++i) {
      dest[i] = static_cast<std::uint16_t>(
          std::upper_bound(splitters_.begin(), splitters_.end(), keys_[i]) - splitters_.begin());
      ++send_count_[dest[i]];
    }
    send_at_.assign(n_, 0);
    for (int b = 1; b < n_; ++b) send_at_[b] = send_at_[b - 1] + send_count_[b - 1];
    parted_.resize(keys_.size());
    std::vector<int> at(send_at_);
    for (std::uint64_t i = 0; i < keys_.size(); ++i) parted_[at[dest[i]]++] = keys_[i];
    std::vector<std::uint64_t>().swap(keys_);
  }

  void exchange() {
    const auto t0 = Clock::now();
    bucket_sizes();
    const auto t_sizes = Clock::now();
    std::vector<int> recv_at(n_, 0);
    for (int r = 1; r < n_; ++r) recv_at[r] = recv_at[r - 1] + recv_count_[r - 1];
    mine_.resize(static_cast<std::size_t>(recv_at[n_ - 1]) + recv_count_[n_ - 1]);
    MPI_Barrier(MPI_COMM_WORLD);  // the buckets start together, as the unet sort's stores
    const auto t1 = Clock::now();
    MPI_Alltoallv(parted_.data(), send_count_.data(), send_at_.data(), MPI_UINT64_T, mine_.data(),
                  recv_count_.data(), recv_at.data(), MPI_UINT64_T, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    const auto t2 = Clock::now();
    for (int r = 0; r < n_; ++r)
      if (r != me_) moved_ += std::uint64_t(recv_count_[r]) * sizeof(std::uint64_t);
    const std::uint64_t out = (parted_.size() - send_count_[me_]) * sizeof(std::uint64_t);
    exchange_seconds_ = seconds(t2 - t1);
    char note[160];
    std::snprintf(note, sizeof note, "rank 0: sizes %.3f ms, alltoallv %s in %.3f s (%.1f MiB/s)",
                  1e3 * seconds(t_sizes - t0), bytes_text(double(out)).c_str(), seconds(t2 - t1),
                  t2 > t1 ? double(out) / (1 << 20) / seconds(t2 - t1) : 0.0);
    exchange_note_ = note;
  }

  // Counts, sums and xors before and after (MPI_Reduce); order within and across ranks (each
  // rank's least and greatest key and whether it is sorted, MPI_Gather).
  int verify() {
    std::uint64_t sum_after = 0, xor_after = 0;
    for (std::uint64_t k : mine_) {
      sum_after += k;
      xor_after ^= k;
    }
    const std::uint64_t local[4] = {std::uint64_t(mine_.size()), sum_after, sum_before_,
                                    std::uint64_t(std::is_sorted(mine_.begin(), mine_.end()))};
    const std::uint64_t xors[2] = {xor_after, xor_before_};
    std::uint64_t total[4] = {}, xtotal[2] = {}, moved = 0;
    MPI_Reduce(local, total, 4, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(xors, xtotal, 2, MPI_UINT64_T, MPI_BXOR, 0, MPI_COMM_WORLD);
    MPI_Reduce(&moved_, &moved, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    const std::uint64_t ends[2] = {mine_.empty() ? UINT64_MAX : mine_.front(),
                                   mine_.empty() ? 0 : mine_.back()};
    std::vector<std::uint64_t> all_ends(me_ == 0 ? 2 * n_ : 0);
    MPI_Gather(ends, 2, MPI_UINT64_T, all_ends.data(), 2, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (me_ != 0) return 0;
    timer_.end("verify");
    timer_.annotate("sample", sample_note(sample_times_));
    timer_.annotate("exchange", exchange_note_);
    bool ok = total[0] == p_.keys && total[1] == total[2] && xtotal[0] == xtotal[1] &&
              total[3] == std::uint64_t(n_);
    std::uint64_t prev = 0;
    for (int r = 0; r < n_; ++r) {
      if (all_ends[2 * r] == UINT64_MAX) continue;  // an empty rank
      ok = ok && prev <= all_ends[2 * r];
      prev = all_ends[2 * r + 1];
    }
    std::printf("mpi_sample_sort: %" PRIu64 " keys (%s) on %d processes, MPI_Alltoallv\n", p_.keys,
                bytes_text(double(p_.keys) * 8).c_str(), n_);
    timer_.print(stdout);
    std::printf("  moved by alltoallv: %s in total, in %.3f s (%.1f MiB/s, all ranks together)\n",
                bytes_text(double(moved)).c_str(), exchange_seconds_,
                exchange_seconds_ > 0 ? double(moved) / (1 << 20) / exchange_seconds_ : 0.0);
    if (ok)
      std::printf("verified: %" PRIu64 " keys in order across %d ranks; count, sum %#" PRIx64
                  " and xor %#" PRIx64 " as generated\n",
                  total[0], n_, total[1], xtotal[0]);
    else
      std::printf("FAILED: %" PRIu64 " keys, sums %#" PRIx64 " / %#" PRIx64 ", xors %#" PRIx64
                  " / %#" PRIx64 ", %" PRIu64 " of %d ranks sorted, or ranks out of order\n",
                  total[0], total[1], total[2], xtotal[0], xtotal[1], total[3], n_);
    std::fflush(stdout);
    return ok ? 0 : 3;
  }

  const Params p_;
  const int me_, n_;
  PhaseTimer timer_;
  std::vector<std::uint64_t> keys_, samples_, splitters_, parted_, mine_;
  std::vector<int> send_count_, send_at_, recv_count_;
  std::uint64_t sum_before_ = 0, xor_before_ = 0, moved_ = 0;
  double exchange_seconds_ = 0;
  SampleTimes sample_times_;  // rank 0's
  std::string exchange_note_;
};

}  // namespace

int main(int argc, char** argv) {
  // Flags before MPI_Init: --help prints and every rank ends alike, MPI never started.
  if (!unet::cli::parse_flags(&argc, &argv,
                              "sample sort of 64-bit keys over MPI, beside uam_sample_sort"))
    return 0;
  if (argc > 1) {
    std::fprintf(stderr, "mpi_sample_sort: takes flags only, not '%s' (see --help)\n", argv[1]);
    return 2;
  }
  MPI_Init(&argc, &argv);
  int me = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  Params p;
  try {
    p = params();
  } catch (const std::invalid_argument& e) {
    if (me == 0) std::fprintf(stderr, "mpi_sample_sort: %s\n", e.what());
    MPI_Finalize();
    return 2;
  }
  const int code = Sort(p, me, n).run();
  int worst = 0;
  MPI_Allreduce(&code, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
