// The base-level tests: U-Net send/recv through core::Endpoint.
//
// ep_lat is bench/unet_pingpong.cc's ping-pong (as ib_send_lat): the client stamps the cycle
// counter at the start of every iteration, latency = half the gap between consecutive stamps.
//
// ep_bw streams messages from the client to the server (as ib_send_bw). Flow control is by
// credits, not by RC's RNR retry (which works for RC only and stalls the sender for the RNR timer):
// the client keeps at most `window` = free_queue_depth / 2 messages unacknowledged, and the server
// returns a credit (an 8-byte message: how many it has received and released) every window / 2
// arrivals, after one poll() has reposted the released buffers (sizing.h, credit_plan). So at most
// window messages need posted receives, while at least free_queue_depth minus one repost batch (an
// eighth of it) are posted: the free queue is never overrun, on UD either. The credit is also the
// completion the figures use: message i is complete when a credit covering it reaches the client —
// end-to-end delivery, stricter than perftest's local send completion.
#include <cstring>
#include <string>
#include <vector>

#include "round.h"
#include "sizing.h"

namespace unet::perf {
namespace {

using core::BufferId;
using core::Descriptor;

// The bytes of an arrival: inside the descriptor (small) or in a segment buffer.
std::span<const std::byte> bytes_of(core::Endpoint& ep, const Descriptor& d) {
  return d.is_inline() ? d.inline_payload()
                       : std::span<const std::byte>(ep.buffer(d.buffer).first(d.length));
}

[[noreturn, gnu::cold, gnu::noinline]] void release_refused() {
  throw PerfError("release of an arrival's buffer refused");
}
void done_with(core::Endpoint& ep, const Descriptor& d) {
  if (!d.is_inline() && ep.release(d.buffer) != Status::kOk) [[unlikely]]
    release_refused();
}

[[noreturn, gnu::cold, gnu::noinline]] void unexpected_arrival(const Round& r, const Descriptor& d,
                                                               std::uint32_t len) {
  if (d.channel != r.ch)
    throw PerfError("an arrival on channel " + std::to_string(d.channel) + ", not ours");
  throw PerfError("an arrival of " + std::to_string(d.length) + " bytes, expected " +
                  std::to_string(len));
}
// Inline: on a ping-pong it runs between an arrival and the answer.
void expect_arrival(const Round& r, const Descriptor& d, std::uint32_t len) {
  if (d.channel != r.ch || d.length != len) [[unlikely]]
    unexpected_arrival(r, d, len);
}

// Composes and queues one message without waiting: inside the descriptor when it fits, else in a
// segment buffer (kept across kNoResource retries). kNoResource: try again after progress.
class Sender {
 public:
  explicit Sender(Round& r) : r_(r) {}
  template <class Fill>
  Status try_send(std::uint32_t len, Fill fill) {
    if (len <= r_.ep.inline_threshold()) {
      fill(std::span<std::byte>(small_, len));
      return r_.ep.send_inline(r_.ch, {small_, len});
    }
    if (held_ == core::kNoBuffer)
      if (Status s = r_.ep.acquire_buffer(held_); s != Status::kOk) return s;
    fill(r_.ep.buffer(held_).first(len));
    Status s = r_.ep.send(r_.ch, held_, len);  // the endpoint owns the buffer until it is sent
    if (s == Status::kOk) held_ = core::kNoBuffer;
    return s;
  }
  ~Sender() {
    if (held_ != core::kNoBuffer) (void)r_.ep.release(held_);
  }

 private:
  Round& r_;
  std::byte small_[Descriptor::kInlineBytes] = {};
  BufferId held_ = core::kNoBuffer;
};

auto no_fill = [](std::span<std::byte>) {};

// --oob rc_pingpong: ibv_rc_pingpong -c checks that the first byte of every page of the last
// message it received is 0, so the client's checked messages keep those bytes 0.
constexpr std::size_t kToolPage = 4096;
void fill_message(std::span<std::byte> out, std::uint64_t it, bool rc_pingpong) noexcept {
  fill_pattern(out, it);
  if (rc_pingpong)
    for (std::size_t i = 0; i < out.size(); i += kToolPage) out[i] = std::byte{0};
}
std::string check_message(std::span<const std::byte> in, std::uint64_t it, bool rc_pingpong) {
  for (std::size_t i = 0; i < in.size(); ++i) {
    const std::byte want = rc_pingpong && i % kToolPage == 0 ? std::byte{0} : pattern(it, i);
    if (in[i] != want) return byte_differs(i, in[i], want);
  }
  return "";
}
// What an ibv_rc_pingpong client sends: its buffer as it started (0x7b, the first byte of each
// page 0 with -c) and, since a unet server echoes, the same every time.
std::string check_tool_content(std::span<const std::byte> in) {
  for (std::size_t i = 0; i < in.size(); ++i)
    if (in[i] != std::byte{0x7b} && !(i % kToolPage == 0 && in[i] == std::byte{0}))
      return "byte " + std::to_string(i) + " is " + std::to_string(std::to_integer<int>(in[i])) +
             ", not ibv_rc_pingpong's 123";
  return "";
}

}  // namespace

SizeResult ep_lat(Round& r) {
  const std::uint64_t total = r.total();
  const std::uint32_t len = r.size;
  Progress progress(EndpointDriver(r.ep), r.cfg, r.clock);
  Sender sender(r);
  Descriptor d;
  auto arrived = [&] { return r.ep.receive(d) == Status::kOk; };
  auto send = [&](auto fill) {
    progress.retry([&] { return sender.try_send(len, fill); }, "send");
  };
  SizeResult result = SizeResult::of(r.size, r.cfg.iterations);
  const bool tool = r.cfg.oob != OobKind::kUnet;  // no session: the peer is the real tool
  // ib_send_lat neither echoes nor fills its messages with anything defined: counts and sizes
  // are all there is to check. ibv_rc_pingpong echoes, and starts from 0x7b.
  const bool checked = r.cfg.oob != OobKind::kIbSendLat;
  if (!tool) sync_go(*r.session);

  // Server: wait for each ping and answer it with a message of its size. The first and the last
  // are checked; they are echoed byte for byte (the client checks those), and every one is when
  // the client is ibv_rc_pingpong, which sends back what it received. The others go back
  // unfilled, as ib_send_lat answers from a buffer it never writes.
  if (!r.cfg.is_client()) {
    for (std::uint64_t it = 0; it < total; ++it) {
      progress.until(arrived, "ping from the client");
      expect_arrival(r, d, len);
      auto in = bytes_of(r.ep, d);
      const bool ends = checked && (it == 0 || it + 1 == total);
      if (ends)
        if (std::string bad = tool ? check_tool_content(in) : check_pattern(in, it); !bad.empty())
          throw PerfError("ping " + std::to_string(it) + " of " + std::to_string(len) +
                          " bytes: " + bad);
      if (ends || (checked && tool))
        send([&](std::span<std::byte> out) { std::memcpy(out.data(), in.data(), len); });
      else
        send(no_fill);
      done_with(r.ep, d);  // after the copy
    }
    // send() only queued the last echo; poll() posts it.
    progress.until([&] { return r.ep.stats().sent >= total; }, "the last echo to be posted");
    if (!tool) finish_round(*r.session, total);
    return result;
  }

  std::vector<std::uint64_t> stamps(total + 1);
  for (std::uint64_t it = 0; it < total; ++it) {
    const bool check = checked && (it == 0 || it + 1 == total);
    stamps[it] = core::CycleClock::now();
    if (check)
      send([&](std::span<std::byte> out) { fill_message(out, it, tool); });
    else
      send(no_fill);
    progress.until(arrived, "echo from the server");
    if (it + 1 == total) stamps[total] = core::CycleClock::now();
    expect_arrival(r, d, len);
    if (check)
      if (std::string bad = check_message(bytes_of(r.ep, d), it, tool); !bad.empty())
        throw PerfError("echo " + std::to_string(it) + " of " + std::to_string(len) +
                        " bytes: " + bad);
    done_with(r.ep, d);
  }
  if (!tool) finish_round(*r.session, total);

  result.latency = round_trip_latency(stamps, r.cfg.warmup, r.clock.ticks_per_us());
  return result;
}

namespace {

SizeResult ep_bw(Round& r) {
  const std::uint64_t total = r.total(), warmup = r.cfg.warmup;
  const std::uint32_t len = r.size;
  const auto [window, credit_every] = credit_plan(r.ep.config().free_queue_depth);
  Progress progress(EndpointDriver(r.ep), r.cfg, r.clock);
  Sender sender(r);
  Descriptor d;
  SizeResult result = SizeResult::of(r.size, r.cfg.iterations);
  sync_go(*r.session);

  if (!r.cfg.is_client()) {  // server: count arrivals, check the first and last, return credits
    std::uint64_t count = 0, credited = 0, credits_sent = 0;
    while (count < total) {
      progress.until([&] { return r.ep.receive(d) == Status::kOk; }, "message from the client");
      do {
        expect_arrival(r, d, len);
        if (count == 0 || count + 1 == total)
          if (std::string bad = check_pattern(bytes_of(r.ep, d), count); !bad.empty())
            throw PerfError("message " + std::to_string(count) + " of " + std::to_string(len) +
                            " bytes: " + bad);
        done_with(r.ep, d);
        ++count;
      } while (count < total && r.ep.receive(d) == Status::kOk);
      if (count - credited >= credit_every || count == total) {
        if (r.ep.poll() < 0) throw PerfError("device error while reposting receive buffers");
        progress.retry(
            [&] {
              return sender.try_send(
                  8, [&](std::span<std::byte> out) { std::memcpy(out.data(), &count, 8); });
            },
            "send of a credit");
        credited = count;
        ++credits_sent;
      }
    }
    progress.until([&] { return r.ep.stats().sent >= credits_sent; },
                   "the last credit to be posted");
    finish_round(*r.session, count);
    return result;
  }

  // Client. Stamps: posted when the descriptor is pushed, completed when its credit arrives.
  std::vector<std::uint64_t> posted(r.cfg.iterations), completed(r.cfg.iterations);
  std::uint64_t next = 0, credited = 0;
  auto take_credits = [&] {
    bool any = false;
    while (r.ep.receive(d) == Status::kOk) {
      expect_arrival(r, d, 8);
      std::uint64_t c = 0;
      std::memcpy(&c, bytes_of(r.ep, d).data(), 8);
      done_with(r.ep, d);
      if (c > next || c < credited)
        throw PerfError("a credit for " + std::to_string(c) + " messages, out of order");
      const std::uint64_t now = core::CycleClock::now();
      for (std::uint64_t k = std::max(credited, warmup); k < c; ++k) completed[k - warmup] = now;
      credited = c;
      any = true;
    }
    return any;
  };
  auto push = [&](std::uint64_t k) {
    return (k == 0 || k + 1 == total)
               ? sender.try_send(len, [&](std::span<std::byte> out) { fill_pattern(out, k); })
               : sender.try_send(len, no_fill);
  };
  // At most `window` messages beyond the last one credited.
  auto push_some = [&] {
    return push_batch(progress, r.cfg.batch, next, std::min(total, credited + window), warmup,
                      posted, push, "send");
  };
  while (credited < total)
    progress.until([&] { return take_credits() | push_some(); }, "credit from the server");
  finish_round(*r.session, next);
  result.bandwidth = compute_bw(posted, completed, len, r.clock.ticks_per_us());
  return result;
}

}  // namespace

SizeResult run_ep_lat(const SizeRun& a) { return on_endpoint(a, ep_lat); }
SizeResult run_ep_bw(const SizeRun& a) { return on_endpoint(a, ep_bw); }

}  // namespace unet::perf
