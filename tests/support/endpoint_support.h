// Helpers for core/ device tests: an endpoint configuration on the test device, a channel between
// two endpoints of one process, a bounded wait for an arrival, and messages with known bytes.
#pragma once

#include <chrono>
#include <cstring>
#include <utility>
#include <vector>

#include "device_env.h"
#include "unet/core/endpoint.h"

namespace unet::test {

// An endpoint on the test device (UNET_DEVICE, UNET_GID_INDEX) with `buffers` 4 KiB buffers, half
// of them on the free queue, a send queue of 64 and a receive queue of `buffers` descriptors.
inline core::EndpointConfig endpoint_config(core::Transport t = core::Transport::kRc,
                                            std::uint32_t buffers = 128) {
  core::EndpointConfig c;
  c.device = device_name();
  c.gid_index = gid_index();
  c.transport = t;
  c.buffer_bytes = 4096;
  c.buffers = buffers;
  c.free_queue_depth = buffers / 2;
  c.send_queue_depth = 64;
  c.recv_queue_depth = buffers;
  return c;
}

// A UD endpoint for the protocols built on one (ulp/): 512 buffers, 256 of them on the free
// queue, a send queue of 128.
inline core::EndpointConfig ud_config() {
  core::EndpointConfig c = endpoint_config(core::Transport::kUd, 512);
  c.free_queue_depth = 256;
  c.send_queue_depth = 128;
  return c;
}

// An endpoint for a uam::Endpoint: 256 buffers, 64 on the free queue (the credit budget of a few
// channels), a send queue of 128 (above uam's reply reserve).
inline core::EndpointConfig uam_config(core::Transport t) {
  core::EndpointConfig c = endpoint_config(t, 256);
  c.free_queue_depth = 64;
  c.send_queue_depth = 128;
  return c;
}

// Opens a channel between two endpoints of this process (the out-of-band halves swapped directly).
inline std::pair<core::ChannelId, core::ChannelId> connect_endpoints(
    core::Endpoint& a, core::Endpoint& b, const core::ChannelOptions& options = {}) {
  core::ChannelOffer oa = a.offer_channel(options), ob = b.offer_channel(options);
  return {a.accept_offer(oa, ob.local), b.accept_offer(ob, oa.local)};
}

// Polls both endpoints until `dst` has an arrival to receive, for at most `timeout`.
inline bool wait_receive(core::Endpoint& src, core::Endpoint& dst, core::Descriptor& out,
                         std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (src.poll() < 0 || dst.poll() < 0) return false;
    if (dst.receive(out) == Status::kOk) return true;
  }
  return false;
}

// `n` bytes that differ with `seed` and along the message.
inline std::vector<std::byte> pattern(std::size_t n, std::uint64_t seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((seed * 131 + i * 7) & 0xFF);
  return v;
}

// Sends `bytes` on `ch` from a segment buffer (any size up to max_message(ch)); the buffer goes
// back when the send is refused.
inline Status send_bytes(core::Endpoint& ep, core::ChannelId ch,
                         const std::vector<std::byte>& bytes) {
  core::BufferId b = core::kNoBuffer;
  if (Status s = ep.acquire_buffer(b); s != Status::kOk) return s;
  std::memcpy(ep.buffer(b).data(), bytes.data(), bytes.size());
  const Status s = ep.send(ch, b, static_cast<std::uint32_t>(bytes.size()));
  if (s != Status::kOk) (void)ep.release(b);
  return s;
}

// The bytes of an arrival (inline or in its buffer, which goes back).
inline std::vector<std::byte> take(core::Endpoint& ep, const core::Descriptor& d) {
  const std::byte* p = d.is_inline() ? d.data : ep.buffer(d.buffer).data();
  std::vector<std::byte> v(p, p + d.length);
  if (!d.is_inline()) {
    EXPECT_EQ(ep.release(d.buffer), Status::kOk);
  }
  return v;
}

}  // namespace unet::test
