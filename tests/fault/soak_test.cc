// Soak (label fault): UNET_SOAK_MESSAGES messages (default 1,000,000) of mixed sizes, spread over
// three layers running at once between rxe0 and rxe1 across the lossy veth pair (netem loss,
// duplication, reordering and delay both ways; ci/rxe-vm --two-dev):
//   core RC   rxe0 -> rxe1 sends, inline and from segment buffers      (40% of the messages)
//   uam UD    requests both ways, a quarter answered                   (40%)
//   ulp       length-prefixed messages through one stream connection   (20%)
// Exact accounting per layer: sent = delivered + reported failed, where "delivered" is counted by
// the receiving application after checking the message's sequence number and every byte, and
// "reported failed" is what the library told the sender (a failed send, an error completion, a
// failed connection). With a healthy link nothing is reported failed, so every message must be
// delivered exactly once, in order and intact.
//
// The core layer's messages fit one packet each: on this link rxe's RC (Debian 6.1 kernel) fails
// its QP now and then on multi-packet messages, "remote invalid request" (tests/README.md).
// Multi-packet RC messages over this link are still tested, for a shorter time, by
// LossyLink.RcDeliversEveryMessageOnceInOrderIntact. Should the core layer fail, it stops at once,
// and the failure names the status.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <vector>

#include "endpoint_support.h"
#include "netem.h"
#include "unet/uam/endpoint.h"
#include "unet/ulp/stream_endpoint.h"

namespace unet::test {
namespace {

using namespace std::chrono_literals;
using core::ChannelId;
using Clock = std::chrono::steady_clock;

class Soak : public NetemTest {};

std::byte fill(std::uint64_t seq, std::size_t i) {
  return static_cast<std::byte>((seq * 131 + i * 7 + 3) & 0xFF);
}

// Writes seq into the first 8 bytes of `out` and the pattern after; checks the same on arrival.
void compose(std::span<std::byte> out, std::uint64_t seq) {
  std::memcpy(out.data(), &seq, sizeof seq);
  for (std::size_t i = sizeof seq; i < out.size(); ++i) out[i] = fill(seq, i);
}
bool intact(std::span<const std::byte> in, std::uint64_t seq) {
  if (in.size() < sizeof seq) return false;
  std::uint64_t got;
  std::memcpy(&got, in.data(), sizeof got);
  if (got != seq) return false;
  for (std::size_t i = sizeof seq; i < in.size(); ++i)
    if (in[i] != fill(seq, i)) return false;
  return true;
}

struct Tally {
  std::uint64_t target = 0, sent = 0, delivered = 0, failed = 0, bad = 0;
  bool done() const { return delivered + failed >= target; }
};

// core RC, rxe0 -> rxe1: at most kWindow messages in flight (the receiver is in this process).
struct CoreLayer {
  static constexpr std::uint64_t kWindow = 64;
  // One packet each at rxe's MTU of 1024 (see the top of the file): inline, posted inline, buffer.
  static constexpr std::size_t kSizes[] = {8, 40, 200, 600, 1000};
  core::Endpoint tx, rx;
  ChannelId ch;
  Tally t;
  Status first_error = Status::kOk;
  static core::EndpointConfig config(const char* dev) {
    core::EndpointConfig c = endpoint_config(core::Transport::kRc, 256);
    c.device = dev;
    c.free_queue_depth = 128;
    c.send_queue_depth = 128;
    c.ack_timeout = 10;  // ~4 ms, not the default 67 ms: a loss stalls the channel for this long
    // rxe: 7 = retry for ever, as a stall of the emulated responder can outlast seven 4 ms
    // timeouts (tests/README.md); peer_death_test checks RC's bound on a dead peer.
    c.retry_count = 7;
    return c;
  }
  explicit CoreLayer(std::uint64_t n) : tx(config("rxe0")), rx(config("rxe1")) {
    ch = connect_endpoints(tx, rx).first;
    t.target = n;
  }
  bool step() {
    std::byte small[core::Descriptor::kInlineBytes];
    if (t.failed != 0) {  // the channel failed: the report below says how
      ADD_FAILURE() << "core RC: " << t.failed << " sends reported failed after " << t.sent
                    << " sent and " << t.delivered << " delivered; the first with "
                    << to_string(first_error);
      return false;
    }
    while (t.sent < t.target && t.sent - t.delivered < kWindow) {
      const std::size_t len = kSizes[t.sent % std::size(kSizes)];
      Status s;
      if (len <= tx.inline_threshold()) {
        compose(std::span(small, len), t.sent);
        s = tx.send_inline(ch, std::span(small, len));
      } else {
        core::BufferId b;
        if (tx.acquire_buffer(b) != Status::kOk) break;
        compose(tx.buffer(b).first(len), t.sent);
        s = tx.send(ch, b, static_cast<std::uint32_t>(len));
      }
      if (s == Status::kNoResource) break;
      if (s != Status::kOk) {
        ADD_FAILURE() << "core RC send " << t.sent << ": " << to_string(s);
        return false;
      }
      ++t.sent;
    }
    if (tx.poll() < 0 || rx.poll() < 0) return false;
    for (core::OpCompletion c; tx.completion(c) == Status::kOk;)  // failed sends, reported here
      if (c.status != Status::kOk && first_error == Status::kOk) first_error = c.status;
    core::Descriptor d;
    while (rx.receive(d) == Status::kOk) {
      const auto bytes = d.is_inline()
                             ? d.inline_payload()
                             : std::span<const std::byte>(rx.buffer(d.buffer).first(d.length));
      if (!intact(bytes, t.delivered)) ++t.bad;
      ++t.delivered;
      if (!d.is_inline()) (void)rx.release(d.buffer);
    }
    t.failed = tx.stats().send_errors;
    return true;
  }
};

// uam UD, requests both ways; a quarter answered.
struct UamLayer {
  static constexpr uam::HandlerId kCheck = 1, kCheckReply = 2;
  struct Side {
    uam::Endpoint* ep = nullptr;
    ChannelId ch = 0;
    Tally t;
    std::uint64_t expected = 0, handled = 0, corrupt = 0, replies = 0;  // of the peer's requests
  };
  uam::Endpoint a, b;
  Side s[2];
  std::vector<std::byte> body;
  std::size_t sizes[5] = {};
  static uam::Config config() {
    uam::Config c;
    c.window = 16;
    return c;
  }
  explicit UamLayer(std::uint64_t n)
      : a(lossy_ud_config("rxe0"), config()), b(lossy_ud_config("rxe1"), config()) {
    core::ChannelOffer oa = a.offer_channel(), ob = b.offer_channel();
    s[0].ep = &a;
    s[1].ep = &b;
    s[0].ch = a.accept_offer(oa, ob.local);
    s[1].ch = b.accept_offer(ob, oa.local);
    const std::size_t max_body = std::min(a.max_payload(1), b.max_payload(1));
    const std::size_t sz[] = {8, 20, 100, 512, max_body};
    std::copy(std::begin(sz), std::end(sz), sizes);
    body.resize(max_body);
    for (Side& me : s) {
      me.t.target = n / 2;
      (void)me.ep->on_request(kCheck, [&me](uam::Token& tok, const uam::Message& m) {
        if (!intact(m.payload, me.expected)) ++me.corrupt;
        ++me.expected;
        ++me.handled;
        if (m.args[0] % 4 == 0) (void)me.ep->reply(tok, kCheckReply, m.args);
        return uam::Disposition::kDone;
      });
      (void)me.ep->on_reply(kCheckReply, [&me](const uam::Message&) {
        ++me.replies;
        return uam::Disposition::kDone;
      });
      me.ep->on_completion([&me](ChannelId, std::uint64_t, Status st) {
        ++(st == Status::kOk ? me.t.delivered : me.t.failed);
      });
    }
  }
  bool done() const { return s[0].t.done() && s[1].t.done(); }
  bool step() {
    for (Side& me : s) {
      while (me.t.sent < me.t.target) {
        const std::uint64_t n = me.t.sent;
        const std::size_t len = sizes[n % std::size(sizes)];
        compose(std::span(body).first(len), n);
        const Status st =
            me.ep->request(me.ch, kCheck, std::span(&n, 1), std::span(body).first(len), n);
        if (st == Status::kNoResource) break;
        if (st != Status::kOk) return false;
        ++me.t.sent;
      }
      if (me.ep->poll() < 0) return false;
    }
    return true;
  }
};

// ulp stream, rxe0 -> rxe1: messages of [8-byte length][8-byte seq][pattern].
struct StreamLayer {
  static constexpr std::size_t kSizes[] = {16, 100, 1000, 5000, 20000};
  ulp::StreamEndpoint tx, rx;
  ulp::ConnId ct = ulp::kNoConn, cr = ulp::kNoConn;
  Tally t;
  std::vector<std::byte> out;  // the message being written
  std::size_t out_at = 0;
  std::vector<std::byte> in, chunk = std::vector<std::byte>(64 * 1024);
  static ulp::StreamConfig config() {
    ulp::StreamConfig c;
    c.dead_peer_timeout = 30s;
    return c;
  }
  explicit StreamLayer(std::uint64_t n)
      : tx(lossy_ud_config("rxe0"), config()), rx(lossy_ud_config("rxe1"), config()) {
    core::ChannelOffer o1 = tx.offer_peer(), o2 = rx.offer_peer();
    const ChannelId to_rx = tx.accept_peer(o1, o2.local);
    (void)rx.accept_peer(o2, o1.local);
    if (rx.listen(9) != Status::kOk || tx.connect(to_rx, 9, ct) != Status::kOk)
      throw std::runtime_error("stream set-up");
    t.target = n;
  }
  bool step() {
    if (tx.poll() < 0 || rx.poll() < 0) return false;
    if (cr == ulp::kNoConn && rx.accept(9, cr) != Status::kOk) return true;
    ulp::StreamState st;
    if (tx.state(ct, st) != Status::kOk) return false;
    if (st == ulp::StreamState::kClosed) {  // failed: what was not delivered is reported failed
      t.failed = t.sent - t.delivered;
      return true;
    }
    while (t.sent < t.target || out_at < out.size()) {
      if (out_at == out.size()) {
        const std::uint64_t len = kSizes[t.sent % std::size(kSizes)];
        out.resize(8 + len);
        std::memcpy(out.data(), &len, 8);
        compose(std::span(out).subspan(8), t.sent);
        out_at = 0;
        ++t.sent;
      }
      std::size_t took = 0;
      const Status s = tx.send(ct, std::span(out).subspan(out_at), took);
      if (s != Status::kOk && s != Status::kNoResource) return false;
      out_at += took;
      if (took == 0) break;
    }
    for (std::size_t got = 0; rx.recv(cr, chunk, got) == Status::kOk && got > 0;) {
      in.insert(in.end(), chunk.begin(), chunk.begin() + static_cast<std::ptrdiff_t>(got));
      std::size_t at = 0;
      for (std::uint64_t len; in.size() - at >= 8 &&
                              (std::memcpy(&len, in.data() + at, 8), in.size() - at >= 8 + len);) {
        if (!intact(std::span(in).subspan(at + 8, len), t.delivered)) ++t.bad;
        ++t.delivered;
        at += 8 + len;
      }
      in.erase(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(at));
    }
    return true;
  }
};

TEST_F(Soak, MessagesOfEveryLayerAreDeliveredOrReportedFailedExactly) {
  const std::uint64_t total = env_amount("UNET_SOAK_MESSAGES", 1000000);
  ASSERT_GE(total, 1000u);
  CoreLayer core(total * 4 / 10);
  UamLayer am(total * 4 / 10);
  StreamLayer stream(total - core.t.target - am.s[0].t.target - am.s[1].t.target);
  const long drops_before = drops();
  const auto t0 = Clock::now();
  const auto deadline = t0 + std::chrono::seconds(120 + total / 1000);  // ~1000 messages/s at worst
  while (!(core.t.done() && am.done() && stream.t.done()) && Clock::now() < deadline) {
    ASSERT_TRUE(core.t.done() || core.step()) << "core RC";
    ASSERT_TRUE(am.done() || am.step()) << "uam UD";
    ASSERT_TRUE(stream.t.done() || stream.step()) << "ulp stream";
  }
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  const long dropped_now = drops() - drops_before;
  auto report = [](const char* layer, const Tally& t) {
    std::printf(
        "  %-22s sent %9llu = delivered %9llu + reported failed %llu; corrupt or out of order "
        "%llu\n",
        layer, static_cast<unsigned long long>(t.sent),
        static_cast<unsigned long long>(t.delivered), static_cast<unsigned long long>(t.failed),
        static_cast<unsigned long long>(t.bad));
  };
  std::printf(
      "soak: %llu messages in %.1f s over the lossy link (%s, both ways); netem dropped %ld "
      "packets\n",
      static_cast<unsigned long long>(total), secs, netem().c_str(), dropped_now);
  report("core RC rxe0->rxe1", core.t);
  report("uam UD rxe0->rxe1", am.s[0].t);
  report("uam UD rxe1->rxe0", am.s[1].t);
  report("ulp stream rxe0->rxe1", stream.t);
  std::printf(
      "  uam resends %llu, stream segments resent %llu\n",
      static_cast<unsigned long long>(am.a.stats().retransmitted + am.b.stats().retransmitted),
      static_cast<unsigned long long>(
          stream.tx.stats(stream.ct) ? stream.tx.stats(stream.ct)->retransmitted_segments : 0));
  for (const Tally* t : {&core.t, &am.s[0].t, &am.s[1].t, &stream.t}) {
    EXPECT_EQ(t->sent, t->target);
    EXPECT_EQ(t->sent, t->delivered + t->failed)
        << "a message was neither delivered nor reported failed";
    EXPECT_EQ(t->failed, 0u) << "the link is lossy, not broken: nothing should fail";
    EXPECT_EQ(t->bad, 0u);
  }
  // uam: the peer's handlers ran once per delivered request (exactly once, in order: `bad` above).
  EXPECT_EQ(am.s[1].handled, am.s[0].t.delivered);
  EXPECT_EQ(am.s[0].handled, am.s[1].t.delivered);
  EXPECT_EQ(am.s[0].corrupt + am.s[1].corrupt, 0u) << "a request arrived corrupt or out of order";
  EXPECT_GT(dropped_now, 0) << "netem dropped nothing: the traffic did not cross the veths";
}

}  // namespace
}  // namespace unet::test
