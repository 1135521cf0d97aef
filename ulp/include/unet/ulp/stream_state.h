// transition(): the stream connection state machine, after RFC 793's diagram: a pure function
// from (state, event) to (next state, actions), so every transition is unit-tested without a
// device.
//
// Events are what the connection saw (an application call, a segment already validated against
// the connection's sequence space, a timer); actions are what it must do now. An event that the
// state does not allow is refused with kInvalidState and changes nothing — the caller answers a
// stray segment (e.g. with an RST) or returns the status to the application.
#pragma once

#include <cstdint>
#include <string_view>

#include "unet/status.h"

namespace unet::ulp {

// RFC 793's states.
enum class StreamState : std::uint8_t {
  kClosed,
  kListen,
  kSynSent,
  kSynReceived,
  kEstablished,
  kFinWait1,   // we closed; our FIN is not yet acknowledged
  kFinWait2,   // our FIN is acknowledged; the peer's FIN has not come
  kClosing,    // both closed at once; our FIN not yet acknowledged
  kTimeWait,   // both FINs done; lingering for stray segments
  kCloseWait,  // the peer closed; we may still send
  kLastAck,    // the peer closed, then we did; our FIN not yet acknowledged
};
// The state's name, for logs and test messages.
std::string_view to_string(StreamState s) noexcept;

// What a connection can see happen.
enum class StreamEvent : std::uint8_t {
  kConnect,       // application: active open
  kListen,        // application: passive open
  kRecvSyn,       // a SYN without ACK
  kRecvSynAck,    // a SYN with ACK acknowledging our SYN
  kRecvAckOfSyn,  // an ACK acknowledging our SYN (or SYN-ACK)
  kRecvFin,       // the peer's FIN, in order (all data before it received)
  kRecvAckOfFin,  // an ACK acknowledging our FIN
  kClose,         // application: no more data to send (FIN once the send buffer drains)
  kRecvRst,       // a valid RST
  kAbort,         // application: drop the connection now
  kTimeout,       // connect, retransmission or dead-peer limit reached, or TIME_WAIT over
};
// The event's name, for logs and test messages.
std::string_view to_string(StreamEvent e) noexcept;

// What a transition asks the connection to do (bits, or-ed into Transition::actions).
enum StreamAction : std::uint8_t {
  kActSendSyn = 1 << 0,
  kActSendSynAck = 1 << 1,
  kActSendAck = 1 << 2,
  kActSendFin = 1 << 3,  // queue our FIN after the data already queued
  kActSendRst = 1 << 4,
  kActConnected = 1 << 5,   // the connection is established: wake connect()/accept()
  kActPeerClosed = 1 << 6,  // end of stream for recv(): the peer sent FIN
  kActFailed = 1 << 7,      // the connection is gone: fail pending calls with Transition::error
};

// The outcome of one event: the next state, the actions, and the error to report with
// kActFailed.
struct Transition {
  StreamState next = StreamState::kClosed;
  std::uint8_t actions = 0;
  Status error = Status::kOk;  // with kActFailed: kClosed (reset by the peer), kTimeout, ...
};

// The transition for `event` in `state` (kOk), or kInvalidState with `out` untouched when the
// event is not allowed there. Notable rows: simultaneous open (kSynSent + kRecvSyn ->
// kSynReceived, send SYN-ACK) and simultaneous close (kFinWait1 + kRecvFin -> kClosing);
// kRecvRst in any synchronized state -> kClosed, failed with kClosed; kTimeout in kSynSent ->
// kClosed, failed with kTimeout; kTimeout in kTimeWait -> kClosed (no failure); kAbort from any
// state but kClosed/kListen -> kClosed with an RST, failed with kClosed.
Status transition(StreamState state, StreamEvent event, Transition& out) noexcept;

}  // namespace unet::ulp
