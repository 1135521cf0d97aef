// What the tests that break a peer (peer_death_test.cc) or a link (link_down_*_test.cc) share: the
// bound a configuration promises for reporting a failure, and a healthy pair that keeps carrying
// checked traffic beside the broken one.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <span>
#include <tuple>
#include <vector>

#include "endpoint_support.h"
#include "unet/core/endpoint.h"
#include "unet/uam/endpoint.h"
#include "unet/ulp/stream_endpoint.h"

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

// A stream between two endpoints of this process: a sends a counting byte pattern, b reads and
// checks it (on the test device unless configurations are given).
struct HealthyStreamPair {
  static constexpr std::uint16_t kPort = 9;
  ulp::StreamEndpoint a, b;
  core::ChannelId ab = core::kNoChannel;
  ulp::ConnId client = ulp::kNoConn, server = ulp::kNoConn;
  std::uint64_t sent = 0, got = 0;
  std::vector<std::byte> out = std::vector<std::byte>(8192), in = std::vector<std::byte>(8192);

  HealthyStreamPair(const ulp::StreamConfig& sc, const core::EndpointConfig& ca = ud_config(),
                    const core::EndpointConfig& cb = ud_config())
      : a(ca, sc), b(cb, sc) {
    core::ChannelOffer oa = a.offer_peer(), ob = b.offer_peer();
    ab = a.accept_peer(oa, ob.local);
    (void)b.accept_peer(ob, oa.local);
    if (b.listen(kPort) != Status::kOk || a.connect(ab, kPort, client) != Status::kOk)
      throw std::runtime_error("HealthyStreamPair: listen or connect failed");
  }
  static std::byte pattern(std::uint64_t i) { return static_cast<std::byte>(i * 7); }
  // One step: progress, more bytes out, arrivals checked. False on an error or a wrong byte.
  bool step() {
    if (a.poll() < 0 || b.poll() < 0) return false;
    if (server == ulp::kNoConn) (void)b.accept(kPort, server);
    ulp::StreamState st;
    if (a.state(client, st) == Status::kOk && st == ulp::StreamState::kEstablished) {
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = pattern(sent + i);
      std::size_t took = 0;
      const Status s = a.send(client, out, took);
      if (s != Status::kOk && s != Status::kNoResource) return false;
      sent += took;
    }
    if (server != ulp::kNoConn) {
      std::size_t n = 0;
      const Status s = b.recv(server, in, n);
      if (s != Status::kOk && s != Status::kNoResource) return false;
      for (std::size_t i = 0; i < n; ++i)
        if (in[i] != pattern(got + i)) return false;
      got += n;
    }
    return true;
  }
};

}  // namespace unet::test
