// The stream state machine: every allowed transition by name, every other (state, event) pair
// refused with the output untouched, and walks through whole connections.
#include "unet/ulp/stream_state.h"

#include <gtest/gtest.h>

#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace unet::ulp {
namespace {

using S = StreamState;
using E = StreamEvent;

constexpr S kAllStates[] = {S::kClosed,      S::kListen,    S::kSynSent,  S::kSynReceived,
                            S::kEstablished, S::kFinWait1,  S::kFinWait2, S::kClosing,
                            S::kTimeWait,    S::kCloseWait, S::kLastAck};
constexpr E kAllEvents[] = {E::kConnect,      E::kListen,  E::kRecvSyn,      E::kRecvSynAck,
                            E::kRecvAckOfSyn, E::kRecvFin, E::kRecvAckOfFin, E::kClose,
                            E::kRecvRst,      E::kAbort,   E::kTimeout};

struct Row {
  const char* name;
  S state;
  E event;
  S next;
  std::uint8_t actions;
  Status error;
  // Test names then carry the row's name, not its bytes (which hold a pointer, new each run).
  friend void PrintTo(const Row& r, std::ostream* os) { *os << r.name; }
};

constexpr std::uint8_t kNone = 0;
constexpr std::uint8_t kFailed = kActFailed;
constexpr std::uint8_t kRstFailed = kActSendRst | kActFailed;

const std::vector<Row>& allowed() {
  static const std::vector<Row> rows = {
      // Active and passive open.
      {"ClosedConnect", S::kClosed, E::kConnect, S::kSynSent, kActSendSyn, Status::kOk},
      {"ClosedListen", S::kClosed, E::kListen, S::kListen, kNone, Status::kOk},
      {"ListenSyn", S::kListen, E::kRecvSyn, S::kSynReceived, kActSendSynAck, Status::kOk},
      {"ListenClose", S::kListen, E::kClose, S::kClosed, kFailed, Status::kClosed},
      {"ListenAbort", S::kListen, E::kAbort, S::kClosed, kFailed, Status::kClosed},
      {"SynSentSynAck", S::kSynSent, E::kRecvSynAck, S::kEstablished, kActSendAck | kActConnected,
       Status::kOk},
      {"SimultaneousOpen", S::kSynSent, E::kRecvSyn, S::kSynReceived, kActSendSynAck, Status::kOk},
      {"SynSentClose", S::kSynSent, E::kClose, S::kClosed, kFailed, Status::kClosed},
      {"ConnectionRefused", S::kSynSent, E::kRecvRst, S::kClosed, kFailed, Status::kClosed},
      {"SynSentAbort", S::kSynSent, E::kAbort, S::kClosed, kRstFailed, Status::kClosed},
      {"ConnectTimeout", S::kSynSent, E::kTimeout, S::kClosed, kFailed, Status::kTimeout},
      {"SynReceivedAck", S::kSynReceived, E::kRecvAckOfSyn, S::kEstablished, kActConnected,
       Status::kOk},
      {"SimultaneousOpenSynAck", S::kSynReceived, E::kRecvSynAck, S::kEstablished,
       kActSendAck | kActConnected, Status::kOk},
      {"SynReceivedClose", S::kSynReceived, E::kClose, S::kFinWait1, kActSendFin, Status::kOk},
      {"SynReceivedRst", S::kSynReceived, E::kRecvRst, S::kClosed, kFailed, Status::kClosed},
      {"SynReceivedAbort", S::kSynReceived, E::kAbort, S::kClosed, kRstFailed, Status::kClosed},
      {"SynReceivedTimeout", S::kSynReceived, E::kTimeout, S::kClosed, kFailed, Status::kTimeout},
      // Established.
      {"EstablishedClose", S::kEstablished, E::kClose, S::kFinWait1, kActSendFin, Status::kOk},
      {"EstablishedFin", S::kEstablished, E::kRecvFin, S::kCloseWait, kActSendAck | kActPeerClosed,
       Status::kOk},
      {"EstablishedRst", S::kEstablished, E::kRecvRst, S::kClosed, kFailed, Status::kClosed},
      {"EstablishedAbort", S::kEstablished, E::kAbort, S::kClosed, kRstFailed, Status::kClosed},
      {"EstablishedTimeout", S::kEstablished, E::kTimeout, S::kClosed, kFailed, Status::kTimeout},
      // Active close and simultaneous close.
      {"FinWait1AckOfFin", S::kFinWait1, E::kRecvAckOfFin, S::kFinWait2, kNone, Status::kOk},
      {"SimultaneousClose", S::kFinWait1, E::kRecvFin, S::kClosing, kActSendAck | kActPeerClosed,
       Status::kOk},
      {"FinWait1Rst", S::kFinWait1, E::kRecvRst, S::kClosed, kFailed, Status::kClosed},
      {"FinWait1Abort", S::kFinWait1, E::kAbort, S::kClosed, kRstFailed, Status::kClosed},
      {"FinWait1Timeout", S::kFinWait1, E::kTimeout, S::kClosed, kFailed, Status::kTimeout},
      {"FinWait2Fin", S::kFinWait2, E::kRecvFin, S::kTimeWait, kActSendAck | kActPeerClosed,
       Status::kOk},
      {"FinWait2Rst", S::kFinWait2, E::kRecvRst, S::kClosed, kFailed, Status::kClosed},
      {"FinWait2Abort", S::kFinWait2, E::kAbort, S::kClosed, kRstFailed, Status::kClosed},
      {"FinWait2Timeout", S::kFinWait2, E::kTimeout, S::kClosed, kFailed, Status::kTimeout},
      {"ClosingAckOfFin", S::kClosing, E::kRecvAckOfFin, S::kTimeWait, kNone, Status::kOk},
      {"ClosingRst", S::kClosing, E::kRecvRst, S::kClosed, kFailed, Status::kClosed},
      {"ClosingAbort", S::kClosing, E::kAbort, S::kClosed, kRstFailed, Status::kClosed},
      {"ClosingTimeout", S::kClosing, E::kTimeout, S::kClosed, kFailed, Status::kTimeout},
      {"TimeWaitOver", S::kTimeWait, E::kTimeout, S::kClosed, kNone, Status::kOk},
      {"TimeWaitRst", S::kTimeWait, E::kRecvRst, S::kClosed, kFailed, Status::kClosed},
      {"TimeWaitAbort", S::kTimeWait, E::kAbort, S::kClosed, kRstFailed, Status::kClosed},
      // Passive close.
      {"CloseWaitClose", S::kCloseWait, E::kClose, S::kLastAck, kActSendFin, Status::kOk},
      {"CloseWaitRst", S::kCloseWait, E::kRecvRst, S::kClosed, kFailed, Status::kClosed},
      {"CloseWaitAbort", S::kCloseWait, E::kAbort, S::kClosed, kRstFailed, Status::kClosed},
      {"CloseWaitTimeout", S::kCloseWait, E::kTimeout, S::kClosed, kFailed, Status::kTimeout},
      {"LastAckAckOfFin", S::kLastAck, E::kRecvAckOfFin, S::kClosed, kNone, Status::kOk},
      {"LastAckRst", S::kLastAck, E::kRecvRst, S::kClosed, kFailed, Status::kClosed},
      {"LastAckAbort", S::kLastAck, E::kAbort, S::kClosed, kRstFailed, Status::kClosed},
      {"LastAckTimeout", S::kLastAck, E::kTimeout, S::kClosed, kFailed, Status::kTimeout},
  };
  return rows;
}

class StreamStateAllowed : public ::testing::TestWithParam<Row> {};

TEST_P(StreamStateAllowed, GoesWhereTheTableSays) {
  const Row& r = GetParam();
  Transition out{S::kLastAck, 0xFF, Status::kDeviceError};
  ASSERT_EQ(transition(r.state, r.event, out), Status::kOk);
  EXPECT_EQ(out.next, r.next) << to_string(out.next);
  EXPECT_EQ(out.actions, r.actions);
  EXPECT_EQ(out.error, r.error);
}

INSTANTIATE_TEST_SUITE_P(Rows, StreamStateAllowed, ::testing::ValuesIn(allowed()),
                         [](const auto& param) { return std::string(param.param.name); });

TEST(StreamState, EveryOtherPairIsRefusedWithOutputUntouched) {
  std::set<std::pair<S, E>> in_table;
  for (const Row& r : allowed()) EXPECT_TRUE(in_table.insert({r.state, r.event}).second) << r.name;
  int refused = 0;
  for (S s : kAllStates) {
    for (E e : kAllEvents) {
      if (in_table.count({s, e})) continue;
      Transition out{S::kFinWait2, 0xA5, Status::kNotFound};
      EXPECT_EQ(transition(s, e, out), Status::kInvalidState)
          << to_string(s) << " + " << to_string(e);
      EXPECT_EQ(out.next, S::kFinWait2);
      EXPECT_EQ(out.actions, 0xA5);
      EXPECT_EQ(out.error, Status::kNotFound);
      ++refused;
    }
  }
  EXPECT_EQ(in_table.size(), 46u);
  EXPECT_EQ(refused, 11 * 11 - 46);
}

TEST(StreamState, OutOfRangeValuesAreRefused) {
  Transition out{S::kListen, 3, Status::kOk};
  EXPECT_EQ(transition(static_cast<S>(200), E::kConnect, out), Status::kInvalidState);
  EXPECT_EQ(transition(S::kClosed, static_cast<E>(200), out), Status::kInvalidState);
  EXPECT_EQ(out.next, S::kListen);
  EXPECT_EQ(out.actions, 3);
}

TEST(StreamState, RstAndAbortRules) {
  const S synchronized[] = {S::kEstablished, S::kFinWait1,  S::kFinWait2, S::kClosing,
                            S::kTimeWait,    S::kCloseWait, S::kLastAck};
  for (S s : synchronized) {
    Transition out;
    ASSERT_EQ(transition(s, E::kRecvRst, out), Status::kOk) << to_string(s);
    EXPECT_EQ(out.next, S::kClosed);
    EXPECT_EQ(out.actions, kActFailed);  // never answer an RST with an RST
    EXPECT_EQ(out.error, Status::kClosed);
  }
  for (S s : kAllStates) {
    Transition out;
    const Status st = transition(s, E::kAbort, out);
    if (s == S::kClosed) {
      EXPECT_EQ(st, Status::kInvalidState);
      continue;
    }
    ASSERT_EQ(st, Status::kOk) << to_string(s);
    EXPECT_EQ(out.next, S::kClosed);
    EXPECT_EQ((out.actions & kActSendRst) != 0, s != S::kListen) << to_string(s);
  }
}

// Applies events in turn; returns the final state, collecting every action.
S run(S s, std::initializer_list<E> events, std::uint8_t* actions = nullptr) {
  for (E e : events) {
    Transition t;
    EXPECT_EQ(transition(s, e, t), Status::kOk) << to_string(s) << " + " << to_string(e);
    if (actions) *actions |= t.actions;
    s = t.next;
  }
  return s;
}

TEST(StreamState, WholeConnections) {
  // Client: connect, established, close first, linger, done.
  EXPECT_EQ(run(S::kClosed, {E::kConnect, E::kRecvSynAck, E::kClose, E::kRecvAckOfFin, E::kRecvFin,
                             E::kTimeout}),
            S::kClosed);
  // Server: listen, accept, peer closes, we close.
  std::uint8_t actions = 0;
  EXPECT_EQ(
      run(S::kClosed,
          {E::kListen, E::kRecvSyn, E::kRecvAckOfSyn, E::kRecvFin, E::kClose, E::kRecvAckOfFin},
          &actions),
      S::kClosed);
  EXPECT_EQ(actions, kActSendSynAck | kActConnected | kActSendAck | kActPeerClosed | kActSendFin);
  // Both sides open and close at once.
  EXPECT_EQ(run(S::kClosed, {E::kConnect, E::kRecvSyn, E::kRecvSynAck, E::kClose, E::kRecvFin,
                             E::kRecvAckOfFin}),
            S::kTimeWait);
}

TEST(StreamState, NamesAreRfc793s) {
  std::set<std::string_view> names;
  for (S s : kAllStates) EXPECT_TRUE(names.insert(to_string(s)).second) << to_string(s);
  EXPECT_EQ(to_string(S::kSynReceived), "SYN_RECEIVED");
  EXPECT_EQ(to_string(S::kTimeWait), "TIME_WAIT");
  EXPECT_EQ(to_string(S::kLastAck), "LAST_ACK");
  EXPECT_EQ(to_string(static_cast<S>(99)), "unknown state");
  names.clear();
  for (E e : kAllEvents) EXPECT_TRUE(names.insert(to_string(e)).second) << to_string(e);
  EXPECT_EQ(to_string(E::kRecvAckOfFin), "recv ACK of FIN");
  EXPECT_EQ(to_string(static_cast<E>(99)), "unknown event");
}

}  // namespace
}  // namespace unet::ulp
