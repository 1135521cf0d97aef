// dgram_lat, sockperf's UDP ping-pong over ulp's DatagramEndpoint (checks and waits: ulp_tests.h).
// The client sends a datagram of `-s` bytes with send_to, the server takes it with recv_from and
// sends it back to its sender. One datagram outstanding; the client stamps the cycle counter at
// the start of every iteration (as ep_lat), latency = half the gap between consecutive stamps. ulp
// does not resend datagrams: a lost one (request or echo) ends the run after --timeout_ms with an
// error that says so, it never hangs.
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "round.h"
#include "sizing.h"
#include "ulp_tests.h"
#include "unet/ulp/datagram_endpoint.h"

namespace unet::perf {
namespace {

constexpr const char* kDgramLate =
    " (UD loses datagrams and ulp does not resend them: a datagram or its echo was lost, or the "
    "peer is gone)";

std::string dgram_drops(const ulp::DatagramStats& st) {
  if (st.unbound_drops + st.queue_full_drops + st.malformed == 0) return "";
  return "the datagram endpoint dropped " + std::to_string(st.unbound_drops) + " for no port, " +
         std::to_string(st.queue_full_drops) + " for a full queue and " +
         std::to_string(st.malformed) + " malformed";
}

SizeResult dgram_lat(const SizeRun& a, ulp::DatagramEndpoint& ep, core::ChannelId peer) {
  const PerfConfig& c = a.cfg;
  Session& s = *a.session;
  const std::uint32_t size = a.size;
  const std::uint64_t total = a.total();
  Progress progress(UlpDriver(ep, kDgramLate), c, a.clock, &s);
  SizeResult result = SizeResult::of(size, c.iterations);
  std::vector<std::byte> buf(size);
  ulp::DatagramInfo info;
  // Takes the next datagram on kPort into `buf`; true when one was there.
  auto take = [&] {
    if (!progress.succeeded(ep.recv_from(kPort, buf, info), "recv_from")) return false;
    if (info.length != size)
      throw PerfError("a datagram of " + std::to_string(info.length) + " bytes, expected " +
                      std::to_string(size));
    return true;
  };
  auto send = [&](core::ChannelId to, std::uint16_t port) {
    progress.retry([&] { return ep.send_to(kPort, to, port, std::span<const std::byte>(buf)); },
                   "send_to", "room to send a datagram");
  };

  if (!c.is_client()) {  // server: echo every datagram to its sender
    std::uint64_t echoed = 0;
    sync_go(s);
    for (; echoed < total; ++echoed) {
      progress.until(take, echoed == 0 ? "datagram from the client" : "next datagram");
      if (std::string bad = check_message(buf, echoed, total, true, "datagram"); !bad.empty())
        throw PerfError(bad);
      send(info.peer, info.src_port);
    }
    progress.finish_serving(echoed, [&] { return dgram_drops(ep.stats()); });
    return result;
  }

  std::vector<std::uint64_t> stamps(total + 1);
  sync_go(s);
  for (std::uint64_t it = 0; it < total; ++it) {
    fill_message(buf, it, total, true);
    stamps[it] = core::CycleClock::now();
    send(peer, kPort);
    progress.until(take, "echo of a datagram");
    if (std::string bad = check_message(buf, it, total, true, "echo of datagram"); !bad.empty())
      throw PerfError(bad);
  }
  stamps[total] = core::CycleClock::now();
  if (std::string bad = dgram_drops(ep.stats()); !bad.empty()) throw PerfError(bad);
  result.server_count = finish_round(s, total);
  result.latency = round_trip_latency(stamps, c.warmup, a.clock.ticks_per_us());
  return result;
}

}  // namespace

SizeResult run_dgram_lat(const SizeRun& a) {
  const PerfConfig& c = a.cfg;
  std::unique_ptr<ulp::DatagramEndpoint> ep;
  auto make = [&]() -> std::string {
    ep = std::make_unique<ulp::DatagramEndpoint>(ulp_endpoint_config(c));
    if (Status st = ep->bind(kPort); st != Status::kOk)
      return "error binding datagram port " + std::to_string(kPort) + ": " +
             std::string(to_string(st));
    return "ok";
  };
  auto run = [&] {
    const core::ChannelId peer = connect_channel(ep->net(), c, *a.session);
    SizeResult done = dgram_lat(a, *ep, peer);
    done.endpoint = ep->net().stats();
    return done;
  };
  return agreed_size(a, make, run);
}

}  // namespace unet::perf
