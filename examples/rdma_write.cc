// rdma_write: U-Net's direct-access mode — one side grants a window of its own memory, the other
// writes into it, and reads it back, straight from ordinary memory: no copy through the segment,
// and no work by the window's owner.
//
//   build/examples/unet_example_rdma_write      (needs an RDMA device; SoftRoCE will do)
//
// Direct access (EndpointConfig::mode = Mode::kDirectAccess, over RC channels):
//   grant()       the target registers exactly [addr, addr+len) of its memory and gets a
//                 RemoteToken (address, length, key): the one capability a peer needs, and
//                 all it gets. revoke() takes it back.
//   write()       the initiator copies any memory of its own — a plain std::vector here, never
//                 registered by hand — into the peer's window: the endpoint's registration cache
//                 registers (pins) those pages on first use and reuses the registration after.
//   read()        the same, the other way.
//   completion()  each write and read ends with one OpCompletion (its tag and status).
// The target's CPU takes no part in a write. It learns the data is in place from an ordinary
// message that the initiator sends after the write on the same channel: RC delivers that message
// only after the data written before it.
//
// Both sides run in this process, each on its own thread with its own endpoint, as on two
// machines. Exit 0 when every byte was checked, 1 on failure, 77 without an RDMA device.
#include <unet/core/endpoint.h>
#include <unet/core/remote_token.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "example_support.h"

namespace {

using namespace unet::core;
using example::check;
using unet::Status;

constexpr std::size_t kWindow = 2u << 20;         // what the target grants
constexpr std::uint64_t kOffset = 4000;           // where in the window the initiator writes...
constexpr std::size_t kBytes = (1u << 20) + 123;  // ...and how much
constexpr std::uint64_t kWriteTag = 1, kReadTag = 2;

std::byte pattern(std::size_t i) { return static_cast<std::byte>(i * 13 + (i >> 10) + 5); }

// The two sides also talk with ordinary messages: the token, and notes. A short text goes inside
// its descriptor when it fits, or from a segment buffer (endpoint_pingpong.cc shows both). Three
// sends in all: a buffer is always spare.
void send_text(Endpoint& ep, ChannelId ch, std::string_view text) {
  const std::span<const std::byte> bytes = std::as_bytes(std::span(text));
  if (bytes.size() <= ep.inline_threshold()) return check(ep.send_inline(ch, bytes), "send_inline");
  BufferId b = kNoBuffer;
  check(ep.acquire_buffer(b), "acquire_buffer");
  std::copy(bytes.begin(), bytes.end(), ep.buffer(b).begin());
  check(ep.send(ch, b, static_cast<std::uint32_t>(bytes.size())), "send");
}

// Waits for the next message and returns its text; its buffer, if any, goes back to the free queue.
std::string next_text(Endpoint& ep, const example::Deadline& deadline, const std::string& what) {
  Descriptor d;
  example::await(ep, deadline, what, [&] { return ep.receive(d) == Status::kOk; });
  const std::span<const std::byte> bytes =
      d.is_inline() ? d.inline_payload() : ep.buffer(d.buffer).first(d.length);
  std::string text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (!d.is_inline()) check(ep.release(d.buffer), "release");
  return text;
}

// Waits for the completion of the write or read tagged `tag`, and checks it succeeded.
void await_completion(Endpoint& ep, std::uint64_t tag, const example::Deadline& deadline,
                      const std::string& what) {
  OpCompletion c;
  example::await(ep, deadline, what, [&] { return ep.completion(c) == Status::kOk; });
  check(c.status, what);
  check(c.tag == tag, what + ": the completion is of tag " + std::to_string(c.tag));
}

// The side that owns the memory.
void target(Endpoint& ep, ChannelId ch) {
  const example::Deadline deadline;
  std::vector<std::byte> window(kWindow, std::byte{0});  // ordinary application memory
  RemoteToken token;
  check(ep.grant(window.data(), window.size(), kRemoteWrite | kRemoteRead, token), "grant");

  // Give the initiator the token — one line of text — as a message on the channel.
  send_text(ep, ch, token.encode());

  // The note says the write is done; by RC's ordering the bytes are in the window already.
  check(next_text(ep, deadline, "the initiator's note") == "written",
        "the note is not \"written\"");
  for (std::size_t i = 0; i < kWindow; ++i) {
    const bool inside = i >= kOffset && i < kOffset + kBytes;
    if (window[i] != (inside ? pattern(i - kOffset) : std::byte{0}))
      example::fail("window byte " + std::to_string(i) +
                    (inside ? " was not written right" : " was touched"));
  }

  // Keep the window until the initiator has read it back, then revoke the token: from now on an
  // access with it fails at the initiator with a remote access error.
  check(next_text(ep, deadline, "the initiator's note") == "done", "the note is not \"done\"");
  check(ep.revoke(token), "revoke");
}

// The side that moves the data.
void initiator(Endpoint& ep, ChannelId ch) {
  const example::Deadline deadline;
  RemoteToken window;
  check(RemoteToken::decode(next_text(ep, deadline, "the target's token"), window),
        "decode the token");

  // Write from unregistered memory into the window, then tell the target right away (no need
  // to wait for the write's completion first: the note travels behind the data).
  std::vector<std::byte> src(kBytes);
  for (std::size_t i = 0; i < kBytes; ++i) src[i] = pattern(i);
  check(ep.write(ch, src.data(), src.size(), window, kOffset, kWriteTag), "write");
  send_text(ep, ch, "written");
  await_completion(ep, kWriteTag, deadline, "the write");  // src must stay untouched until here

  // Read the window back into more ordinary memory.
  std::vector<std::byte> back(kBytes);
  check(ep.read(ch, back.data(), back.size(), window, kOffset, kReadTag), "read");
  await_completion(ep, kReadTag, deadline, "the read");
  check(back == src, "the bytes read back differ from those written");

  // Memory that write/read used is about to be freed: the cache must forget its registrations, or
  // new memory at the same address would be sent with the old pages' keys.
  ep.forget(src.data(), src.size());
  ep.forget(back.data(), back.size());
  send_text(ep, ch, "done");
  check(ep.flush() >= 0, "flush");  // post it now: nothing polls this endpoint after us
}

std::string run() {
  EndpointConfig config = example::endpoint_config(Transport::kRc);
  config.mode = Mode::kDirectAccess;
  Endpoint target_ep(config), initiator_ep(config);

  // The channel, from swapped out-of-band halves (how that goes between machines: see
  // endpoint_pingpong.cc).
  const ChannelOffer to = target_ep.offer_channel(), io = initiator_ep.offer_channel();
  const ChannelId tch = target_ep.accept_offer(to, io.local),
                  ich = initiator_ep.accept_offer(io, to.local);

  example::run_both([&] { target(target_ep, tch); }, [&] { initiator(initiator_ep, ich); });

  const RegistrationCacheStats cache = initiator_ep.registration_stats();
  return std::to_string(kBytes) + " bytes written into a " + std::to_string(kWindow >> 20) +
         " MiB window and read back, every byte checked (registration cache: " +
         std::to_string(cache.misses) + " registrations made)";
}

}  // namespace

int main() { return example::run_example("rdma_write", run); }
