// Device: an endpoint's blocking wait, its epoll-able fd serving two endpoints in one loop, and
// upcalls. Each endpoint is driven by one thread only, as the threading rules say.
#include <gtest/gtest.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "endpoint_support.h"
#include "unet/core/endpoint.h"

namespace unet::core {
namespace {

using test::connect_endpoints;
EndpointConfig rc_config() { return test::endpoint_config(Transport::kRc, 64); }

using namespace std::chrono_literals;

// Sends `count` one-byte messages (values first, first+1, ...) from `ep` on `ch`, `gap` apart,
// polling `ep` until all are posted and completed.
void send_later(Endpoint& ep, ChannelId ch, int count, std::uint8_t first,
                std::chrono::milliseconds gap) {
  for (int i = 0; i < count; ++i) {
    std::this_thread::sleep_for(gap);
    std::byte m[1] = {static_cast<std::byte>(first + i)};
    while (ep.send_inline(ch, m) == Status::kNoResource) (void)ep.poll();
    (void)ep.poll();
  }
  auto until = std::chrono::steady_clock::now() + 500ms;
  while (std::chrono::steady_clock::now() < until) (void)ep.poll();
}

TEST(EndpointNotify, WaitTimesOutThenWakesOnArrival) {
  UNET_REQUIRE_DEVICE();
  Endpoint a(rc_config()), b(rc_config());
  auto [ab, ba] = connect_endpoints(a, b);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(b.wait(100ms), Status::kTimeout);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 90ms);

  std::thread sender([&, ab = ab] { send_later(a, ab, 1, 42, 200ms); });
  Status s = b.wait(10s);
  auto woke = std::chrono::steady_clock::now();
  sender.join();
  ASSERT_EQ(s, Status::kOk);
  EXPECT_LT(woke - t0, 8s);
  EXPECT_GE(b.stats().wakeups, 1u) << "the wait should have slept on the completion channel";
  Descriptor d;
  ASSERT_EQ(b.receive(d), Status::kOk);
  EXPECT_EQ(d.channel, ba);
  EXPECT_EQ(d.data[0], std::byte{42});
}

TEST(EndpointNotify, OneEpollLoopServesTwoEndpoints) {
  UNET_REQUIRE_DEVICE();
  Endpoint a1(rc_config()), a2(rc_config()), b1(rc_config()), b2(rc_config());
  auto [c1, r1] = connect_endpoints(a1, b1);
  auto [c2, r2] = connect_endpoints(a2, b2);
  constexpr int kEach = 5;
  int ep = epoll_create1(EPOLL_CLOEXEC);
  ASSERT_GE(ep, 0);
  Endpoint* receivers[2] = {&b1, &b2};
  for (Endpoint* r : receivers) {
    ASSERT_EQ(r->arm(), Status::kOk);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = r;
    ASSERT_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, r->notify_fd(), &ev), 0);
  }
  // One sender thread per sending endpoint; this thread owns both receivers.
  std::thread s1([&, c = c1] { send_later(a1, c, kEach, 10, 30ms); });
  std::thread s2([&, c = c2] { send_later(a2, c, kEach, 20, 45ms); });
  int got[2] = {0, 0};
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while ((got[0] < kEach || got[1] < kEach) && std::chrono::steady_clock::now() < deadline) {
    epoll_event ready[2];
    int n = epoll_wait(ep, ready, 2, 1000);
    for (int i = 0; i < n; ++i) {
      auto* r = static_cast<Endpoint*>(ready[i].data.ptr);
      int k = r == &b1 ? 0 : 1;
      for (int round = 0; round < 2; ++round) {  // poll, arm, poll again: nothing slips through
        (void)r->poll();
        for (Descriptor d; r->receive(d) == Status::kOk; ++got[k]) {
          EXPECT_EQ(d.channel, k == 0 ? r1 : r2);
          EXPECT_EQ(d.data[0], static_cast<std::byte>((k == 0 ? 10 : 20) + got[k]));
        }
        if (round == 0) {
          ASSERT_EQ(r->arm(), Status::kOk);
        }
      }
    }
  }
  s1.join();
  s2.join();
  close(ep);
  EXPECT_EQ(got[0], kEach);
  EXPECT_EQ(got[1], kEach);
  EXPECT_GE(b1.stats().wakeups, 1u);
  EXPECT_GE(b2.stats().wakeups, 1u);
}

TEST(EndpointNotify, UpcallRunsFromPollInsteadOfQueueing) {
  UNET_REQUIRE_DEVICE();
  Endpoint a(rc_config()), b(rc_config());
  auto [ab, ba] = connect_endpoints(a, b);
  std::vector<std::uint8_t> seen;
  b.set_upcall([&, ba = ba](const Descriptor& d) {
    EXPECT_EQ(d.channel, ba);
    EXPECT_TRUE(d.is_inline());
    seen.push_back(static_cast<std::uint8_t>(d.data[0]));
  });
  for (std::uint8_t i = 0; i < 8; ++i) {
    std::byte m[1] = {static_cast<std::byte>(i)};
    ASSERT_EQ(a.send_inline(ab, m), Status::kOk);
  }
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (seen.size() < 8 && std::chrono::steady_clock::now() < deadline) {
    (void)a.poll();
    (void)b.poll();
  }
  ASSERT_EQ(seen.size(), 8u);
  for (std::uint8_t i = 0; i < 8; ++i) EXPECT_EQ(seen[i], i);
  EXPECT_EQ(b.stats().upcalls, 8u);
  Descriptor d;
  EXPECT_EQ(b.receive(d), Status::kNoResource) << "an upcalled arrival was also queued";
  // wait() counts upcalled arrivals as arrivals.
  std::thread sender([&, ab = ab] { send_later(a, ab, 1, 99, 100ms); });
  EXPECT_EQ(b.wait(10s), Status::kOk);
  sender.join();
  EXPECT_EQ(seen.back(), 99);
}

}  // namespace
}  // namespace unet::core
