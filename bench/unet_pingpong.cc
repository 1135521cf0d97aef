// unet_pingpong: two processes bounce one message back and forth through U-Net endpoints, and the
// client reports the half round trip the way perftest's ib_send_lat does.
//
//   server:  unet_pingpong -d rxe0 -s 8            (no host argument)
//   client:  unet_pingpong -d rxe0 -s 8 127.0.0.1
//
// The U-Net steps, in the order they happen:
//   Endpoint         the process's virtual network interface: its segment of buffers and its
//                    send, receive and free queues (the "NI" work runs inside poll())
//   offer / accept   channel set-up: each side offers its half, the halves cross over TCP
//   send_inline      a small message travels inside the descriptor itself, no buffer needed
//   acquire + send   a larger one is composed in a segment buffer, then queued by descriptor
//   poll             the NI doing its work: posts queued sends, moves arrivals to the receive queue
//   receive          pops the oldest descriptor of the receive queue
//   release          hands an arrival's buffer back to the free queue for the next arrival
//
// Measurement (as ib_send_lat, and as bench/verbs_pingpong): the client stamps the cycle counter
// at the start of each iteration, latency = half the gap between consecutive stamps, warm-up
// iterations are excluded, statistics use every sample. The server echoes each message back.
#include <gflags/gflags.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "latency_stats.h"
#include "program_flags.h"
#include "unet/core/cycle_clock.h"
#include "unet/core/endpoint.h"
#include "unet/verbs/error.h"
#include "unet/verbs/oob.h"

DEFINE_string(d, "", "RDMA device (default: the first)");
DEFINE_int32(x, -1, "GID index (default: chosen like perftest)");
DEFINE_int32(p, 18515, "TCP port of the out-of-band channel set-up");
DEFINE_uint64(s, 8, "message size in bytes");
DEFINE_uint64(n, 1000, "timed iterations");
DEFINE_uint64(warmup, 100, "untimed iterations before the timed ones");
DEFINE_string(c, "RC", "transport: RC (reliable connection) or UD (unreliable datagram)");
DEFINE_int32(timeout_ms, 20000, "limit for connecting and for every wait");

using namespace unet;
using namespace unet::core;

namespace {

[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "unet_pingpong: %s\n", msg.c_str());
  std::exit(1);
}

std::byte pattern(std::uint64_t iteration, std::size_t i) {
  return static_cast<std::byte>(iteration * 131 + i * 7);
}

// The data path of one side: an endpoint, its one channel, and bounded waits.
struct Side {
  Endpoint& ep;
  ChannelId ch;
  std::uint64_t patience;  // --timeout_ms in cycle-counter ticks
  bool ud;
  std::byte msg[Descriptor::kInlineBytes] = {};  // where a small message is composed

  // Waits for the next arrival: poll() lets the "NI" work, receive() pops the receive queue. The
  // clock is read only every 4096 idle polls (cheap here, but the same shape as verbs_pingpong).
  Descriptor wait_arrival(std::uint64_t it) {
    const std::uint64_t deadline = core::CycleClock::now() + patience;
    Descriptor d;
    for (std::uint32_t idle = 0;; ++idle) {
      if (ep.poll() < 0) die("device error while polling");
      if (ep.receive(d) == Status::kOk) break;
      if (idle % 4096 == 4095 && core::CycleClock::now() > deadline)
        die("no message from the peer within " + std::to_string(FLAGS_timeout_ms) +
            " ms (iteration " + std::to_string(it) + ")" +
            (ud ? ": UD is unreliable, a datagram was probably lost" : ""));
    }
    if (d.channel != ch) die("an arrival on channel " + std::to_string(d.channel) + ", not ours");
    if (d.length != FLAGS_s)
      die("an arrival of " + std::to_string(d.length) + " bytes, not " + std::to_string(FLAGS_s));
    return d;
  }
  // Retries `attempt` (a send or acquire_buffer) while it says kNoResource — a full send queue or
  // no spare buffer — polling in between so that completed sends hand their resources back.
  template <class F>
  void retry(F attempt, const char* what) {
    const std::uint64_t deadline = core::CycleClock::now() + patience;
    for (std::uint32_t idle = 0;; ++idle) {
      Status s = attempt();
      if (s == Status::kOk) return;
      if (s != Status::kNoResource)
        die(std::string(what) + " failed: " + std::string(to_string(s)));
      if (ep.poll() < 0) die("device error while polling");
      if (idle % 4096 == 4095 && core::CycleClock::now() > deadline)
        die(std::string(what) + ": back-pressure did not clear within the timeout");
    }
  }
  // Sends `len` bytes, calling fill(bytes) to compose them. Small: inside the descriptor.
  template <class Fill>
  void send(std::uint32_t len, Fill fill) {
    if (len <= ep.inline_threshold()) {
      fill(std::span<std::byte>(msg, len));
      retry([&] { return ep.send_inline(ch, {msg, len}); }, "send_inline");
    } else {
      BufferId b = kNoBuffer;
      retry([&] { return ep.acquire_buffer(b); }, "acquire_buffer");
      fill(ep.buffer(b).first(len));
      retry([&] { return ep.send(ch, b, len); }, "send");  // the endpoint owns b until sent
    }
  }
  // The bytes of an arrival: in the descriptor (small) or in a segment buffer.
  std::span<const std::byte> bytes(const Descriptor& d) {
    return d.is_inline() ? d.inline_payload()
                         : std::span<const std::byte>(ep.buffer(d.buffer).first(d.length));
  }
  void done_with(const Descriptor& d) {
    if (!d.is_inline() && ep.release(d.buffer) != Status::kOk) die("release refused");
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (!cli::parse_flags(&argc, &argv,
                        "ping-pong latency between two U-Net endpoints (perftest-style)\n"
                        "  server: unet_pingpong [flags]\n  client: unet_pingpong [flags] HOST"))
    return 0;
  if (argc > 2) die("at most one host argument");
  if (FLAGS_c != "RC" && FLAGS_c != "UD") die("-c must be RC or UD, not '" + FLAGS_c + "'");
  if (FLAGS_s == 0) die("-s must be at least 1");
  if (FLAGS_n == 0) die("-n must be positive");
  if (FLAGS_p <= 0 || FLAGS_p > 65535) die("-p must be a TCP port (1-65535)");
  if (FLAGS_timeout_ms <= 0) die("--timeout_ms must be positive");
  const std::string host = argc == 2 ? argv[1] : "";
  const bool client = !host.empty(), ud = FLAGS_c == "UD";
  const auto timeout = std::chrono::milliseconds(FLAGS_timeout_ms);
  const std::uint64_t total = FLAGS_warmup + FLAGS_n;
  try {
    // 1. The endpoint: a small segment is plenty for one message in flight.
    EndpointConfig cfg;
    cfg.device = FLAGS_d;
    if (FLAGS_x >= 0) cfg.gid_index = static_cast<std::uint32_t>(FLAGS_x);
    cfg.transport = ud ? Transport::kUd : Transport::kRc;
    cfg.buffers = 64;
    cfg.free_queue_depth = 32;
    cfg.send_queue_depth = 64;
    cfg.recv_queue_depth = 64;
    Endpoint ep(cfg);
    if (FLAGS_s > ep.max_message())
      die("-s " + std::to_string(FLAGS_s) + " exceeds the largest " + FLAGS_c + " message, " +
          std::to_string(ep.max_message()) + " bytes" + (ud ? " (the path MTU)" : " (one buffer)"));
    const auto len = static_cast<std::uint32_t>(FLAGS_s);
    const core::CycleClock clock = core::CycleClock::calibrate();

    // 2. Channel set-up: our half goes to the peer over TCP, one line each way. The server
    // completes its channel before it answers, so it is ready before the client can send.
    ChannelOffer offer = ep.offer_channel();
    std::optional<verbs::OobSocket> sock;  // kept for the closing handshake
    ChannelId ch;
    if (client) {
      sock.emplace(verbs::OobSocket::connect(host, static_cast<std::uint16_t>(FLAGS_p), timeout));
      sock->send_all(offer.local, timeout);  // the line already ends with '\n'
      ch = ep.accept_offer(offer, sock->recv_line(timeout, ChannelOffer::kMaxLine));
    } else {
      verbs::OobListener listener("", static_cast<std::uint16_t>(FLAGS_p));
      sock.emplace(listener.accept(timeout));
      ch = ep.accept_offer(offer, sock->recv_line(timeout, ChannelOffer::kMaxLine));
      sock->send_all(offer.local, timeout);
    }
    Side side{ep, ch, clock.ticks(timeout), ud};

    // 3. The ping-pong. One message in flight at a time, so even UD loses nothing to a full
    // free queue; a lost datagram shows up as a timeout. Nothing below prints or allocates.
    std::vector<std::uint64_t> stamps(client ? total + 1 : 0);
    for (std::uint64_t it = 0; it < total; ++it) {
      if (!client) {  // server: wait for the ping, echo it back
        Descriptor d = side.wait_arrival(it);
        auto in = side.bytes(d);
        side.send(len, [&](std::span<std::byte> out) { std::memcpy(out.data(), in.data(), len); });
        side.done_with(d);  // after the copy: the buffer goes back to the free queue
        continue;
      }
      // Only the first and last messages are written and their echoes compared; the others go
      // with whatever the buffer holds, so the timed loop copies nothing it need not.
      const bool check = it == 0 || it + 1 == total;
      stamps[it] = core::CycleClock::now();
      side.send(len, [&](std::span<std::byte> out) {
        if (check)
          for (std::size_t i = 0; i < len; ++i) out[i] = pattern(it, i);
      });
      Descriptor d = side.wait_arrival(it);
      if (it + 1 == total) stamps[total] = core::CycleClock::now();
      if (check) {
        auto in = side.bytes(d);
        for (std::size_t i = 0; i < len; ++i)
          if (in[i] != pattern(it, i))
            die("iteration " + std::to_string(it) + ": the echo differs at byte " +
                std::to_string(i));
      }
      side.done_with(d);
    }

    // 4. Closing handshake: the server keeps its endpoint until the client has its last reply.
    if (!client) {
      // send() only queued the last echo; poll() is what posts it (every earlier echo was posted
      // by the poll() of the next wait). sent counts the descriptors posted.
      side.retry([&] { return ep.stats().sent < total ? Status::kNoResource : Status::kOk; },
                 "posting the last echo");
      if (sock->recv_line(timeout) != "done") die("bad closing handshake");
      return 0;
    }
    sock->send_all("done\n", timeout);
    std::vector<double> half_rtt;
    half_rtt.reserve(FLAGS_n);
    for (std::uint64_t it = FLAGS_warmup; it < total; ++it)
      half_rtt.push_back(clock.to_us(stamps[it + 1] - stamps[it]) / 2);

    const EndpointStats& st = ep.stats();
    std::printf(
        "---------------------------------------------------------------------------------------"
        "\n");
    std::printf(
        " unet endpoint: %s ping-pong, device %s, %s, %llu warm-up iterations excluded\n"
        " cycle counter: %.1f ticks/usec, calibrated against CLOCK_MONOTONIC\n",
        FLAGS_c.c_str(), FLAGS_d.empty() ? "(first)" : FLAGS_d.c_str(),
        len <= ep.inline_threshold() ? "inline (in the descriptor)" : "not inline (segment buffer)",
        static_cast<unsigned long long>(FLAGS_warmup), clock.ticks_per_us());
    bench::print_latency_header(stdout);
    bench::print_latency_row(stdout, len, FLAGS_n, bench::compute_latency(half_rtt));
    std::printf(
        "---------------------------------------------------------------------------------------"
        "\n");
    std::printf(
        " endpoint: sent %llu (inline %llu), received %llu (inline %llu), doorbells %llu, "
        "unknown_tag_drops %llu\n",
        static_cast<unsigned long long>(st.sent), static_cast<unsigned long long>(st.inline_sent),
        static_cast<unsigned long long>(st.received),
        static_cast<unsigned long long>(st.inline_received),
        static_cast<unsigned long long>(st.doorbells),
        static_cast<unsigned long long>(st.unknown_tag_drops));
  } catch (const verbs::Error& e) {
    die(e.what());
  }
  return 0;
}
