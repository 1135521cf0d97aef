// endpoint_pingpong: U-Net's base level — two endpoints, one channel, messages composed in the
// communication segment, echoed back and checked byte for byte. Read this example first.
//
//   build/examples/unet_example_endpoint_pingpong      (needs an RDMA device; SoftRoCE will do)
//
// An endpoint (unet::core::Endpoint) is a process's own network interface. It owns a
// communication segment — registered memory cut into fixed-size buffers — and three queues that
// the application drives itself, without the kernel:
//   send queue     descriptors saying "send `length` bytes of buffer b on channel c"
//   receive queue  descriptors of arrivals; a small message rides inside its descriptor
//   free queue     buffers handed back after an arrival, to receive into again
// A channel joins two endpoints (here over RC, a reliable connection); its id is the tag that
// every descriptor carries.
//
// The client sends kRounds messages of mixed sizes; the server checks each one and sends it back;
// the client checks the echo. Both sides run in this process, each on its own thread with its own
// endpoint, exactly as they would in two processes on two machines.
// Exit 0 when every byte was checked, 1 on failure, 77 without an RDMA device (example_support.h).
#include <unet/core/endpoint.h>

#include <algorithm>
#include <string>

#include "example_support.h"

namespace {

using namespace unet::core;
using example::check;
using unet::Status;

constexpr std::uint32_t kRounds = 300;
// 1 and 100 bytes fit inside a descriptor (up to inline_threshold(), 108 bytes on most devices);
// the others travel in segment buffers (4096 bytes each by default, the largest RC message).
constexpr std::uint32_t kSizes[] = {1, 100, 109, 1000, 4096};

std::byte pattern(std::uint32_t round, std::uint32_t i) {
  return static_cast<std::byte>(round * 31 + i * 7 + 1);
}

// Sends a `len`-byte message on `ch`, written in place by `compose(span)`.
template <class Compose>
void send_message(Endpoint& ep, ChannelId ch, std::uint32_t len, Compose compose,
                  const example::Deadline& deadline) {
  if (len <= ep.inline_threshold()) {
    // Small: the bytes travel inside the send descriptor itself; no buffer is involved.
    std::byte small[Descriptor::kInlineBytes];
    compose(std::span<std::byte>(small, len));
    check(ep.send_inline(ch, std::span<const std::byte>(small, len)), "send_inline");
    return;
  }
  // Otherwise take a spare buffer of the segment and compose the message right there: the NIC
  // sends from it directly, no copy. None spare means all are in flight: poll() reaps send
  // completions, which make their buffers spare again.
  BufferId b = kNoBuffer;
  while (ep.acquire_buffer(b) == Status::kNoResource) {
    deadline.check("a spare buffer");
    check(ep.poll() >= 0, "poll: device error");
  }
  compose(ep.buffer(b).first(len));
  // Push the descriptor onto the send queue. From here until the send completes, b belongs to the
  // endpoint; the next poll() or wait() posts it to the NIC.
  check(ep.send(ch, b, len), "send");
}

// Waits for the next arrival on `ch`: a descriptor popped from the receive queue.
Descriptor next_arrival(Endpoint& ep, ChannelId ch, const example::Deadline& deadline,
                        const std::string& what) {
  Descriptor d;
  example::await(ep, deadline, what, [&] { return ep.receive(d) == Status::kOk; });
  check(d.channel == ch, what + " arrived on another channel");  // its tag
  return d;
}

// Where an arrival's bytes are: inside its descriptor, or in the segment buffer the NIC filled.
std::span<const std::byte> payload(Endpoint& ep, const Descriptor& d) {
  if (d.is_inline()) return d.inline_payload();
  return ep.buffer(d.buffer).first(d.length);
}

void check_bytes(std::span<const std::byte> got, std::uint32_t round, const std::string& what) {
  const std::uint32_t want = kSizes[round % std::size(kSizes)];
  check(got.size() == want,
        what + ": " + std::to_string(got.size()) + " bytes, not " + std::to_string(want));
  for (std::uint32_t i = 0; i < want; ++i)
    if (got[i] != pattern(round, i))
      example::fail(what + ": byte " + std::to_string(i) + " differs");
}

// Hands an arrival's buffer back to the free queue, where the endpoint reposts it as a receive.
// Until then it is the application's; an inline arrival holds no buffer.
void done_with(Endpoint& ep, const Descriptor& d) {
  if (!d.is_inline()) check(ep.release(d.buffer), "release");
}

void server(Endpoint& ep, ChannelId ch) {
  const example::Deadline deadline;
  for (std::uint32_t r = 0; r < kRounds; ++r) {
    const std::string what = "message " + std::to_string(r);
    const Descriptor d = next_arrival(ep, ch, deadline, what);
    const std::span<const std::byte> in = payload(ep, d);
    check_bytes(in, r, "server: " + what);
    send_message(
        ep, ch, d.length,
        [&](std::span<std::byte> out) { std::copy(in.begin(), in.end(), out.begin()); }, deadline);
    done_with(ep, d);  // the echo was copied out of it
  }
  check(ep.flush() >= 0, "flush");  // post the last echo now: nothing polls this endpoint after us
}

void client(Endpoint& ep, ChannelId ch) {
  const example::Deadline deadline;
  for (std::uint32_t r = 0; r < kRounds; ++r) {
    const std::string what = "echo " + std::to_string(r);
    send_message(
        ep, ch, kSizes[r % std::size(kSizes)],
        [&](std::span<std::byte> out) {
          for (std::uint32_t i = 0; i < out.size(); ++i) out[i] = pattern(r, i);
        },
        deadline);
    const Descriptor d = next_arrival(ep, ch, deadline, what);  // its wait() posts our send first
    check_bytes(payload(ep, d), r, "client: " + what);
    done_with(ep, d);
  }
}

std::string run() {
  Endpoint server_ep(example::endpoint_config(Transport::kRc)),
      client_ep(example::endpoint_config(Transport::kRc));

  // Open the channel. Each side offers its half — one line of text naming its queue pair, GID and
  // so on — sends it to the peer out of band, and completes the channel with the peer's half. On
  // two machines the lines would cross a TCP socket (unet::verbs::OobSocket, as
  // ulp/examples/unet_cat.cc does), or rdma_cm would do the whole exchange (listen_cm/accept_cm on
  // one side, connect_cm on the other). Here both halves are in this process, so we swap them.
  const ChannelOffer so = server_ep.offer_channel(), co = client_ep.offer_channel();
  const ChannelId sch = server_ep.accept_offer(so, co.local),
                  cch = client_ep.accept_offer(co, so.local);

  example::run_both([&] { server(server_ep, sch); }, [&] { client(client_ep, cch); });

  const EndpointStats& s = client_ep.stats();
  check(s.received == kRounds && s.send_errors == 0,
        "client counters: " + std::to_string(s.received) + " received, " +
            std::to_string(s.send_errors) + " send errors");
  return std::to_string(kRounds) + " round trips, every byte checked both ways (" +
         std::to_string(s.inline_received) + " of " + std::to_string(s.received) +
         " echoes came inside their descriptor)";
}

}  // namespace

int main() { return example::run_example("endpoint_pingpong", run); }
