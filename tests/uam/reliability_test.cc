// Unit: reliability state machines, driven step by step with injected time — numbering, the
// bounded retransmission buffer, cumulative acks, the RTT estimate and its timeout (RFC 6298,
// Karn), backoff, retry exhaustion, duplicate suppression, dropping out-of-order arrivals and
// delayed acks.
#include "unet/uam/reliability.h"

#include <gtest/gtest.h>

#include <vector>

namespace unet::uam {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

ReliabilityConfig config(std::uint32_t window = 4) {
  ReliabilityConfig c;
  c.window = window;
  c.rto_initial = milliseconds(1);
  c.rto_min = milliseconds(1);
  c.rto_max = milliseconds(8);
  c.granularity = microseconds(10);
  c.max_retries = 3;
  c.ack_every = 3;
  c.ack_delay = microseconds(100);
  return c;
}

struct Seen {
  std::vector<Seq> seqs;
  std::vector<std::uint64_t> cookies;
  auto fn() {
    return [this](Seq s, std::uint64_t c) {
      seqs.push_back(s);
      cookies.push_back(c);
    };
  }
};

constexpr auto kNever = [](Seq, std::uint64_t) { FAIL() << "unexpected callback"; };
constexpr auto kIgnore = [](Seq, std::uint64_t) {};

TEST(ReliabilityConfig, ValidateRefusesNonsense) {
  EXPECT_NO_THROW(config().validate());
  auto bad = config();
  bad.window = 0;
  EXPECT_THROW(ReliableSender{bad}, std::invalid_argument);
  bad = config();
  bad.window = ReliabilityConfig::kMaxWindow + 1;
  EXPECT_THROW(bad.validate(), std::invalid_argument);
  bad = config();
  bad.rto_max = microseconds(10);
  EXPECT_THROW(bad.validate(), std::invalid_argument);
  bad = config();
  bad.ack_every = 0;
  EXPECT_THROW(ReliableReceiver{bad}, std::invalid_argument);
  bad = config();
  bad.ack_delay = bad.rto_min;
  EXPECT_THROW(bad.validate(), std::invalid_argument) << "a delayed ack must beat the timer";
  bad = config();
  bad.rto_min = Time::zero();
  EXPECT_THROW(bad.validate(), std::invalid_argument);
  bad = config();
  bad.rto_min = milliseconds(2);
  EXPECT_THROW(bad.validate(), std::invalid_argument) << "rto_min above rto_initial";
  bad = config();
  bad.rto_max = std::chrono::hours(2);
  bad.rto_initial = bad.rto_max;
  EXPECT_THROW(bad.validate(), std::invalid_argument) << "beyond kMaxRto";
  bad = config();
  bad.granularity = -microseconds(1);
  EXPECT_THROW(bad.validate(), std::invalid_argument);
  EXPECT_NO_THROW(ReliabilityConfig{}.validate()) << "the defaults";
}

TEST(ReliableSender, NumbersInOrderAndBoundsTheBuffer) {
  auto c = config(4);
  c.initial_seq = 100;
  ReliableSender tx(c);
  Seq s = 0;
  for (std::uint64_t i = 0; i < 4; ++i) {
    ASSERT_EQ(tx.push(1000 + i, Time{}, s), Status::kOk);
    EXPECT_EQ(s, 100 + i);
  }
  s = 7;
  EXPECT_EQ(tx.push(9999, Time{}, s), Status::kNoResource);
  EXPECT_EQ(s, 7u) << "output set on failure";
  EXPECT_EQ(tx.outstanding(), 4u);
  EXPECT_EQ(tx.next_seq(), 104u);
  EXPECT_EQ(tx.stats().sent, 4u);
}

TEST(ReliableSender, CumulativeAcksRetireOldestFirst) {
  ReliableSender tx(config(8));
  Seq s = 0;
  for (std::uint64_t i = 0; i < 6; ++i) ASSERT_EQ(tx.push(i * 10, Time{}, s), Status::kOk);
  Seen r;
  ASSERT_EQ(tx.on_ack(2, Time{}, r.fn(), kNever), Status::kOk);
  EXPECT_EQ(r.cookies, (std::vector<std::uint64_t>{0, 10}));
  ASSERT_EQ(tx.on_ack(2, Time{}, kNever, kNever), Status::kOk) << "repeated ack";
  EXPECT_TRUE(tx.stale_ack(1));
  EXPECT_FALSE(tx.stale_ack(2)) << "the newest ack applied";
  EXPECT_FALSE(tx.stale_ack(5));
  ASSERT_EQ(tx.on_ack(1, Time{}, kNever, kNever), Status::kOk) << "stale ack";
  EXPECT_EQ(tx.stats().stale_acks, 1u);
  EXPECT_EQ(tx.on_ack(7, Time{}, kNever, kNever), Status::kInvalidArgument)
      << "acks a message never sent";
  EXPECT_EQ(tx.stats().bad_acks, 1u);
  EXPECT_EQ(tx.outstanding(), 4u);
  ASSERT_EQ(tx.on_ack(6, Time{}, r.fn(), kNever), Status::kOk);
  EXPECT_EQ(r.seqs, (std::vector<Seq>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(tx.outstanding(), 0u);
  EXPECT_EQ(tx.deadline(), std::nullopt);
  EXPECT_EQ(tx.stats().acked, 6u);
}

TEST(ReliableSender, TimerResendsEverythingUnackedWithBackoff) {
  ReliableSender tx(config(8));
  Seq s = 0;
  ASSERT_EQ(tx.push(1, Time{}, s), Status::kOk);
  ASSERT_EQ(tx.push(2, microseconds(10), s), Status::kOk);
  EXPECT_EQ(tx.deadline(), milliseconds(1)) << "armed by the oldest";
  ASSERT_EQ(tx.on_timer(microseconds(999), kNever, kNever), Status::kOk) << "not yet";
  Seen re;
  ASSERT_EQ(tx.on_timer(milliseconds(1), re.fn(), kNever), Status::kOk);
  EXPECT_EQ(re.cookies, (std::vector<std::uint64_t>{1, 2}));
  EXPECT_EQ(tx.rto(), milliseconds(2));
  EXPECT_EQ(tx.deadline(), milliseconds(3));
  ASSERT_EQ(tx.on_timer(milliseconds(3), re.fn(), kNever), Status::kOk);
  EXPECT_EQ(tx.rto(), milliseconds(4));
  ASSERT_EQ(tx.on_ack(1, milliseconds(4), kIgnore, kNever), Status::kOk);
  EXPECT_EQ(tx.rto(), milliseconds(4))
      << "Karn: a resent message gives no sample, the backoff stays";
  EXPECT_EQ(tx.deadline(), milliseconds(8));
  EXPECT_EQ(tx.stats().rtt_samples, 0u);
  ASSERT_EQ(tx.push(3, milliseconds(5), s), Status::kOk);
  ASSERT_EQ(tx.on_ack(3, microseconds(5300), kIgnore, kNever), Status::kOk);
  EXPECT_EQ(tx.stats().rtt_samples, 1u) << "the newest retired (3) was sent once";
  EXPECT_EQ(tx.srtt(), microseconds(300));
  EXPECT_EQ(tx.rto(), milliseconds(1))
      << "the sample ends the backoff: 300 + 4 * 150 us, up to rto_min";
  EXPECT_EQ(tx.stats().timeouts, 2u);
  EXPECT_EQ(tx.stats().retransmitted, 4u);
}

// RFC 6298 by hand, rto_min low enough not to hide the arithmetic.
ReliabilityConfig fine_config() {
  auto c = config(8);
  c.rto_min = microseconds(100);
  c.ack_delay = microseconds(50);
  c.max_retries = 20;
  return c;
}

// One message sent at `sent` and acked at `acked` (nothing else outstanding).
void round_trip(ReliableSender& tx, Time sent, Time acked) {
  Seq s = 0;
  ASSERT_EQ(tx.push(0, sent, s), Status::kOk);
  ASSERT_EQ(tx.on_ack(s + 1, acked, kIgnore, kNever), Status::kOk);
}

TEST(ReliableSender, RtoFollowsRfc6298) {
  ReliableSender tx(fine_config());  // G = 10 us, RTO in [100 us, 8 ms]
  EXPECT_EQ(tx.rto(), milliseconds(1)) << "rto_initial before any sample";
  round_trip(tx, Time{}, microseconds(100));
  EXPECT_EQ(tx.srtt(), microseconds(100)) << "first sample: SRTT = R";
  EXPECT_EQ(tx.rttvar(), microseconds(50)) << "RTTVAR = R / 2";
  EXPECT_EQ(tx.rto(), microseconds(300)) << "100 + 4 * 50";
  round_trip(tx, milliseconds(1), microseconds(1180));  // R = 180
  EXPECT_EQ(tx.rttvar(), nanoseconds(57'500)) << "50 + (|100 - 180| - 50) / 4";
  EXPECT_EQ(tx.srtt(), microseconds(110)) << "100 + (180 - 100) / 8";
  EXPECT_EQ(tx.rto(), microseconds(340)) << "110 + 4 * 57.5";
  round_trip(tx, milliseconds(2), microseconds(2110));  // R = 110 = SRTT
  EXPECT_EQ(tx.rttvar(), nanoseconds(43'125)) << "57.5 - 57.5 / 4";
  EXPECT_EQ(tx.srtt(), microseconds(110));
  EXPECT_EQ(tx.rto(), nanoseconds(282'500));
  EXPECT_EQ(tx.stats().rtt_samples, 3u);
  EXPECT_EQ(tx.deadline(), std::nullopt);
  // The timer is armed with the estimate.
  Seq s = 0;
  ASSERT_EQ(tx.push(0, milliseconds(3), s), Status::kOk);
  EXPECT_EQ(tx.deadline(), milliseconds(3) + nanoseconds(282'500));
}

TEST(ReliableSender, RtoIsClampedAndGranularityIsItsFloorAboveSrtt) {
  ReliableSender tx(fine_config());
  for (int i = 0; i < 100; ++i) round_trip(tx, milliseconds(i), milliseconds(i) + microseconds(20));
  EXPECT_EQ(tx.srtt(), microseconds(20));
  EXPECT_LT(tx.rttvar(), microseconds(1));
  EXPECT_EQ(tx.rto(), microseconds(100)) << "20 + max(10, ~0) is below rto_min";
  auto c = fine_config();
  c.rto_min = microseconds(1);
  c.ack_delay = Time::zero();
  ReliableSender g(c);
  for (int i = 0; i < 100; ++i) round_trip(g, milliseconds(i), milliseconds(i) + microseconds(20));
  EXPECT_EQ(g.rto(), microseconds(30)) << "SRTT + G once RTTVAR has decayed below G / 4";
  round_trip(tx, milliseconds(200), milliseconds(230));
  EXPECT_EQ(tx.rto(), milliseconds(8)) << "a 30 ms round trip: up to rto_max";
}

TEST(ReliableSender, SamplesTheNewestRetiredMessage) {
  ReliableSender tx(fine_config());
  Seq s = 0;
  ASSERT_EQ(tx.push(0, Time{}, s), Status::kOk);
  ASSERT_EQ(tx.push(1, microseconds(10), s), Status::kOk);
  ASSERT_EQ(tx.push(2, microseconds(20), s), Status::kOk);
  ASSERT_EQ(tx.on_ack(3, microseconds(120), kIgnore, kNever), Status::kOk);
  EXPECT_EQ(tx.stats().rtt_samples, 1u) << "one ack, one sample";
  EXPECT_EQ(tx.srtt(), microseconds(100)) << "from message 2's transmission, not message 0's";
}

TEST(ReliableSender, KarnNeverSamplesAResentMessage) {
  ReliableSender tx(fine_config());
  round_trip(tx, Time{}, microseconds(100));  // RTO 300 us
  Seq s = 0;
  ASSERT_EQ(tx.push(0, milliseconds(1), s), Status::kOk);
  ASSERT_EQ(tx.push(1, milliseconds(1), s), Status::kOk);
  Seen re;
  ASSERT_EQ(tx.on_timer(microseconds(1300), re.fn(), kNever), Status::kOk);
  EXPECT_EQ(re.seqs.size(), 2u);
  EXPECT_EQ(tx.rto(), microseconds(600)) << "backed off";
  // The ack of the resent messages, whichever copy it answers: no sample, the backoff stays.
  ASSERT_EQ(tx.on_ack(2, microseconds(1310), kIgnore, kNever), Status::kOk);
  ASSERT_EQ(tx.on_ack(3, microseconds(1320), kIgnore, kNever), Status::kOk);
  EXPECT_EQ(tx.stats().rtt_samples, 1u);
  EXPECT_EQ(tx.srtt(), microseconds(100))
      << "a 10 us 'round trip' of a resent message would lower it";
  EXPECT_EQ(tx.rto(), microseconds(600));
  // Fast retransmit also makes a message ambiguous.
  for (std::uint64_t i = 0; i < 4; ++i) ASSERT_EQ(tx.push(i, milliseconds(2), s), Status::kOk);
  ASSERT_EQ(tx.on_ack(4, milliseconds(2) + microseconds(50), kIgnore, kNever), Status::kOk);
  EXPECT_EQ(tx.stats().rtt_samples, 2u) << "message 3, sent once";
  const Time srtt = tx.srtt();
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(tx.on_ack(4, milliseconds(2) + microseconds(60), kIgnore, kIgnore), Status::kOk);
  EXPECT_EQ(tx.stats().fast_retransmits, 1u);
  ASSERT_EQ(tx.on_ack(7, milliseconds(2) + microseconds(70), kIgnore, kNever), Status::kOk);
  EXPECT_EQ(tx.stats().rtt_samples, 2u) << "4..6 were resent by the fast retransmit";
  EXPECT_EQ(tx.srtt(), srtt);
  round_trip(tx, milliseconds(3), milliseconds(3) + microseconds(100));
  EXPECT_EQ(tx.stats().rtt_samples, 3u) << "a message sent after the resends is sampled again";
}

TEST(ReliableSender, BackoffDoublesUntilASampleResetsIt) {
  ReliableSender tx(fine_config());
  round_trip(tx, Time{}, microseconds(100));  // SRTT 100, RTTVAR 50, RTO 300 us
  Seq s = 0;
  ASSERT_EQ(tx.push(0, milliseconds(1), s), Status::kOk);
  std::vector<Time> rtos;
  for (int i = 0; i < 7; ++i) {
    ASSERT_EQ(tx.on_timer(*tx.deadline(), kIgnore, kNever), Status::kOk);
    rtos.push_back(tx.rto());
  }
  EXPECT_EQ(rtos, (std::vector<Time>{microseconds(600), microseconds(1200), microseconds(2400),
                                     microseconds(4800), milliseconds(8), milliseconds(8),
                                     milliseconds(8)}))
      << "doubling up to rto_max";
  const Time t = *tx.deadline();
  ASSERT_EQ(tx.on_ack(s + 1, t, kIgnore, kNever), Status::kOk);
  EXPECT_EQ(tx.rto(), milliseconds(8)) << "progress alone keeps the backoff";
  round_trip(tx, t, t + microseconds(100));  // R = SRTT: RTTVAR 50 -> 37.5
  EXPECT_EQ(tx.rto(), microseconds(250)) << "the sample resets it: 100 + 4 * 37.5";
}

// The SoftRoCE VM's case: round trips of 50 us, and now and then the peer's host stalls for
// 5 ms without losing anything. With the default configuration, once the estimate has settled,
// the stall must not cost a resend (uam/README.md: why the timeout adapts).
TEST(ReliableSender, AFiveMillisecondStallIsNoResendOnceSettled) {
  ReliableSender tx(ReliabilityConfig{});
  Time t{};
  // The sender polls its timer every 10 us while it waits, as uam's poll() loop does.
  auto exchange = [&](Time rtt) {
    Seq s = 0;
    ASSERT_EQ(tx.push(0, t, s), Status::kOk);
    for (Time w = microseconds(10); w < rtt; w += microseconds(10))
      ASSERT_EQ(tx.on_timer(t + w, kNever, kNever), Status::kOk)
          << "resent at +" << w.count() << " ns";
    ASSERT_EQ(tx.on_ack(s + 1, t + rtt, kIgnore, kNever), Status::kOk);
    t += rtt + microseconds(5);
  };
  for (int i = 0; i < 1000; ++i) exchange(microseconds(50));
  EXPECT_EQ(tx.srtt(), microseconds(50)) << "settled";
  EXPECT_EQ(tx.rto(), ReliabilityConfig{}.rto_min);
  exchange(milliseconds(5) + microseconds(50));  // the stall
  for (int i = 0; i < 1000; ++i) exchange(microseconds(50));
  exchange(milliseconds(5) +
           microseconds(50));  // another, long after the estimate forgot the first
  EXPECT_EQ(tx.stats().retransmitted, 0u);
  EXPECT_EQ(tx.stats().timeouts, 0u);
  // A real loss is still resent, at rto_min.
  Seq s = 0;
  ASSERT_EQ(tx.push(0, t, s), Status::kOk);
  Seen re;
  ASSERT_EQ(tx.on_timer(t + ReliabilityConfig{}.rto_min, re.fn(), kNever), Status::kOk);
  EXPECT_EQ(re.seqs, (std::vector<Seq>{s}));
}

TEST(ReliableSender, RepeatedAcksTriggerOneFastRetransmit) {
  ReliableSender tx(config(8));  // dup_acks 3
  Seq s = 0;
  for (std::uint64_t i = 0; i < 5; ++i) ASSERT_EQ(tx.push(i, Time{}, s), Status::kOk);
  ASSERT_EQ(tx.on_ack(1, microseconds(10), kIgnore, kNever),
            Status::kOk);  // progress: 1..4 unacked
  Seen re;
  for (int i = 0; i < 2; ++i)
    ASSERT_EQ(tx.on_ack(1, microseconds(20), kIgnore, kNever), Status::kOk);
  ASSERT_EQ(tx.on_ack(1, microseconds(30), kIgnore, re.fn()), Status::kOk) << "the third repeat";
  EXPECT_EQ(re.seqs, (std::vector<Seq>{1, 2, 3, 4}));
  EXPECT_EQ(tx.deadline(), microseconds(30) + milliseconds(1)) << "the timer restarts";
  for (int i = 0; i < 10; ++i)
    ASSERT_EQ(tx.on_ack(1, microseconds(40), kIgnore, kNever), Status::kOk) << "once per stall";
  ASSERT_EQ(tx.on_ack(3, microseconds(50), kIgnore, kNever), Status::kOk);
  for (int i = 0; i < 2; ++i)
    ASSERT_EQ(tx.on_ack(3, microseconds(60), kIgnore, kNever), Status::kOk);
  re = {};
  ASSERT_EQ(tx.on_ack(3, microseconds(70), kIgnore, re.fn()), Status::kOk)
      << "armed again by progress";
  EXPECT_EQ(re.seqs, (std::vector<Seq>{3, 4}));
  EXPECT_EQ(tx.stats().fast_retransmits, 2u);
  EXPECT_EQ(tx.stats().timeouts, 0u);
}

TEST(ReliableSender, BackoffIsCappedAtRtoMax) {
  auto c = config(2);
  c.max_retries = 20;
  ReliableSender tx(c);
  Seq s = 0;
  ASSERT_EQ(tx.push(1, Time{}, s), Status::kOk);
  for (int i = 0; i < 10; ++i) ASSERT_EQ(tx.on_timer(*tx.deadline(), kIgnore, kNever), Status::kOk);
  EXPECT_EQ(tx.rto(), milliseconds(8));
}

TEST(ReliableSender, RetryExhaustionFailsEveryOutstandingMessageOnce) {
  auto c = config(8);  // max_retries 3: rounds at 1, 3, 7 ms; failure at 15 ms
  ReliableSender tx(c);
  Seq s = 0;
  for (std::uint64_t i = 0; i < 5; ++i) ASSERT_EQ(tx.push(100 + i, Time{}, s), Status::kOk);
  ASSERT_EQ(tx.on_ack(2, Time{}, kIgnore, kNever), Status::kOk);  // two got through
  Seen re, failed;
  int rounds = 0;
  Status st = Status::kOk;
  while ((st = tx.on_timer(*tx.deadline(), re.fn(), failed.fn())) == Status::kOk) ++rounds;
  EXPECT_EQ(st, Status::kRetryExceeded);
  EXPECT_EQ(rounds, 3);
  EXPECT_EQ(failed.cookies, (std::vector<std::uint64_t>{102, 103, 104}));
  EXPECT_EQ(failed.seqs, (std::vector<Seq>{2, 3, 4}));
  EXPECT_EQ(tx.stats().failed, 3u);
  EXPECT_TRUE(tx.failed());
  EXPECT_EQ(tx.outstanding(), 0u);
  EXPECT_EQ(tx.deadline(), std::nullopt);
  EXPECT_EQ(tx.push(1, milliseconds(20), s), Status::kClosed);
  EXPECT_EQ(tx.on_ack(5, milliseconds(20), kNever, kNever), Status::kClosed);
  EXPECT_EQ(tx.on_timer(milliseconds(99), kNever, kNever), Status::kClosed);
  tx.abort(kNever);
}

TEST(ReliableSender, AbortReportsOutstandingInOrder) {
  ReliableSender tx(config(4));
  Seq s = 0;
  for (std::uint64_t i = 0; i < 3; ++i) ASSERT_EQ(tx.push(i, Time{}, s), Status::kOk);
  Seen failed;
  tx.abort(failed.fn());
  EXPECT_EQ(failed.cookies, (std::vector<std::uint64_t>{0, 1, 2}));
  tx.abort(kNever);
  EXPECT_EQ(tx.push(9, Time{}, s), Status::kClosed);
}

TEST(ReliableSender, SequenceNumbersWrap) {
  auto c = config(4);
  c.initial_seq = 0xFFFFFFFE;
  ReliableSender tx(c);
  Seq s = 0;
  for (std::uint64_t i = 0; i < 4; ++i) ASSERT_EQ(tx.push(i, Time{}, s), Status::kOk);
  EXPECT_EQ(s, 1u);
  Seen r;
  ASSERT_EQ(tx.on_ack(1, Time{}, r.fn(), kNever), Status::kOk);
  EXPECT_EQ(r.seqs, (std::vector<Seq>{0xFFFFFFFE, 0xFFFFFFFF, 0}));
  EXPECT_EQ(tx.outstanding(), 1u);
}

TEST(ReliableReceiver, DeliversInOrderOnceAndDropsTheRest) {
  ReliableReceiver rx(config());
  EXPECT_EQ(rx.on_arrival(0, Time{}), Arrival::kDeliver);
  EXPECT_EQ(rx.on_arrival(2, Time{}), Arrival::kOutOfOrder) << "held back would pin a buffer";
  EXPECT_EQ(rx.on_arrival(0, Time{}), Arrival::kDuplicate);
  EXPECT_EQ(rx.on_arrival(1, Time{}), Arrival::kDeliver);
  EXPECT_EQ(rx.on_arrival(2, Time{}), Arrival::kDeliver) << "the resend";
  EXPECT_EQ(rx.ack(), 3u);
  EXPECT_EQ(rx.stats().delivered, 3u);
  EXPECT_EQ(rx.stats().duplicates, 1u);
  EXPECT_EQ(rx.stats().out_of_order, 1u);
}

TEST(ReliableReceiver, DuplicateOrGapAsksForAnAckAtOnce) {
  ReliableReceiver rx(config());
  ASSERT_EQ(rx.on_arrival(0, Time{}), Arrival::kDeliver);
  EXPECT_FALSE(rx.ack_due(Time{}));
  ASSERT_EQ(rx.on_arrival(0, Time{}), Arrival::kDuplicate);
  EXPECT_TRUE(rx.ack_due(Time{})) << "a duplicate is re-acked";
  EXPECT_EQ(rx.ack_deadline(), Time::min());
  rx.ack_sent();
  EXPECT_FALSE(rx.ack_due(Time{}));
  EXPECT_EQ(rx.ack_deadline(), std::nullopt);
  ASSERT_EQ(rx.on_arrival(5, Time{}), Arrival::kOutOfOrder);
  EXPECT_TRUE(rx.ack_due(Time{}));
}

TEST(ReliableReceiver, DelayedAckAfterKMessagesOrTWhicheverFirst) {
  ReliableReceiver rx(config());  // K = 3, T = 100 us
  ASSERT_EQ(rx.on_arrival(0, microseconds(0)), Arrival::kDeliver);
  ASSERT_EQ(rx.on_arrival(1, microseconds(10)), Arrival::kDeliver);
  EXPECT_FALSE(rx.ack_due(microseconds(20)));
  EXPECT_EQ(rx.ack_deadline(), microseconds(100)) << "timed from the first unacked";
  ASSERT_EQ(rx.on_arrival(2, microseconds(20)), Arrival::kDeliver);
  EXPECT_TRUE(rx.ack_due(microseconds(20))) << "K reached before T";
  rx.ack_sent();
  ASSERT_EQ(rx.on_arrival(3, microseconds(500)), Arrival::kDeliver);
  EXPECT_FALSE(rx.ack_due(microseconds(599)));
  EXPECT_TRUE(rx.ack_due(microseconds(600))) << "T reached before K";
  rx.ack_sent();
  EXPECT_EQ(rx.stats().acks_sent, 2u);
}

}  // namespace
}  // namespace unet::uam
