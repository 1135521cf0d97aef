// stream_echo: a TCP-like byte stream built in user space over U-Net (unet::ulp::StreamEndpoint,
// the paper's U-Net TCP) — an echo server and a client that checks every byte it gets back.
//
//   build/examples/unet_example_stream_echo      (needs an RDMA device; SoftRoCE will do)
//
// A StreamEndpoint runs over one UD endpoint: unreliable datagrams, one queue pair for every peer,
// a channel being just a peer's address. The stream protocol on top — handshake, sequence
// numbers, acks, retransmission, windows — is library code in this process, not the kernel's:
//   listen() / accept()   a port; accept() hands over a connection once its handshake is done
//   connect()             the active open; usable once state() is kEstablished
//   send() / recv()       copy into / out of the connection's buffers and say how much they took;
//                         kNoResource means "full" / "nothing yet": make progress, then retry
//   shutdown()            FIN after the data queued; the peer's recv() then returns kClosed
//   close()               gives the connection back (here once both FINs are done)
//   poll() / wait(conn)   progress: arrivals, acks, retransmissions, timers
// Both sides run in this process, each on its own thread with its own endpoint, as on two
// machines. Exit 0 when every byte was checked, 1 on failure, 77 without an RDMA device.
#include <unet/ulp/stream_endpoint.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "example_support.h"

namespace {

using namespace unet;
using example::check;
using ulp::ConnId;
using ulp::StreamEndpoint;
using ulp::StreamState;
using namespace std::chrono_literals;

constexpr std::uint16_t kPort = 7;  // the echo service's port, as in TCP
constexpr std::size_t kTotal = 512 * 1024;

// One wait on `conn`: it returns as soon as the connection has news for us (data, room to send, end
// of stream, a state change), or after 10 ms — for the states that a timer ends, like TIME_WAIT.
void wait_for_news(StreamEndpoint& ep, ConnId conn, const example::Deadline& deadline,
                   const std::string& what) {
  deadline.check(what);
  if (Status s = ep.wait(conn, 10ms); s != Status::kTimeout) check(s, "waiting for " + what);
}

template <class Done>
void await(StreamEndpoint& ep, ConnId conn, const example::Deadline& deadline,
           const std::string& what, Done done) {
  while (!done()) wait_for_news(ep, conn, deadline, what);
}

bool in_state(StreamEndpoint& ep, ConnId conn, StreamState want) {
  StreamState s;
  return ep.state(conn, s) == Status::kOk && s == want;
}

void server(StreamEndpoint& ep) {
  const example::Deadline deadline;
  ConnId conn = ulp::kNoConn;
  // run() listened on kPort. The handshake runs inside poll(); accept() then hands over the
  // established connection.
  while (ep.accept(kPort, conn) != Status::kOk) {
    deadline.check("a connection");
    check(ep.poll() >= 0, "poll: device error");
  }
  std::vector<std::byte> buf(16 * 1024);
  for (;;) {
    std::size_t got = 0;
    const Status r = ep.recv(conn, buf, got);
    if (r == Status::kClosed) break;  // end of stream: the client shut down its side
    if (r == Status::kNoResource) {   // nothing yet
      wait_for_news(ep, conn, deadline, "data");
      continue;
    }
    check(r, "server: recv");
    // Echo it all. send() takes what fits in the send buffer; wait for room for the rest.
    for (std::size_t off = 0; off < got;) {
      std::size_t took = 0;
      if (Status s = ep.send(conn, std::span(buf).subspan(off, got - off), took);
          s != Status::kNoResource)
        check(s, "server: send");
      off += took;
      if (off < got) wait_for_news(ep, conn, deadline, "room to send");
    }
  }
  // Our FIN goes out after the last echo; once the client acknowledges it, the state is kClosed.
  check(ep.shutdown(conn), "server: shutdown");
  await(ep, conn, deadline, "the ack of our FIN",
        [&] { return in_state(ep, conn, StreamState::kClosed); });
  check(ep.close(conn), "server: close");
}

void client(StreamEndpoint& ep, ulp::ChannelId server, std::string& report) {
  const example::Deadline deadline;
  ConnId conn = ulp::kNoConn;
  check(ep.connect(server, kPort, conn), "connect");
  await(ep, conn, deadline, "the handshake",
        [&] { return in_state(ep, conn, StreamState::kEstablished); });

  // Send and read the echo at once: a client that sent everything before reading would stall as
  // soon as the buffers of both directions were full.
  std::vector<std::byte> data(kTotal), in(16 * 1024);
  for (std::size_t i = 0; i < kTotal; ++i) data[i] = static_cast<std::byte>(i * 7 + (i >> 11));
  std::size_t sent = 0, received = 0;
  while (received < kTotal) {
    std::size_t took = 0, got = 0;
    if (sent < kTotal) {
      if (Status s = ep.send(conn, std::span(data).subspan(sent), took); s != Status::kNoResource)
        check(s, "client: send");
      sent += took;
    }
    if (Status r = ep.recv(conn, in, got); r != Status::kNoResource) check(r, "client: recv");
    check(received + got <= kTotal, "more bytes echoed than sent");
    if (!std::ranges::equal(std::span(in).first(got), std::span(data).subspan(received, got)))
      example::fail("echoed bytes " + std::to_string(received) + ".." +
                    std::to_string(received + got) + " differ");
    received += got;
    if (took == 0 && got == 0) wait_for_news(ep, conn, deadline, "the echo");
  }
  const std::optional<ulp::StreamStats> st = ep.stats(conn);  // control state, readable any time
  report = "smoothed RTT " + std::to_string(st->srtt.count() / 1000) + " us, " +
           std::to_string(st->retransmitted_segments) + " segments retransmitted";

  // Our FIN: the server reads the end of the stream, and closes its side; our recv() sees it.
  check(ep.shutdown(conn), "client: shutdown");
  await(ep, conn, deadline, "the server's FIN", [&] {
    std::size_t got = 0;
    return ep.recv(conn, in, got) == Status::kClosed;
  });
  // TIME_WAIT (StreamConfig::time_wait) would answer a lost final ack again; then kClosed.
  await(ep, conn, deadline, "TIME_WAIT's end",
        [&] { return in_state(ep, conn, StreamState::kClosed); });
  check(ep.close(conn), "client: close");
}

std::string run() {
  const core::EndpointConfig net = example::endpoint_config(core::Transport::kUd);
  StreamEndpoint server_ep(net), client_ep(net);
  // Listen before handing out our half: then the client's SYN always finds the port open.
  check(server_ep.listen(kPort), "listen");

  // The UD channels: each side learns the other's address from the swapped out-of-band halves
  // (how that goes between machines: see endpoint_pingpong.cc, or ulp/examples/unet_cat.cc, which
  // does it over TCP).
  const core::ChannelOffer so = server_ep.offer_peer(), co = client_ep.offer_peer();
  server_ep.accept_peer(so, co.local);
  const ulp::ChannelId to_server = client_ep.accept_peer(co, so.local);

  std::string report;
  example::run_both([&] { server(server_ep); }, [&] { client(client_ep, to_server, report); });
  return std::to_string(kTotal) + " bytes echoed and checked, connection closed on both sides (" +
         report + ")";
}

}  // namespace

int main() { return example::run_example("stream_echo", run); }
