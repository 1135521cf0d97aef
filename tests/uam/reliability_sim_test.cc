// Unit: the reliability property, by simulation. Two endpoints, each a ReliableSender and a
// ReliableReceiver, exchange messages over a simulated link that loses, duplicates, reorders and
// delays packets (all from a fixed seed), with every packet encoded and decoded by the real wire
// codec. Asserted: every message's handler runs exactly once and in order on its channel, the
// counters of the two sides agree, and a link that dies makes every outstanding message fail.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <queue>
#include <random>
#include <vector>

#include "unet/uam/reliability.h"
#include "unet/uam/wire_header.h"

namespace unet::uam {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

struct LinkModel {
  std::uint32_t loss_ppm = 50'000;  // 5% of packets lost
  std::uint32_t dup_ppm = 20'000;   // 2% delivered twice
  std::uint32_t late_ppm = 20'000;  // 2% held back by late_delay (reordered past many others)
  nanoseconds base_delay = microseconds(5);
  nanoseconds jitter = microseconds(20);  // uniform extra delay: reorders neighbours
  nanoseconds late_delay = microseconds(400);
};

struct Packet {
  std::array<std::byte, header_bytes(1)> bytes{};
  std::size_t length = 0;
};

struct Event {
  Time at;
  std::uint64_t order;  // ties broken by sending order: the run is deterministic
  int to;
  Packet packet;
  bool operator>(const Event& o) const { return at != o.at ? at > o.at : order > o.order; }
};

class Sim {
 public:
  Sim(const ReliabilityConfig& config, LinkModel link, std::uint64_t seed, std::uint64_t a_to_b,
      std::uint64_t b_to_a)
      : link_(link),
        window_(config.window),
        rng_(seed),
        nodes_{Node(config, a_to_b), Node(config, b_to_a)} {}

  struct Node {
    Node(const ReliabilityConfig& c, std::uint64_t n) : tx(c), rx(c), to_send(n) {}
    ReliableSender tx;
    ReliableReceiver rx;
    std::uint64_t to_send;
    std::uint64_t next_message = 0;   // index of the next new message
    std::uint64_t handled = 0;        // handler runs for the peer's messages
    std::uint64_t retired = 0;        // own messages acked
    std::uint64_t failed = 0;         // own messages reported failed
    std::uint64_t data_arrivals = 0;  // sequenced packets that reached us (any outcome)
    std::uint64_t explicit_acks = 0;
    Status channel = Status::kOk;
    bool handler_order_broken = false;
  };

  Node& node(int i) { return nodes_[i]; }
  std::uint64_t packets_sent() const { return order_; }
  std::uint64_t packets_lost() const { return lost_; }

  // Runs until both sides have everything acked and delivered, a channel fails, or `limit` of
  // simulated time passes. `dead_after`: from then on the link drops everything.
  void run(Time limit, Time dead_after = Time::max()) {
    dead_after_ = dead_after;
    while (now_ < limit) {
      while (!queue_.empty() && queue_.top().at <= now_) {
        const Event e = queue_.top();
        queue_.pop();
        arrive(nodes_[e.to], e.packet);
      }
      for (int i = 0; i < 2; ++i) step(i);
      if (done() || failed()) return;
      now_ = next_event_time(limit);
    }
  }

  bool done() const {
    for (const Node& n : nodes_)
      if (n.next_message < n.to_send || n.tx.outstanding() != 0) return false;
    return nodes_[0].handled == nodes_[1].to_send && nodes_[1].handled == nodes_[0].to_send;
  }
  bool failed() const {
    return nodes_[0].channel != Status::kOk || nodes_[1].channel != Status::kOk;
  }
  Time now() const { return now_; }

 private:
  static constexpr Time kPace = nanoseconds(500);  // the application offers a message this often

  void step(int me) {
    Node& n = nodes_[me];
    if (n.channel != Status::kOk) return;
    const Status t = n.tx.on_timer(
        now_, [&](Seq s, std::uint64_t cookie) { send_data(me, s, cookie); },
        [&](Seq, std::uint64_t) { ++n.failed; });
    if (t != Status::kOk) {
      n.channel = t;
      return;
    }
    if (n.next_message < n.to_send && now_ >= n_next_offer_[me]) {
      Seq s;
      if (n.tx.push(n.next_message, now_, s) == Status::kOk) {
        send_data(me, s, n.next_message++);
        n_next_offer_[me] = now_ + kPace;
      }
    }
    if (n.rx.ack_due(now_)) {
      Header h;
      h.kind = Kind::kCredit;
      h.ack = n.rx.ack();
      transmit(me, h);
      n.rx.ack_sent();
      ++n.explicit_acks;
    }
  }

  void arrive(Node& n, const Packet& p) {
    Header h;
    ASSERT_EQ(decode(std::span(p.bytes).first(p.length), h), Status::kOk);
    const int me = &n == &nodes_[0] ? 0 : 1;
    const Status a = n.tx.on_ack(
        h.ack, now_,
        [&](Seq, std::uint64_t cookie) {
          if (cookie != n.retired) n.handler_order_broken = true;  // retired oldest first
          ++n.retired;
        },
        [&](Seq s, std::uint64_t cookie) { send_data(me, s, cookie); });
    ASSERT_EQ(a, n.channel == Status::kOk ? Status::kOk : Status::kClosed);
    if (h.kind != Kind::kRequest) return;
    ++n.data_arrivals;
    if (n.rx.on_arrival(h.seq, now_) == Arrival::kDeliver) {
      // The "handler": it must see message 0, 1, 2... each once.
      if (h.args[0] != n.handled) n.handler_order_broken = true;
      ++n.handled;
    }
  }

  void send_data(int me, Seq s, std::uint64_t message) {
    Header h;
    h.kind = Kind::kRequest;
    h.handler = 1;
    h.arg_count = 1;
    h.args[0] = message;
    h.seq = s;
    h.ack = nodes_[me].rx.ack();  // piggybacked
    transmit(me, h);
    nodes_[me].rx.ack_sent();
  }

  void transmit(int me, const Header& h) {
    Packet p;
    p.length = header_bytes(h.arg_count);
    EXPECT_EQ(encode(h, p.bytes), Status::kOk);
    const std::uint64_t order = order_++;
    if (now_ >= dead_after_ || chance(link_.loss_ppm)) {
      ++lost_;
      return;
    }
    const int copies = chance(link_.dup_ppm) ? 2 : 1;
    for (int c = 0; c < copies; ++c) {
      Time delay = link_.base_delay +
                   nanoseconds(rng_() % static_cast<std::uint64_t>(link_.jitter.count() + 1));
      if (chance(link_.late_ppm)) delay += link_.late_delay;
      queue_.push(Event{now_ + delay, order * 2 + c, 1 - me, p});
    }
  }

  bool chance(std::uint32_t ppm) { return rng_() % 1'000'000 < ppm; }

  Time next_event_time(Time limit) const {
    Time t = limit;
    auto consider = [&](std::optional<Time> d) {
      if (d && *d < t) t = *d;
    };
    if (!queue_.empty()) consider(queue_.top().at);
    for (int i = 0; i < 2; ++i) {
      const Node& n = nodes_[i];
      consider(n.tx.deadline());
      consider(n.rx.ack_deadline());
      if (n.next_message < n.to_send && n.tx.outstanding() < window_) consider(n_next_offer_[i]);
    }
    return t > now_ ? t : now_ + nanoseconds(1);
  }

  LinkModel link_;
  std::uint32_t window_;
  std::mt19937_64 rng_;
  std::array<Node, 2> nodes_;
  std::array<Time, 2> n_next_offer_{};
  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue_;
  Time now_{};
  Time dead_after_ = Time::max();
  std::uint64_t order_ = 0;
  std::uint64_t lost_ = 0;
};

unsigned long long ull(std::uint64_t v) { return v; }

ReliabilityConfig sim_config(std::uint32_t window) {
  ReliabilityConfig c;
  c.window = window;
  c.rto_initial = milliseconds(1);
  c.rto_min = microseconds(200);  // low enough that the estimate, not the floor, sets the timer
  c.rto_max = milliseconds(16);
  c.max_retries = 12;
  c.ack_every = 4;
  c.ack_delay = microseconds(100);
  c.initial_seq = 0xFFFFFFFFu - 40'000;  // the run crosses the 2^32 wrap
  return c;
}

struct SimCase {
  const char* name;
  std::uint32_t window;
  std::uint64_t seed;
  LinkModel link;
};

void PrintTo(const SimCase& c, std::ostream* os) { *os << c.name; }

class ReliabilitySim : public ::testing::TestWithParam<SimCase> {};

TEST_P(ReliabilitySim, HundredThousandMessagesExactlyOnceInOrder) {
  const SimCase& c = GetParam();
  constexpr std::uint64_t kMessages = 100'000;
  Sim sim(sim_config(c.window), c.link, c.seed, kMessages, kMessages / 4);
  sim.run(std::chrono::seconds(600));
  ASSERT_FALSE(sim.failed()) << "a channel failed at " << sim.now().count() << " ns";
  ASSERT_TRUE(sim.done()) << "not finished by the time limit";
  for (int i = 0; i < 2; ++i) {
    Sim::Node& me = sim.node(i);
    Sim::Node& peer = sim.node(1 - i);
    SCOPED_TRACE(i == 0 ? "A receiving from B" : "B receiving from A");
    EXPECT_FALSE(me.handler_order_broken);
    EXPECT_EQ(me.handled, peer.to_send) << "every handler ran exactly once";
    EXPECT_EQ(me.rx.stats().delivered, peer.tx.stats().sent);
    EXPECT_EQ(peer.tx.stats().acked, peer.tx.stats().sent);
    EXPECT_EQ(peer.retired, peer.to_send);
    EXPECT_EQ(peer.failed, 0u);
    EXPECT_EQ(me.rx.stats().delivered + me.rx.stats().duplicates + me.rx.stats().out_of_order,
              me.data_arrivals)
        << "every arrival accounted for once";
  }
  // The link really did its worst.
  const auto& rx = sim.node(1).rx.stats();
  const auto& tx = sim.node(0).tx.stats();
  std::printf(
      "%s: %.1f ms simulated, %llu packets (%llu lost), A->B: %llu sent, %llu resent in %llu "
      "timeouts + %llu fast; B: %llu duplicates, %llu out of order, %llu explicit acks\n",
      c.name, sim.now().count() / 1e6, ull(sim.packets_sent()), ull(sim.packets_lost()),
      ull(tx.sent), ull(tx.retransmitted), ull(tx.timeouts), ull(tx.fast_retransmits),
      ull(rx.duplicates), ull(rx.out_of_order), ull(sim.node(1).explicit_acks));
  EXPECT_GT(sim.packets_lost(), 0u);
  EXPECT_GT(rx.duplicates, 0u);
  EXPECT_GT(rx.out_of_order, 0u);
  EXPECT_GT(sim.node(0).tx.stats().retransmitted, 0u);
  EXPECT_GT(sim.node(1).explicit_acks, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Links, ReliabilitySim,
    ::testing::Values(SimCase{"Window16Loss5", 16, 1, LinkModel{}},
                      SimCase{"Window64Loss1Dup5", 64, 2,
                              LinkModel{.loss_ppm = 10'000, .dup_ppm = 50'000, .late_ppm = 50'000}},
                      SimCase{"Window4Loss10", 4, 3, LinkModel{.loss_ppm = 100'000}}),
    [](const auto& p) { return std::string(p.param.name); });

TEST(ReliabilitySimFailure, DeadLinkFailsEveryOutstandingMessageExactlyOnce) {
  Sim sim(sim_config(16), LinkModel{}, 7, 100'000, 0);
  sim.run(std::chrono::seconds(60), milliseconds(20));  // the peer vanishes 20 ms in
  ASSERT_TRUE(sim.failed());
  Sim::Node& a = sim.node(0);
  EXPECT_EQ(a.channel, Status::kRetryExceeded);
  EXPECT_GT(a.failed, 0u);
  EXPECT_EQ(a.retired + a.failed, a.next_message) << "each pushed message acked or failed, once";
  EXPECT_EQ(a.tx.outstanding(), 0u);
  EXPECT_FALSE(sim.node(1).handler_order_broken);
  EXPECT_GE(sim.node(1).handled, a.retired) << "nothing acked that was not delivered";
  EXPECT_LE(sim.node(1).handled, a.next_message);
  std::printf(
      "dead link: %llu pushed, %llu acked, %llu failed, B ran %llu handlers; failed at %.1f ms\n",
      ull(a.next_message), ull(a.retired), ull(a.failed), ull(sim.node(1).handled),
      sim.now().count() / 1e6);
}

}  // namespace
}  // namespace unet::uam
