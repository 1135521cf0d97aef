// matmul: C = A x B for n x n matrices of doubles over N worker processes with U-Net Active
// Messages; the second of the parallel programs the examples judge UAM by. Prints the time of each
// phase and the total; exits 0 only when the result verified.
//
//   matmul --procs 4 --n 512
//
// Row-block distribution: rank r owns rows [n*r/N, n*(r+1)/N) of A, B and C. C's rows need all of
// B, so rank r walks the row blocks k = r, r+1, ... of B and adds A[:, block k] x B[block k] to its
// C rows; each block it does not own it fetches from the owner with get() (RDMA READ, a reply
// handler here counts the bytes in), one block ahead, so the next block travels while this one is
// multiplied. Each phase ends at a barrier, so rank 0's clock times the slowest rank:
//   generate   fill A and B from a seeded hash (small integers, so every sum is exact)
//   grant      each rank grants read access to its rows of B and sends every peer the token (a
//              request of four words)
//   multiply   the walk above; the report splits it into computing and waiting for gets
//   verify     each rank checks sampled entries of its C rows against a serial sum over A and B
//              (computed from the generator, not from anything fetched), and sends rank 0 the plain
//              and the weighted sum of its C rows; rank 0 compares their totals with closed forms
//              (sum_ij u_i v_j C_ij = sum_k (sum_i u_i A_ik) (sum_j v_j B_kj), in 64-bit modular
//              arithmetic), which any wrong entry changes
#include <gflags/gflags.h>

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
#include "program_flags.h"
#include "splitmix64.h"

// This program's flags; example_main.cc defines the ones every example has.
DEFINE_uint64(n, 512, "matrix order");
DEFINE_uint64(samples, 1024, "entries of C each rank checks against a serial reference");

using namespace unet;
using namespace unet::uam;
using namespace unet::uam::examples;

namespace {

constexpr HandlerId kToken = 1, kGot = 2;
constexpr std::uint32_t kTagReport = 1;

// The options every example has (seed, chunk, corrupt), and this one's.
struct Params : CommonParams {
  std::uint64_t n = 0;
  std::uint64_t samples = 0;  // entries each rank checks against the serial reference
  std::string device;         // for the report
};

// Entry (i, j) of matrix `m` (0: A, 1: B): an integer in [-8, 8]. Products are at most 64 and a
// row-by-column sum at most 64 n, so doubles hold every partial sum exactly, in any order.
struct Generator {
  std::uint64_t seed, n;
  std::int64_t at(int m, std::uint64_t i, std::uint64_t j) const {
    return static_cast<std::int64_t>(
               splitmix64(seed * 0x2545f4914f6cdd1dull + (m * n + i) * n + j) % 17) -
           8;
  }
};

// C[rows x n] += A[:, k0 .. k0+kb) x Bk[kb x n]; A and C are the rank's rows (row length n).
// Tiles of B are reused across all rows; the inner loop runs along rows of B and C, which
// vectorizes.
void multiply_block(const double* a, std::size_t rows, std::size_t n, std::size_t k0,
                    std::size_t kb, const double* bk, double* c) {
  constexpr std::size_t kTileK = 64, kTileJ = 512;
  for (std::size_t jj = 0; jj < n; jj += kTileJ) {
    const std::size_t jend = std::min(n, jj + kTileJ);
    for (std::size_t kk = 0; kk < kb; kk += kTileK) {
      const std::size_t kend = std::min(kb, kk + kTileK);
      for (std::size_t i = 0; i < rows; ++i) {
        double* ci = c + i * n;
        const double* ai = a + i * n + k0;
        for (std::size_t k = kk; k < kend; ++k) {
          const double aik = ai[k];
          const double* bkr = bk + k * n;
          for (std::size_t j = jj; j < jend; ++j) ci[j] += aik * bkr[j];
        }
      }
    }
  }
}

// What each rank tells rank 0 at the end.
struct Report {
  std::uint64_t checked = 0, wrong = 0;  // sampled entries
  std::uint64_t sum = 0, weighted = 0;   // of its C rows, modulo 2^64
  std::uint64_t fetched = 0;             // bytes got from peers
  double compute = 0, waiting = 0;       // seconds in the multiply phase
};

std::uint64_t weight(std::uint64_t x) { return 2 * x + 1; }  // odd: never a zero divisor mod 2^64

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One rank of the multiply: the phases in order, and what they hand each other.
class Matmul {
 public:
  // Registers the handlers before anything is sent: a peer may send as soon as it leaves the
  // first barrier.
  Matmul(Group& g, const Params& p)
      : g_(g),
        p_(p),
        procs_(g.size()),
        me_(g.rank()),
        n_(p.n),
        gen_{p.seed, p.n},
        lo_(row_begin(me_)),
        rows_(row_begin(me_ + 1) - lo_),
        tokens_(procs_),
        arrived_(procs_, 0) {
    g_.on_request(kToken, [this](Token&, const Message& m) {
      tokens_[g_.rank_of(m.channel)] = Group::token(m.args);
      ++tokens_in_;
      return Disposition::kDone;
    });
    g_.on_reply(kGot, [this](const Message& m) {  // a get's data is in place (cookie: the step)
      if (m.status == Status::kOk) arrived_[m.cookie] += m.payload.size();
      return Disposition::kDone;
    });
  }

  // Each phase ends at a barrier, so that rank 0's clock times the slowest rank.
  int run() {
    generate();
    phase_done("generate");
    grant();
    phase_done("grant");
    multiply();
    g_.quiesce();
    phase_done("multiply");
    if (p_.corrupt && me_ == procs_ - 1 && rows_ > 0) c_[0] += 1;  // the test of the checks
    return verify();
  }

 private:
  std::uint64_t row_begin(int r) const { return n_ * r / procs_; }
  std::uint64_t block_bytes(int r) const {
    return (row_begin(r + 1) - row_begin(r)) * n_ * sizeof(double);
  }
  int owner(int step) const { return (me_ + step) % procs_; }  // of the block used at `step`

  void phase_done(const char* name) {
    g_.barrier();
    timer_.end(name);
  }

  void generate() {
    a_ = PageBuffer<double>(rows_ * n_);
    b_ = PageBuffer<double>(rows_ * n_);
    c_ = PageBuffer<double>(rows_ * n_);
    for (std::uint64_t i = 0; i < rows_; ++i)
      for (std::uint64_t j = 0; j < n_; ++j) {
        a_[i * n_ + j] = static_cast<double>(gen_.at(0, lo_ + i, j));
        b_[i * n_ + j] = static_cast<double>(gen_.at(1, lo_ + i, j));
        c_[i * n_ + j] = 0;
      }
  }

  // Our rows of B, readable by every peer: the token goes to each in a request of four words.
  void grant() {
    core::RemoteToken mine;
    if (rows_ > 0) {
      const Status s = g_.endpoint().net().grant(b_.data(), rows_ * n_ * sizeof(double),
                                                 core::kRemoteRead, mine);
      if (s != Status::kOk) throw std::runtime_error("grant: " + std::string(to_string(s)));
    }
    for (int k = 1; k < procs_; ++k) g_.request(owner(k), kToken, Group::words(mine));
    g_.wait_until([&] { return tokens_in_ == procs_ - 1; }, "the tokens of every rank");
  }

  // Gets of block owner(step) into fetched_[step % 2], in chunks; the reply handler counts
  // the bytes in.
  void fetch(int step) {
    const int k = owner(step);
    const std::uint64_t len = block_bytes(k);
    if (tokens_[k].length != len)
      throw std::runtime_error("rank " + std::to_string(k) + "'s token is wrong");
    auto into = std::as_writable_bytes(fetched_[step % 2].span());
    for (std::uint64_t at = 0; at < len; at += p_.chunk)
      g_.get(k, tokens_[k], at, into.subspan(at, std::min(p_.chunk, len - at)), kGot, {},
             static_cast<std::uint64_t>(step));
    fetched_bytes_ += len;
    // get() only queues; poll once so the reads travel while we compute.
    if (g_.endpoint().poll() < 0) throw std::runtime_error("device error while polling");
  }

  // Step s multiplies with block owner(s); the next block is fetched meanwhile, into the buffer
  // step s - 1 used.
  void multiply() {
    std::uint64_t most_rows = 0;
    for (int r = 0; r < procs_; ++r)
      most_rows = std::max(most_rows, row_begin(r + 1) - row_begin(r));
    // Step s lands in fetched_[s % 2]: step 1 in [1], step 2 (three ranks or more) in [0].
    fetched_[0] = PageBuffer<double>(procs_ > 2 ? most_rows * n_ : 0);
    fetched_[1] = PageBuffer<double>(procs_ > 1 ? most_rows * n_ : 0);
    for (int step = 0; step < procs_; ++step) {
      if (step + 1 < procs_) fetch(step + 1);
      const int k = owner(step);
      const double* bk = b_.data();
      if (k != me_) {
        const auto t0 = std::chrono::steady_clock::now();
        g_.wait_until([&] { return arrived_[step] == block_bytes(k); },
                      "a block of B from rank " + std::to_string(k));
        waiting_ += seconds_since(t0);
        bk = fetched_[step % 2].data();
      }
      const auto t0 = std::chrono::steady_clock::now();
      const std::uint64_t k0 = row_begin(k);
      multiply_block(a_.data(), rows_, n_, k0, row_begin(k + 1) - k0, bk, c_.data());
      compute_ += seconds_since(t0);
    }
  }

  // Sampled entries against a serial sum over the generator; plain and weighted sums of our C
  // rows to rank 0, which compares their totals with the closed forms.
  int verify() {
    Report rep;
    rep.fetched = fetched_bytes_;
    rep.compute = compute_;
    rep.waiting = waiting_;
    for (std::uint64_t s = 0; s < p_.samples && rows_ > 0; ++s) {
      const std::uint64_t h = splitmix64(p_.seed ^ (std::uint64_t(me_) << 48) ^ s);
      const std::uint64_t i = h % rows_, j = (h >> 32) % n_;
      std::int64_t want = 0;
      for (std::uint64_t k = 0; k < n_; ++k) want += gen_.at(0, lo_ + i, k) * gen_.at(1, k, j);
      ++rep.checked;
      rep.wrong += c_[i * n_ + j] != static_cast<double>(want);
    }
    for (std::uint64_t i = 0; i < rows_; ++i)
      for (std::uint64_t j = 0; j < n_; ++j) {
        const auto v = static_cast<std::uint64_t>(static_cast<std::int64_t>(c_[i * n_ + j]));
        rep.sum += v;
        rep.weighted += v * weight(lo_ + i) * weight(j);
      }
    g_.send(0, kTagReport, std::as_bytes(std::span(&rep, 1)));
    if (me_ != 0) return rep.wrong == 0 ? kExitOk : kExitWrong;
    return conclude();
  }

  // Rank 0: gathers the reports, computes the closed forms, prints the run and the verdict.
  int conclude() {
    Report total;
    double most_compute = 0, most_waiting = 0;
    for (int r = 0; r < procs_; ++r) {
      const auto bytes = g_.recv(r, kTagReport);
      if (bytes.size() != sizeof(Report)) throw std::runtime_error("a malformed report");
      Report one;
      std::memcpy(&one, bytes.data(), sizeof one);
      total.checked += one.checked;
      total.wrong += one.wrong;
      total.sum += one.sum;
      total.weighted += one.weighted;
      total.fetched += one.fetched;
      most_compute = std::max(most_compute, one.compute);
      most_waiting = std::max(most_waiting, one.waiting);
    }
    // sum_k (sum_i u_i A_ik)(sum_j v_j B_kj), with u = v = 1 and with u = v = weight.
    std::uint64_t want_sum = 0, want_weighted = 0;
    for (std::uint64_t k = 0; k < n_; ++k) {
      std::uint64_t col = 0, wcol = 0, row = 0, wrow = 0;
      for (std::uint64_t i = 0; i < n_; ++i) {
        const auto x = static_cast<std::uint64_t>(gen_.at(0, i, k));
        const auto y = static_cast<std::uint64_t>(gen_.at(1, k, i));
        col += x;
        wcol += x * weight(i);
        row += y;
        wrow += y * weight(i);
      }
      want_sum += col * row;
      want_weighted += wcol * wrow;
    }
    timer_.end("verify");

    const double flops = 2.0 * double(n_) * double(n_) * double(n_);
    char note[128];
    std::snprintf(note, sizeof note,
                  "%.3f GFLOP/s; busiest rank %.3f s computing, %.3f s waiting for gets",
                  flops / timer_.seconds("multiply") / 1e9, most_compute, most_waiting);
    timer_.annotate("multiply", note);
    std::printf("matmul: C = A x B, n = %" PRIu64
                " (%s per matrix) on %d processes, device %s, "
                "gets of %s\n",
                n_, bytes_text(double(n_) * double(n_) * 8).c_str(), procs_,
                p_.device.empty() ? "(the first)" : p_.device.c_str(),
                bytes_text(double(p_.chunk)).c_str());
    timer_.print(stdout);
    std::printf("  fetched by get: %s in total\n", bytes_text(double(total.fetched)).c_str());
    bool ok = true;
    if (total.wrong != 0) {
      std::printf("FAILED: %" PRIu64 " of %" PRIu64
                  " sampled entries differ from the serial reference\n",
                  total.wrong, total.checked);
      ok = false;
    }
    if (total.sum != want_sum || total.weighted != want_weighted) {
      std::printf("FAILED: sum of C %#" PRIx64 " (closed form %#" PRIx64 "), weighted sum %#" PRIx64
                  " (closed form %#" PRIx64 ")\n",
                  total.sum, want_sum, total.weighted, want_weighted);
      ok = false;
    }
    if (ok)
      std::printf("verified: %" PRIu64
                  " sampled entries equal the serial reference; sum and "
                  "weighted sum of C equal their closed forms\n",
                  total.checked);
    std::fflush(stdout);
    return ok ? kExitOk : kExitWrong;
  }

  Group& g_;
  const Params& p_;
  const int procs_, me_;
  const std::uint64_t n_;
  const Generator gen_;
  const std::uint64_t lo_, rows_;  // our rows: [lo_, lo_ + rows_)
  PhaseTimer timer_;
  PageBuffer<double> a_, b_, c_;  // our rows of each (b_ is granted to the peers)
  // Where gets land: kept until the program returns (page_buffer.h says why).
  PageBuffer<double> fetched_[2];
  std::uint64_t fetched_bytes_ = 0;
  double compute_ = 0, waiting_ = 0;
  // Written by the handlers.
  std::vector<core::RemoteToken> tokens_;  // each rank's rows of B
  int tokens_in_ = 0;
  std::vector<std::uint64_t> arrived_;  // bytes of each step's block that are in
};

}  // namespace

int main(int argc, char** argv) {
  const char* summary =
      "blocked matrix multiply over forked processes or the ranks mpirun started, with U-Net "
      "Active Messages";
  return example_main("matmul", summary, argc, argv, [](const CommonParams& common) {
    Params p;
    static_cast<CommonParams&>(p) = common;
    p.n = cli::check_range("n", FLAGS_n, 1, 16384);
    p.samples = cli::check_range("samples", FLAGS_samples, 0, 1u << 24);
    Program prog;
    // The registration cache holds the two buffers gets land in: at most two blocks of B.
    prog.max_pinned_bytes = [p](int ranks) {
      const std::uint64_t block = (p.n / ranks + 1) * p.n * sizeof(double);
      return 2 * block + 2 * p.chunk + (16u << 20);
    };
    prog.work = [p](Group& g) mutable {
      p.device = g.endpoint().net().config().device;
      return Matmul(g, p).run();
    };
    return prog;
  });
}
