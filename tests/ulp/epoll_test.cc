// An epoll loop serving a datagram endpoint and a stream endpoint at once (label device): the
// loop sleeps in epoll_wait on their fds, wakes for arrivals and timers, and receives everything
// a peer thread sends — 200 datagrams on a port and 1 MiB on a stream, checked.
#include <gtest/gtest.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "device_env.h"
#include "endpoint_support.h"
#include "unet/ulp/datagram_endpoint.h"
#include "unet/ulp/stream_endpoint.h"

namespace unet::ulp {
namespace {

using namespace std::chrono_literals;

std::byte byte_at(std::uint64_t i) { return static_cast<std::byte>((i * 29 + (i >> 10)) & 0xFF); }

TEST(Epoll, OneLoopServesADatagramPortAndAStream) {
  UNET_REQUIRE_DEVICE();
  constexpr int kDatagrams = 200;
  constexpr std::uint64_t kBytes = 1u << 20;
  DatagramEndpoint da(test::ud_config()), db(test::ud_config());
  StreamEndpoint sa(test::ud_config()), sb(test::ud_config());
  core::ChannelOffer o1 = da.offer_peer(), o2 = db.offer_peer(), o3 = sa.offer_peer(),
                     o4 = sb.offer_peer();
  const ChannelId d_ab = da.accept_peer(o1, o2.local);
  (void)db.accept_peer(o2, o1.local);
  const ChannelId s_ab = sa.accept_peer(o3, o4.local);
  (void)sb.accept_peer(o4, o3.local);
  ASSERT_EQ(da.bind(1), Status::kOk);
  ASSERT_EQ(db.bind(2), Status::kOk);
  ASSERT_EQ(sb.listen(3), Status::kOk);

  std::atomic<bool> stop{false};
  std::atomic<int> peer_error{0};
  std::thread peer([&] {  // owns da and sa
    std::vector<std::byte> d(700), chunk(16384);
    ConnId c;
    if (sa.connect(s_ab, 3, c) != Status::kOk) return peer_error.store(1);
    int sent_d = 0;
    std::uint64_t sent_s = 0;
    bool shut = false;
    while (!stop) {
      (void)da.poll();
      (void)sa.poll();
      if (sent_d < kDatagrams) {
        for (auto& x : d) x = static_cast<std::byte>(sent_d);
        if (da.send_to(1, d_ab, 2, d) == Status::kOk) ++sent_d;
      }
      StreamState st;
      if (sa.state(c, st) == Status::kOk && st == StreamState::kEstablished && sent_s < kBytes) {
        const std::size_t n = std::min<std::uint64_t>(chunk.size(), kBytes - sent_s);
        for (std::size_t i = 0; i < n; ++i) chunk[i] = byte_at(sent_s + i);
        std::size_t took = 0;
        const Status s = sa.send(c, std::span(chunk).first(n), took);
        if (s != Status::kOk && s != Status::kNoResource) return peer_error.store(2);
        sent_s += took;
      }
      if (sent_s == kBytes && !shut) shut = sa.shutdown(c) == Status::kOk;
      std::this_thread::sleep_for(50us);  // a paced peer, so the loop below really sleeps
    }
  });

  const int ep = ::epoll_create1(0);
  ASSERT_GE(ep, 0);
  for (int fd : {db.fd(), sb.fd()}) {
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.fd = fd;
    ASSERT_EQ(::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e), 0);
  }
  int got_d = 0, bad = 0, wakeups = 0;
  std::uint64_t got_s = 0;
  bool eof = false;
  ConnId c = kNoConn;
  std::vector<std::byte> buf(kMaxDatagram);
  const auto end = std::chrono::steady_clock::now() + 60s;
  while ((got_d < kDatagrams || !eof) && std::chrono::steady_clock::now() < end) {
    // Serve everything that is there, then arm and look once more before sleeping.
    for (int pass = 0; pass < 2; ++pass) {
      ASSERT_GE(db.poll(), 0);
      ASSERT_GE(sb.poll(), 0);
      DatagramInfo info;
      while (db.recv_from(2, buf, info) == Status::kOk) {
        bad += info.length != 700 || buf[699] != static_cast<std::byte>(got_d);
        ++got_d;
      }
      if (c == kNoConn) (void)sb.accept(3, c);
      std::size_t n = 0;
      Status r = Status::kNoResource;
      while (c != kNoConn && (r = sb.recv(c, buf, n)) == Status::kOk) {
        for (std::size_t i = 0; i < n; ++i) bad += buf[i] != byte_at(got_s + i);
        got_s += n;
      }
      if (c != kNoConn && r == Status::kClosed) eof = true;
      if (pass == 0) {
        ASSERT_EQ(db.arm(), Status::kOk);
        ASSERT_EQ(sb.arm(), Status::kOk);
      }
    }
    int timeout = 100;
    for (int t : {db.next_timer_ms(), sb.next_timer_ms()})
      if (t >= 0 && t < timeout) timeout = t;
    epoll_event ev[2];
    const int ready = ::epoll_wait(ep, ev, 2, timeout);
    ASSERT_GE(ready, 0);
    wakeups += ready > 0;
  }
  stop = true;
  peer.join();
  ::close(ep);
  EXPECT_EQ(peer_error.load(), 0);
  EXPECT_EQ(got_d, kDatagrams);
  EXPECT_EQ(got_s, kBytes);
  EXPECT_TRUE(eof);
  EXPECT_EQ(bad, 0);
  EXPECT_GT(wakeups, 0) << "the loop never woke through its fds";
}

}  // namespace
}  // namespace unet::ulp
