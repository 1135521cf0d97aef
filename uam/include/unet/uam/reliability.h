// ReliableSender / ReliableReceiver: one channel's reliability over an unreliable transport (UD).
//
// Go-back-N with cumulative acks. The sender numbers each message (push), keeps it — as the
// caller's 64-bit cookie, e.g. a buffer id; the caller keeps the bytes — until a cumulative ack
// covers it (on_ack retires it), and runs one retransmission timer for the oldest unacked message:
// when it expires every unacked message is sent again in order. Fast retransmit: the dup_acks-th
// repeat of one ack while messages are unacked (the receiver re-acks every arrival it drops)
// resends them at once, once per stall. After max_retries expiries without an ack making progress
// the channel has failed: every outstanding message is reported failed exactly once
// (kRetryExceeded) and every later call returns kClosed.
//
// The timeout adapts to the round trip as RFC 6298 says (core::RttEstimator). An ack that retires
// messages gives a sample R when the newest message it retires was never resent (Karn: the ack of a
// resent message cannot say which copy it answers): R = now - that message's first transmission, so
// it includes the receiver's ack delay, which the timer must cover anyway. The first sample sets
// SRTT = R, RTTVAR = R/2; later ones RTTVAR += (|SRTT - R| - RTTVAR)/4, then SRTT += (R - SRTT)/8;
// and RTO = SRTT + max(granularity, 4 RTTVAR), clamped to [rto_min, rto_max]. Before any sample RTO
// is rto_initial. Every expiry doubles the RTO (up to rto_max); the backoff stays until the next
// sample (Karn again: while every acked message was resent there is nothing to learn from, and
// resetting would resend the next ones as early). rto_min is what keeps a stall of the peer's
// host — a descheduled process, milliseconds, not a loss — from looking like one: an RTT of tens
// of microseconds alone would put the RTO far below it.
//
// The receiver delivers only the next expected sequence number (kDeliver: the caller runs its
// handler now), so every message is delivered exactly once and in order. A duplicate (already
// delivered) is counted and re-acked at once, never delivered. An arrival ahead of the next
// expected one is DROPPED, counted and re-acked at once, not held: holding would keep its receive
// buffer (and, for a request, the peer's credit) tied up until the gap fills and would need a
// store of descriptors per window slot here; a single-path fabric rarely reorders, the repeated
// acks make the sender resend within a round trip, and a resend is bounded by the sender's window
// (in practice by its credits). Acks are delayed: one is due after ack_every deliveries or
// ack_delay after the first unacknowledged one, whichever comes first; any header the caller sends
// carries ack() and counts as the ack (ack_sent).
//
// Time is a parameter (any fixed origin, e.g. steady_clock's): nothing here reads a clock, so
// tests drive it. Storage (cookies and first-transmission times, one per window slot) is
// allocated at construction; push/ack/timer/arrival never allocate, lock or throw. Sequence
// numbers are serial (sequence.h) and start at config.initial_seq.
#pragma once

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>

#include "unet/core/rtt_estimator.h"
#include "unet/status.h"
#include "unet/uam/sequence.h"

namespace unet::uam {

using Time = std::chrono::nanoseconds;  // since any fixed origin

// Go-back-N parameters, shared by the sender and receiver of a channel.
struct ReliabilityConfig {
  std::uint32_t window = 64;  // unacked messages a sender keeps (1..kMaxWindow)
  // The timeout before any round-trip sample, and its bounds. The floor is set for hosts that
  // stall for milliseconds (e.g. the SoftRoCE VM, or a descheduled peer); eRPC's fixed RTO is 5 ms.
  Time rto_initial = std::chrono::milliseconds(10);
  Time rto_min = std::chrono::milliseconds(10);
  Time rto_max = std::chrono::milliseconds(160);
  Time granularity = std::chrono::microseconds(10);  // G in RTO = SRTT + max(G, 4 RTTVAR)
  std::uint32_t max_retries = 8;  // expiries in a row without progress before failure
  std::uint32_t dup_acks = 3;     // repeats of one ack that trigger a fast retransmit (0: off)
  std::uint32_t ack_every = 4;    // K: an ack is due after this many deliveries ...
  Time ack_delay = std::chrono::microseconds(200);  // ... or T after the first unacked one
  Seq initial_seq = 0;

  static constexpr std::uint32_t kMaxWindow = 1u << 15;   // far below 2^31: serial compares hold
  static constexpr Time kMaxRto = std::chrono::hours(1);  // keeps SRTT + 4 RTTVAR far from overflow
  // Throws std::invalid_argument unless 1 <= window <= kMaxWindow,
  // 0 < rto_min <= rto_initial <= rto_max <= kMaxRto, granularity >= 0, ack_every >= 1 and
  // 0 <= ack_delay < rto_min (a delayed ack must beat the sender's shortest timer).
  void validate() const;
};

// Counters of one ReliableSender.
struct SenderStats {
  std::uint64_t sent = 0;              // messages pushed (first transmissions)
  std::uint64_t retransmitted = 0;     // resends asked of the caller
  std::uint64_t timeouts = 0;          // timer expiries that resent
  std::uint64_t fast_retransmits = 0;  // resends triggered by repeated acks
  std::uint64_t acked = 0;             // messages retired by acks
  std::uint64_t stale_acks = 0;        // acks older than the oldest unacked message
  std::uint64_t bad_acks = 0;          // acks beyond the last message sent (refused)
  std::uint64_t failed = 0;            // messages reported failed
  std::uint64_t rtt_samples = 0;       // acks that gave a round-trip sample
};

// The sending half: numbers messages, retires them on acks, times out and resends.
class ReliableSender {
 public:
  // Throws std::invalid_argument when `config` fails validate().
  explicit ReliableSender(const ReliabilityConfig& config)
      : config_((config.validate(), config)),
        oldest_(config.initial_seq),
        next_(config.initial_seq),
        clean_from_(config.initial_seq),
        rtt_(core::RttConfig{config.rto_initial, config.rto_min, config.rto_max,
                             config.granularity}),
        mask_(std::bit_ceil(config.window) - 1),
        cookies_(std::make_unique<std::uint64_t[]>(mask_ + 1)),
        sent_at_(std::make_unique<Time[]>(mask_ + 1)) {}

  // Counters; messages unacked; whether the channel has failed; the number push() gives next.
  const SenderStats& stats() const noexcept { return stats_; }
  std::uint32_t outstanding() const noexcept { return next_ - oldest_; }
  bool failed() const noexcept { return failed_; }
  Seq next_seq() const noexcept { return next_; }
  // The current timeout (backoff included), and the estimate behind it (zero before a sample).
  Time rto() const noexcept { return rtt_.rto(); }
  Time srtt() const noexcept { return rtt_.srtt(); }
  Time rttvar() const noexcept { return rtt_.rttvar(); }
  // When on_timer() will next act; nullopt when nothing is unacked (or the channel failed).
  std::optional<Time> deadline() const noexcept {
    if (failed_ || outstanding() == 0) return std::nullopt;
    return deadline_;
  }

  // True when `ack` is older than an ack already applied (on_ack() would call it stale): the
  // peer composed the header carrying it before one already seen here.
  bool stale_ack(Seq ack) const noexcept { return seq_distance(oldest_, ack) < 0; }

  // Numbers a new message and keeps `cookie` until it is acked; `seq` gets its number.
  // kNoResource when `window` messages are unacked, kClosed once failed (nothing changed).
  [[nodiscard]] Status push(std::uint64_t cookie, Time now, Seq& seq) noexcept {
    if (failed_) return Status::kClosed;
    if (outstanding() >= config_.window) return Status::kNoResource;
    if (outstanding() == 0) deadline_ = now + rtt_.rto();
    cookies_[next_ & mask_] = cookie;
    sent_at_[next_ & mask_] = now;
    seq = next_++;
    ++stats_.sent;
    return Status::kOk;
  }

  // Applies a cumulative ack (the peer's next expected seq): calls retired(seq, cookie) for each
  // newly covered message, oldest first, takes an RTT sample if the newest of them was never
  // resent (which recomputes the RTO, ending any backoff), and restarts the timer. A stale ack
  // changes nothing (kOk); a repeated one counts toward a fast retransmit, which calls
  // resend(seq, cookie) for every unacked message, oldest first. One beyond next_seq() is refused
  // (kInvalidArgument, nothing changed).
  template <class Retired, class Resend>
  [[nodiscard]] Status on_ack(Seq ack, Time now, Retired&& retired, Resend&& resend) noexcept {
    if (failed_) return Status::kClosed;
    const std::int32_t d = seq_distance(oldest_, ack);
    if (d < 0) {
      ++stats_.stale_acks;
      return Status::kOk;
    }
    if (static_cast<std::uint32_t>(d) > outstanding()) {
      ++stats_.bad_acks;
      return Status::kInvalidArgument;
    }
    if (d == 0) {
      if (outstanding() != 0 && config_.dup_acks != 0 && ++dup_acks_ == config_.dup_acks) {
        for (Seq s = oldest_; s != next_; ++s) resend(s, cookies_[s & mask_]);
        stats_.retransmitted += outstanding();
        ++stats_.fast_retransmits;
        clean_from_ = next_;
        deadline_ = now + rtt_.rto();
      }
      return Status::kOk;
    }
    const Seq newest = ack - 1;
    if (seq_before_eq(clean_from_, newest)) {  // never resent: a sample (RFC 6298, Karn)
      rtt_.sample(now - sent_at_[newest & mask_]);
      ++stats_.rtt_samples;
    }
    for (std::int32_t i = 0; i < d; ++i, ++oldest_) retired(oldest_, cookies_[oldest_ & mask_]);
    stats_.acked += static_cast<std::uint32_t>(d);
    if (seq_before(clean_from_, oldest_)) clean_from_ = oldest_;  // keeps it within the window
    retries_ = 0;
    dup_acks_ = 0;
    deadline_ = now + rtt_.rto();
    return Status::kOk;
  }

  // Timer progress; call whenever now >= deadline() (calling earlier is harmless). On expiry calls
  // resend(seq, cookie) for every unacked message, oldest first, and doubles the timeout, up to
  // rto_max, until the next RTT sample (kOk).
  // The expiry after max_retries such rounds fails the channel: failed(seq, cookie) for each
  // outstanding message, and kRetryExceeded. kClosed once failed.
  template <class Resend, class Failed>
  [[nodiscard]] Status on_timer(Time now, Resend&& resend, Failed&& failed) noexcept {
    if (failed_) return Status::kClosed;
    if (outstanding() == 0 || now < deadline_) return Status::kOk;
    if (retries_ >= config_.max_retries) {
      abort(failed);
      return Status::kRetryExceeded;
    }
    ++retries_;
    ++stats_.timeouts;
    for (Seq s = oldest_; s != next_; ++s) resend(s, cookies_[s & mask_]);
    stats_.retransmitted += outstanding();
    clean_from_ = next_;
    rtt_.backoff();
    deadline_ = now + rtt_.rto();
    return Status::kOk;
  }

  // Fails the channel now (e.g. the peer is known dead): failed(seq, cookie) for each outstanding
  // message, oldest first; later calls return kClosed. A second abort reports nothing.
  template <class Failed>
  void abort(Failed&& failed) noexcept {
    if (failed_) return;
    failed_ = true;
    for (; oldest_ != next_; ++oldest_) {
      failed(oldest_, cookies_[oldest_ & mask_]);
      ++stats_.failed;
    }
  }

 private:
  ReliabilityConfig config_;
  Seq oldest_;      // first unacked
  Seq next_;        // next to number
  Seq clean_from_;  // messages from here on were never resent (each resend resends all unacked)
  core::RttEstimator rtt_;  // SRTT, RTTVAR and the RTO with its backoff
  Time deadline_{};
  std::uint32_t retries_ = 0;
  std::uint32_t dup_acks_ = 0;  // repeats of the current ack seen
  bool failed_ = false;
  std::uint32_t mask_;
  std::unique_ptr<std::uint64_t[]> cookies_;  // indexed by seq & mask_
  std::unique_ptr<Time[]> sent_at_;           // first transmission, indexed by seq & mask_
  SenderStats stats_;
};

// What the receiver makes of an arriving sequenced message.
enum class Arrival : std::uint8_t {
  kDeliver,     // the next expected one: run its handler now (it counts as delivered)
  kDuplicate,   // delivered before: drop it; an ack is due at once
  kOutOfOrder,  // ahead of the next expected one: dropped (see above); an ack is due at once
};

// Counters of one ReliableReceiver.
struct ReceiverStats {
  std::uint64_t delivered = 0;
  std::uint64_t duplicates = 0;
  std::uint64_t out_of_order = 0;
  std::uint64_t acks_sent = 0;  // ack_sent() calls (piggybacked or explicit)
};

// The receiving half: delivers in order and once, and says when an ack is due.
class ReliableReceiver {
 public:
  // Throws std::invalid_argument when `config` fails validate().
  explicit ReliableReceiver(const ReliabilityConfig& config)
      : config_((config.validate(), config)), expected_(config.initial_seq) {}

  // Counters of this receiver.
  const ReceiverStats& stats() const noexcept { return stats_; }
  // The cumulative ack to put in every header to the peer: the next sequence number expected.
  Seq ack() const noexcept { return expected_; }

  // Classifies the message numbered `seq` that arrived at `now` (see Arrival); a delivery may
  // make an ack due (K deliveries, or T after the first unacked one).
  [[nodiscard]] Arrival on_arrival(Seq seq, Time now) noexcept {
    const std::int32_t d = seq_distance(expected_, seq);
    if (d < 0) {
      ++stats_.duplicates;
      ack_now_ = true;
      return Arrival::kDuplicate;
    }
    if (d > 0) {
      ++stats_.out_of_order;
      ack_now_ = true;
      return Arrival::kOutOfOrder;
    }
    if (unacked_ == 0) first_unacked_ = now;
    ++unacked_;
    ++expected_;
    ++stats_.delivered;
    return Arrival::kDeliver;
  }

  // True when an ack must go now: a duplicate or out-of-order arrival asked for one, ack_every
  // deliveries are unacked, or the oldest unacked delivery is ack_delay old.
  bool ack_due(Time now) const noexcept {
    if (ack_now_ || unacked_ >= config_.ack_every) return true;
    return unacked_ > 0 && now - first_unacked_ >= config_.ack_delay;
  }
  // When ack_due() turns true without further arrivals (Time::min() when it already is);
  // nullopt when nothing waits for an ack.
  std::optional<Time> ack_deadline() const noexcept {
    if (ack_now_ || unacked_ >= config_.ack_every) return Time::min();
    if (unacked_ == 0) return std::nullopt;
    return first_unacked_ + config_.ack_delay;
  }

  // A header carrying ack() went to the peer (any kind): nothing waits for an ack any more.
  void ack_sent() noexcept {
    unacked_ = 0;
    ack_now_ = false;
    ++stats_.acks_sent;
  }

 private:
  ReliabilityConfig config_;
  Seq expected_;
  std::uint32_t unacked_ = 0;  // deliveries since the last ack_sent()
  Time first_unacked_{};
  bool ack_now_ = false;
  ReceiverStats stats_;
};

}  // namespace unet::uam
