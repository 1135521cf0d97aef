// NewReno: a connection's congestion window, after RFC 5681 (slow start, congestion avoidance,
// fast retransmit and fast recovery) with RFC 6582's partial-ack rule.
//
// All quantities are bytes; `mss` is the largest segment payload. cwnd starts at
// initial_window_segments * mss, ssthresh at "infinity" (UINT32_MAX).
//   on_ack(acked)                 new data acknowledged (acked > 0 bytes) outside recovery: slow
//                                 start (cwnd < ssthresh) adds min(acked, mss); congestion
//                                 avoidance adds max(1, mss*mss/cwnd). Resets the duplicate count.
//                                 Ignored in recovery (cwnd is on_recovery_ack's there).
//   on_dup_ack(flight, highest_sent)  a duplicate ack; the third in a row (outside recovery)
//                                 enters fast recovery: ssthresh = max(flight/2, 2 mss), cwnd =
//                                 ssthresh + 3 mss, recover = highest_sent, and returns true:
//                                 retransmit the first unacked segment now. In recovery each
//                                 further duplicate inflates cwnd by mss (returns false).
//   on_recovery_ack(acked, ack, flight)  an ack of new data while in recovery: one at or past
//                                 `recover` ends recovery with cwnd = min(ssthresh, flight + mss)
//                                 (false); a partial ack deflates cwnd by `acked`, adds one mss
//                                 back if `acked` >= mss (never below mss), and returns true:
//                                 retransmit the next hole. Outside recovery it is on_ack (false).
//   on_timeout(flight)            ssthresh = max(flight/2, 2 mss), cwnd = 1 mss, recovery ends.
// The caller sends while flight < cwnd (and the receiver's window allows). Counters say how often
// each happened. Nothing allocates, reads a clock or throws after construction.
#pragma once

#include <cstdint>

namespace unet::ulp {

// Counters of one connection's congestion control.
struct CongestionStats {
  std::uint64_t fast_retransmits = 0;
  std::uint64_t partial_acks = 0;
  std::uint64_t timeouts = 0;
  std::uint64_t recoveries = 0;  // fast recoveries completed
};

// One connection's congestion window (see the top of this file). Pure logic, no clock.
class NewReno {
 public:
  // Throws std::invalid_argument for mss == 0 or initial_window_segments == 0.
  explicit NewReno(std::uint32_t mss, std::uint32_t initial_window_segments = 4);

  // The window and threshold in bytes, whether fast recovery is on, and the counters.
  std::uint32_t cwnd() const noexcept { return cwnd_; }
  std::uint32_t ssthresh() const noexcept { return ssthresh_; }
  bool in_recovery() const noexcept { return in_recovery_; }
  const CongestionStats& stats() const noexcept { return stats_; }

  // The events, as the table at the top of this file describes them.
  void on_ack(std::uint32_t acked) noexcept;
  // `highest_sent`: the sequence number after the last byte sent (becomes `recover`).
  bool on_dup_ack(std::uint32_t flight, std::uint32_t highest_sent) noexcept;
  // `ack`: the cumulative ack received; returns true for a partial ack (retransmit next hole).
  bool on_recovery_ack(std::uint32_t acked, std::uint32_t ack, std::uint32_t flight) noexcept;
  void on_timeout(std::uint32_t flight) noexcept;

 private:
  std::uint32_t mss_;
  std::uint32_t cwnd_;
  std::uint32_t ssthresh_ = UINT32_MAX;
  std::uint32_t dup_acks_ = 0;
  bool in_recovery_ = false;
  std::uint32_t recover_ = 0;
  CongestionStats stats_;
};

}  // namespace unet::ulp
