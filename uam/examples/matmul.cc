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

constexpr HandlerId kToken = 1, kGot = 2;
constexpr std::uint32_t kTagReport = 1;

struct Params {
  std::uint64_t n = 0;
  std::uint64_t seed = 0;
  std::uint64_t samples = 0;  // entries each rank checks against the serial reference
  std::uint64_t chunk = 0;    // bytes per get
  bool corrupt = false;       // test hook: damage one entry of C
  std::string device;         // for the report
};

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Entry (i, j) of matrix `m` (0: A, 1: B): an integer in [-8, 8]. Products are at most 64 and a
// row-by-column sum at most 64 n, so doubles hold every partial sum exactly, in any order.
struct Generator {
  std::uint64_t seed, n;
  std::int64_t at(int m, std::uint64_t i, std::uint64_t j) const {
    return static_cast<std::int64_t>(splitmix64(seed * 0x2545f4914f6cdd1dull + (m * n + i) * n + j) % 17) - 8;
  }
};

std::uint64_t row_begin(std::uint64_t n, int r, int procs) { return n * r / procs; }

// C[rows x n] += A[:, k0 .. k0+kb) x Bk[kb x n]; A and C are the rank's rows (row length n). Tiles of
// B are reused across all rows; the inner loop runs along rows of B and C, which vectorizes.
void multiply_block(const double* a, std::size_t rows, std::size_t n, std::size_t k0, std::size_t kb,
                    const double* bk, double* c) {
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

std::string bytes_text(double bytes) {
  char s[32];
  if (bytes < (1 << 20))
    std::snprintf(s, sizeof s, "%.1f KiB", bytes / 1024);
  else
    std::snprintf(s, sizeof s, "%.1f MiB", bytes / (1 << 20));
  return s;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int matmul(Group& g, const Params& p) {
  const int procs = g.size(), me = g.rank();
  const std::uint64_t n = p.n;
  const Generator gen{p.seed, n};
  Endpoint& ep = g.endpoint();
  PhaseTimer timer;

  // The handlers first: a peer may send as soon as it leaves the first barrier.
  std::vector<core::RemoteToken> tokens(procs);  // each rank's rows of B
  int tokens_in = 0;
  std::vector<std::uint64_t> arrived(procs, 0);  // bytes of each step's block that are in
  g.on_request(kToken, [&](Token&, const Message& m) {
    tokens[g.rank_of(m.channel)] = Group::token(m.args);
    ++tokens_in;
    return Disposition::kDone;
  });
  g.on_reply(kGot, [&](const Message& m) {  // a get's data is in place (cookie: the step)
    if (m.status == Status::kOk) arrived[m.cookie] += m.payload.size();
    return Disposition::kDone;
  });

  // --- generate ---
  const std::uint64_t lo = row_begin(n, me, procs), rows = row_begin(n, me + 1, procs) - lo;
  PageBuffer<double> a(rows * n), b(rows * n), c(rows * n);
  for (std::uint64_t i = 0; i < rows; ++i)
    for (std::uint64_t j = 0; j < n; ++j) {
      a[i * n + j] = static_cast<double>(gen.at(0, lo + i, j));
      b[i * n + j] = static_cast<double>(gen.at(1, lo + i, j));
      c[i * n + j] = 0;
    }
  g.barrier();
  timer.end("generate");

  // --- grant: our rows of B, readable by every peer ---
  core::RemoteToken mine;
  if (rows > 0) {
    if (Status s = ep.net().grant(b.data(), rows * n * sizeof(double), core::kRemoteRead, mine); s != Status::kOk)
      throw std::runtime_error("grant: " + std::string(to_string(s)));
  }
  for (int k = 1; k < procs; ++k) g.request((me + k) % procs, kToken, Group::words(mine));
  g.wait_until([&] { return tokens_in == procs - 1; }, "the tokens of every rank");
  g.barrier();
  timer.end("grant");

  // --- multiply: step s uses block (me + s) mod procs; the next block is fetched meanwhile ---
  std::uint64_t most_rows = 0;
  for (int r = 0; r < procs; ++r) most_rows = std::max(most_rows, row_begin(n, r + 1, procs) - row_begin(n, r, procs));
  // Step s lands in fetched[s % 2]: step 1 in [1], step 2 (three ranks or more) in [0].
  PageBuffer<double> fetched[2] = {PageBuffer<double>(procs > 2 ? most_rows * n : 0),
                                   PageBuffer<double>(procs > 1 ? most_rows * n : 0)};
  std::uint64_t bytes_fetched = 0;
  auto owner = [&](int step) { return (me + step) % procs; };
  auto block_bytes = [&](int k) {
    return (row_begin(n, k + 1, procs) - row_begin(n, k, procs)) * n * sizeof(double);
  };
  auto fetch = [&](int step) {  // gets of block owner(step) into fetched[step % 2], in chunks
    const int k = owner(step);
    const std::uint64_t len = block_bytes(k);
    if (tokens[k].length != len) throw std::runtime_error("rank " + std::to_string(k) + "'s token is wrong");
    auto into = std::as_writable_bytes(fetched[step % 2].span());
    for (std::uint64_t at = 0; at < len; at += p.chunk)
      g.get(k, tokens[k], at, into.subspan(at, std::min(p.chunk, len - at)), kGot, {}, static_cast<std::uint64_t>(step));
    bytes_fetched += len;
    if (ep.poll() < 0) throw std::runtime_error("device error while polling");  // posts the gets now
  };
  double compute = 0, waiting = 0;
  for (int step = 0; step < procs; ++step) {
    if (step + 1 < procs) fetch(step + 1);  // its buffer's last user, step - 1, is done
    const int k = owner(step);
    const double* bk = b.data();
    if (k != me) {
      const auto t0 = std::chrono::steady_clock::now();
      g.wait_until([&] { return arrived[step] == block_bytes(k); }, "a block of B from rank " + std::to_string(k));
      waiting += seconds_since(t0);
      bk = fetched[step % 2].data();
    }
    const auto t0 = std::chrono::steady_clock::now();
    const std::uint64_t k0 = row_begin(n, k, procs);
    multiply_block(a.data(), rows, n, k0, row_begin(n, k + 1, procs) - k0, bk, c.data());
    compute += seconds_since(t0);
  }
  g.quiesce();
  g.barrier();
  const double multiply_seconds = timer.end("multiply");

  // --- verify ---
  if (p.corrupt && me == procs - 1 && rows > 0) c[0] += 1;  // the test of the checks
  Report rep;
  rep.fetched = bytes_fetched;
  rep.compute = compute;
  rep.waiting = waiting;
  for (std::uint64_t s = 0; s < p.samples && rows > 0; ++s) {
    const std::uint64_t h = splitmix64(p.seed ^ (std::uint64_t(me) << 48) ^ s);
    const std::uint64_t i = h % rows, j = (h >> 32) % n;
    std::int64_t want = 0;
    for (std::uint64_t k = 0; k < n; ++k) want += gen.at(0, lo + i, k) * gen.at(1, k, j);
    ++rep.checked;
    rep.wrong += c[i * n + j] != static_cast<double>(want);
  }
  for (std::uint64_t i = 0; i < rows; ++i)
    for (std::uint64_t j = 0; j < n; ++j) {
      const auto v = static_cast<std::uint64_t>(static_cast<std::int64_t>(c[i * n + j]));
      rep.sum += v;
      rep.weighted += v * weight(lo + i) * weight(j);
    }
  g.send(0, kTagReport, std::as_bytes(std::span(&rep, 1)));
  if (me != 0) return rep.wrong == 0 ? kExitOk : kExitWrong;

  Report total;
  double most_compute = 0, most_waiting = 0;
  for (int r = 0; r < procs; ++r) {
    const auto bytes = g.recv(r, kTagReport);
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
  // The closed forms: sum_k (sum_i u_i A_ik)(sum_j v_j B_kj), with u = v = 1 and u = v = weight.
  std::uint64_t want_sum = 0, want_weighted = 0;
  for (std::uint64_t k = 0; k < n; ++k) {
    std::uint64_t col = 0, wcol = 0, row = 0, wrow = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      const auto x = static_cast<std::uint64_t>(gen.at(0, i, k)), y = static_cast<std::uint64_t>(gen.at(1, k, i));
      col += x;
      wcol += x * weight(i);
      row += y;
      wrow += y * weight(i);
    }
    want_sum += col * row;
    want_weighted += wcol * wrow;
  }
  timer.end("verify");

  const double flops = 2.0 * double(n) * double(n) * double(n);
  std::printf("matmul: C = A x B, n = %" PRIu64 " (%s per matrix) on %d processes, device %s, gets of %s\n", n,
              bytes_text(double(n) * double(n) * 8).c_str(), procs, p.device.empty() ? "(the first)" : p.device.c_str(),
              bytes_text(double(p.chunk)).c_str());
  char note[128];
  std::snprintf(note, sizeof note, "%.3f GFLOP/s; busiest rank %.3f s computing, %.3f s waiting for gets",
                flops / multiply_seconds / 1e9, most_compute, most_waiting);
  timer.annotate("multiply", note);
  timer.print(stdout);
  bool ok = true;
  if (total.wrong != 0) {
    std::printf("FAILED: %" PRIu64 " of %" PRIu64 " sampled entries differ from the serial reference\n", total.wrong,
                total.checked);
    ok = false;
  }
  if (total.sum != want_sum || total.weighted != want_weighted) {
    std::printf("FAILED: sum of C %#" PRIx64 " (closed form %#" PRIx64 "), weighted sum %#" PRIx64
                " (closed form %#" PRIx64 ")\n",
                total.sum, want_sum, total.weighted, want_weighted);
    ok = false;
  }
  if (ok)
    std::printf("verified: %" PRIu64 " sampled entries equal the serial reference; sum and weighted sum of C equal "
                "their closed forms\n",
                total.checked);
  std::fflush(stdout);
  return ok ? kExitOk : kExitWrong;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt("matmul", "blocked matrix multiply over forked processes, with U-Net Active Messages");
  opt.add("procs", "4", "worker processes (1-8)");
  opt.add("n", "512", "matrix order");
  opt.add("seed", "1", "seed of the matrix generator");
  opt.add("samples", "1024", "entries of C each rank checks against a serial reference");
  opt.add("chunk", "1048576", "bytes per get (a multiple of 4096)");
  opt.add("timeout", "600", "seconds the whole run, and every wait in it, may take");
  opt.add("device", "", "RDMA device (default: $UNET_DEVICE, else the first)");
  opt.add("stats", "0", "1: every rank prints its endpoint's counters to stderr at the end");
  opt.add("corrupt", "0", "test hook: 1 damages one entry of C, so verification must fail");
  try {
    if (!opt.parse(argc, argv)) return kExitOk;
    Params p;
    p.n = opt.u64("n", 1, 16384);
    p.seed = opt.u64("seed");
    p.samples = opt.u64("samples", 0, 1u << 24);
    p.chunk = opt.u64("chunk", kPageBytes, 1u << 30);
    if (p.chunk % kPageBytes) throw std::invalid_argument("--chunk must be a multiple of 4096");
    p.corrupt = opt.u64("corrupt", 0, 1) == 1;
    LaunchConfig cfg;
    cfg.program = "matmul";
    cfg.procs = static_cast<int>(opt.u64("procs", 1, kMaxProcs));
    cfg.timeout = std::chrono::seconds(opt.u64("timeout", 1, 86400));
    cfg.print_stats = opt.u64("stats", 0, 1) == 1;
    // The registration cache holds the two buffers gets land in: at most two blocks of B.
    const std::uint64_t block = (p.n / cfg.procs + 1) * p.n * sizeof(double);
    cfg.net = LaunchConfig::endpoint_config(2 * block + 2 * p.chunk + (16u << 20));
    if (!opt.str("device").empty()) cfg.net.device = opt.str("device");
    p.device = cfg.net.device;
    return launch(cfg, [&](Group& g) { return matmul(g, p); });
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "matmul: %s (see --help)\n", e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "matmul: %s\n", e.what());
    return kExitError;
  }
}
