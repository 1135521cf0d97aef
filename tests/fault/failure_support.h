// What the tests that break a peer (peer_death_test.cc) or a link (link_down_test.cc) share: the
// bound a configuration promises for reporting a failure, and a healthy pair that keeps carrying
// checked traffic beside the broken one.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <span>
#include <tuple>

#include "endpoint_support.h"
#include "unet/core/endpoint.h"
#include "unet/uam/endpoint.h"

namespace unet::test {

using Clock = std::chrono::steady_clock;

inline constexpr std::chrono::milliseconds kSlack{
    1500};  // on top of a promised bound: a loaded 2-vCPU VM

inline double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// How long an RC channel may take to report a silent peer: 4.096 us * 2^ack_timeout per try,
// retry_count + 1 tries (core/include/unet/core/endpoint.h), plus kSlack.
inline std::chrono::milliseconds rc_bound(const core::EndpointConfig& c) {
  const double us = 4.096 * static_cast<double>(1ull << c.ack_timeout) * (c.retry_count + 1);
  return std::chrono::milliseconds(static_cast<long>(us / 1000)) + kSlack;
}

// How long uam over UD may take to fail a channel whose peer is silent: max_retries + 1 expiries
// of a timer backing off from rto_initial to rto_max, plus kSlack.
inline std::chrono::milliseconds uam_ud_bound(const uam::ReliabilityConfig& r) {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  milliseconds sum{0}, rto = duration_cast<milliseconds>(r.rto_initial);
  for (std::uint32_t i = 0; i <= r.max_retries;
       ++i, rto = std::min(2 * rto, duration_cast<milliseconds>(r.rto_max)))
    sum += rto;
  return sum + kSlack;
}

// A pair of core RC endpoints in this process, exchanging checked inline messages (on the test
// device unless configurations are given).
struct HealthyCorePair {
  core::Endpoint a, b;
  core::ChannelId ab, ba;
  std::uint64_t sent = 0, delivered = 0;
  HealthyCorePair(const core::EndpointConfig& ca = endpoint_config(core::Transport::kRc),
                  const core::EndpointConfig& cb = endpoint_config(core::Transport::kRc))
      : a(ca), b(cb) {
    std::tie(ab, ba) = connect_endpoints(a, b);
  }
  // One step: a message out when the last arrived, arrivals checked. False on a broken pair.
  bool step() {
    if (sent == delivered) {
      const std::uint64_t v = sent;
      if (a.send_inline(ab, std::as_bytes(std::span(&v, 1))) == Status::kOk) ++sent;
    }
    if (a.poll() < 0 || b.poll() < 0) return false;
    core::Descriptor d;
    while (b.receive(d) == Status::kOk) {
      std::uint64_t v = 0;
      std::memcpy(&v, d.inline_payload().data(), sizeof v);
      if (d.channel != ba || v != delivered) return false;
      ++delivered;
    }
    return a.channel_status(ab) == Status::kOk;
  }
};

}  // namespace unet::test
