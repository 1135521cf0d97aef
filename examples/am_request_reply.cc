// am_request_reply: U-Net Active Messages (unet::uam) — every message names a handler, which runs
// when the message arrives, with up to four 64-bit argument words and a payload. A request's
// handler may answer it with a reply, which runs a reply handler back at the requester.
//
//   build/examples/unet_example_am_request_reply      (needs an RDMA device; SoftRoCE will do)
//
// What it shows:
//   on_request / on_reply  register handlers under small ids (0..255, one id space); both sides
//                          agree on the ids, which are the protocol;
//   request()              queues a request to a channel. kNoResource means the channel's credits
//                          are spent: the flow-control window (8 requests) is full until replies,
//                          which carry the credits home, come back — so poll and retry;
//   reply()                answers a request from inside its handler, through its Token;
//   on_completion          each request completes exactly once: kOk after its reply ran here;
//   poll() / wait()        the progress calls; handlers run inside them, on the endpoint's thread.
// A handler runs inside poll(), which never throws: it records a failure instead of throwing.
//
// The client sends kRequests requests to handler kChecksum: args {index, length}, a payload of
// `length` bytes. The server checks every byte and replies to kChecksummed with args {index, sum}
// and the payload sent back; the client checks the words and every byte. Both sides run in this
// process, each on its own thread with its own endpoint, as on two machines.
// Exit 0 when every byte was checked, 1 on failure, 77 without an RDMA device.
#include <unet/uam/endpoint.h>

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "example_support.h"

namespace {

using namespace unet;
using example::check;

constexpr uam::HandlerId kChecksum = 1, kChecksummed = 2;
constexpr std::uint64_t kRequests = 400;

std::byte pattern(std::uint64_t index, std::size_t i) {
  return static_cast<std::byte>(index * 17 + i * 3 + 11);
}

// Request `index`'s payload length: none, short ones that travel inside a descriptor, and medium
// ones up to max_payload(), the most a request with two words can carry (one segment buffer).
std::uint64_t length_of(const uam::Endpoint& ep, std::uint64_t index) {
  const std::uint64_t lengths[] = {0, 1, 20, 100, 1000, ep.max_payload(2)};
  return lengths[index % std::size(lengths)];
}

// The first difference between `payload` and request `index`'s pattern of `length` bytes, or "".
std::string compare(std::span<const std::byte> payload, std::uint64_t index, std::uint64_t length) {
  if (payload.size() != length)
    return "request " + std::to_string(index) + ": " + std::to_string(payload.size()) +
           " bytes, not " + std::to_string(length);
  for (std::size_t i = 0; i < length; ++i)
    if (payload[i] != pattern(index, i))
      return "request " + std::to_string(index) + ": byte " + std::to_string(i);
  return {};
}

std::uint64_t sum(std::span<const std::byte> bytes) {
  return std::accumulate(
      bytes.begin(), bytes.end(), std::uint64_t{0},
      [](std::uint64_t s, std::byte b) { return s + std::to_integer<std::uint64_t>(b); });
}

void server(uam::Endpoint& ep) {
  std::uint64_t handled = 0;
  std::string error;  // a failure a handler saw (handlers run inside poll(), which cannot throw)
  // The request handler: runs here, inside poll() or wait(), once per request, in order.
  auto checksum = [&](uam::Token& token, const uam::Message& m) {
    ++handled;
    if (m.args.size() != 2) {
      error = "a request with " + std::to_string(m.args.size()) + " words";
    } else if (std::string bad = compare(m.payload, m.args[0], m.args[1]); !bad.empty()) {
      error = "server: " + bad;
    } else {
      const std::uint64_t answer[] = {m.args[0], sum(m.payload)};
      if (Status s = ep.reply(token, kChecksummed, answer, m.payload); s != Status::kOk)
        error = "reply: " + std::string(to_string(s));
    }
    // kDone: the payload's buffer goes back to the free queue as we return (kKept would keep it
    // until ep.release(), and with it the client's credit).
    return uam::Disposition::kDone;
  };
  check(ep.on_request(kChecksum, checksum), "on_request");

  const example::Deadline deadline;
  example::await(ep, deadline, "requests", [&] { return handled == kRequests || !error.empty(); });
  check(error.empty(), error);
  // Post the last replies now: nothing polls this endpoint after we return.
  check(ep.flush() >= 0, "flush");
}

void client(uam::Endpoint& ep, uam::ChannelId ch) {
  std::uint64_t replies = 0, completed = 0;
  std::string error;
  // The reply handler: runs here when a reply arrives. The request's cookie comes back with it.
  auto checksummed = [&](const uam::Message& m) {
    ++replies;
    const std::uint64_t index = m.cookie;
    if (m.args.size() != 2 || m.args[0] != index)
      error = "reply " + std::to_string(index) + ": wrong words";
    else if (std::string bad = compare(m.payload, index, length_of(ep, index)); !bad.empty())
      error = "client: reply to " + bad;
    else if (m.args[1] != sum(m.payload))
      error = "reply " + std::to_string(index) + ": wrong sum";
    return uam::Disposition::kDone;
  };
  check(ep.on_reply(kChecksummed, checksummed), "on_reply");
  // Once per request, after its reply handler ran (or with the error that ended it).
  ep.on_completion([&](uam::ChannelId, std::uint64_t cookie, Status s) {
    if (s != Status::kOk)
      error = "request " + std::to_string(cookie) + ": " + std::string(to_string(s));
    ++completed;
  });

  const example::Deadline deadline;
  std::vector<std::byte> payload;
  for (std::uint64_t i = 0; i < kRequests && error.empty(); ++i) {
    const std::uint64_t length = length_of(ep, i);
    payload.resize(length);
    for (std::size_t j = 0; j < length; ++j) payload[j] = pattern(i, j);
    const std::uint64_t args[] = {i, length};
    // request() copies the words and the payload; it goes out at the next poll(). kNoResource:
    // no credit left, so poll until replies bring credits back, then retry.
    Status s;
    while ((s = ep.request(ch, kChecksum, args, payload, /*cookie=*/i)) == Status::kNoResource) {
      deadline.check("a credit");
      check(ep.poll() >= 0, "poll: device error");
    }
    check(s, "request " + std::to_string(i));
  }
  example::await(ep, deadline, "all completions",
                 [&] { return completed == kRequests || !error.empty(); });
  check(error.empty(), error);
  check(replies == kRequests,
        std::to_string(replies) + " replies for " + std::to_string(kRequests) + " requests");
}

std::string run() {
  const core::EndpointConfig net = example::endpoint_config(core::Transport::kRc);
  uam::Endpoint server_ep(net), client_ep(net);

  // The channel, from swapped out-of-band halves (how that goes between machines: see
  // endpoint_pingpong.cc). uam::Endpoint wraps a core::Endpoint (net()) and adds the credits.
  const core::ChannelOffer so = server_ep.offer_channel(), co = client_ep.offer_channel();
  server_ep.accept_offer(so,
                         co.local);  // the server needs no channel id: a reply follows its request
  const uam::ChannelId cch = client_ep.accept_offer(co, so.local);

  example::run_both([&] { server(server_ep); }, [&] { client(client_ep, cch); });

  const uam::Stats& s = client_ep.stats();
  check(s.completed_ok == kRequests && s.completed_error == 0 && s.protocol_errors() == 0,
        "client counters");
  return std::to_string(kRequests) + " requests of 0.." + std::to_string(client_ep.max_payload(2)) +
         " bytes answered, every word and byte checked both ways";
}

}  // namespace

int main() { return example::run_example("am_request_reply", run); }
