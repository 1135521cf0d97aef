// How big things are for one message size: the endpoint each size runs on, and ep_bw's credit
// window. Pure arithmetic, unit-tested (tests/perf/perf_sizing_test.cc).
#pragma once

#include <cstdint>

#include "options.h"
#include "unet/core/endpoint.h"

namespace unet::perf {

// The endpoint for one message size: base-level tests get buffers large enough for the message
// (fewer of them as they grow, so that a segment stays within 16 MiB for latency and 32 MiB for
// bandwidth, and at least 4 buffers), half of them on the free queue; direct-access tests a small
// segment and a registration cache large enough for the test's local memory (3 * size).
core::EndpointConfig endpoint_config(const PerfConfig& c, std::uint32_t size);

// ep_bw's flow control (ep_tests.cc). The client keeps at most `window` messages the server has
// not credited; the server credits every `credit_every` arrivals, after reposting what it
// released. The endpoint leaves fewer than one repost batch (free_queue_depth / 8, at least 1) of
// released buffers unposted, so `window + repost batch <= free_queue_depth` guarantees a posted
// receive for every message in flight.
struct CreditPlan {
  std::uint64_t window = 1;
  std::uint64_t credit_every = 1;
};
CreditPlan credit_plan(std::uint32_t free_queue_depth) noexcept;

}  // namespace unet::perf
