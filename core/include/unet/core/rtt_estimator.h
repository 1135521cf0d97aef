// RttEstimator: one peer's round-trip time and retransmission timeout, as RFC 6298 says.
//
// Shared by the layers that retransmit: a ulp stream connection and a uam channel over UD.
// The first sample R sets SRTT = R, RTTVAR = R/2; later ones RTTVAR = 3/4 RTTVAR + 1/4 |SRTT - R|,
// SRTT = 7/8 SRTT + 1/8 R; RTO = SRTT + max(G, 4 RTTVAR), clamped to [min_rto, max_rto]. Before
// any sample RTO is initial_rto. backoff() doubles RTO (up to max_rto) after a timeout; the next
// sample recomputes it. Karn's rule is the caller's: never sample a retransmitted segment.
// Time is a parameter; nothing here reads a clock, allocates or throws after construction.
#pragma once

#include <chrono>
#include <cstdint>

namespace unet::core {

// The RTO before any sample, its bounds, and the clock granularity G.
struct RttConfig {
  std::chrono::nanoseconds initial_rto = std::chrono::milliseconds(200);
  std::chrono::nanoseconds min_rto = std::chrono::milliseconds(2);
  std::chrono::nanoseconds max_rto = std::chrono::seconds(4);
  std::chrono::nanoseconds granularity = std::chrono::microseconds(100);  // G
  // Throws std::invalid_argument unless 0 < min_rto <= initial_rto <= max_rto and G >= 0.
  void validate() const;
};

// One peer's estimator (see the top of this file).
class RttEstimator {
 public:
  // Throws std::invalid_argument when `config` fails validate().
  explicit RttEstimator(const RttConfig& config = {});
  // Feeds one round-trip sample (never of a retransmitted segment).
  void sample(std::chrono::nanoseconds rtt) noexcept;
  // Doubles the RTO after a timeout, up to max_rto.
  void backoff() noexcept;
  // The estimate: whether any sample came, SRTT, RTTVAR, the RTO now, and the sample count.
  bool has_sample() const noexcept { return samples_ > 0; }
  std::chrono::nanoseconds srtt() const noexcept { return srtt_; }
  std::chrono::nanoseconds rttvar() const noexcept { return rttvar_; }
  std::chrono::nanoseconds rto() const noexcept { return rto_; }
  std::uint64_t samples() const noexcept { return samples_; }

 private:
  RttConfig config_;
  std::chrono::nanoseconds srtt_{0}, rttvar_{0}, rto_;
  std::uint64_t samples_ = 0;
};

}  // namespace unet::core
