// ReliabilityConfig::validate — the set-up check, out of line (the data path is in the header).
#include "unet/uam/reliability.h"

namespace unet::uam {

void ReliabilityConfig::validate() const {
  if (window == 0 || window > kMaxWindow)
    throw std::invalid_argument("ReliabilityConfig: window must be 1..32768");
  if (rto_min <= Time::zero() || rto_initial < rto_min || rto_max < rto_initial ||
      rto_max > kMaxRto)
    throw std::invalid_argument(
        "ReliabilityConfig: need 0 < rto_min <= rto_initial <= rto_max <= 1 h");
  if (granularity < Time::zero())
    throw std::invalid_argument("ReliabilityConfig: granularity must not be negative");
  if (ack_every == 0)
    throw std::invalid_argument("ReliabilityConfig: ack_every must be at least 1");
  if (ack_delay < Time::zero() || ack_delay >= rto_min)
    throw std::invalid_argument("ReliabilityConfig: ack_delay must be below rto_min");
}

}  // namespace unet::uam
