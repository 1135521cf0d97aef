// unet_cat: netcat over a ulp stream — copies stdin to the stream and the stream to stdout.
//
//   unet_cat -l PORT [-d DEVICE] [-g GID_INDEX] [-v]          listen
//   unet_cat HOST PORT [-d DEVICE] [-g GID_INDEX] [-v]        connect
//
// The two sides swap their UD channel halves over TCP to HOST:PORT (the out-of-band exchange, as
// perftest does), then the client opens a stream to the server's stream port PORT. Each side
// sends its stdin and shuts down at its end; it exits 0 once it has written the peer's whole
// stream to stdout and its own was acknowledged, 1 on any failure (with the reason and the
// connection's counters on stderr; -v prints the counters after a success too).
#include <fcntl.h>
#include <gflags/gflags.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "program_flags.h"
#include "unet/ulp/stream_endpoint.h"
#include "unet/verbs/error.h"
#include "unet/verbs/oob.h"

DEFINE_bool(l, false, "listen on PORT (no HOST argument)");
DEFINE_string(d, "", "RDMA device (default: the first)");
DEFINE_int32(g, -1, "GID index (default: chosen like perftest)");
DEFINE_bool(v, false, "print the connection's counters to stderr after a success too");

using namespace unet;
using namespace std::chrono_literals;

namespace {

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "unet_cat: %s\n", why.c_str());
  std::exit(1);
}

// The connection's counters on stderr, after a failure or with -v at the end: how much passed and
// how often the timers fired.
void report(const ulp::StreamEndpoint& ep, ulp::ConnId conn) {
  const std::optional<ulp::StreamStats> s = ep.stats(conn);
  if (!s) return;
  std::fprintf(stderr,
               "unet_cat: sent %llu B, received %llu B; segments %llu out, %llu in, "
               "%llu resent (%llu timeouts, %llu fast); srtt %.3f ms, rto %.3f ms\n",
               static_cast<unsigned long long>(s->bytes_sent),
               static_cast<unsigned long long>(s->bytes_received),
               static_cast<unsigned long long>(s->segments_sent),
               static_cast<unsigned long long>(s->segments_received),
               static_cast<unsigned long long>(s->retransmitted_segments),
               static_cast<unsigned long long>(s->timeouts),
               static_cast<unsigned long long>(s->fast_retransmits), s->srtt.count() / 1e6,
               s->rto.count() / 1e6);
}

void usage() {
  die("usage: unet_cat -l PORT | unet_cat HOST PORT   [-d DEVICE] [-g GID_INDEX] [-v]");
}

bool write_all(int fd, const std::byte* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (!cli::parse_flags(&argc, &argv,
                        "netcat over a ulp stream: stdin to the stream, the stream to stdout\n"
                        "  listen:  unet_cat -l PORT [-d DEVICE] [-g GID_INDEX] [-v]\n"
                        "  connect: unet_cat HOST PORT [-d DEVICE] [-g GID_INDEX] [-v]"))
    return 0;
  const bool listen = FLAGS_l, verbose = FLAGS_v;
  const std::string device = FLAGS_d;
  std::optional<std::uint32_t> gid;
  if (FLAGS_g < -1) die("-g must be a GID index, or -1 to choose it like perftest");
  if (FLAGS_g >= 0) gid = static_cast<std::uint32_t>(FLAGS_g);
  std::string host;
  long port = -1;
  if (listen && argc == 2) {
    port = std::strtol(argv[1], nullptr, 10);
  } else if (!listen && argc == 3) {
    host = argv[1];
    port = std::strtol(argv[2], nullptr, 10);
  } else {
    usage();
  }
  if (port <= 0 || port > 65535) die("PORT must be 1..65535");
  const auto p16 = static_cast<std::uint16_t>(port);
  const auto timeout = 10s;

  try {
    core::EndpointConfig net;
    net.device = device;
    net.gid_index = gid;
    net.transport = core::Transport::kUd;
    net.buffers = 512;
    net.free_queue_depth = 256;
    net.send_queue_depth = 128;
    ulp::StreamEndpoint ep(net);
    core::ChannelOffer offer = ep.offer_peer();
    core::ChannelId peer;
    ulp::ConnId conn = ulp::kNoConn;
    if (listen) {
      if (ep.listen(p16) != Status::kOk)
        die("cannot listen on stream port " + std::to_string(port));
      verbs::OobListener l("", p16);
      verbs::OobSocket s = l.accept(60s);
      peer = ep.accept_peer(offer, s.recv_line(timeout, core::ChannelOffer::kMaxLine));
      s.send_all(offer.local, timeout);
      const auto end = std::chrono::steady_clock::now() + timeout;
      while (ep.accept(p16, conn) != Status::kOk) {
        if (ep.poll() < 0 || std::chrono::steady_clock::now() > end) die("no connection came");
      }
    } else {
      verbs::OobSocket s = verbs::OobSocket::connect(host, p16, timeout);
      s.send_all(offer.local, timeout);
      peer = ep.accept_peer(offer, s.recv_line(timeout, core::ChannelOffer::kMaxLine));
      if (ep.connect(peer, p16, conn) != Status::kOk) die("connect refused locally");
      if (ep.wait(conn, timeout) != Status::kOk) die("connect timed out");
    }
    ::fcntl(0, F_SETFL, ::fcntl(0, F_GETFL) | O_NONBLOCK);
    std::vector<std::byte> in(64 * 1024), out(64 * 1024);
    std::size_t pending = 0, off = 0;
    bool stdin_done = false, shut = false, peer_done = false;
    ulp::StreamState st = ulp::StreamState::kEstablished;
    auto entered = std::chrono::steady_clock::now();  // when `st` began
    const auto fail = [&](const std::string& why) {
      const auto in_st = std::chrono::steady_clock::now() - entered;
      std::fprintf(stderr, "unet_cat: %s after %lld ms in %s\n", why.c_str(),
                   static_cast<long long>(
                       std::chrono::duration_cast<std::chrono::milliseconds>(in_st).count()),
                   std::string(to_string(st)).c_str());
      report(ep, conn);
      std::exit(1);
    };
    for (;;) {
      if (ep.poll() < 0) fail("device error");
      bool busy = false;
      if (!stdin_done && pending == 0) {
        const ssize_t r = ::read(0, in.data(), in.size());
        if (r > 0)
          pending = static_cast<std::size_t>(r), off = 0, busy = true;
        else if (r == 0)
          stdin_done = true;
      }
      if (pending > 0) {
        std::size_t took = 0;
        const Status s = ep.send(conn, std::span(in).subspan(off, pending), took);
        if (s != Status::kOk && s != Status::kNoResource)
          fail(std::string("send: ") + std::string(to_string(s)));
        off += took, pending -= took, busy |= took > 0;
      }
      if (stdin_done && pending == 0 && !shut) {
        if (ep.shutdown(conn) != Status::kOk) fail("shutdown failed");
        shut = true;
      }
      std::size_t got = 0;
      const Status r = ep.recv(conn, out, got);
      if (r == Status::kOk) {
        if (!write_all(1, out.data(), got)) fail("stdout write failed");
        busy = true;
      } else if (r == Status::kClosed) {
        peer_done = true;
      } else if (r != Status::kNoResource) {
        fail(std::string("recv: ") + std::string(to_string(r)));
      }
      ulp::StreamState now;
      if (ep.state(conn, now) != Status::kOk) fail("connection lost");
      if (now != st &&
          now != ulp::StreamState::kClosed) {  // the last state before closing or failing
        st = now;
        entered = std::chrono::steady_clock::now();
      }
      // Done once both directions are closed and TIME_WAIT is over: until then a lost final ACK
      // is answered again, and leaving earlier could take the last ACK down with the process
      // before the device sent it (the peer would then wait for it until its dead-peer timeout).
      if (peer_done && shut && now == ulp::StreamState::kClosed) break;
      if (!busy) std::this_thread::sleep_for(20us);
    }
    if (verbose) report(ep, conn);
    (void)ep.close(conn);
    return 0;
  } catch (const std::exception& e) {
    die(e.what());
  }
}
