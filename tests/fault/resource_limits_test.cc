// Resource limits (label fault): the registration cache's pinned-bytes bound with every entry
// leased, and the device's own object limit (the rdma cgroup controller's hca_object). Each case
// asserts the named outcome (a Status, or for set-up an exception naming the call), that a
// refusal changed nothing, and that everything accepted arrives intact once the resource comes
// back. The queue limits are in resource_exhaustion_test.cc. Every wait is bounded.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "exhaustion_support.h"
#include "unet/core/remote_token.h"
#include "unet/verbs/error.h"

namespace unet::test::exhaustion {
namespace {

using namespace std::chrono_literals;

// --- 5. registration cache at its pinned-bytes bound ----------------------------------------

struct PageFree {
  void operator()(std::uint8_t* p) const noexcept { std::free(p); }
};
using Pages = std::unique_ptr<std::uint8_t[], PageFree>;
Pages pages(std::size_t len, std::uint8_t fill) {
  Pages p(static_cast<std::uint8_t*>(std::aligned_alloc(4096, len)));
  if (p) std::memset(p.get(), fill, len);
  return p;
}

// A 256 KiB bound filled by two 128 KiB writes still queued, so both registrations are leased:
// a third write, 4 KiB, cannot fit even after eviction — kNoResource, and the cache, the queue
// and the completions are as they were. Once the two complete (their bytes checked), the same
// write evicts one and goes through.
TEST(ResourceExhaustion, PinnedBoundWithEveryEntryLeasedRefusesAndRecovers) {
  UNET_REQUIRE_DEVICE();
  constexpr std::size_t kBound = 256 * 1024, kHalf = kBound / 2, kSmall = 4096;
  EndpointConfig ac = endpoint_config(Transport::kRc);
  ac.mode = core::Mode::kDirectAccess;
  EndpointConfig bc = ac;
  ac.max_pinned_bytes = kBound;
  Endpoint a(ac), b(bc);
  auto [ab, ba] = connect_endpoints(a, b);
  (void)ba;
  Pages window = pages(kBound + kSmall, 0), r1 = pages(kHalf, 0x11), r2 = pages(kHalf, 0x22),
        r3 = pages(kSmall, 0x33);
  ASSERT_TRUE(window && r1 && r2 && r3);
  core::RemoteToken token;
  ASSERT_EQ(b.grant(window.get(), kBound + kSmall, core::kRemoteWrite, token), Status::kOk);

  ASSERT_EQ(a.write(ab, r1.get(), kHalf, token, 0, 1), Status::kOk);
  ASSERT_EQ(a.write(ab, r2.get(), kHalf, token, kHalf, 2), Status::kOk);
  const core::RegistrationCacheStats full = a.registration_stats();
  EXPECT_EQ(full.pinned_bytes, kBound);
  EXPECT_EQ(full.entries, 2u);
  const std::uint32_t space = a.send_queue_space();
  const core::EndpointStats stats = a.stats();

  EXPECT_EQ(a.write(ab, r3.get(), kSmall, token, kBound, 3), Status::kNoResource);
  EXPECT_EQ(a.registration_stats(), full) << "a refused registration changed the cache";
  EXPECT_EQ(a.send_queue_space(), space);
  EXPECT_EQ(std::memcmp(&stats, &a.stats(), sizeof stats), 0);
  core::OpCompletion c;
  EXPECT_EQ(a.completion(c), Status::kNoResource);

  for (std::uint64_t tag = 1; tag <= 2; ++tag) {
    ASSERT_TRUE(pump({&a, &b}, [&] { return a.completion(c) == Status::kOk; }));
    EXPECT_EQ(c.tag, tag);
    EXPECT_EQ(c.status, Status::kOk);
  }
  EXPECT_EQ(std::memcmp(window.get(), r1.get(), kHalf), 0);
  EXPECT_EQ(std::memcmp(window.get() + kHalf, r2.get(), kHalf), 0);

  ASSERT_EQ(a.write(ab, r3.get(), kSmall, token, kBound, 3), Status::kOk);
  ASSERT_TRUE(pump({&a, &b}, [&] { return a.completion(c) == Status::kOk; }));
  EXPECT_EQ(c.tag, 3u);
  EXPECT_EQ(c.status, Status::kOk);
  EXPECT_EQ(std::memcmp(window.get() + kBound, r3.get(), kSmall), 0);
  const core::RegistrationCacheStats after = a.registration_stats();
  EXPECT_EQ(after.evictions, full.evictions + 1) << "one 128 KiB entry makes room for 4 KiB";
  EXPECT_EQ(after.pinned_bytes, kHalf + kSmall);
  EXPECT_LE(after.peak_pinned_bytes, kBound);
  EXPECT_EQ(a.stats().send_errors, 0u);
  std::printf(
      "pinned bound: %zu of %zu B leased, 4 KiB refused with kNoResource; after completion %zu B "
      "pinned, "
      "%llu eviction\n",
      full.pinned_bytes, kBound, after.pinned_bytes,
      static_cast<unsigned long long>(after.evictions - full.evictions));
}

// --- 6. more verbs objects than the device allows ----------------------------------------------

// The cgroup v2 rdma controller: a child cgroup whose rdma.max caps the device's hca_object
// count, with this process moved in for the test and everything restored after. If cgroup2 is
// not mounted (ci/rxe-vm's minimal guest), it is mounted for the test and unmounted after.
class RdmaCgroup {
 public:
  explicit RdmaCgroup(std::string dev) : dev_(std::move(dev)) {}
  ~RdmaCgroup() { restore(); }

  // Empty when ready; otherwise why the controller cannot be used here.
  std::string enter() {
    if (geteuid() != 0) return "needs root for the rdma cgroup controller";
    if (!std::filesystem::exists(root_ / "cgroup.controllers")) {
      // Only in ci/rxe-vm's guest: on a host, /sys/fs/cgroup may hold a v1 hierarchy to keep.
      const char* vm = std::getenv("UNET_IN_VM");
      if (!vm || std::string(vm) != "1") return "cgroup2 is not mounted on /sys/fs/cgroup";
      if (::mount("none", root_.c_str(), "cgroup2", 0, nullptr) != 0)
        return std::string("cannot mount cgroup2: ") + std::strerror(errno);
      mounted_ = true;
    }
    if (read_file(root_ / "cgroup.controllers").find("rdma") == std::string::npos)
      return "the kernel has no rdma cgroup controller";
    if (read_file(root_ / "cgroup.subtree_control").find("rdma") == std::string::npos) {
      if (!write_file(root_ / "cgroup.subtree_control", "+rdma"))
        return "cannot enable the rdma controller";
      enabled_ = true;
    }
    // Where this process is now ("0::/path"), to come back to.
    std::string self = read_file("/proc/self/cgroup");
    const auto at = self.find("0::");
    if (at == std::string::npos) return "not in a cgroup v2 hierarchy";
    home_ = root_ / self.substr(at + 4, self.find('\n', at) - at - 4);  // after "0::/"
    child_ = root_ / ("unet-resource-" + std::to_string(::getpid()));
    if (!std::filesystem::create_directory(child_)) return "cannot create " + child_.string();
    created_ = true;
    if (!write_file(child_ / "cgroup.procs", std::to_string(::getpid())))
      return "cannot move into " + child_.string();
    inside_ = true;
    return {};
  }
  // hca_object charged to the child for the device now (0 before any charge).
  long objects() const { return field(read_file(child_ / "rdma.current"), "hca_object="); }
  // Caps the device's hca_object (-1: "max").
  bool limit(long objects) const {
    return write_file(child_ / "rdma.max",
                      dev_ + " hca_object=" + (objects < 0 ? "max" : std::to_string(objects)));
  }
  void restore() {
    if (inside_ && write_file(home_ / "cgroup.procs", std::to_string(::getpid()))) inside_ = false;
    if (created_ && !inside_ && ::rmdir(child_.c_str()) == 0) created_ = false;
    if (enabled_ && !created_ && write_file(root_ / "cgroup.subtree_control", "-rdma"))
      enabled_ = false;
    if (mounted_ && !created_ && ::umount(root_.c_str()) == 0) mounted_ = false;
  }

 private:
  // The number after `key` on the device's line of an rdma.* file; 0 when the device has no line.
  long field(const std::string& text, const std::string& key) const {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind(dev_ + " ", 0) != 0) continue;
      const auto at = line.find(key);
      return at == std::string::npos ? -1
                                     : std::strtol(line.c_str() + at + key.size(), nullptr, 10);
    }
    return 0;
  }

  std::string dev_;
  std::filesystem::path root_ = "/sys/fs/cgroup", home_, child_;
  bool mounted_ = false, enabled_ = false, created_ = false, inside_ = false;
};

// True when `e` names a verbs call and the cgroup's refusal (EAGAIN).
::testing::AssertionResult names_the_limit(const verbs::Error& e) {
  const std::string what = e.what();
  if (e.error_number() == EAGAIN && what.rfind("ibv_", 0) == 0 &&
      what.find(std::strerror(EAGAIN)) != std::string::npos)
    return ::testing::AssertionSuccess() << what;
  return ::testing::AssertionFailure() << "errno " << e.error_number() << ": " << what;
}

// With the device's objects capped at what a connected pair already holds, another channel and
// another endpoint are refused at set-up with verbs::Error naming the call and EAGAIN; the failed
// endpoint leaves nothing charged (no leak), the pair keeps carrying checked messages both ways,
// and once the cap is lifted the same set-up succeeds.
TEST(ResourceExhaustion, DeviceObjectLimitThrowsAtSetupAndLeaksNothing) {
  UNET_REQUIRE_DEVICE();
  RdmaCgroup cg(device_sysfs_name());
  if (std::string why = cg.enter(); !why.empty()) GTEST_SKIP() << why;
  {
    Endpoint a(endpoint_config(Transport::kRc)), b(endpoint_config(Transport::kRc));
    auto [ab, ba] = connect_endpoints(a, b);
    const long held = cg.objects();
    ASSERT_GT(held, 0) << "the pair's objects were not charged to the test's cgroup";
    ASSERT_TRUE(cg.limit(held));

    const std::uint32_t qps = a.queue_pairs();
    std::string channel_error, endpoint_error;
    try {
      (void)a.offer_channel();
      ADD_FAILURE() << "a channel beyond the object limit was offered";
    } catch (const verbs::Error& e) {
      EXPECT_TRUE(names_the_limit(e));
      EXPECT_NE(std::string(e.what()).find("ibv_create_qp"), std::string::npos) << e.what();
      channel_error = e.what();
    }
    EXPECT_EQ(a.queue_pairs(), qps);
    EXPECT_EQ(cg.objects(), held);

    // Room for 0, 1, 2 ... more objects: a new endpoint fails at each step of its set-up in turn,
    // each time naming the call and leaving nothing charged, until it fits.
    int refused = 0;
    for (long extra = 0; extra < 32; ++extra) {
      ASSERT_TRUE(cg.limit(held + extra));
      try {
        Endpoint c(endpoint_config(Transport::kRc));
        break;
      } catch (const verbs::Error& e) {
        EXPECT_TRUE(names_the_limit(e)) << "with " << extra << " more objects allowed";
        const std::string call = std::string(e.what()).substr(0, std::string(e.what()).find('('));
        if (endpoint_error.find(call) == std::string::npos)
          endpoint_error += (refused ? ", " : "") + call;
        ++refused;
      }
      ASSERT_EQ(cg.objects(), held)
          << "an endpoint that failed with " << extra << " more objects left some behind";
    }
    EXPECT_GT(refused, 2) << "too few set-up steps were refused";
    EXPECT_LT(refused, 32) << "the endpoint never fitted";
    EXPECT_EQ(cg.objects(), held);

    for (std::uint32_t m = 0; m < 20; ++m) {
      ASSERT_TRUE(send_messages(a, ab, m, 1, {&a, &b}));
      ASSERT_EQ(expect_message(b, ba, m, {&a, &b}), "");
      ASSERT_TRUE(send_messages(b, ba, 500 + m, 1, {&a, &b}));
      ASSERT_EQ(expect_message(a, ab, 500 + m, {&a, &b}), "");
    }
    EXPECT_EQ(a.stats().send_errors + b.stats().send_errors, 0u);

    ASSERT_TRUE(cg.limit(-1));
    Endpoint c(endpoint_config(Transport::kRc));
    auto [ac, ca] = connect_endpoints(a, c);
    ASSERT_TRUE(send_messages(a, ac, 900, 1, {&a, &c}));
    ASSERT_EQ(expect_message(c, ca, 900, {&a, &c}), "");
    std::printf(
        "device objects: pair holds %ld hca_object; channel refused: %s; endpoint refused %d times "
        "(at %s), "
        "nothing leaked\n",
        held, channel_error.c_str(), refused, endpoint_error.c_str());
  }
  EXPECT_EQ(cg.objects(), 0) << "objects still charged after every endpoint is gone";
  cg.restore();
}

}  // namespace
}  // namespace unet::test::exhaustion
