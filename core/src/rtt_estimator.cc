// RFC 6298's estimator in integer nanoseconds. The updates are written as x += (y - x) / k, which
// is RFC 6298's (1 - 1/k) x + y / k without forming k * x, so no sample, however large, overflows.
#include "unet/core/rtt_estimator.h"

#include <algorithm>
#include <stdexcept>

namespace unet::core {
namespace {

using std::chrono::nanoseconds;

// a + b for non-negative durations, saturating at nanoseconds::max().
nanoseconds saturating_add(nanoseconds a, nanoseconds b) noexcept {
  return a > nanoseconds::max() - b ? nanoseconds::max() : a + b;
}

}  // namespace

void RttConfig::validate() const {
  if (min_rto <= nanoseconds::zero())
    throw std::invalid_argument("RttConfig: min_rto must be positive");
  if (initial_rto < min_rto)
    throw std::invalid_argument("RttConfig: initial_rto must be at least min_rto");
  if (max_rto < initial_rto)
    throw std::invalid_argument("RttConfig: max_rto must be at least initial_rto");
  if (granularity < nanoseconds::zero())
    throw std::invalid_argument("RttConfig: granularity must not be negative");
}

RttEstimator::RttEstimator(const RttConfig& config) : config_(config), rto_(config.initial_rto) {
  config_.validate();
}

void RttEstimator::sample(nanoseconds rtt) noexcept {
  const nanoseconds r = std::max(rtt, nanoseconds::zero());  // a clock step back reads as 0
  if (samples_ == 0) {
    srtt_ = r;
    rttvar_ = r / 2;
  } else {
    const nanoseconds delta = srtt_ > r ? srtt_ - r : r - srtt_;
    rttvar_ += (delta - rttvar_) / 4;  // RTTVAR first: it uses the SRTT before this sample
    srtt_ += (r - srtt_) / 8;
  }
  ++samples_;
  const nanoseconds k_rttvar = rttvar_ > nanoseconds::max() / 4 ? nanoseconds::max() : 4 * rttvar_;
  const nanoseconds rto = saturating_add(srtt_, std::max(config_.granularity, k_rttvar));
  rto_ = std::clamp(rto, config_.min_rto, config_.max_rto);
}

void RttEstimator::backoff() noexcept {
  rto_ = rto_ > config_.max_rto / 2 ? config_.max_rto : 2 * rto_;
}

}  // namespace unet::core
