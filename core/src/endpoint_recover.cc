// Endpoint recovery: a UD endpoint whose one QP went to the error state is brought back, and an
// arrival the device failed is counted and its QP's state looked at.
//
// A UD send can fail at the device for a reason that has nothing to do with any peer — no route
// while a link is down is the one seen on rxe — and the QP then sits in the error state: every
// later send and receive is flushed. RC fails the one channel whose QP broke; on UD all channels
// share the QP, and they are datagrams to peers that did nothing wrong, so instead the QP is reset
// and moved back to RTS. Its number stays the same, so the peers' address of us (their channels)
// stays valid; what was lost is what UD may lose anyway, and every send it cost was reported.
// An arrival can fail the QP as well — a datagram longer than the posted buffer is a local length
// error, after which rxe holds the UD QP in ERROR — and anyone may send one: poll() sees the
// failed receive and brings the QP back at once, so a receive-only endpoint is not left deaf.
#include "endpoint_impl.h"

namespace unet::core {

// After a failed attempt, recovery waits this many polls, doubling up to the maximum: a QP that
// cannot be moved (the device is going away) costs a few syscalls now and then, not every poll.
constexpr std::uint32_t kRecoveryBackoffMin = 64;
constexpr std::uint32_t kRecoveryBackoffMax = 1u << 16;

// The UD lane failed: returns 1 when the QP is back in RTS, 0 when it is not (yet), -1 on a CQ
// error. Order matters:
//   1. The CQ is reaped, then the QP RESET, from when on it produces no completion, and the CQ
//      reaped again: arrivals before the failure are delivered, flushed receives return to the
//      free queue, sends are ignored (the lane is failed; abort_lane reported them). The first
//      reap is for devices that clean a QP's completions out of the CQ when it is reset (mlx5
//      does; rxe leaves them), which would lose those arrivals.
//   2. Sends posted after the failure (flushed or discarded by the reset) are reported failed.
//   3. Receives the reset discarded without a completion are still the free queue's: every
//      buffer it owns is queued to be posted again.
//   4. INIT -> RTR -> RTS, then the lane takes new sends.
int Endpoint::recover_ud_qp() noexcept {
  if (recovery_wait_ > 0) {
    --recovery_wait_;
    return 0;
  }
  Lane& lane = *lanes_[0];  // UD: the endpoint's one lane
  auto back_off = [this] {
    recovery_backoff_ =
        std::min(std::max(recovery_backoff_ * 2, kRecoveryBackoffMin), kRecoveryBackoffMax);
    recovery_wait_ = recovery_backoff_;
    return 0;
  };
  for (int n; (n = reap_completions()) != 0;)
    if (n < 0) return -1;
  if (v_->ud_qp->enter_reset() != Status::kOk) return back_off();
  for (int n; (n = reap_completions()) != 0;)
    if (n < 0) return -1;
  abort_lane(lane, Status::kFlushed);
  free_queue_.pop(free_queue_.size());
  for (BufferId b = 0; b < buffers_.count(); ++b)
    if (buffers_.owner(b) == BufferOwner::kFreeQueue)
      (void)free_queue_.push(b);  // capacity == buffers
  // Left short of RTS, sends are reported failed and nothing is posted until it moves. (UD does
  // not check PSNs: any first one will do.)
  if (v_->ud_qp->restart(static_cast<std::uint32_t>(stats_.qp_recoveries), v_->path) != Status::kOk)
    return back_off();
  lane.failed = false;
  lane.unsignaled = 0;
  recovery_backoff_ = 0;
  ++stats_.qp_recoveries;
  return 1;
}

// Receive completion i of the batch failed. Its buffer goes back to the free queue (arrived()).
// A flushed receive is not an arrival but the consequence of its QP's failure: not counted.
void Endpoint::arrival_failed(std::size_t i) noexcept {
  const verbs::WorkCompletion& wc = v_->wc[i];
  if (wc.status == IBV_WC_WR_FLUSH_ERR) return;
  ++stats_.recv_errors;
  if (v_->ud_qp) {
    // The next poll() resets the QP and brings it back to RTS (the lane's sends fail meanwhile).
    if (v_->ud_qp->refresh_state() != Status::kOk || v_->ud_qp->state() != verbs::QpState::kRts)
      lanes_[0]->failed = true;
    return;
  }
  // RC: a receive error fails the QP it came on (the sender sees a NAK); so does its channel.
  const ChannelId ch = v_->tags.find(wc.qp_num);
  if (ch == kNoChannel) return;
  Channel& c = *channels_[ch];
  if (Lane& lane = *lanes_[c.lane]; !lane.failed) {
    if (verbs::QueuePair* qp = c.rc_qp()) {
      (void)qp->enter_error();  // in case the device left it up: its posted sends flush
    }
    abort_lane(lane, Status::kFlushed);
  }
}

}  // namespace unet::core
