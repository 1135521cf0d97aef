// The active-message tests: U-Net Active Messages through uam::Endpoint (uam/endpoint.h) on a
// base-level core endpoint, RC or UD (over UD uam adds its own acknowledgements and resends).
// Every message carries one argument word, its index in the run, and `-s` payload bytes.
//
// am_lat is ucx_perftest's am_lat: the client sends a request, the server's request handler
// answers it with a reply of the same word and bytes, one request outstanding. The client stamps
// the cycle counter at the start of every iteration (as ep_lat); latency = half the gap between
// consecutive stamps. An iteration ends when its request completes, which uam reports after the
// reply handler has run.
//
// am_bw is ucx_perftest's am_bw: the client keeps the credit window (--window) full of requests,
// pushing up to --batch between polls and retrying on kNoResource after poll(); the server's
// handler counts them and does not reply, so each completes implicitly, when the server's
// acknowledgement (its credits, piggybacked or explicit) reaches the client: end-to-end, as ep_bw.
// Stamps: posted when request() queued the message (the next poll() posts it), completed when its
// completion ran.
//
// Checks: every handler checks the word (its index: order and count), the size, and the pattern
// of the first and last payloads. The server polls on after its last handler until the client's
// count arrives (uam may still owe an acknowledgement, delayed by up to its ack_delay, or over UD a
// resend), then both compare counts and the server its protocol counters. Handlers run inside
// uam's noexcept poll(), so they never throw: they record the first problem, and the loop that
// polled throws it.
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "round.h"
#include "sizing.h"
#include "unet/uam/endpoint.h"
#include "unet/verbs/error.h"

namespace unet::perf {
namespace {

constexpr uam::HandlerId kPing = 1;  // am_lat's request, answered with kPong
constexpr uam::HandlerId kPong = 2;  // am_lat's reply
constexpr uam::HandlerId kSink = 3;  // am_bw's request, counted

// A round of the active-message tests: one channel of a uam::Endpoint.
struct AmRound : SizeRun {
  uam::Endpoint& am;
  core::ChannelId ch;
  std::string problem;  // the first thing a handler found wrong ("" = none)
  void record(std::string what) {
    if (problem.empty()) problem = std::move(what);
  }
};

// The Driver (progress.h) of a uam::Endpoint: poll(), or with -e wait(), which sleeps on the
// completion channel and wakes for uam's timers. A problem a handler recorded ends the wait after
// the poll that ran it, a failed channel at the next idle check. The peer sends nothing on the
// session during a round, so while idle the session is watched (Progress's `watched`): a dead
// client would otherwise leave the server waiting for --timeout_ms.
class AmDriver {
 public:
  explicit AmDriver(AmRound& r) : r_(r) {}
  int poll() {
    const int n = r_.am.poll();
    if (!r_.problem.empty()) throw PerfError(r_.problem);
    return n;
  }
  Status arm() noexcept { return Status::kOk; }  // wait() arms, polls and sleeps
  Status sleep(std::chrono::milliseconds most) noexcept { return r_.am.wait(most); }
  void check(const char* what) const {
    if (r_.am.channel_status(r_.ch) != Status::kOk)
      throw PerfError(std::string("the channel failed while waiting for ") + what);
  }
  std::string late() const {
    return r_.cfg.transport == core::Transport::kUd
               ? " (over UD uam resends lost messages: is the peer alive?)"
               : "";
  }

 private:
  AmRound& r_;
};

using AmProgress = Progress<AmDriver>;

AmProgress progress_of(AmRound& r) { return AmProgress(AmDriver(r), r.cfg, r.clock, r.session); }

// "" when message `it` is as sent (its word is `it`, its payload `len` bytes, the first and the
// last carry the check pattern), else what differs. Allocates only to report a difference.
std::string check_message(const uam::Message& m, std::uint64_t it, std::uint64_t total,
                          std::uint32_t len, const char* what) {
  // Every message but the first and the last: decided without building a string, as a handler
  // runs this once per message.
  if (m.args.size() == kAmArgs && m.args[0] == it && m.payload.size() == len && it != 0 &&
      it + 1 != total) [[likely]]
    return {};
  std::string bad;
  if (m.args.size() != kAmArgs)
    bad = "carries " + std::to_string(m.args.size()) + " argument words, not 1";
  else if (m.args[0] != it)
    bad = "carries index " + std::to_string(m.args[0]) + " (lost, repeated or reordered messages)";
  else if (m.payload.size() != len)
    bad = "carries " + std::to_string(m.payload.size()) + " bytes, not " + std::to_string(len);
  else if (it == 0 || it + 1 == total)
    bad = check_pattern(m.payload, it);
  return bad.empty() ? bad : std::string(what) + " " + std::to_string(it) + " " + bad;
}

void add_handler(Status s, const char* which) {
  if (s != Status::kOk)
    throw PerfError(std::string("registering the ") + which +
                    " handler: " + std::string(to_string(s)));
}

// The server's end of both tests: polls until `total` requests have run their handler, then on
// until the client's count is waiting on the session, and compares.
void serve(AmRound& r, AmProgress& progress, const std::uint64_t& handled) {
  for (std::uint64_t seen = 0; handled < r.total(); seen = handled)
    progress.until([&] { return handled != seen; },
                   seen == 0 ? "request from the client" : "next request");
  const uam::Stats& st = r.am.stats();
  progress.finish_serving(handled, [&]() -> std::string {
    if (st.malformed + st.protocol_errors() + st.unknown_handler != 0)
      return "uam counted " + std::to_string(st.malformed) + " malformed, " +
             std::to_string(st.protocol_errors()) + " impossible and " +
             std::to_string(st.unknown_handler) + " unknown-handler arrivals";
    return "";
  });
}

// The client's closing checks, then the count exchange; returns the server's count.
std::uint64_t finish_client(AmRound& r, std::uint64_t sent) {
  const uam::Stats& st = r.am.stats();
  if (st.requests_sent != sent || st.completed_ok != sent || st.completed_error != 0)
    throw PerfError(std::to_string(sent) + " requests sent (uam counted " +
                    std::to_string(st.requests_sent) + ") but " + std::to_string(st.completed_ok) +
                    " completed and " + std::to_string(st.completed_error) + " failed");
  return finish_round(*r.session, sent);
}

SizeResult am_lat(AmRound& r) {
  const std::uint64_t total = r.total();
  const std::uint32_t len = r.size;
  AmProgress progress = progress_of(r);
  SizeResult result = SizeResult::of(r.size, r.cfg.iterations);

  if (!r.cfg.is_client()) {  // server: answer every request with its word and bytes
    std::uint64_t handled = 0;
    add_handler(
        r.am.on_request(
            kPing,
            [&](uam::Token& t, const uam::Message& m) {
              const std::uint64_t it = handled++;
              if (std::string bad = check_message(m, it, total, len, "request"); !bad.empty())
                r.record(std::move(bad));
              else if (Status s = r.am.reply(t, kPong, m.args, m.payload); s != Status::kOk)
                r.record("reply " + std::to_string(it) + " failed: " + std::string(to_string(s)));
              return uam::Disposition::kDone;
            }),
        "request");
    sync_go(*r.session);
    serve(r, progress, handled);
    return result;
  }

  std::uint64_t replies = 0, completed = 0;
  add_handler(r.am.on_reply(kPong,
                            [&](const uam::Message& m) {
                              const std::uint64_t it = replies++;
                              if (std::string bad = check_message(m, it, total, len, "reply");
                                  !bad.empty())
                                r.record(std::move(bad));
                              else if (m.cookie != it)
                                r.record("reply " + std::to_string(it) + " answers request " +
                                         std::to_string(m.cookie));
                              return uam::Disposition::kDone;
                            }),
              "reply");
  r.am.on_completion([&](core::ChannelId, std::uint64_t cookie, Status s) {
    if (s != Status::kOk)
      r.record("request " + std::to_string(cookie) + " completed with " +
               std::string(to_string(s)));
    ++completed;
  });
  std::vector<std::byte> payload(len);
  std::vector<std::uint64_t> stamps(total + 1);
  sync_go(*r.session);
  for (std::uint64_t it = 0; it < total; ++it) {
    if (it == 0 || it + 1 == total) fill_pattern(payload, it);
    stamps[it] = core::CycleClock::now();
    progress.retry([&] { return r.am.request(r.ch, kPing, std::span(&it, 1), payload, it); },
                   "request");
    progress.until([&] { return completed > it; }, "reply from the server");
  }
  stamps[total] = core::CycleClock::now();
  if (replies != total)
    throw PerfError(std::to_string(total) + " requests completed but " + std::to_string(replies) +
                    " replies ran");
  result.server_count = finish_client(r, total);
  result.am_retransmitted = r.am.stats().retransmitted;
  result.am_duplicates = r.am.stats().duplicates;

  result.latency = round_trip_latency(stamps, r.cfg.warmup, r.clock.ticks_per_us());
  return result;
}

SizeResult am_bw(AmRound& r) {
  const std::uint64_t total = r.total(), warmup = r.cfg.warmup;
  const std::uint32_t len = r.size;
  AmProgress progress = progress_of(r);
  SizeResult result = SizeResult::of(r.size, r.cfg.iterations);

  if (!r.cfg.is_client()) {  // server: count, check, no reply
    std::uint64_t handled = 0;
    add_handler(r.am.on_request(kSink,
                                [&](uam::Token&, const uam::Message& m) {
                                  const std::uint64_t it = handled++;
                                  if (std::string bad = check_message(m, it, total, len, "request");
                                      !bad.empty())
                                    r.record(std::move(bad));
                                  return uam::Disposition::kDone;
                                }),
                "request");
    sync_go(*r.session);
    serve(r, progress, handled);
    return result;
  }

  std::vector<std::uint64_t> posted(r.cfg.iterations), completed_at(r.cfg.iterations);
  std::uint64_t next = 0, completed = 0;
  r.am.on_completion([&](core::ChannelId, std::uint64_t cookie, Status s) {
    if (s != Status::kOk)
      r.record("request " + std::to_string(cookie) + " completed with " +
               std::string(to_string(s)));
    else if (cookie != completed)
      r.record("request " + std::to_string(cookie) + " completed in place of " +
               std::to_string(completed));
    else if (cookie >= warmup)
      completed_at[cookie - warmup] = core::CycleClock::now();
    ++completed;
  });
  std::vector<std::byte> payload(len);
  // kNoResource: no credit or no room, until after the next poll().
  auto push = [&](std::uint64_t k) {
    if (k == 0 || k + 1 == total) fill_pattern(payload, k);  // request() copies it
    return r.am.request(r.ch, kSink, std::span(&k, 1), payload, k);
  };
  sync_go(*r.session);
  for (std::uint64_t seen = 0; completed < total;)
    progress.until(
        [&] {
          const bool moved = completed != seen;
          seen = completed;
          return push_batch(progress, r.cfg.batch, next, total, warmup, posted, push, "request") |
                 moved;
        },
        "completion from the server");
  result.server_count = finish_client(r, next);
  result.am_retransmitted = r.am.stats().retransmitted;
  result.am_duplicates = r.am.stats().duplicates;
  result.bandwidth = compute_bw(posted, completed_at, len, r.clock.ticks_per_us());
  return result;
}

uam::Config am_config(const PerfConfig& c) {
  uam::Config a;
  a.window = static_cast<std::uint8_t>(c.window);
  a.coalesce = c.coalesce;
  return a;
}

// One size on a uam::Endpoint: its endpoint (a size above the largest payload is skipped), the
// channel, then `test`.
SizeResult on_am_endpoint(const SizeRun& a, SizeResult (*test)(AmRound&)) {
  const PerfConfig& c = a.cfg;
  std::unique_ptr<uam::Endpoint> am;
  auto make = [&]() -> std::string {
    am = std::make_unique<uam::Endpoint>(am_endpoint_config(c, a.size), am_config(c));
    if (a.size > am->max_payload(kAmArgs))
      return "skip " + std::to_string(a.size) +
             " bytes exceed the largest active-message payload (" +
             std::to_string(am->max_payload(kAmArgs)) + " bytes)";
    return "ok";
  };
  auto run = [&] {
    AmRound round{a, *am, connect_channel(*am, c, *a.session), {}};
    // The handlers hold references into the test's frame: nothing polls `am` after it returns.
    SizeResult done = test(round);
    done.endpoint = am->net().stats();
    return done;
  };
  return agreed_size(a, make, run);
}

}  // namespace

SizeResult run_am_lat(const SizeRun& a) { return on_am_endpoint(a, am_lat); }
SizeResult run_am_bw(const SizeRun& a) { return on_am_endpoint(a, am_bw); }

}  // namespace unet::perf
