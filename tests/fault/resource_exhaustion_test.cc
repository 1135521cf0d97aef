// Resource exhaustion (label fault): every queue and bound of an endpoint driven to its limit on a
// real device — the completion queue near full, the free queue empty (RC: RNR back-pressure, no
// loss; UD: the surplus dropped by the device and counted there), the send queue full, the
// registration cache's pinned-bytes bound with every entry leased, and the device's own object
// limit (the rdma cgroup controller's hca_object). Each case asserts the named outcome — a
// Status, or for set-up an exception naming the call — that a refusal changed nothing, and that
// everything accepted arrives intact and in order once the resource comes back. Every wait is
// bounded.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "endpoint_support.h"
#include "kernel_files.h"
#include "unet/core/endpoint.h"
#include "unet/core/remote_token.h"
#include "unet/verbs/device.h"
#include "unet/verbs/error.h"

namespace unet::test {
namespace {

using core::BufferId;
using core::ChannelId;
using core::Descriptor;
using core::Endpoint;
using core::EndpointConfig;
using core::Transport;
using namespace std::chrono_literals;

std::byte pattern(std::uint32_t msg, std::uint32_t i) { return static_cast<std::byte>(msg * 131 + i * 7 + 1); }

// Message m's length: 100 .. 999 bytes, so every arrival holds a buffer (above the 44-byte
// descriptor payload) and some are posted inline by the sender, some not.
std::uint32_t length_of(std::uint32_t m) { return 100 + (m * 97) % 900; }

// Polls `eps` until `done()` holds or `timeout` passes; false on a timeout or a device error.
bool pump(std::initializer_list<Endpoint*> eps, const std::function<bool()>& done,
          std::chrono::milliseconds timeout = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    for (Endpoint* e : eps)
      if (e->poll() < 0) return false;
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
  }
}

// Polls `eps` for `span` whatever happens (time for an exhausted resource to come back by
// itself, which it must not); false on a device error.
bool pump_for(std::initializer_list<Endpoint*> eps, std::chrono::milliseconds span) {
  const auto end = std::chrono::steady_clock::now() + span;
  while (std::chrono::steady_clock::now() < end)
    for (Endpoint* e : eps)
      if (e->poll() < 0) return false;
  return true;
}

// Pushes message m (length_of(m) bytes of pattern(m)) from a segment buffer; kNoResource, with
// nothing taken, when the send queue is full or no buffer is spare (poll `src` and retry).
Status push_message(Endpoint& src, ChannelId ch, std::uint32_t m) {
  BufferId b = core::kNoBuffer;
  if (src.send_queue_space() == 0) return Status::kNoResource;
  if (Status s = src.acquire_buffer(b); s != Status::kOk) return s;
  auto bytes = src.buffer(b);
  const std::uint32_t len = length_of(m);
  for (std::uint32_t i = 0; i < len; ++i) bytes[i] = pattern(m, i);
  return src.send(ch, b, len);
}

// Sends messages [first, first+n) from src, polling `eps` on back-pressure; false on a timeout or
// another status.
bool send_messages(Endpoint& src, ChannelId ch, std::uint32_t first, std::uint32_t n,
                   std::initializer_list<Endpoint*> eps) {
  for (std::uint32_t m = first; m < first + n; ++m) {
    Status s = Status::kNoResource;
    if (!pump(eps, [&] { return (s = push_message(src, ch, m)) != Status::kNoResource; })) return false;
    if (s != Status::kOk) return false;
  }
  return true;
}

// Takes the next arrival of dst (polling `eps`), checks it is message m on channel ch, and
// releases its buffer unless `hold` keeps it. Empty on success, else what was wrong.
std::string expect_message(Endpoint& dst, ChannelId ch, std::uint32_t m, std::initializer_list<Endpoint*> eps,
                           std::vector<BufferId>* hold = nullptr) {
  Descriptor d;
  if (!pump(eps, [&] { return dst.receive(d) == Status::kOk; })) return "message " + std::to_string(m) + " never arrived";
  const std::uint32_t len = length_of(m);
  if (d.channel != ch) return "message " + std::to_string(m) + " on channel " + std::to_string(d.channel);
  if (d.length != len) return "message " + std::to_string(m) + " is " + std::to_string(d.length) + " bytes, not " + std::to_string(len);
  const std::byte* p = d.is_inline() ? d.data : dst.buffer(d.buffer).data();
  for (std::uint32_t i = 0; i < len; ++i)
    if (p[i] != pattern(m, i)) return "message " + std::to_string(m) + " byte " + std::to_string(i) + " differs";
  if (!d.is_inline()) {
    if (hold)
      hold->push_back(d.buffer);
    else if (dst.release(d.buffer) != Status::kOk)
      return "release refused";
  }
  return {};
}

// The name the device goes by ("rxe0"), for its sysfs counters and its cgroup limits.
std::string device_sysfs_name() { return verbs::Context::open(device_name())->name(); }

// A port counter of the device (/sys/class/infiniband/<dev>/ports/1/hw_counters/<name>); -1 if
// the device has none.
long hw_counter(const std::string& dev, const char* name) {
  return read_long("/sys/class/infiniband/" + dev + "/ports/1/hw_counters/" + name);
}

// --- 1. completion queue near full -----------------------------------------------------------

// The receiver's CQ is sized for its free queue plus its send queue (free_queue_depth +
// send_queue_depth * max_channels = 29 + 2 = 31: exactly what rxe grants, as it rounds a CQ to
// 2^k - 1). The receiver keeps as many sends in flight as it may (each signaled: with a send
// queue of 2 the signal interval is 1), then stops polling while the sender floods it: its CQ
// fills with those 2 send completions and one arrival per posted buffer, 31 of 31 entries, and
// the rest of the flood waits in RNR. Then both drain: every message arrives intact and in order,
// nothing dropped, no send failed, both channels still open.
TEST(ResourceExhaustion, CompletionQueueNearFullLosesNothing) {
  UNET_REQUIRE_DEVICE();
  EndpointConfig rc = endpoint_config(Transport::kRc, 64);
  rc.free_queue_depth = 29;
  rc.send_queue_depth = 2;
  rc.max_channels = 1;
  Endpoint s(endpoint_config(Transport::kRc, 128)), r(rc);
  auto [sr, rs] = connect_endpoints(s, r);

  // The receiver: sends until its device send queue is full, without reaping a completion.
  std::uint32_t r_pushed = 0;
  for (int round = 0; round < 64; ++round) {
    while (push_message(r, rs, 1000 + r_pushed) == Status::kOk) ++r_pushed;
    if (r.flush() <= 0) break;
  }
  const std::uint32_t r_queued = std::bit_ceil(rc.send_queue_depth) - r.send_queue_space();
  const std::uint32_t r_in_flight = r_pushed - r_queued;
  EXPECT_EQ(r_in_flight, rc.send_queue_depth)
      << "more sends in flight than the endpoint sized its CQ for (" << r_queued << " still queued)";

  // The sender floods: twice the receiver's free queue, while the receiver does not poll.
  constexpr std::uint32_t kMessages = 2 * 29;
  ASSERT_TRUE(send_messages(s, sr, 0, kMessages, {&s}));
  ASSERT_TRUE(pump({&s}, [&] { return s.stats().sent == kMessages; }));
  ASSERT_TRUE(pump_for({&s}, 300ms));  // retries against the full receiver
  EXPECT_EQ(s.stats().send_errors, 0u);

  // Drain: all of it, in order, intact.
  for (std::uint32_t m = 0; m < kMessages; ++m) ASSERT_EQ(expect_message(r, rs, m, {&s, &r}), "");
  for (std::uint32_t m = 0; m < r_pushed; ++m) ASSERT_EQ(expect_message(s, sr, 1000 + m, {&s, &r}), "");
  ASSERT_TRUE(pump({&s, &r}, [&] { return r.stats().sent == r_pushed && s.spare_buffers() == 64; }));
  EXPECT_EQ(r.stats().received, kMessages);
  EXPECT_EQ(s.stats().received, r_pushed);
  for (Endpoint* e : {&s, &r}) {
    EXPECT_EQ(e->stats().send_errors, 0u);
    EXPECT_EQ(e->stats().recv_overflow_drops, 0u);
    EXPECT_EQ(e->stats().unknown_tag_drops, 0u);
    EXPECT_EQ(e->stats().completion_drops, 0u);
  }
  EXPECT_EQ(s.channel_status(sr), Status::kOk);
  EXPECT_EQ(r.channel_status(rs), Status::kOk);
  std::printf("CQ near full: %u sends in flight + %u arrivals held in a CQ sized %u; %u + %u messages delivered\n",
              r_in_flight, rc.free_queue_depth, rc.free_queue_depth + rc.send_queue_depth, kMessages, r_pushed);
}

// --- 2. free queue empty, RC -------------------------------------------------------------------

// The receiver takes its arrivals but keeps every buffer: after free_queue_depth of them nothing
// is posted, and RC holds the sender back (RNR, retried forever with rnr_retry 7) — no error, no
// loss. Once the receiver releases, every message arrives, in order, intact.
TEST(ResourceExhaustion, EmptyFreeQueueBacksPressureOnRcWithoutLoss) {
  UNET_REQUIRE_DEVICE();
  EndpointConfig rc = endpoint_config(Transport::kRc, 64);
  rc.free_queue_depth = 16;
  Endpoint s(endpoint_config(Transport::kRc, 128)), r(rc);
  auto [sr, rs] = connect_endpoints(s, r);
  const std::string dev = device_sysfs_name();
  const long rnr0 = hw_counter(dev, "rcvd_rnr_err");
  constexpr std::uint32_t kMessages = 48;
  ASSERT_TRUE(send_messages(s, sr, 0, kMessages, {&s, &r}));
  std::vector<BufferId> held;
  for (std::uint32_t m = 0; m < 16; ++m) ASSERT_EQ(expect_message(r, rs, m, {&s, &r}, &held), "");
  ASSERT_TRUE(pump({&s, &r}, [&] { return s.stats().sent == kMessages; }));
  ASSERT_TRUE(pump_for({&s, &r}, 300ms));
  EXPECT_EQ(r.stats().received, 16u) << "an arrival without a posted buffer";
  Descriptor d;
  EXPECT_EQ(r.receive(d), Status::kNoResource);
  EXPECT_EQ(s.stats().send_errors, 0u);
  EXPECT_EQ(s.channel_status(sr), Status::kOk) << "back-pressure failed the channel";
  const long rnr = rnr0 < 0 ? -1 : hw_counter(dev, "rcvd_rnr_err") - rnr0;
  if (rnr0 >= 0) {
    EXPECT_GT(rnr, 0) << "the sender's device saw no RNR NAK";
  }

  for (BufferId b : held) ASSERT_EQ(r.release(b), Status::kOk);
  for (std::uint32_t m = 16; m < kMessages; ++m) ASSERT_EQ(expect_message(r, rs, m, {&s, &r}), "");
  EXPECT_EQ(r.stats().received, kMessages);
  EXPECT_EQ(r.stats().recv_overflow_drops, 0u);
  EXPECT_EQ(r.stats().unknown_tag_drops, 0u);
  EXPECT_EQ(s.stats().send_errors, 0u);
  EXPECT_EQ(s.channel_status(sr), Status::kOk);
  std::printf("RC free queue empty: %u of %u delivered while held (%ld RNR NAKs), the rest after release; 0 lost\n",
              16u, kMessages, rnr);
}

// --- 3. free queue empty, UD -------------------------------------------------------------------

// UD has no back-pressure: with the receiver holding every buffer, the device drops what finds no
// posted receive. Core never sees those datagrams (no completion, so no core counter can), and
// rxe has no counter for this drop (its responder just discards the message), so the count is
// rcvd_pkts - delivered. Asserted: the device's rcvd_pkts went up by exactly the datagrams sent
// (this test is the only traffic), exactly free_queue_depth were delivered (the first ones, in
// order, intact), so sent == delivered + dropped with dropped == sent - free_queue_depth, and
// core counted nothing (the drop was not its receive queue's). Afterwards the endpoint works:
// released buffers take the next messages.
TEST(ResourceExhaustion, EmptyFreeQueueDropsUdSurplusCountedByTheDevice) {
  UNET_REQUIRE_DEVICE();
  const std::string dev = device_sysfs_name();
  if (hw_counter(dev, "rcvd_pkts") < 0) GTEST_SKIP() << dev << " has no rcvd_pkts counter";
  EndpointConfig uc = endpoint_config(Transport::kUd, 64);
  uc.free_queue_depth = 16;
  Endpoint s(endpoint_config(Transport::kUd, 128)), r(uc);
  auto [sr, rs] = connect_endpoints(s, r);
  constexpr std::uint32_t kMessages = 40;
  ASSERT_GE(s.max_message(), 999u) << "every message must fit one datagram";

  const long rcvd0 = hw_counter(dev, "rcvd_pkts");
  ASSERT_TRUE(send_messages(s, sr, 0, kMessages, {&s}));
  // Every send completed (their buffers are spare again), then time for stragglers.
  ASSERT_TRUE(pump({&s}, [&] { return s.stats().sent == kMessages && s.spare_buffers() == 64; }));
  std::vector<BufferId> held;
  for (std::uint32_t m = 0; m < 16; ++m) ASSERT_EQ(expect_message(r, rs, m, {&s, &r}, &held), "");
  ASSERT_TRUE(pump_for({&s, &r}, 200ms));
  const long rcvd = hw_counter(dev, "rcvd_pkts") - rcvd0;
  EXPECT_EQ(rcvd, kMessages) << "the device did not see every datagram (or saw other traffic)";
  EXPECT_EQ(r.stats().received, 16u) << "delivered beyond the posted buffers";
  const long dropped = rcvd - static_cast<long>(r.stats().received);
  EXPECT_EQ(dropped, kMessages - 16);
  EXPECT_EQ(s.stats().sent, r.stats().received + static_cast<std::uint64_t>(dropped));
  EXPECT_EQ(r.stats().recv_overflow_drops, 0u) << "the drops were the device's, not the receive queue's";
  EXPECT_EQ(r.stats().unknown_tag_drops, 0u);
  EXPECT_EQ(s.stats().send_errors, 0u);

  for (BufferId b : held) ASSERT_EQ(r.release(b), Status::kOk);
  ASSERT_TRUE(pump_for({&r}, 10ms));  // reposted
  ASSERT_TRUE(send_messages(s, sr, 100, 16, {&s, &r}));
  for (std::uint32_t m = 100; m < 116; ++m) ASSERT_EQ(expect_message(r, rs, m, {&s, &r}), "");
  EXPECT_EQ(r.stats().received, 32u);
  std::printf("UD free queue empty: %u sent, %ld seen by %s (rcvd_pkts), %llu delivered, %ld dropped\n", kMessages,
              rcvd, dev.c_str(), 16ull, dropped);
}

// --- 3b. the free queue's bound: buffers given back unsent --------------------------------------

// An application that acquires buffers and gives them back unsent (a send it gave up on) must not
// overfill the free queue: the device's receive queue holds free_queue_depth receives, and the
// CQ is sized for that many arrivals. The endpoint keeps working — poll() never reports a device
// error, every acquired buffer is spare again, and messages still arrive once each, intact.
TEST(ResourceExhaustion, BuffersReleasedUnsentNeverOverfillTheFreeQueue) {
  UNET_REQUIRE_DEVICE();
  for (Transport t : {Transport::kRc, Transport::kUd}) {
    SCOPED_TRACE(t == Transport::kRc ? "RC" : "UD");
    Endpoint s(endpoint_config(t, 128)), r(endpoint_config(t, 128));
    auto [sr, rs] = connect_endpoints(s, r);
    const std::uint32_t spare = r.spare_buffers();
    ASSERT_EQ(spare, 64u);
    std::vector<BufferId> taken(spare);
    for (BufferId& b : taken) ASSERT_EQ(r.acquire_buffer(b), Status::kOk);
    for (BufferId b : taken) ASSERT_EQ(r.release(b), Status::kOk);
    ASSERT_GE(r.poll(), 0) << "reposting the given-back buffers failed on the device";
    EXPECT_EQ(r.spare_buffers(), spare) << "buffers given back unsent are spare again";
    // UD: paced one at a time, so no datagram finds the receiver without a posted buffer.
    for (std::uint32_t m = 0; m < 3 * spare; ++m) {
      ASSERT_TRUE(send_messages(s, sr, m, 1, {&s, &r}));
      ASSERT_EQ(expect_message(r, rs, m, {&s, &r}), "");
    }
    ASSERT_GE(r.poll(), 0);
    Descriptor d;
    EXPECT_EQ(r.receive(d), Status::kNoResource) << "an arrival delivered twice";
    EXPECT_EQ(r.stats().received, 3 * spare);
    EXPECT_EQ(s.stats().send_errors, 0u);
  }
}

// --- 4. send queue full ------------------------------------------------------------------------

// Pushing without progress fills the send queue: exactly send_queue_space() pushes succeed, the
// next (inline or from a buffer) is kNoResource and changes nothing — counters, queue space,
// spare buffers, the refused buffer still the application's. After poll() the same push succeeds,
// and every message accepted arrives once, in order.
TEST(ResourceExhaustion, FullSendQueueRefusesThenAcceptsAfterProgress) {
  UNET_REQUIRE_DEVICE();
  Endpoint s(endpoint_config(Transport::kRc, 256)), r(endpoint_config(Transport::kRc, 256));
  auto [sr, rs] = connect_endpoints(s, r);
  const std::uint32_t space = s.send_queue_space();
  ASSERT_EQ(space, 64u);
  std::uint32_t pushed = 0;
  while (pushed < 2 * space && push_message(s, sr, pushed) == Status::kOk) ++pushed;
  EXPECT_EQ(pushed, space);
  EXPECT_EQ(s.send_queue_space(), 0u);

  BufferId b = core::kNoBuffer;
  ASSERT_EQ(s.acquire_buffer(b), Status::kOk);
  const std::uint32_t len = length_of(pushed);
  for (std::uint32_t i = 0; i < len; ++i) s.buffer(b)[i] = pattern(pushed, i);
  const core::EndpointStats before = s.stats();
  const std::uint32_t spare = s.spare_buffers();
  const std::byte small[8] = {};
  EXPECT_EQ(s.send(sr, b, len), Status::kNoResource);
  EXPECT_EQ(s.send_inline(sr, small), Status::kNoResource);
  EXPECT_EQ(std::memcmp(&before, &s.stats(), sizeof before), 0) << "a refused push changed a counter";
  EXPECT_EQ(s.send_queue_space(), 0u);
  EXPECT_EQ(s.spare_buffers(), spare);
  EXPECT_EQ(r.stats().received, 0u);

  ASSERT_GT(s.poll(), 0);
  EXPECT_EQ(s.send(sr, b, len), Status::kOk) << "the same buffer after progress";
  ++pushed;
  for (std::uint32_t m = 0; m < pushed; ++m) ASSERT_EQ(expect_message(r, rs, m, {&s, &r}), "");
  ASSERT_TRUE(pump({&s, &r}, [&] { return s.stats().sent == pushed; }));
  EXPECT_EQ(r.stats().received, pushed);
  EXPECT_EQ(s.stats().send_errors, 0u);
  Descriptor d;
  EXPECT_EQ(r.receive(d), Status::kNoResource) << "a message arrived twice";
  std::printf("send queue full: %u pushed, the next refused with kNoResource, %u delivered after poll()\n",
              pushed - 1, pushed);
}

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
  Pages window = pages(kBound + kSmall, 0), r1 = pages(kHalf, 0x11), r2 = pages(kHalf, 0x22), r3 = pages(kSmall, 0x33);
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
  std::printf("pinned bound: %zu of %zu B leased, 4 KiB refused with kNoResource; after completion %zu B pinned, "
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
      if (!write_file(root_ / "cgroup.subtree_control", "+rdma")) return "cannot enable the rdma controller";
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
    if (!write_file(child_ / "cgroup.procs", std::to_string(::getpid()))) return "cannot move into " + child_.string();
    inside_ = true;
    return {};
  }
  // hca_object charged to the child for the device now (0 before any charge).
  long objects() const { return field(read_file(child_ / "rdma.current"), "hca_object="); }
  // Caps the device's hca_object (-1: "max").
  bool limit(long objects) const {
    return write_file(child_ / "rdma.max", dev_ + " hca_object=" + (objects < 0 ? "max" : std::to_string(objects)));
  }
  void restore() {
    if (inside_ && write_file(home_ / "cgroup.procs", std::to_string(::getpid()))) inside_ = false;
    if (created_ && !inside_ && ::rmdir(child_.c_str()) == 0) created_ = false;
    if (enabled_ && !created_ && write_file(root_ / "cgroup.subtree_control", "-rdma")) enabled_ = false;
    if (mounted_ && !created_ && ::umount(root_.c_str()) == 0) mounted_ = false;
  }

 private:
  // The number after `key` on the device's line of an rdma.* file; 0 when the device has no line.
  long field(const std::string& text, const std::string& key) const {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind(dev_ + " ", 0) != 0) continue;
      const auto at = line.find(key);
      return at == std::string::npos ? -1 : std::strtol(line.c_str() + at + key.size(), nullptr, 10);
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
  if (e.error_number() == EAGAIN && what.rfind("ibv_", 0) == 0 && what.find(std::strerror(EAGAIN)) != std::string::npos)
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
        if (endpoint_error.find(call) == std::string::npos) endpoint_error += (refused ? ", " : "") + call;
        ++refused;
      }
      ASSERT_EQ(cg.objects(), held) << "an endpoint that failed with " << extra << " more objects left some behind";
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
    std::printf("device objects: pair holds %ld hca_object; channel refused: %s; endpoint refused %d times (at %s), "
                "nothing leaked\n",
                held, channel_error.c_str(), refused, endpoint_error.c_str());
  }
  EXPECT_EQ(cg.objects(), 0) << "objects still charged after every endpoint is gone";
  cg.restore();
}

}  // namespace
}  // namespace unet::test
