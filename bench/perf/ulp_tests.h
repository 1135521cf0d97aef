// What the user-level-protocol tests share (dgram_tests.cc, stream_tests.cc): ulp's
// DatagramEndpoint and StreamEndpoint, each over one U-Net UD endpoint per side (the stream over
// an RC one with -c RC; sizing.h, ulp_endpoint_config). Both sides use port kPort.
//
// Checks: every datagram and every stream message has its length; the first and the last carry
// the check pattern, and datagrams of 8 bytes or more carry their index in the first 8 (lost,
// repeated or reordered datagrams show). The server compares its count (datagrams or messages
// echoed; stream_bw: bytes) with the client's, and its endpoint's drop and malformed counters.
// The stream tests report the client connection's retransmitted segments and timeouts (--json).
//
// Waits: Progress (progress.h) with a UlpDriver polls (or with -e sleeps on the endpoint's fd,
// bounded by its next timer); every wait ends after --timeout_ms, and while idle the session is
// watched, so that a peer that gave up ends this side at once (as am_tests.cc).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "progress.h"
#include "round.h"
#include "unet/status.h"

namespace unet::perf {

constexpr std::uint16_t kPort = 7;  // the echo port, on both sides (datagrams and streams)
constexpr std::size_t kIndexBytes = 8;

// The Driver (progress.h) of a ulp endpoint (both kinds have poll, arm, fd, next_timer_ms): with
// -e it sleeps on the endpoint's fd, bounded by its next timer (reassembly, retransmission).
// `why_late` is added to a timeout's message.
template <class Ep>
class UlpDriver {
 public:
  UlpDriver(Ep& ep, const char* why_late) : ep_(ep), why_late_(why_late) {}
  int poll() noexcept { return ep_.poll(); }
  Status arm() noexcept { return ep_.arm(); }
  Status sleep(std::chrono::milliseconds most) noexcept {
    const int timer = ep_.next_timer_ms(), ms = static_cast<int>(most.count());
    return sleep_on(ep_.fd(), timer < 0 ? ms : std::min(timer, ms));
  }
  void check(const char*) const noexcept {}
  std::string late() const { return why_late_; }

 private:
  Ep& ep_;
  const char* why_late_;
};

template <class Ep>
using UlpProgress = Progress<UlpDriver<Ep>>;

// Message `it` of a run of `total`: the first and the last carry the check pattern; a datagram
// of 8 bytes or more carries its index in its first 8 (little-endian).
inline void fill_message(std::span<std::byte> out, std::uint64_t it, std::uint64_t total,
                         bool indexed) {
  if (it == 0 || it + 1 == total) fill_pattern(out, it);
  if (indexed && out.size() >= kIndexBytes)
    for (std::size_t i = 0; i < kIndexBytes; ++i) out[i] = static_cast<std::byte>(it >> (8 * i));
}

// "" when `in` is message `it` as fill_message wrote it, else what differs.
inline std::string check_message(std::span<const std::byte> in, std::uint64_t it,
                                 std::uint64_t total, bool indexed, const char* what) {
  std::string bad;
  if (indexed && in.size() >= kIndexBytes) {
    std::uint64_t got = 0;
    for (std::size_t i = 0; i < kIndexBytes; ++i)
      got |= std::uint64_t{std::to_integer<std::uint8_t>(in[i])} << (8 * i);
    if (got != it)
      bad = "carries index " + std::to_string(got) + " (lost, repeated or reordered datagrams)";
  }
  if (bad.empty() && (it == 0 || it + 1 == total))
    bad = check_pattern(in, it, indexed ? kIndexBytes : 0);
  return bad.empty() ? bad : std::string(what) + " " + std::to_string(it) + " " + bad;
}

}  // namespace unet::perf
