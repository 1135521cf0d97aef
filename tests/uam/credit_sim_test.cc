// Unit: credits under loss, duplication and reordering, by simulation. Two nodes, each the logic of
// a uam::Endpoint over UD (endpoint_receive.cc arrival()/timers(), endpoint_send.cc) without a
// device: a CreditWindow, a ReliableSender and ReliableReceiver, copies of unacked messages resent
// with the current credit total, explicit credit messages, probes, and a handler that answers
// every 4th request, both nodes sending requests as fast as credits allow (the fault test
// UamLossyLink in miniature). Every packet is encoded and decoded by the real wire codec.
// Asserted: no legitimately sent credit total is ever refused or misread, no overrun, every
// request handled once and in order — also when one packet arrives milliseconds late, after the
// running total (modulo 256) has moved on by more than half its range.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <queue>
#include <random>
#include <vector>

#include "unet/uam/credit_window.h"
#include "unet/uam/reliability.h"
#include "unet/uam/wire_header.h"

namespace unet::uam {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

struct Packet {
  std::array<std::byte, header_bytes(1)> bytes{};
  std::size_t length = 0;
};

struct Event {
  Time at;
  std::uint64_t order;
  int to;
  Packet packet;
  bool operator>(const Event& o) const { return at != o.at ? at > o.at : order > o.order; }
};

struct NetModel {
  std::uint32_t loss_ppm = 50'000;
  std::uint32_t dup_ppm = 20'000;
  std::uint32_t reorder_ppm = 100'000;  // sent at once instead of after `delay` (netem reorder)
  nanoseconds delay = microseconds(200);
  nanoseconds fast = microseconds(10);  // what a packet that skips the delay takes
  std::uint32_t late_ppm = 0;  // held back by `late` on top (a descheduled vCPU, a busy backlog)
  nanoseconds late = milliseconds(5);
};

class CreditSim {
 public:
  static constexpr std::uint8_t kWindow = 16;

  struct Pending {
    Seq seq;
    std::uint64_t n;
  };
  struct Node {
    explicit Node(const ReliabilityConfig& c) : credits(kWindow), tx(c), rx(c) {}
    CreditWindow credits;
    ReliableSender tx;
    ReliableReceiver rx;
    std::array<Packet, 64> copies{};
    std::deque<Pending> pending;  // requests awaiting completion, oldest first
    std::uint64_t next_send = 0, handled = 0, completed = 0;
    std::uint64_t bad_credits = 0, overruns = 0, out_of_order_handlers = 0;
    std::uint64_t phantom_credits = 0;  // arrivals after which we counted more credit than we have
    Time last_heard{}, last_probe{}, probe_interval{};
  };

  CreditSim(const ReliabilityConfig& c, NetModel net, std::uint64_t seed, std::uint64_t per_side)
      : config_(c), net_(net), rng_(seed), per_side_(per_side), nodes_{Node(c), Node(c)} {
    for (Node& n : nodes_) n.probe_interval = c.rto_initial;
  }

  Node& node(int i) { return nodes_[i]; }

  // Holds back A's `packet`-th packet (counting from 0) until B has been returned `age` more
  // credits than that packet's total carries, then delivers it.
  void hold(std::uint64_t packet, std::uint64_t age) {
    hold_packet_ = packet;
    hold_age_ = age;
  }
  bool held_delivered() const { return held_delivered_; }

  void run(Time limit) {
    while (now_ < limit && !done()) {
      if (holding_ && nodes_[1].credits.stats().returned_to_us >= held_total_ + hold_age_) {
        holding_ = false;
        held_delivered_ = true;
        queue_[1].push(Event{now_, order_++, 1, held_});
      }
      for (int me = 0; me < 2; ++me) {
        offer(me);
        // poll(): up to 32 arrivals, then timers
        for (int k = 0; k < 32 && !queue_[me].empty() && queue_[me].top().at <= now_; ++k) {
          const Event e = queue_[me].top();
          queue_[me].pop();
          arrival(me, e.packet);
          // Credits we count as in flight must cover every request the peer holds or owes us for.
          const CreditWindow& peer = nodes_[1 - me].credits;
          if (nodes_[me].credits.in_flight() < peer.held() + peer.owed())
            ++nodes_[me].phantom_credits;
        }
        timers(me);
      }
      now_ += poll_gap_;
    }
  }

  bool done() const { return nodes_[0].completed == per_side_ && nodes_[1].completed == per_side_; }
  Time now() const { return now_; }

 private:
  void offer(int me) {
    Node& n = nodes_[me];
    while (n.next_send < per_side_) {
      if (n.tx.outstanding() >= config_.window || n.pending.size() >= 127) return;
      if (n.credits.consume() != Status::kOk) return;
      Header h;
      h.kind = Kind::kRequest;
      h.handler = 1;
      h.arg_count = 1;
      h.args[0] = n.next_send;
      const Seq s = send_message(me, h);
      n.pending.push_back({s, n.next_send});
      ++n.next_send;
    }
  }

  Seq send_message(int me, Header& h) {
    Node& n = nodes_[me];
    Seq seq = 0;
    EXPECT_EQ(n.tx.push(0, now_, seq), Status::kOk);
    h.seq = seq;
    h.credits = n.credits.piggyback();
    h.ack = n.rx.ack();
    Packet& c = n.copies[seq & 63];
    c.length = header_bytes(h.arg_count);
    EXPECT_EQ(encode(h, c.bytes), Status::kOk);
    transmit(me, c);
    n.rx.ack_sent();
    return seq;
  }

  void send_credit(int me, bool probe) {
    Node& n = nodes_[me];
    Header h;
    h.kind = Kind::kCredit;
    h.probe = probe;
    h.seq = n.tx.next_seq();
    h.credits = n.credits.piggyback();
    h.ack = n.rx.ack();
    Packet p;
    p.length = header_bytes(0);
    EXPECT_EQ(encode(h, p.bytes), Status::kOk);
    transmit(me, p);
    n.rx.ack_sent();
  }

  void resend(int me, Seq seq) {
    Node& n = nodes_[me];
    Packet& c = n.copies[seq & 63];
    c.bytes[6] = static_cast<std::byte>(n.credits.piggyback());
    transmit(me, c);
  }

  void arrival(int me, const Packet& p) {
    Node& n = nodes_[me];
    Header h;
    ASSERT_EQ(decode(std::span(p.bytes).first(p.length), h), Status::kOk);
    const bool fresh_total = !n.tx.stale_ack(h.ack);
    if (fresh_total && n.credits.on_credit_total(h.credits) != Status::kOk) {
      ++n.bad_credits;
      return;
    }
    bool in_step = false, deliver = false;
    if (h.kind == Kind::kCredit) {
      if (h.probe) n.credits.on_probe();
      in_step = h.seq == n.rx.ack();
    } else if (n.rx.on_arrival(h.seq, now_) == Arrival::kDeliver) {
      in_step = deliver = true;
    }
    if (deliver && h.kind == Kind::kRequest) {
      if (n.credits.on_request() != Status::kOk) {
        ++n.overruns;
      } else {
        (void)n.credits.request_done();  // a short request: its credit is owed at once
        if (h.args[0] != n.handled) ++n.out_of_order_handlers;
        ++n.handled;
        if (h.args[0] % 4 == 0) {
          Header r;
          r.kind = Kind::kReply;
          r.handler = 2;
          r.arg_count = 1;
          r.args[0] = h.args[0];
          (void)send_message(me, r);
        }
      }
    }
    if (in_step) {
      n.last_heard = now_;
      n.probe_interval = config_.rto_initial;
    }
    const Status s = n.tx.on_ack(
        h.ack, now_, [](Seq, std::uint64_t) {}, [&](Seq q, std::uint64_t) { resend(me, q); });
    if (s != Status::kOk) return;
    while (in_step && !n.pending.empty() && seq_before(n.pending.front().seq, h.ack)) {
      n.pending.pop_front();
      ++n.completed;
    }
  }

  void timers(int me) {
    Node& n = nodes_[me];
    (void)n.tx.on_timer(
        now_, [&](Seq q, std::uint64_t) { resend(me, q); }, [](Seq, std::uint64_t) {});
    const bool waiting = !n.pending.empty() && now_ - n.last_heard >= n.probe_interval;
    const bool starved = n.credits.stalled();
    if ((waiting || starved) && now_ - n.last_probe >= n.probe_interval) {
      send_credit(me, true);
      n.last_probe = now_;
      n.probe_interval = std::min(n.probe_interval * 2, config_.rto_max);
    }
    if (n.credits.should_send_explicit_credit() || n.rx.ack_due(now_)) send_credit(me, false);
  }

  void transmit(int me, const Packet& p) {
    if (me == 0 && a_packets_++ == hold_packet_) {
      holding_ = true;
      held_ = p;
      held_total_ = nodes_[0].credits.stats().returned_by_us;  // the total it carries, unwrapped
      return;
    }
    if (chance(net_.loss_ppm)) return;
    const int copies = chance(net_.dup_ppm) ? 2 : 1;
    for (int c = 0; c < copies; ++c) {
      reordering_ = chance(reordering_ ? 550'000 : net_.reorder_ppm);  // 50% correlation, roughly
      Time delay = reordering_ ? net_.fast : net_.delay;
      if (chance(net_.late_ppm)) delay += net_.late;
      queue_[1 - me].push(Event{now_ + delay, order_++, 1 - me, p});
    }
  }

  bool chance(std::uint32_t ppm) { return rng_() % 1'000'000 < ppm; }

  ReliabilityConfig config_;
  NetModel net_;
  std::mt19937_64 rng_;
  std::uint64_t per_side_;
  std::array<Node, 2> nodes_;
  std::array<std::priority_queue<Event, std::vector<Event>, std::greater<>>, 2> queue_;
  bool reordering_ = false;
  std::uint64_t a_packets_ = 0;
  std::uint64_t hold_packet_ = UINT64_MAX, hold_age_ = 0, held_total_ = 0;
  bool holding_ = false, held_delivered_ = false;
  Packet held_;
  Time now_{};
  Time poll_gap_ = microseconds(2);
  std::uint64_t order_ = 0;
};

ReliabilityConfig endpoint_config() {
  ReliabilityConfig c;  // uam::Endpoint's defaults; sender_config() keeps 64 >= 2 W
  c.window = 64;
  return c;
}

void expect_clean(CreditSim& sim, std::uint64_t per_side) {
  ASSERT_TRUE(sim.done()) << "completed " << sim.node(0).completed << " and "
                          << sim.node(1).completed;
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE(i == 0 ? "A" : "B");
    CreditSim::Node& n = sim.node(i);
    EXPECT_EQ(n.bad_credits, 0u) << "a legitimately sent credit total was refused";
    EXPECT_EQ(n.credits.stats().bad_totals, 0u);
    EXPECT_EQ(n.phantom_credits, 0u) << "an old total was taken for credits never returned";
    EXPECT_EQ(n.overruns, 0u) << "the peer was given credits it did not have";
    EXPECT_EQ(n.out_of_order_handlers, 0u);
    EXPECT_EQ(n.handled, per_side);
  }
}

// The fault test's failure, deterministically: a clean link, but one packet from A is held back
// until B has been returned `age` credits beyond the total it carries. Its running total (modulo
// 256) then reads as a jump forward by 256 - age credits.
class LatePacket : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(LatePacket, ItsOldCreditTotalIsNeitherRefusedNorTakenForNewCredits) {
  constexpr std::uint64_t kPerSide = 3'000;
  NetModel clean{.loss_ppm = 0, .dup_ppm = 0, .reorder_ppm = 0, .delay = microseconds(20)};
  CreditSim sim(endpoint_config(), clean, 1, kPerSide);
  sim.hold(200, GetParam());
  sim.run(std::chrono::seconds(60));
  ASSERT_TRUE(sim.held_delivered());
  expect_clean(sim, kPerSide);
}

// 150 credits old: 106 more than in flight, under 128 — refused as bad_credits (the fault test's
// "bad credits 1") and the message dropped. 250 old: 6 new credits that were never returned —
// accepted, and B overruns A's window.
INSTANTIATE_TEST_SUITE_P(Ages, LatePacket, ::testing::Values(130, 150, 200, 250, 400));

// Random loss, duplication and reordering as netem makes them, and 0.2% of packets late by 5 or
// 20 ms.
TEST(CreditSim, LossDuplicationReorderingAndLatePackets) {
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE(seed);
    const NetModel net{.late_ppm = 2000, .late = milliseconds(seed % 2 ? 5 : 20)};
    CreditSim sim(endpoint_config(), net, seed, 20'000);
    sim.run(std::chrono::seconds(600));
    expect_clean(sim, 20'000);
  }
}

}  // namespace
}  // namespace unet::uam
