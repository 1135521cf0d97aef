// Unit: reliability state machines, driven step by step with injected time — numbering, the
// bounded retransmission buffer, cumulative acks, backoff, retry exhaustion, duplicate
// suppression, dropping out-of-order arrivals and delayed acks.
#include "unet/uam/reliability.h"

#include <gtest/gtest.h>

#include <vector>

namespace unet::uam {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

ReliabilityConfig config(std::uint32_t window = 4) {
  ReliabilityConfig c;
  c.window = window;
  c.rto_initial = milliseconds(1);
  c.rto_max = milliseconds(8);
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
  bad.ack_delay = bad.rto_initial;
  EXPECT_THROW(bad.validate(), std::invalid_argument) << "a delayed ack must beat the timer";
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
  Seq s;
  for (std::uint64_t i = 0; i < 6; ++i) ASSERT_EQ(tx.push(i * 10, Time{}, s), Status::kOk);
  Seen r;
  ASSERT_EQ(tx.on_ack(2, Time{}, r.fn(), kNever), Status::kOk);
  EXPECT_EQ(r.cookies, (std::vector<std::uint64_t>{0, 10}));
  ASSERT_EQ(tx.on_ack(2, Time{}, kNever, kNever), Status::kOk) << "repeated ack";
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
  Seq s;
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
  EXPECT_EQ(tx.rto(), milliseconds(1)) << "progress resets the backoff";
  EXPECT_EQ(tx.deadline(), milliseconds(5));
  EXPECT_EQ(tx.stats().timeouts, 2u);
  EXPECT_EQ(tx.stats().retransmitted, 4u);
}

TEST(ReliableSender, RepeatedAcksTriggerOneFastRetransmit) {
  ReliableSender tx(config(8));  // dup_acks 3
  Seq s;
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
  Seq s;
  ASSERT_EQ(tx.push(1, Time{}, s), Status::kOk);
  for (int i = 0; i < 10; ++i) ASSERT_EQ(tx.on_timer(*tx.deadline(), kIgnore, kNever), Status::kOk);
  EXPECT_EQ(tx.rto(), milliseconds(8));
}

TEST(ReliableSender, RetryExhaustionFailsEveryOutstandingMessageOnce) {
  auto c = config(8);  // max_retries 3: rounds at 1, 3, 7 ms; failure at 15 ms
  ReliableSender tx(c);
  Seq s;
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
  Seq s;
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
  Seq s;
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
