// NewReno after RFC 5681 and RFC 6582. Arithmetic is done in 64 bits and saturated to 32, so no
// mss or window, however large, wraps cwnd around to a tiny value.
#include "unet/ulp/congestion.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "unet/core/serial_number.h"

namespace unet::ulp {
namespace {

std::uint32_t saturate(std::uint64_t v) noexcept {
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(v, UINT32_MAX));
}

// RFC 5681 (4): the slow-start threshold after a loss.
std::uint32_t halved(std::uint32_t flight, std::uint32_t mss) noexcept {
  return saturate(std::max<std::uint64_t>(flight / 2, 2 * std::uint64_t{mss}));
}

// a at or after b in 32-bit sequence space (RFC 1982 serial arithmetic).
bool seq_at_or_after(std::uint32_t a, std::uint32_t b) noexcept { return core::seq_le(b, a); }

std::uint32_t checked_mss(std::uint32_t mss) {
  if (mss == 0) throw std::invalid_argument("NewReno: mss must be positive");
  return mss;
}

}  // namespace

NewReno::NewReno(std::uint32_t mss, std::uint32_t initial_window_segments)
    : mss_(checked_mss(mss)), cwnd_(saturate(std::uint64_t{initial_window_segments} * mss)) {
  if (initial_window_segments == 0)
    throw std::invalid_argument("NewReno: initial_window_segments must be positive");
}

void NewReno::on_ack(std::uint32_t acked) noexcept {
  // Outside recovery only: in recovery cwnd belongs to on_recovery_ack, and an ack of nothing
  // is not new data.
  if (in_recovery_ || acked == 0) return;
  dup_acks_ = 0;
  if (cwnd_ < ssthresh_) {
    cwnd_ = saturate(std::uint64_t{cwnd_} + std::min(acked, mss_));  // RFC 5681 (2)
  } else {
    const std::uint64_t mss = mss_;
    cwnd_ = saturate(cwnd_ + std::max<std::uint64_t>(1, mss * mss / cwnd_));  // RFC 5681 (3)
  }
}

bool NewReno::on_dup_ack(std::uint32_t flight, std::uint32_t highest_sent) noexcept {
  if (in_recovery_) {
    cwnd_ = saturate(std::uint64_t{cwnd_} + mss_);  // RFC 5681 step 4: inflate
    return false;
  }
  if (++dup_acks_ < 3) return false;
  // RFC 5681 steps 2 and 3; RFC 6582 step 2 records where recovery ends.
  ssthresh_ = halved(flight, mss_);
  cwnd_ = saturate(std::uint64_t{ssthresh_} + 3 * std::uint64_t{mss_});
  recover_ = highest_sent;
  in_recovery_ = true;
  dup_acks_ = 0;
  ++stats_.fast_retransmits;
  return true;
}

bool NewReno::on_recovery_ack(std::uint32_t acked, std::uint32_t ack,
                              std::uint32_t flight) noexcept {
  if (!in_recovery_) {  // not in recovery after all: an ordinary ack
    on_ack(acked);
    return false;
  }
  if (seq_at_or_after(ack, recover_)) {  // RFC 6582 step 3: full acknowledgement
    cwnd_ = saturate(std::min<std::uint64_t>(ssthresh_, std::uint64_t{flight} + mss_));
    in_recovery_ = false;
    dup_acks_ = 0;
    ++stats_.recoveries;
    return false;
  }
  // RFC 6582 step 3: partial acknowledgement. Deflate by what was acked, add back one mss if at
  // least one mss was acked, and never go below one mss.
  std::int64_t deflated = std::int64_t{cwnd_} - acked;
  if (acked >= mss_) deflated += mss_;
  cwnd_ = static_cast<std::uint32_t>(std::max<std::int64_t>(deflated, mss_));
  ++stats_.partial_acks;
  return true;
}

void NewReno::on_timeout(std::uint32_t flight) noexcept {
  ssthresh_ = halved(flight, mss_);  // RFC 5681 (4)
  cwnd_ = mss_;                      // the loss window, one segment
  in_recovery_ = false;
  dup_acks_ = 0;
  ++stats_.timeouts;
}

}  // namespace unet::ulp
