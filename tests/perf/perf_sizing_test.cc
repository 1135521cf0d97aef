// Unit: the endpoint each size runs on, and ep_bw's credit arithmetic.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <variant>

#include "sizing.h"

namespace unet::perf {
namespace {

PerfConfig config(const std::string& test, const std::string& transport = "RC") {
  RawFlags f;
  f.test = test;
  f.connection = transport;
  f.all_sizes = true;
  return std::get<PerfConfig>(make_config(f));
}

// The core's rule (endpoint.cc): released buffers are reposted once an eighth of the free queue
// (at least 1, at most 32) has gathered.
std::uint64_t repost_batch(std::uint32_t free_queue_depth) {
  return std::clamp<std::uint32_t>(free_queue_depth / 8, 1, 32);
}

TEST(PerfSizing, BaseLevelEndpointsCarryEveryRcSizeWithinTheBudget) {
  for (const char* test : {"ep_lat", "ep_bw"}) {
    const PerfConfig c = config(test);
    const std::size_t budget = std::size_t{c.is_latency() ? 16u : 32u} << 20;
    for (std::uint32_t size : c.sizes) {
      const core::EndpointConfig e = endpoint_config(c, size);
      SCOPED_TRACE(std::string(test) + " " + std::to_string(size));
      EXPECT_GE(e.buffer_bytes, size);
      EXPECT_EQ(e.buffer_bytes % 4096, 0u);
      EXPECT_GE(e.buffers, 4u);
      EXPECT_LE(std::size_t{e.buffers} * e.buffer_bytes,
                std::max<std::size_t>(budget, 4 * std::size_t{e.buffer_bytes}));
      EXPECT_GE(e.free_queue_depth, 1u);  // the endpoint's own rules
      EXPECT_LT(e.free_queue_depth, e.buffers);
      EXPECT_GE(e.recv_queue_depth, credit_plan(e.free_queue_depth).window);
      EXPECT_EQ(e.mode, core::Mode::kBaseLevel);
    }
  }
}

TEST(PerfSizing, UdBuffersArePagesTheMtuDecides) {
  const PerfConfig c = config("ep_lat", "UD");
  const core::EndpointConfig e = endpoint_config(c, 1u << 20);
  EXPECT_EQ(e.transport, core::Transport::kUd);
  EXPECT_EQ(e.buffer_bytes, 4096u);  // the run skips sizes above the path MTU
}

TEST(PerfSizing, DirectAccessCachesTheLocalMemory) {
  const PerfConfig c = config("da_write_bw");
  for (std::uint32_t size : c.sizes) {
    const core::EndpointConfig e = endpoint_config(c, size);
    EXPECT_EQ(e.mode, core::Mode::kDirectAccess);
    EXPECT_GE(e.max_pinned_bytes, 3 * std::size_t{size}) << size;
    EXPECT_LT(e.free_queue_depth, e.buffers);
  }
}

TEST(PerfSizing, CreditWindowNeverOverrunsTheFreeQueue) {
  for (std::uint32_t fqd = 1; fqd <= 1024; ++fqd) {
    const CreditPlan p = credit_plan(fqd);
    SCOPED_TRACE(fqd);
    EXPECT_GE(p.window, 1u);
    EXPECT_GE(p.credit_every, 1u);
    EXPECT_LE(p.credit_every, p.window);
    if (fqd >= 2) {  // every endpoint here has >= 2 (next test)
      EXPECT_LE(p.window + repost_batch(fqd), fqd);
    }
  }
  EXPECT_EQ(credit_plan(128).window, 64u);
  EXPECT_EQ(credit_plan(128).credit_every, 32u);
  EXPECT_EQ(credit_plan(2).window, 1u);
}

TEST(PerfSizing, EveryBwEndpointHasAtLeastTwoFreeBuffers) {
  for (const char* t : {"RC", "UD"}) {
    const PerfConfig c = config("ep_bw", t);
    for (std::uint32_t size : c.sizes)
      EXPECT_GE(endpoint_config(c, size).free_queue_depth, 2u) << size;
  }
}

}  // namespace
}  // namespace unet::perf
