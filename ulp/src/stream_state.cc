// The stream state machine as one table of allowed transitions, checked at compile time and
// looked up in constant time.
//
// Rows beyond RFC 793's diagram, and why:
// - kRecvRst in kSynSent (an RST acknowledging our SYN: "connection refused") and kSynReceived
//   fail the connection, so connect() fails at once instead of by timeout. A passive open does
//   not return to kListen on RST: each connection has its own machine, and the listener's stays
//   in kListen.
// - kRecvSynAck in kSynReceived completes a simultaneous open (the peer's SYN-ACK acknowledges
//   our SYN), as kRecvAckOfSyn does.
// - kTimeout wherever something of ours is unacknowledged or we wait on the peer fails the
//   connection with kTimeout (retransmission or dead-peer limit); in kTimeWait it is the end of
//   the linger and not a failure.
// - kClose or kAbort in kListen, and kClose in kSynSent, end the attempt and fail what waits on
//   it (accept(), connect()) with kClosed; no RST: there is no synchronized peer to reset.
// Segment processing feeds one event per flag in RFC 793's order (ACK before FIN), so a FIN
// arriving with the ACK of our SYN or FIN is two events and needs no combined row.
#include "unet/ulp/stream_state.h"

#include <array>
#include <cstddef>

namespace unet::ulp {
namespace {

using S = StreamState;
using E = StreamEvent;

constexpr std::size_t kStates = static_cast<std::size_t>(S::kLastAck) + 1;
constexpr std::size_t kEvents = static_cast<std::size_t>(E::kTimeout) + 1;

struct Row {
  S state;
  E event;
  S next;
  std::uint8_t actions;
  Status error = Status::kOk;
};

constexpr std::uint8_t kFailed = kActFailed;
constexpr std::uint8_t kReset = kActSendRst | kActFailed;

constexpr Row kRows[] = {
    // Opening.
    {S::kClosed, E::kConnect, S::kSynSent, kActSendSyn},
    {S::kClosed, E::kListen, S::kListen, 0},
    {S::kListen, E::kRecvSyn, S::kSynReceived, kActSendSynAck},
    {S::kListen, E::kClose, S::kClosed, kFailed, Status::kClosed},
    {S::kListen, E::kAbort, S::kClosed, kFailed, Status::kClosed},
    {S::kSynSent, E::kRecvSynAck, S::kEstablished, kActSendAck | kActConnected},
    {S::kSynSent, E::kRecvSyn, S::kSynReceived, kActSendSynAck},  // simultaneous open
    {S::kSynSent, E::kClose, S::kClosed, kFailed, Status::kClosed},
    {S::kSynSent, E::kRecvRst, S::kClosed, kFailed, Status::kClosed},
    {S::kSynSent, E::kAbort, S::kClosed, kReset, Status::kClosed},
    {S::kSynSent, E::kTimeout, S::kClosed, kFailed, Status::kTimeout},
    {S::kSynReceived, E::kRecvAckOfSyn, S::kEstablished, kActConnected},
    {S::kSynReceived, E::kRecvSynAck, S::kEstablished, kActSendAck | kActConnected},
    {S::kSynReceived, E::kClose, S::kFinWait1, kActSendFin},
    {S::kSynReceived, E::kRecvRst, S::kClosed, kFailed, Status::kClosed},
    {S::kSynReceived, E::kAbort, S::kClosed, kReset, Status::kClosed},
    {S::kSynReceived, E::kTimeout, S::kClosed, kFailed, Status::kTimeout},
    // Data transfer.
    {S::kEstablished, E::kClose, S::kFinWait1, kActSendFin},
    {S::kEstablished, E::kRecvFin, S::kCloseWait, kActSendAck | kActPeerClosed},
    {S::kEstablished, E::kRecvRst, S::kClosed, kFailed, Status::kClosed},
    {S::kEstablished, E::kAbort, S::kClosed, kReset, Status::kClosed},
    {S::kEstablished, E::kTimeout, S::kClosed, kFailed, Status::kTimeout},
    // We close first, or both at once.
    {S::kFinWait1, E::kRecvAckOfFin, S::kFinWait2, 0},
    {S::kFinWait1, E::kRecvFin, S::kClosing, kActSendAck | kActPeerClosed},  // simultaneous close
    {S::kFinWait1, E::kRecvRst, S::kClosed, kFailed, Status::kClosed},
    {S::kFinWait1, E::kAbort, S::kClosed, kReset, Status::kClosed},
    {S::kFinWait1, E::kTimeout, S::kClosed, kFailed, Status::kTimeout},
    {S::kFinWait2, E::kRecvFin, S::kTimeWait, kActSendAck | kActPeerClosed},
    {S::kFinWait2, E::kRecvRst, S::kClosed, kFailed, Status::kClosed},
    {S::kFinWait2, E::kAbort, S::kClosed, kReset, Status::kClosed},
    {S::kFinWait2, E::kTimeout, S::kClosed, kFailed, Status::kTimeout},
    {S::kClosing, E::kRecvAckOfFin, S::kTimeWait, 0},
    {S::kClosing, E::kRecvRst, S::kClosed, kFailed, Status::kClosed},
    {S::kClosing, E::kAbort, S::kClosed, kReset, Status::kClosed},
    {S::kClosing, E::kTimeout, S::kClosed, kFailed, Status::kTimeout},
    {S::kTimeWait, E::kTimeout, S::kClosed, 0},
    {S::kTimeWait, E::kRecvRst, S::kClosed, kFailed, Status::kClosed},
    {S::kTimeWait, E::kAbort, S::kClosed, kReset, Status::kClosed},
    // The peer closes first.
    {S::kCloseWait, E::kClose, S::kLastAck, kActSendFin},
    {S::kCloseWait, E::kRecvRst, S::kClosed, kFailed, Status::kClosed},
    {S::kCloseWait, E::kAbort, S::kClosed, kReset, Status::kClosed},
    {S::kCloseWait, E::kTimeout, S::kClosed, kFailed, Status::kTimeout},
    {S::kLastAck, E::kRecvAckOfFin, S::kClosed, 0},
    {S::kLastAck, E::kRecvRst, S::kClosed, kFailed, Status::kClosed},
    {S::kLastAck, E::kAbort, S::kClosed, kReset, Status::kClosed},
    {S::kLastAck, E::kTimeout, S::kClosed, kFailed, Status::kTimeout},
};

struct Cell {
  bool allowed = false;
  Transition t;
};
using Table = std::array<std::array<Cell, kEvents>, kStates>;

constexpr Table build() {
  Table table{};
  for (const Row& r : kRows) {
    Cell& c = table[static_cast<std::size_t>(r.state)][static_cast<std::size_t>(r.event)];
    if (c.allowed)
      throw "two rows for one (state, event)";  // not a constant expression: fails the build
    c.allowed = true;
    c.t = Transition{r.next, r.actions, r.error};
  }
  return table;
}

constexpr Table kTable = build();

// Every failure names its cause, and only failures carry one.
constexpr bool errors_consistent() {
  for (const Row& r : kRows)
    if (((r.actions & kActFailed) != 0) != (r.error != Status::kOk)) return false;
  return true;
}
static_assert(errors_consistent());

}  // namespace

std::string_view to_string(StreamState s) noexcept {
  switch (s) {
    case S::kClosed:
      return "CLOSED";
    case S::kListen:
      return "LISTEN";
    case S::kSynSent:
      return "SYN_SENT";
    case S::kSynReceived:
      return "SYN_RECEIVED";
    case S::kEstablished:
      return "ESTABLISHED";
    case S::kFinWait1:
      return "FIN_WAIT_1";
    case S::kFinWait2:
      return "FIN_WAIT_2";
    case S::kClosing:
      return "CLOSING";
    case S::kTimeWait:
      return "TIME_WAIT";
    case S::kCloseWait:
      return "CLOSE_WAIT";
    case S::kLastAck:
      return "LAST_ACK";
  }
  return "unknown state";
}

std::string_view to_string(StreamEvent e) noexcept {
  switch (e) {
    case E::kConnect:
      return "connect";
    case E::kListen:
      return "listen";
    case E::kRecvSyn:
      return "recv SYN";
    case E::kRecvSynAck:
      return "recv SYN-ACK";
    case E::kRecvAckOfSyn:
      return "recv ACK of SYN";
    case E::kRecvFin:
      return "recv FIN";
    case E::kRecvAckOfFin:
      return "recv ACK of FIN";
    case E::kClose:
      return "close";
    case E::kRecvRst:
      return "recv RST";
    case E::kAbort:
      return "abort";
    case E::kTimeout:
      return "timeout";
  }
  return "unknown event";
}

Status transition(StreamState state, StreamEvent event, Transition& out) noexcept {
  const auto s = static_cast<std::size_t>(state);
  const auto e = static_cast<std::size_t>(event);
  if (s >= kStates || e >= kEvents || !kTable[s][e].allowed) return Status::kInvalidState;
  out = kTable[s][e].t;
  return Status::kOk;
}

}  // namespace unet::ulp
