// How big things are for one message size: the endpoint each size runs on, and ep_bw's credit
// window. Pure arithmetic, unit-tested (tests/perf/perf_sizing_test.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "options.h"
#include "unet/core/endpoint.h"

namespace unet::perf {

// Where every endpoint of the run is: device, port, GID index, service level, traffic class.
void place(const PerfConfig& c, core::EndpointConfig& e);

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

// --- am_* (uam::Endpoint over a base-level core endpoint) ---

// uam's receive-buffer budget for one channel with credit window `window` (uam/endpoint.h): W
// requests, the replies to our W requests, and the explicit credit/ack messages they provoke.
std::uint32_t am_receive_budget(std::uint32_t window) noexcept;
// uam::Endpoint refuses a send queue below this (it keeps 40 slots for replies and credits).
inline constexpr std::uint32_t kAmMinSendQueue = 80;

// The endpoint for one am size: buffers that hold the payload with the largest header (RC) or a
// page (UD: the path MTU is the limit); a free queue that carries uam's budget for one channel
// plus core's repost batch (open channels * budget + repost batch - 1 <= free_queue_depth, the
// rule uam::Endpoint checks when a channel opens); spare buffers for W requests in flight, the
// reply reserve and sends awaiting their signalled completion; a send queue of at least 80.
core::EndpointConfig am_endpoint_config(const PerfConfig& c, std::uint32_t size);

// The largest am payload (-s) on `transport` for an endpoint whose messages may be `max_message`
// bytes (UD: the path MTU; what a probe endpoint with 4096-byte buffers reports).
std::uint32_t am_payload_limit(core::Transport transport, std::uint32_t max_message) noexcept;

// The am sizes to run once the payload limit is known: -a sweeps up to it (am_sweep), a default
// am_bw size becomes the limit when larger, and an explicit -s above it is an error (the message).
std::string fit_am_sizes(PerfConfig& c, std::uint32_t limit);

// --- dgram_lat, stream_* (ulp endpoints over UD; the stream also over RC) ---

// The UD endpoint under a ulp endpoint: page-sized buffers (a fragment or segment is at most the
// path MTU), kUlpFreeQueue of them posted so that all fragments of a 64 KiB datagram find posted
// receives even at the smallest path MTU (256 bytes: 278 fragments of 236), 1024 in all (sends
// and datagrams waiting in a port's queue hold the rest). The stream bounds what it lets in flight
// by what the free queue absorbs.
inline constexpr std::uint32_t kUlpFreeQueue = 512;
// stream_* over RC (-c RC): a segment is not bound by the path MTU (the device splits a message
// into packets), so a buffer holds a whole 64 KiB stream message and its header; RC loses
// nothing for want of a posted receive (the sender waits, RNR), so fewer are posted.
inline constexpr std::uint32_t kUlpRcBuffer = 64 * 1024 + 64;
inline constexpr std::uint32_t kUlpRcFreeQueue = 128;
core::EndpointConfig ulp_endpoint_config(const PerfConfig& c);

}  // namespace unet::perf
