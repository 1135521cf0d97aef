// CreditWindow: one channel's credit-based flow control, both directions (per peer, as in GASNet).
//
// Sender side — our requests to the peer. We start with W credits; each request takes one
// (consume); with none left the call returns kNoResource, nothing changes, and the caller queues
// the request. Replies, error replies, store-done and credit messages take no credit: a reply
// lands in the buffer its request's credit reserved. Credits come back in the `credits` field of
// every header from the peer, as a running total modulo 256 (on_credit_total), so a header seen
// twice, late or out of order returns nothing twice, and the credits of a lost header come back
// with the next one. W <= 127 keeps "newer" unambiguous modulo 256 — for totals at most 127
// credits apart. Over UD a header can arrive milliseconds late (a descheduled vCPU, a busy
// backlog) after totals more than 128 credits newer: its total would read as a jump forward, to
// be refused (bad_totals) or, 256 - in_flight() or more behind, taken for credits never returned.
// So uam::Endpoint applies the total of a UD header only when its ack is not older than one
// already applied (ReliableSender::stale_ack): such a header is at most W plus the go-back-N
// window credits behind — in range while the two add up to 128 or less (defaults: 8 + 64).
//
// Receiver side — the peer's requests to us. Each arriving request holds one of the W receive
// buffers kept for this peer (on_request; one more than W means the peer overran, refused with
// kInvalidState). When its handler has finished and the buffer is back (request_done), the credit
// is owed. piggyback(), called for EVERY header sent to the peer, folds the owed credits into the
// running total it returns for the header's `credits` field.
//
// The explicit-credit rule: should_send_explicit_credit() is true when
//   (a) owed() >= explicit_threshold() (default ceil(W/2)), or
//   (b) the peer probed (on_probe): it is out of credit and asked for our total.
// (a) is enough to prevent a stall on a reliable transport: the peer stalls only when all W of its
// credits are held or owed here, held ones turn owed as handlers finish, so owed reaches
// W >= threshold and a credit message goes out; while owed < threshold the peer still has credit,
// and any traffic we send meanwhile carries the credits for free (a request/reply workload never
// needs an explicit message). (b) covers an unreliable transport (UD), where the credit message
// itself can be lost: a sender that stays out of credit (stalled()) for a while sends a kCredit
// with the probe bit, and the answer carries the total again — TCP's persist timer; the caller
// owns the clock. Nothing here allocates, reads a clock or throws after construction.
#pragma once

#include <cstdint>
#include <stdexcept>

#include "unet/status.h"

namespace unet::uam {

// Counters of one window, both sides.
struct CreditStats {
  std::uint64_t consumed = 0;        // requests sent (credits taken)
  std::uint64_t refused = 0;         // consume() calls refused for want of credit
  std::uint64_t returned_to_us = 0;  // credits the peer gave back
  std::uint64_t stale_totals = 0;    // headers whose total was older than one already seen
  std::uint64_t bad_totals = 0;      // totals returning credits we never spent (refused)
  std::uint64_t requests_held = 0;   // the peer's requests accepted
  std::uint64_t overruns = 0;        // the peer's requests beyond its window (refused)
  std::uint64_t returned_by_us = 0;  // credits we folded into headers
};

// One channel's credits, both directions (see the top of this file). Pure logic, one thread.
class CreditWindow {
 public:
  // The largest window: 127 keeps "newer" unambiguous for totals modulo 256.
  static constexpr std::uint8_t kMaxWindow = 127;
  // eRPC's 8 credits per session (GASNet-EX uses 12): 8 per peer x 16 peers fills core's default
  // free queue of 128 buffers exactly.
  static constexpr std::uint8_t kDefaultWindow = 8;

  // `window` credits (1..kMaxWindow); `explicit_threshold` 1..window, 0 = ceil(window / 2).
  // Throws std::invalid_argument otherwise.
  explicit CreditWindow(std::uint8_t window = kDefaultWindow, std::uint8_t explicit_threshold = 0)
      : window_(window),
        threshold_(explicit_threshold ? explicit_threshold : (window + 1) / 2),
        available_(window) {
    if (window == 0 || window > kMaxWindow)
      throw std::invalid_argument("CreditWindow: window must be 1..127");
    if (threshold_ > window_)
      throw std::invalid_argument("CreditWindow: explicit threshold above the window");
  }

  // The window W, the owed count that makes an explicit credit message due, and the counters.
  std::uint8_t window() const noexcept { return window_; }
  std::uint8_t explicit_threshold() const noexcept { return threshold_; }
  const CreditStats& stats() const noexcept { return stats_; }

  // --- sender side ---
  // Credits left to spend, requests in flight (W - available), and whether none is left.
  std::uint8_t available() const noexcept { return available_; }
  std::uint8_t in_flight() const noexcept {
    return static_cast<std::uint8_t>(window_ - available_);
  }
  bool stalled() const noexcept { return available_ == 0; }

  // Takes one credit for a request. kNoResource (nothing changed) when none is left.
  [[nodiscard]] Status consume() noexcept {
    if (available_ == 0) {
      ++stats_.refused;
      return Status::kNoResource;
    }
    --available_;
    ++stats_.consumed;
    return Status::kOk;
  }

  // Gives back the credit of a request that consume() allowed but that was never sent.
  void undo_consume() noexcept {
    if (available_ < window_) {
      ++available_;
      --stats_.consumed;
    }
  }

  // Applies the `credits` field of a header from the peer. A total older than one already seen is
  // ignored (kOk); one returning more credits than are in flight is refused with kInvalidArgument
  // and changes nothing (the caller drops that message).
  [[nodiscard]] Status on_credit_total(std::uint8_t total) noexcept {
    const auto delta = static_cast<std::uint8_t>(total - seen_total_);
    if (delta == 0) return Status::kOk;
    if (delta > kMaxWindow) {
      ++stats_.stale_totals;
      return Status::kOk;
    }
    if (delta > in_flight()) {
      ++stats_.bad_totals;
      return Status::kInvalidArgument;
    }
    available_ = static_cast<std::uint8_t>(available_ + delta);
    seen_total_ = total;
    stats_.returned_to_us += delta;
    return Status::kOk;
  }

  // --- receiver side ---
  std::uint8_t held() const noexcept { return held_; }
  std::uint8_t owed() const noexcept { return owed_; }

  // A request from the peer arrived. kInvalidState (nothing changed) when the peer had no credit:
  // all W of its credits are already held or owed here.
  [[nodiscard]] Status on_request() noexcept {
    if (held_ + owed_ >= window_) {
      ++stats_.overruns;
      return Status::kInvalidState;
    }
    ++held_;
    ++stats_.requests_held;
    return Status::kOk;
  }

  // A held request's handler finished and its buffer is free: its credit is owed to the peer.
  // kInvalidState when no request is held.
  [[nodiscard]] Status request_done() noexcept {
    if (held_ == 0) return Status::kInvalidState;
    --held_;
    ++owed_;
    return Status::kOk;
  }

  // The peer sent a probe: it is out of credit. Makes should_send_explicit_credit() true.
  void on_probe() noexcept { probe_pending_ = true; }

  // The rule in the header comment: (a) owed >= threshold, or (b) a probe is unanswered.
  bool should_send_explicit_credit() const noexcept {
    return owed_ >= threshold_ || probe_pending_;
  }

  // Call for every header sent to the peer: returns the running total for its `credits` field,
  // counting every owed credit as returned from now on and answering any probe.
  std::uint8_t piggyback() noexcept {
    returned_total_ = static_cast<std::uint8_t>(returned_total_ + owed_);
    stats_.returned_by_us += owed_;
    owed_ = 0;
    probe_pending_ = false;
    return returned_total_;
  }

 private:
  std::uint8_t window_;
  std::uint8_t threshold_;
  std::uint8_t available_;
  std::uint8_t seen_total_ = 0;  // the peer's running total, as last applied
  std::uint8_t held_ = 0;
  std::uint8_t owed_ = 0;
  std::uint8_t returned_total_ = 0;  // our running total, modulo 256
  bool probe_pending_ = false;
  CreditStats stats_;
};

}  // namespace unet::uam
