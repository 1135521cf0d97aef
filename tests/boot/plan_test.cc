// boot::plan_endpoint(): the receive-buffer budget and memory per rank as a function of the job's
// size, and the clear refusal of a job that does not fit. No device: the device's facts are given.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "unet/boot/endpoint_plan.h"

namespace unet::boot {
namespace {

// rxe's limits (ibv_devinfo -v in ci/rxe-vm), path MTU 1024.
DeviceFacts rxe() {
  DeviceFacts d;
  d.name = "rxe0";
  d.mtu = 1024;
  d.max_qp = 1048560;
  d.max_ah = 32767;
  d.max_cqe = 32767;
  d.max_recv_wr = 1048576;
  return d;
}

PlanRequest request(core::Transport t, int ranks, core::Mode mode = core::Mode::kBaseLevel) {
  PlanRequest r;
  r.transport = t;
  r.ranks = ranks;
  r.mode = mode;
  return r;
}

std::string refusal(const PlanRequest& r, const DeviceFacts& d) {
  try {
    (void)plan_endpoint(r, d);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Plan, SmallJobsKeepTheExamplesFreeQueueOf256) {
  for (int n = 1; n <= 8; ++n) {
    const EndpointPlan p = plan_endpoint(request(core::Transport::kRc, n), rxe());
    EXPECT_EQ(p.am.window, 8u) << n;
    EXPECT_EQ(p.net.free_queue_depth, 256u) << n;
    EXPECT_EQ(p.net.buffers, 512u) << n;
    EXPECT_EQ(p.segment_bytes, 512u * 4096) << n;
    EXPECT_EQ(p.net.max_channels, std::max(1u, unsigned(n - 1))) << n;
  }
}

// The figures boot/README.md quotes for 64 ranks.
TEST(Plan, SixtyFourRanksOverRcAndUd) {
  const EndpointPlan rc = plan_endpoint(request(core::Transport::kRc, 64), rxe());
  EXPECT_EQ(rc.am.window, 8u);
  EXPECT_EQ(rc.per_channel, 22u);
  EXPECT_EQ(rc.net.free_queue_depth, 63u * 22 + 32);  // 1418
  EXPECT_EQ(rc.net.buffers, 1418u + 256);
  EXPECT_EQ(rc.net.buffer_bytes, 4096u);
  EXPECT_EQ(rc.net.send_queue_depth, 128u);  // 1418 + 63 * 128 CQ entries fit 32767
  EXPECT_EQ(rc.segment_bytes, 1674u * 4096);
  // A silent QP fails after 4.096 us x 2^19 x 7 = 15 s >= 200 ms x 64 (2^18: 7.5 s; core's
  // default, 2^14: 0.47 s).
  EXPECT_EQ(rc.net.ack_timeout, 19u);
  EXPECT_EQ(rc.net.retry_count, 6u);
  // Any RC job: at least 2 s, 4.096 us x 2^17 x 7 = 3.8 s (2^16 gives 1.88 s).
  EXPECT_EQ(plan_endpoint(request(core::Transport::kRc, 8), rxe()).net.ack_timeout, 17u);
  EXPECT_EQ(rc.ring_bytes, 63u * 24 * 1024);  // core's ring channels: 63 of max_rings 64
  EXPECT_EQ(rc.pinned_bytes,
            rc.segment_bytes + rc.ring_bytes);  // base level: no registration cache

  const EndpointPlan ud = plan_endpoint(request(core::Transport::kUd, 64), rxe());
  EXPECT_EQ(ud.net.free_queue_depth, 1418u);
  EXPECT_EQ(ud.net.buffer_bytes, 1024u);  // the path MTU
  EXPECT_EQ(ud.segment_bytes, (1674u * (1024 + 64) + 4095) / 4096 * 4096);

  // Direct access adds the registration cache's bound and the operation heads.
  PlanRequest da = request(core::Transport::kRc, 64, core::Mode::kDirectAccess);
  da.max_pinned_bytes = 32u << 20;
  EXPECT_EQ(plan_endpoint(da, rxe()).pinned_bytes, rc.pinned_bytes + (32u << 20) + 256 * 64);
}

TEST(Plan, TwoHundredFiftySixRanksOverUdShrinkTheWindowAndTheSendQueue) {
  const EndpointPlan p = plan_endpoint(request(core::Transport::kUd, 256), rxe());
  EXPECT_EQ(p.am.window, 5u);  // c(5) = 15: 255 * 15 + 32 = 3857 <= 4096; c(6) = 17 does not fit
  EXPECT_EQ(p.net.free_queue_depth, 3857u);
  EXPECT_EQ(p.net.send_queue_depth, (32767u - 3857) / 255);  // 113: the CQ fits max_cqe
  EXPECT_LE(p.net.free_queue_depth + p.net.send_queue_depth * p.net.max_channels, 32767u);
  EXPECT_EQ(p.net.max_channels, 255u);
  // A silent peer gets 20 ms x 256 = 5.1 s: 10+20+...+640 ms, then 1 s steps.
  EXPECT_EQ(p.am.reliability.rto_max, std::chrono::seconds(1));
  EXPECT_EQ(p.am.reliability.max_retries, 11u);  // 1.27 s after 7, 5.27 s after 11
}

// What uam::Endpoint checks when each channel opens, and core's CQ, hold for every size that fits.
TEST(Plan, EveryPlanMeetsUamsBudgetAndTheDevice) {
  for (core::Transport t : {core::Transport::kRc, core::Transport::kUd})
    for (int n = 1; n <= 800; ++n) {
      EndpointPlan p;
      try {
        p = plan_endpoint(request(t, n), rxe());
      } catch (const Error&) {
        continue;  // refused: checked below
      }
      const std::uint32_t w = p.am.window;
      ASSERT_GE(w, 1u);
      ASSERT_EQ(p.per_channel, 2 * w + (w + 1) / 2 + 2);
      const std::uint32_t batch = std::clamp<std::uint32_t>(p.net.free_queue_depth / 8, 1, 32);
      ASSERT_LE(std::uint64_t(n - 1) * p.per_channel + batch - 1, p.net.free_queue_depth) << n;
      ASSERT_LE(p.net.free_queue_depth, kDefaultMaxPostedBuffers) << n;
      ASSERT_GE(p.net.send_queue_depth, 80u) << n;
      ASSERT_LE(p.net.free_queue_depth + std::uint64_t(p.net.send_queue_depth) * p.net.max_channels,
                32767u)
          << n;
      ASSERT_LT(p.net.free_queue_depth, p.net.buffers);
    }
  // The budget of 4096 carries 813 ranks at window 1: 812 * 5 + 32 = 4092.
  EXPECT_EQ(plan_endpoint(request(core::Transport::kUd, 813), DeviceFacts{}).am.window, 1u);
  EXPECT_THROW(plan_endpoint(request(core::Transport::kUd, 814), DeviceFacts{}), Error);
}

TEST(Plan, AJobBeyondTheBudgetIsRefusedSayingSo) {
  const std::string why = refusal(request(core::Transport::kUd, 1000), rxe());
  EXPECT_NE(why.find("1000 ranks over UD do not fit"), std::string::npos) << why;
  EXPECT_NE(why.find("over the budget of 4096"), std::string::npos) << why;
  PlanRequest bigger = request(core::Transport::kUd, 1000);
  bigger.max_posted_buffers = 8192;
  EXPECT_NO_THROW(plan_endpoint(bigger, DeviceFacts{}));
}

TEST(Plan, DeviceLimitsAreCheckedBeforeAnyTraffic) {
  DeviceFacts small = rxe();
  small.max_cqe = 5000;  // 1418 + 80 * 63 = 6458
  std::string why = refusal(request(core::Transport::kRc, 64), small);
  EXPECT_NE(why.find("completion queue needs 6458 entries, but rxe0 allows 5000"),
            std::string::npos)
      << why;

  small = rxe();
  small.max_recv_wr = 1000;
  why = refusal(request(core::Transport::kRc, 64), small);
  EXPECT_NE(why.find("1418 posted receive buffers per rank, but rxe0 allows 1000"),
            std::string::npos)
      << why;

  small = rxe();
  small.max_qp = 100;
  PlanRequest two = request(core::Transport::kRc, 64);
  two.ranks_per_device = 2;
  why = refusal(two, small);
  EXPECT_NE(why.find("2 ranks on rxe0 x 63 channels need 126 RC QPs, but it allows 100"),
            std::string::npos)
      << why;
  two.transport = core::Transport::kUd;  // one QP per rank
  EXPECT_NO_THROW(plan_endpoint(two, small));
}

// rxe's 32767 address handles are the device's: a UD mesh of 256 ranks fits two devices of 128
// ranks (two hosts), not one of 256.
TEST(Plan, AddressHandlesAreCountedForEveryRankOnTheDevice) {
  PlanRequest r = request(core::Transport::kUd, 256);
  r.ranks_per_device = 128;
  EXPECT_NO_THROW(plan_endpoint(r, rxe()));  // 128 x 255 = 32640
  r.ranks_per_device = 256;
  const std::string why = refusal(r, rxe());
  EXPECT_NE(why.find("256 ranks on rxe0 x 255 channels need 65280 address handles, but it allows "
                     "32767"),
            std::string::npos)
      << why;
}

TEST(Plan, PinnedMemoryBeyondTheMemlockLimitIsRefused) {
  DeviceFacts d = rxe();
  d.memlock_bytes = 8u << 20;  // Debian's default for users
  PlanRequest r = request(core::Transport::kRc, 64, core::Mode::kDirectAccess);
  r.max_pinned_bytes = 64u << 20;
  const std::string why = refusal(r, d);
  EXPECT_NE(why.find("over RLIMIT_MEMLOCK of 8.0 MiB (raise it: ulimit -l)"), std::string::npos)
      << why;
  r.mode = core::Mode::kBaseLevel;  // the segment (6.54 MiB) and 63 rings (1.48 MiB): just over
  EXPECT_NE(refusal(r, d).find("a rank pins up to 8.0 MiB (segment 6.5 MiB, rings 1.5 MiB)"),
            std::string::npos)
      << refusal(r, d);
  r.ranks = 32;  // 3.8 MiB + 31 rings (0.7 MiB)
  EXPECT_NO_THROW(plan_endpoint(r, d));
  r.ranks = 64;
  r.transport = core::Transport::kUd;  // the segment alone, 1.7 MiB
  EXPECT_NO_THROW(plan_endpoint(r, d));
}

TEST(Plan, TheDeviceRuleSpreadsLocalRanksOverTheList) {
  const char* old = std::getenv("UNET_DEVICE");
  const std::string saved = old ? old : "";
  ::setenv("UNET_DEVICE", "mlx5_0,mlx5_1", 1);
  EXPECT_EQ(choose_device(0), "mlx5_0");
  EXPECT_EQ(choose_device(1), "mlx5_1");
  EXPECT_EQ(choose_device(6), "mlx5_0");
  ::setenv("UNET_DEVICE", "rxe1", 1);
  EXPECT_EQ(choose_device(5), "rxe1");
  if (old)
    ::setenv("UNET_DEVICE", saved.c_str(), 1);
  else
    ::unsetenv("UNET_DEVICE");
}

}  // namespace
}  // namespace unet::boot
