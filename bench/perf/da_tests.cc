// The direct-access tests: RDMA WRITE and READ between application memory and the peer's granted
// window (Endpoint grant / write / read), with RemoteTokens swapped over the session.
//
// Memory (Round::local, Round::window, 3 * size bytes each) is split into three regions of `size`
// bytes: region 0 carries the first message, region 2 the last, region 1 every other one, so the
// patterns of the first and last messages stay where the receiver can check them. Before timing,
// one operation over all of `local` registers it through the endpoint's registration cache, so no
// registration happens inside the timed loop.
//
// da_write_lat works like ib_write_lat: each side RDMA-WRITEs `size` bytes to offset 0 of the
// peer's window, the message's last byte carrying the iteration number (mod 256); the peer polls
// the last byte of its own window until that number appears, then writes back. Latency is half
// the round trip. Like ib_write_lat this relies on the NIC placing a WRITE's bytes in address
// order, which the verbs do not promise (only the completion does): true of rxe and of mlx5 for a
// message within one packet, so the test checks all bytes only after the last one has come.
// da_write_bw streams WRITEs (--batch per doorbell); a message is complete when its operation
// completion arrives (RC: the peer acknowledged the data). da_read_lat times READ
// round trips; like ib_read_lat it reports the full round trip, not half.
#include <atomic>
#include <cstring>
#include <vector>

#include "round.h"

namespace unet::perf {
namespace {

using core::OpCompletion;
using core::OpKind;
using core::RemoteToken;

constexpr std::uint64_t kPrimeTag = UINT64_MAX;

// This side's window, granted for the test and revoked at the end.
class Grant {
 public:
  Grant(Round& r, unsigned access) : ep_(r.ep) {
    if (Status s = ep_.grant(r.window.data(), r.window.size(), access, token_); s != Status::kOk)
      throw PerfError("grant of a " + std::to_string(r.window.size()) +
                      "-byte window failed: " + std::string(to_string(s)));
  }
  ~Grant() { (void)ep_.revoke(token_); }
  const RemoteToken& token() const noexcept { return token_; }

 private:
  core::Endpoint& ep_;
  RemoteToken token_;
};

// Pops every operation completion, calling on_done(tag) for each; a failed operation throws.
template <class OnDone>
bool drain_completions(core::Endpoint& ep, OnDone on_done) {
  bool any = false;
  OpCompletion c;
  while (ep.completion(c) == Status::kOk) {
    if (c.status != Status::kOk)
      throw PerfError(std::string(c.kind == OpKind::kRead ? "RDMA READ" : "RDMA WRITE") +
                      " failed: " + std::string(to_string(c.status)));
    on_done(c.tag);
    any = true;
  }
  return any;
}

// One untimed operation over all of `local` (to or from the whole peer window): registers it.
void prime(Round& r, Progress<EndpointDriver>& progress, OpKind kind, const RemoteToken& peer) {
  const std::size_t n = r.local.size();
  progress.retry(
      [&] {
        return kind == OpKind::kRead ? r.ep.read(r.ch, r.local.data(), n, peer, 0, kPrimeTag)
                                     : r.ep.write(r.ch, r.local.data(), n, peer, 0, kPrimeTag);
      },
      "priming operation");
  bool done = false;
  progress.until(
      [&] { return (void)drain_completions(r.ep, [&](std::uint64_t) { done = true; }), done; },
      "completion of the priming operation");
}

std::size_t region_of(std::uint64_t k, std::uint64_t total) noexcept {
  return k == 0 ? 0 : k + 1 == total ? 2 : 1;
}

std::byte counter_byte(std::uint64_t it) noexcept { return static_cast<std::byte>(it + 1); }

SizeResult da_write_lat(Round& r) {
  const std::uint64_t total = r.total();
  const std::uint32_t len = r.size;
  Progress progress(EndpointDriver(r.ep), r.cfg, r.clock);
  Grant grant(r, core::kRemoteWrite);
  const RemoteToken peer = exchange_tokens(*r.session, grant.token());
  prime(r, progress, OpKind::kWrite, peer);  // zeros into the peer's window
  fill_pattern(r.local.subspan(0, len), 0);
  fill_pattern(r.local.subspan(2 * std::size_t{len}, len), total - 1);
  sync_go(*r.session);  // both windows primed: from here only the ping-pong writes them

  std::atomic_ref<std::byte> last(r.window[len - 1]);  // where the peer's counter lands
  std::uint64_t completions = 0;
  auto count = [&](std::uint64_t) { ++completions; };
  // Writes message `it` to the peer and waits for its message `it` (the server in the other order).
  auto write = [&](std::uint64_t it) {
    std::byte* src = r.local.data() + region_of(it, total) * len;
    src[len - 1] = counter_byte(it);
    progress.retry([&] { return r.ep.write(r.ch, src, len, peer, 0, it); }, "RDMA WRITE");
  };
  auto await = [&](std::uint64_t it) {
    const std::byte want = counter_byte(it);
    progress.until(
        [&] {
          (void)drain_completions(r.ep, count);
          return last.load(std::memory_order_acquire) == want;
        },
        "RDMA WRITE from the peer");
  };
  auto check = [&](std::uint64_t it) {
    if (it != 0 && it + 1 != total) return;
    const std::uint64_t seed = it == 0 ? 0 : total - 1;
    if (std::string bad = check_pattern(r.window.subspan(0, len - 1), seed); !bad.empty())
      throw PerfError("RDMA WRITE " + std::to_string(it) + " of " + std::to_string(len) +
                      " bytes: " + bad);
  };
  SizeResult result = SizeResult::of(r.size, r.cfg.iterations);

  if (!r.cfg.is_client()) {
    for (std::uint64_t it = 0; it < total; ++it) {
      await(it);
      check(it);
      write(it);
    }
    progress.until([&] { return (void)drain_completions(r.ep, count), completions >= total; },
                   "the last RDMA WRITE to complete");
    finish_round(*r.session, total);
    return result;
  }

  std::vector<std::uint64_t> stamps(total + 1);
  for (std::uint64_t it = 0; it < total; ++it) {
    stamps[it] = core::CycleClock::now();
    write(it);
    await(it);
    if (it + 1 == total) stamps[total] = core::CycleClock::now();
    check(it);
  }
  progress.until([&] { return (void)drain_completions(r.ep, count), completions >= total; },
                 "the last RDMA WRITE to complete");
  finish_round(*r.session, total);
  result.latency = round_trip_latency(stamps, r.cfg.warmup, r.clock.ticks_per_us());
  return result;
}

SizeResult da_write_bw(Round& r) {
  const std::uint64_t total = r.total(), warmup = r.cfg.warmup;
  const std::uint32_t len = r.size;
  Progress progress(EndpointDriver(r.ep), r.cfg, r.clock);
  Grant grant(r, core::kRemoteWrite);
  const RemoteToken peer = exchange_tokens(*r.session, grant.token());
  SizeResult result = SizeResult::of(r.size, r.cfg.iterations);

  if (!r.cfg.is_client()) {  // server: nothing to do until the client is done; then check
    sync_go(*r.session);
    finish_round(
        *r.session, total,
        [&]() -> std::string {
          if (std::string bad = check_pattern(r.window.subspan(0, len), 0); !bad.empty())
            return "first RDMA WRITE: " + bad;
          if (std::string bad =
                  check_pattern(r.window.subspan(2 * std::size_t{len}, len), total - 1);
              !bad.empty())
            return "last RDMA WRITE: " + bad;
          return "";
        },
        idle_server_wait(r.cfg, total * len));
    return result;
  }

  prime(r, progress, OpKind::kWrite, peer);  // zeros into the server's window
  fill_pattern(r.local.subspan(0, len), 0);
  fill_pattern(r.local.subspan(2 * std::size_t{len}, len), total - 1);
  sync_go(*r.session);

  std::vector<std::uint64_t> posted(r.cfg.iterations), completed(r.cfg.iterations);
  std::uint64_t next = 0, done = 0;
  auto take_completions = [&] {
    return drain_completions(r.ep, [&](std::uint64_t tag) {
      if (tag >= warmup && tag < total) completed[tag - warmup] = core::CycleClock::now();
      ++done;
    });
  };
  auto push = [&](std::uint64_t k) {
    const std::size_t off = region_of(k, total) * len;
    return r.ep.write(r.ch, r.local.data() + off, len, peer, off, k);
  };
  while (done < total)
    progress.until(
        [&] {
          return take_completions() |
                 push_batch(progress, r.cfg.batch, next, total, warmup, posted, push, "RDMA WRITE");
        },
        "RDMA WRITE completion");
  finish_round(*r.session, total);
  result.bandwidth = compute_bw(posted, completed, len, r.clock.ticks_per_us());
  return result;
}

SizeResult da_read_lat(Round& r) {
  const std::uint64_t total = r.total();
  const std::uint32_t len = r.size;
  const std::uint64_t seed = 0x5a;
  Progress progress(EndpointDriver(r.ep), r.cfg, r.clock);
  if (!r.cfg.is_client()) fill_pattern(r.window.subspan(0, len), seed);  // what the client reads
  Grant grant(r, core::kRemoteRead);
  const RemoteToken peer = exchange_tokens(*r.session, grant.token());
  SizeResult result = SizeResult::of(r.size, r.cfg.iterations);

  if (!r.cfg.is_client()) {  // server: its memory is read; nothing to do until the client is done
    sync_go(*r.session);
    finish_round(*r.session, total, {}, idle_server_wait(r.cfg, total * len));
    return result;
  }

  prime(r, progress, OpKind::kRead, peer);
  std::memset(r.local.data(), 0, r.local.size());
  sync_go(*r.session);

  std::vector<std::uint64_t> stamps(total + 1);
  std::uint64_t completed = 0;
  for (std::uint64_t it = 0; it < total; ++it) {
    std::byte* dst = r.local.data() + region_of(it, total) * len;
    stamps[it] = core::CycleClock::now();
    progress.retry([&] { return r.ep.read(r.ch, dst, len, peer, 0, it); }, "RDMA READ");
    progress.until(
        [&] {
          return (void)drain_completions(r.ep, [&](std::uint64_t) { ++completed; }), completed > it;
        },
        "RDMA READ completion");
    if (it + 1 == total) stamps[total] = core::CycleClock::now();
  }
  if (std::string bad = check_pattern(r.local.subspan(0, len), seed); !bad.empty())
    throw PerfError("first RDMA READ: " + bad);
  if (std::string bad = check_pattern(r.local.subspan(2 * std::size_t{len}, len), seed);
      !bad.empty())
    throw PerfError("last RDMA READ: " + bad);
  finish_round(*r.session, total);
  result.latency =
      round_trip_latency(stamps, r.cfg.warmup, r.clock.ticks_per_us(), Figure::kRoundTrip);
  return result;
}

}  // namespace

SizeResult run_da_write_lat(const SizeRun& a) { return on_endpoint(a, da_write_lat); }
SizeResult run_da_write_bw(const SizeRun& a) { return on_endpoint(a, da_write_bw); }
SizeResult run_da_read_lat(const SizeRun& a) { return on_endpoint(a, da_read_lat); }

}  // namespace unet::perf
