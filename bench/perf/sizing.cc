#include "sizing.h"

#include <algorithm>
#include <cstddef>

namespace unet::perf {

core::EndpointConfig endpoint_config(const PerfConfig& c, std::uint32_t size) {
  core::EndpointConfig e;
  e.device = c.device;
  e.port = c.ib_port;
  e.gid_index = c.gid_index;
  e.transport = c.transport;
  e.mode = c.mode;
  // -I is perftest's largest IBV_SEND_INLINE size: messages up to it ride inside the descriptor
  // (at most 44 bytes) or are posted inline from their segment buffer.
  if (c.inline_size) {
    e.inline_threshold = *c.inline_size;
    e.inline_post_limit = *c.inline_size;
  }
  e.send_queue_depth = 128;
  e.recv_queue_depth = 256;
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

CreditPlan credit_plan(std::uint32_t free_queue_depth) noexcept {
  CreditPlan p;
  p.window = std::max<std::uint64_t>(free_queue_depth / 2, 1);
  p.credit_every = std::max<std::uint64_t>(p.window / 2, 1);
  return p;
}

}  // namespace unet::perf
