// Unit: the endpoint each size runs on, and ep_bw's credit arithmetic.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
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

// uam::Endpoint's own rules (uam/endpoint.h, endpoint.cc), restated: a send queue of at least 80
// and, for the one channel, budget + repost batch - 1 <= free_queue_depth.
TEST(PerfSizing, AmEndpointsMeetUamsRulesForEveryWindowAndSize) {
  EXPECT_EQ(am_receive_budget(8), 22u);  // 2W + ceil(W/2) + 2
  EXPECT_EQ(am_receive_budget(1), 5u);
  EXPECT_EQ(am_receive_budget(127), 320u);
  for (const char* t : {"RC", "UD"})
    for (std::int64_t w : {1, 2, 7, 8, 9, 64, 127}) {
      RawFlags f;
      f.test = "am_bw";
      f.connection = t;
      f.all_sizes = true;
      f.window = w;
      const PerfConfig c = std::get<PerfConfig>(make_config(f));
      for (std::uint32_t size : c.sizes) {
        const core::EndpointConfig e = am_endpoint_config(c, size);
        SCOPED_TRACE(std::string(t) + " window " + std::to_string(w) + " size " +
                     std::to_string(size));
        EXPECT_EQ(e.transport, c.transport);
        EXPECT_EQ(e.mode, core::Mode::kBaseLevel);
        EXPECT_GE(e.send_queue_depth, kAmMinSendQueue + 2 * c.window);
        EXPECT_EQ(e.send_queue_depth & (e.send_queue_depth - 1), 0u) << "a power of two";
        const std::uint32_t budget = am_receive_budget(c.window);
        EXPECT_LE(budget + repost_batch(e.free_queue_depth) - 1, e.free_queue_depth);
        EXPECT_LE(e.free_queue_depth, budget + 32) << "no more than the rule needs";
        // Spare buffers for the window of sends, uam's 4 reply buffers and unsignalled sends.
        EXPECT_GE(e.buffers, e.free_queue_depth + c.window + 4 + e.signal_interval);
        if (c.transport == core::Transport::kRc) {
          EXPECT_GE(e.buffer_bytes, size + uam::header_bytes(uam::kMaxArgs));  // any header fits
          EXPECT_EQ(e.buffer_bytes % 4096, 0u);
        } else {
          EXPECT_EQ(e.buffer_bytes, 4096u);  // the path MTU is the limit
        }
      }
    }
}

TEST(PerfSizing, AmPayloadLimitIsUamsLengthOnRcAndTheMtuOnUd) {
  EXPECT_EQ(am_payload_limit(core::Transport::kRc, 4096), 65535u);
  EXPECT_EQ(am_payload_limit(core::Transport::kRc, 1024), 65535u);  // RC buffers are sized for it
  EXPECT_EQ(am_payload_limit(core::Transport::kUd, 1024), 1000u);   // 16-byte header + one word
  EXPECT_EQ(am_payload_limit(core::Transport::kUd, 4096), 4072u);
  EXPECT_EQ(am_payload_limit(core::Transport::kUd, 8192), 4072u);  // UD buffers are a page
  EXPECT_EQ(am_payload_limit(core::Transport::kUd, 20), 0u);
}

TEST(PerfSizing, AmSizesFitTheLimitOnceItIsKnown) {
  auto config = [](const char* test, std::function<void(RawFlags&)> edit) {
    RawFlags f;
    f.test = test;
    f.connection = "UD";
    edit(f);
    return std::get<PerfConfig>(make_config(f));
  };
  PerfConfig sweep = config("am_lat", [](RawFlags& f) { f.all_sizes = true; });
  EXPECT_EQ(fit_am_sizes(sweep, 1000), "");
  EXPECT_EQ(sweep.sizes, am_sweep(1000));
  PerfConfig dflt = config("am_bw", [](RawFlags&) {});
  EXPECT_EQ(fit_am_sizes(dflt, 1000), "");
  EXPECT_EQ(dflt.sizes, std::vector<std::uint32_t>{1000});  // the default is the largest
  PerfConfig small = config("am_bw", [](RawFlags& f) { f.size = 64; });
  EXPECT_EQ(fit_am_sizes(small, 1000), "");
  EXPECT_EQ(small.sizes, std::vector<std::uint32_t>{64});
  PerfConfig big = config("am_lat", [](RawFlags& f) { f.size = 1001; });
  EXPECT_EQ(
      fit_am_sizes(big, 1000),
      "-s 1001 exceeds the largest active-message payload on UD (1000 bytes: the path MTU less the "
      "24-byte header with its argument word)");
  EXPECT_EQ(big.sizes, std::vector<std::uint32_t>{1001});  // untouched: the run ends
}

TEST(PerfSizing, EveryBwEndpointHasAtLeastTwoFreeBuffers) {
  for (const char* t : {"RC", "UD"}) {
    const PerfConfig c = config("ep_bw", t);
    for (std::uint32_t size : c.sizes)
      EXPECT_GE(endpoint_config(c, size).free_queue_depth, 2u) << size;
  }
}

TEST(PerfSizing, UlpEndpointsAreUdAndPostAReceiveForEveryFragmentOf64KiB) {
  RawFlags f;
  f.test = "dgram_lat";
  auto made = make_config(f);
  ASSERT_TRUE(std::holds_alternative<PerfConfig>(made));
  const core::EndpointConfig e = ulp_endpoint_config(std::get<PerfConfig>(made));
  EXPECT_EQ(e.transport, core::Transport::kUd);
  EXPECT_EQ(e.mode, core::Mode::kBaseLevel);
  EXPECT_EQ(e.buffer_bytes, 4096u) << "a fragment is at most the path MTU, at most 4096";
  // The smallest path MTU, 256, less ulp's 20-byte datagram header.
  const std::uint32_t stride = 256 - 20;
  const std::uint32_t fragments = (ulp::kMaxDatagram + stride - 1) / stride;
  EXPECT_GE(e.free_queue_depth, fragments);
  EXPECT_GE(e.recv_queue_depth, e.free_queue_depth);
  EXPECT_GE(e.buffers, 2 * e.free_queue_depth) << "room for sends and queued datagrams";
}

}  // namespace
}  // namespace unet::perf
