#include "sizing.h"

#include <algorithm>
#include <bit>
#include <cstddef>

namespace unet::perf {
namespace {

// --ring_slots / --ring_slot_bytes, when given: our ring's geometry.
void ring_geometry(const PerfConfig& c, core::EndpointConfig& e) {
  if (c.ring_slots == 0) return;
  e.ring_slots = c.ring_slots;
  e.ring_slot_bytes = c.ring_slot_bytes;
}

}  // namespace

void place(const PerfConfig& c, core::EndpointConfig& e) {
  e.device = c.device;
  e.port = c.ib_port;
  e.gid_index = c.gid_index;
  e.service_level = c.sl;
  e.traffic_class = c.traffic_class;
}

core::EndpointConfig endpoint_config(const PerfConfig& c, std::uint32_t size) {
  core::EndpointConfig e;
  place(c, e);
  e.transport = c.transport;
  e.mode = c.mode;
  // -I is perftest's largest IBV_SEND_INLINE size: messages up to it ride inside the descriptor
  // (at most 108 bytes) or are posted inline from their segment buffer.
  if (c.inline_size) {
    e.inline_threshold = *c.inline_size;
    e.inline_post_limit = *c.inline_size;
  }
  e.send_queue_depth = 128;
  e.recv_queue_depth = 256;
  ring_geometry(c, e);
  if (c.mode == core::Mode::kDirectAccess) {
    // The segment carries only what the tests send besides one-sided operations (nothing).
    e.buffer_bytes = 4096;
    e.buffers = 16;
    e.free_queue_depth = 8;
    // The local memory of every direct-access test is 3 * size, registered once through the cache.
    e.max_pinned_bytes =
        std::max<std::size_t>(e.max_pinned_bytes, 3 * std::size_t{size} + (1u << 20));
    return e;
  }
  // Base-level: one message per buffer. UD cannot carry more than the path MTU anyway.
  const std::uint32_t bytes = c.transport == core::Transport::kUd
                                  ? 4096
                                  : std::max<std::uint32_t>(4096, (size + 4095) / 4096 * 4096);
  const std::size_t budget = std::size_t{c.is_latency() ? 16u : 32u} << 20;
  const std::uint32_t most = c.is_latency() ? 64 : 256;
  e.buffer_bytes = bytes;
  e.buffers = static_cast<std::uint32_t>(std::clamp<std::size_t>(budget / bytes, 4, most));
  e.free_queue_depth = e.buffers / 2;
  return e;
}

std::uint32_t am_receive_budget(std::uint32_t window) noexcept {
  return 2 * window + (window + 1) / 2 + 2;
}

core::EndpointConfig am_endpoint_config(const PerfConfig& c, std::uint32_t size) {
  core::EndpointConfig e;
  place(c, e);
  e.transport = c.transport;
  e.mode = core::Mode::kBaseLevel;
  ring_geometry(c, e);
  if (c.inline_size) {
    e.inline_threshold = *c.inline_size;
    e.inline_post_limit = *c.inline_size;
  }
  const std::uint32_t message = size + static_cast<std::uint32_t>(uam::header_bytes(uam::kMaxArgs));
  e.buffer_bytes = c.transport == core::Transport::kUd
                       ? 4096
                       : std::max<std::uint32_t>(4096, (message + 4095) / 4096 * 4096);
  // The free queue: the budget, plus what core may leave unposted (its repost batch, an eighth
  // of the free queue, 1 .. 32, less one); the smallest depth that holds both.
  const std::uint32_t budget = am_receive_budget(c.window);
  std::uint32_t depth = budget;
  while (budget + std::clamp<std::uint32_t>(depth / 8, 1, 32) - 1 > depth) ++depth;
  e.free_queue_depth = depth;
  // Sends: W requests (am_bw) or replies (am_lat's server) in flight, uam's 4 reply buffers, and
  // up to a signal interval of sends whose buffers return only with a signalled completion.
  e.buffers = depth + c.window + 4 + 2 * e.signal_interval;
  e.send_queue_depth = std::bit_ceil(std::max<std::uint32_t>(128, kAmMinSendQueue + 2 * c.window));
  e.recv_queue_depth = 256;  // unused: uam takes arrivals through the upcall
  return e;
}

std::uint32_t am_payload_limit(core::Transport transport, std::uint32_t max_message) noexcept {
  if (transport == core::Transport::kRc) return kMaxAmPayload;
  const std::uint32_t mtu = std::min<std::uint32_t>(max_message, 4096);
  const auto header = static_cast<std::uint32_t>(uam::header_bytes(kAmArgs));
  return std::min(mtu > header ? mtu - header : 0, kMaxAmPayload);
}

std::string fit_am_sizes(PerfConfig& c, std::uint32_t limit) {
  if (c.all_sizes) {
    c.sizes = am_sweep(limit);
    return "";
  }
  if (c.sizes.front() <= limit) return "";
  if (c.default_size) {
    c.sizes = {limit};
    return "";
  }
  const std::string why = c.transport == core::Transport::kUd
                              ? "the path MTU less the " +
                                    std::to_string(uam::header_bytes(kAmArgs)) +
                                    "-byte header with its argument word"
                              : "uam's 16-bit payload length";
  return "-s " + std::to_string(c.sizes.front()) +
         " exceeds the largest active-message payload on " +
         std::string(transport_name(c.transport)) + " (" + std::to_string(limit) +
         " bytes: " + why + ")";
}

core::EndpointConfig ulp_endpoint_config(const PerfConfig& c) {
  core::EndpointConfig e;
  place(c, e);
  e.transport = c.transport;
  e.mode = c.mode;  // direct: stream_bw's zero-copy sends
  ring_geometry(c, e);
  if (c.inline_size) {
    e.inline_threshold = *c.inline_size;
    e.inline_post_limit = *c.inline_size;
  }
  e.send_queue_depth = 128;
  if (c.transport == core::Transport::kRc) {  // the stream over RC: a segment per buffer
    e.buffer_bytes = kUlpRcBuffer;
    e.buffers = 2 * kUlpRcFreeQueue;
    e.free_queue_depth = kUlpRcFreeQueue;
    e.recv_queue_depth = kUlpRcFreeQueue;
    return e;
  }
  e.buffer_bytes = 4096;
  e.buffers = 1024;
  e.free_queue_depth = kUlpFreeQueue;
  e.recv_queue_depth = kUlpFreeQueue;
  return e;
}

CreditPlan credit_plan(std::uint32_t free_queue_depth) noexcept {
  CreditPlan p;
  p.window = std::max<std::uint64_t>(free_queue_depth / 2, 1);
  p.credit_every = std::max<std::uint64_t>(p.window / 2, 1);
  return p;
}

}  // namespace unet::perf
