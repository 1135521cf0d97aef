// Unit: the credit window — arithmetic on both sides, the running total modulo 256, refusals that
// change nothing, and the explicit-credit rule (no stall, no needless credit messages).
#include "unet/uam/credit_window.h"

#include <gtest/gtest.h>

#include <random>

namespace unet::uam {
namespace {

TEST(CreditWindow, DefaultsAndLimits) {
  CreditWindow w;
  EXPECT_EQ(w.window(), 8);
  EXPECT_GE(w.window(), 8);
  EXPECT_LE(w.window(), 16);
  EXPECT_EQ(w.explicit_threshold(), 4);
  EXPECT_EQ(CreditWindow(7).explicit_threshold(), 4) << "ceil(W/2)";
  EXPECT_EQ(CreditWindow(1).explicit_threshold(), 1);
  EXPECT_EQ(CreditWindow(12, 12).explicit_threshold(), 12);
  EXPECT_THROW(CreditWindow(0), std::invalid_argument);
  EXPECT_THROW(CreditWindow(128), std::invalid_argument);
  EXPECT_NO_THROW(CreditWindow(127));
  EXPECT_THROW(CreditWindow(8, 9), std::invalid_argument);
}

TEST(CreditWindow, NoCreditMeansNoResourceAndNothingChanges) {
  CreditWindow w(3);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(w.consume(), Status::kOk);
  EXPECT_TRUE(w.stalled());
  EXPECT_EQ(w.in_flight(), 3);
  EXPECT_EQ(w.consume(), Status::kNoResource);
  EXPECT_EQ(w.consume(), Status::kNoResource);
  EXPECT_EQ(w.available(), 0);
  EXPECT_EQ(w.in_flight(), 3);
  EXPECT_EQ(w.stats().consumed, 3u);
  EXPECT_EQ(w.stats().refused, 2u);
}

TEST(CreditWindow, RunningTotalReturnsCreditsOnceWhateverTheOrder) {
  CreditWindow w(8);
  for (int i = 0; i < 8; ++i) ASSERT_EQ(w.consume(), Status::kOk);
  EXPECT_EQ(w.on_credit_total(3), Status::kOk);
  EXPECT_EQ(w.available(), 3);
  EXPECT_EQ(w.on_credit_total(3), Status::kOk) << "a duplicate header";
  EXPECT_EQ(w.available(), 3);
  EXPECT_EQ(w.on_credit_total(5), Status::kOk);
  EXPECT_EQ(w.available(), 5);
  EXPECT_EQ(w.on_credit_total(4), Status::kOk) << "a late header";
  EXPECT_EQ(w.available(), 5);
  EXPECT_EQ(w.stats().stale_totals, 1u);
  EXPECT_EQ(w.stats().returned_to_us, 5u);
}

TEST(CreditWindow, TotalReturningUnspentCreditsIsRefused) {
  CreditWindow w(8);
  ASSERT_EQ(w.consume(), Status::kOk);
  ASSERT_EQ(w.consume(), Status::kOk);
  EXPECT_EQ(w.on_credit_total(3), Status::kInvalidArgument);
  EXPECT_EQ(w.available(), 6) << "nothing changed";
  EXPECT_EQ(w.on_credit_total(2), Status::kOk);
  EXPECT_EQ(w.available(), 8);
  EXPECT_EQ(w.stats().bad_totals, 1u);
}

TEST(CreditWindow, TotalWrapsModulo256) {
  CreditWindow sender(8), receiver(8);
  for (int round = 0; round < 1000; ++round) {  // 1000 x 5 credits: the total wraps many times
    for (int i = 0; i < 5; ++i) {
      ASSERT_EQ(sender.consume(), Status::kOk);
      ASSERT_EQ(receiver.on_request(), Status::kOk);
      ASSERT_EQ(receiver.request_done(), Status::kOk);
    }
    ASSERT_EQ(sender.on_credit_total(receiver.piggyback()), Status::kOk);
    ASSERT_EQ(sender.available(), 8);
  }
  EXPECT_EQ(sender.stats().returned_to_us, 5000u);
  EXPECT_EQ(receiver.stats().returned_by_us, 5000u);
}

TEST(CreditWindow, ReceiverRefusesAnOverrun) {
  CreditWindow w(4);
  for (int i = 0; i < 4; ++i) ASSERT_EQ(w.on_request(), Status::kOk);
  EXPECT_EQ(w.on_request(), Status::kInvalidState);
  ASSERT_EQ(w.request_done(), Status::kOk);
  EXPECT_EQ(w.on_request(), Status::kInvalidState) << "an owed credit is not the peer's yet";
  EXPECT_EQ(w.held(), 3);
  EXPECT_EQ(w.owed(), 1);
  (void)w.piggyback();
  EXPECT_EQ(w.on_request(), Status::kOk) << "returned: the peer may use it";
  EXPECT_EQ(w.stats().overruns, 2u);
  CreditWindow idle(4);
  EXPECT_EQ(idle.request_done(), Status::kInvalidState) << "nothing held";
}

TEST(CreditWindow, ExplicitCreditAtThresholdOnly) {
  CreditWindow w(8);  // threshold 4
  for (int i = 0; i < 8; ++i) ASSERT_EQ(w.on_request(), Status::kOk);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(w.request_done(), Status::kOk);
    EXPECT_FALSE(w.should_send_explicit_credit()) << "owed " << int(w.owed());
  }
  ASSERT_EQ(w.request_done(), Status::kOk);
  EXPECT_TRUE(w.should_send_explicit_credit());
  EXPECT_EQ(w.piggyback(), 4);
  EXPECT_FALSE(w.should_send_explicit_credit());
  EXPECT_EQ(w.owed(), 0);
}

TEST(CreditWindow, PiggybackedCreditsNeedNoExplicitMessage) {
  CreditWindow w(8);
  for (int i = 0; i < 100; ++i) {  // request/reply: each reply carries the credit back
    ASSERT_EQ(w.on_request(), Status::kOk);
    ASSERT_EQ(w.request_done(), Status::kOk);
    (void)w.piggyback();  // the reply's header
    EXPECT_FALSE(w.should_send_explicit_credit());
  }
}

TEST(CreditWindow, ProbeIsAnsweredOnce) {
  CreditWindow w(8);
  EXPECT_FALSE(w.should_send_explicit_credit());
  w.on_probe();
  EXPECT_TRUE(w.should_send_explicit_credit())
      << "even with nothing owed: the total may have been lost";
  (void)w.piggyback();
  EXPECT_FALSE(w.should_send_explicit_credit());
}

// The stall rule: a sender flooding requests whose handlers send no reply (only credit messages
// come back, when the rule says so) never deadlocks, and never overruns the receiver.
TEST(CreditWindow, FloodWithoutRepliesNeverStallsForever) {
  for (std::uint8_t window : {1, 2, 3, 8, 12, 16, 127}) {
    CreditWindow sender(window), receiver(window);
    std::mt19937 rng(window);
    int sent = 0, done = 0, explicit_msgs = 0, idle = 0;
    while (done < 10000) {
      bool progress = false;
      if (sent < 10000 && sender.consume() == Status::kOk) {
        ASSERT_EQ(receiver.on_request(), Status::kOk) << "overrun";
        ++sent;
        progress = true;
      }
      if (receiver.held() && (rng() % 3 == 0 || sender.stalled())) {  // handlers finish at random
        ASSERT_EQ(receiver.request_done(), Status::kOk);
        ++done;
        progress = true;
      }
      if (receiver.should_send_explicit_credit()) {
        ASSERT_EQ(sender.on_credit_total(receiver.piggyback()), Status::kOk);
        ++explicit_msgs;
        progress = true;
      }
      idle = progress ? 0 : idle + 1;
      ASSERT_LT(idle, 1000) << "stalled: window " << int(window);
    }
    EXPECT_EQ(sent, 10000);
    EXPECT_LE(explicit_msgs, 10000 / receiver.explicit_threshold() + 1)
        << "one per threshold credits";
  }
}

// A credit taken for a request that was never sent comes back; undo with none taken changes
// nothing.
TEST(CreditWindow, UndoConsumeGivesBackAnUnsentCredit) {
  CreditWindow w(2);
  w.undo_consume();
  EXPECT_EQ(w.available(), 2);
  ASSERT_EQ(w.consume(), Status::kOk);
  ASSERT_EQ(w.consume(), Status::kOk);
  EXPECT_EQ(w.consume(), Status::kNoResource);
  w.undo_consume();
  EXPECT_EQ(w.available(), 1);
  EXPECT_EQ(w.stats().consumed, 1u);
  ASSERT_EQ(w.consume(), Status::kOk);
}

}  // namespace
}  // namespace unet::uam
