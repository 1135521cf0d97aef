// Per-socket fds on a real device (label device): an application's epoll holding only socket fds
// (two datagram ports; a listener and two stream connections) reports exactly the sockets that
// are ready — data on one port or connection only, a connection in the backlog, the peer's FIN,
// a connect completing or refused with interest in kWritable — and stops reporting them once
// served. Bytes received are checked. Bad ids create no fd; unbind, close, abort and the
// destructors close them.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "app_epoll.h"
#include "device_env.h"
#include "endpoint_support.h"
#include "unet/ulp/datagram_endpoint.h"
#include "unet/ulp/socket_fd.h"
#include "unet/ulp/stream_endpoint.h"

namespace unet::ulp {
namespace {

using namespace std::chrono_literals;

int open_fds() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

// Runs `f` with no fd number left to open (RLIMIT_NOFILE at the lowest free one), and returns
// its result.
template <class F>
Status with_no_fds_left(F f) {
  rlimit old{};
  EXPECT_EQ(::getrlimit(RLIMIT_NOFILE, &old), 0);
  const int lowest = ::dup(0);
  EXPECT_GE(lowest, 0);
  ::close(lowest);
  rlimit tight = old;
  tight.rlim_cur = static_cast<rlim_t>(lowest);
  EXPECT_EQ(::setrlimit(RLIMIT_NOFILE, &tight), 0);
  const Status s = f();
  EXPECT_EQ(::setrlimit(RLIMIT_NOFILE, &old), 0);
  return s;
}

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1;
}

std::byte byte_at(std::uint64_t i, std::uint32_t seed) {
  return static_cast<std::byte>((i * 13 + (i >> 8) + seed * 101) & 0xFF);
}

std::vector<std::byte> pattern(std::size_t n, std::uint32_t seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = byte_at(i, seed);
  return v;
}

using unet::test::AppEpoll;  // app_epoll.h

// The headers' loop step — poll(), arm(), poll() — then what the app's epoll reports, read while
// the endpoint's device-work fd is quiet: device work wakes every socket fd of the endpoint, and
// is not what is being checked here. Retries (bounded) when a completion lands in between.
template <class Ep>
std::vector<int> ready_sockets(const AppEpoll& app, Ep& ep) {
  for (int i = 0; i < 500; ++i) {
    EXPECT_GE(ep.poll(), 0);
    EXPECT_EQ(ep.arm(), Status::kOk);
    EXPECT_GE(ep.poll(), 0);
    if (readable(ep.fd())) {
      std::this_thread::sleep_for(1ms);
      continue;
    }
    std::vector<int> r = app.ready();
    if (!readable(ep.fd())) return r;
  }
  ADD_FAILURE() << "the endpoint's notify fd never went quiet";
  return {};
}

// The loop of the headers, until done() or 10 s: sleep in epoll_wait on the app's socket fds (10
// ms at most: the peer, in this thread, needs polling too), then poll/arm/poll the served
// endpoint. Counts the turns epoll_wait woke for a socket fd.
template <class Ep, class Peer>
bool serve_until(const AppEpoll& app, Ep& ep, Peer& peer, const std::function<bool()>& done,
                 int* wakeups = nullptr) {
  const auto end = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < end) {
    if (peer.poll() < 0) return false;
    epoll_event ev[16];
    const int n = ::epoll_wait(app.ep, ev, 16, 10);
    if (n < 0) return false;
    if (n > 0 && wakeups) ++*wakeups;
    if (ep.poll() < 0 || ep.arm() != Status::kOk || ep.poll() < 0) return false;
    if (done()) return true;
  }
  return false;
}

// --- datagram ports ---

struct DatagramPair {
  DatagramEndpoint a{test::ud_config()}, b{test::ud_config()};
  ChannelId ab = 0;
  DatagramPair() {
    core::ChannelOffer oa = a.offer_peer(), ob = b.offer_peer();
    ab = a.accept_peer(oa, ob.local);
    (void)b.accept_peer(ob, oa.local);
  }
};

TEST(SocketFdDatagram, OnlyThePortWithADatagramIsReadable) {
  UNET_REQUIRE_DEVICE();
  DatagramPair p;
  constexpr std::uint16_t kA = 10, kB = 11;
  ASSERT_EQ(p.a.bind(1), Status::kOk);
  ASSERT_EQ(p.b.bind(kA), Status::kOk);
  ASSERT_EQ(p.b.bind(kB), Status::kOk);
  int fa = -1, fb = -1, again = -1;
  ASSERT_EQ(p.b.port_fd(kA, fa), Status::kOk);
  ASSERT_EQ(p.b.port_fd(kB, fb), Status::kOk);
  ASSERT_EQ(p.b.port_fd(kA, again), Status::kOk);
  EXPECT_EQ(again, fa) << "one fd per port";
  EXPECT_NE(fa, fb);
  EXPECT_NE(fa, p.b.fd());
  AppEpoll app;
  ASSERT_GE(app.ep, 0);
  app.add(fa);
  app.add(fb);
  EXPECT_EQ(ready_sockets(app, p.b), std::vector<int>{}) << "nothing sent yet";

  // Three datagrams to port A only: one small, one in a segment buffer, one reassembled.
  const std::size_t sizes[] = {40, 1500, 20000};
  for (std::uint32_t i = 0; i < 3; ++i)
    ASSERT_EQ(p.a.send_to(1, p.ab, kA, pattern(sizes[i], i)), Status::kOk);
  int wakeups = 0;
  ASSERT_TRUE(serve_until(
      app, p.b, p.a, [&] { return p.b.stats().delivered == 3; }, &wakeups));
  EXPECT_GT(wakeups, 0) << "the arrivals never woke the app's epoll through a socket fd";
  EXPECT_EQ(ready_sockets(app, p.b), std::vector<int>{fa});

  std::vector<std::byte> buf(kMaxDatagram);
  DatagramInfo info;
  EXPECT_EQ(p.b.recv_from(kB, buf, info), Status::kNoResource);
  for (std::uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(ready_sockets(app, p.b), std::vector<int>{fa}) << "still " << 3 - i << " waiting";
    ASSERT_EQ(p.b.recv_from(kA, buf, info), Status::kOk);
    EXPECT_EQ(info.src_port, 1);
    ASSERT_EQ(info.length, sizes[i]);
    EXPECT_TRUE(std::equal(buf.begin(), buf.begin() + info.length, pattern(sizes[i], i).begin()))
        << "datagram " << i;
  }
  EXPECT_EQ(ready_sockets(app, p.b), std::vector<int>{}) << "A is drained";

  // Then B only.
  ASSERT_EQ(p.a.send_to(1, p.ab, kB, pattern(700, 9)), Status::kOk);
  ASSERT_TRUE(serve_until(app, p.b, p.a, [&] { return p.b.stats().delivered == 4; }));
  EXPECT_EQ(ready_sockets(app, p.b), std::vector<int>{fb});
  ASSERT_EQ(p.b.recv_from(kB, buf, info), Status::kOk);
  ASSERT_EQ(info.length, 700u);
  EXPECT_TRUE(std::equal(buf.begin(), buf.begin() + 700, pattern(700, 9).begin()));
  EXPECT_EQ(ready_sockets(app, p.b), std::vector<int>{});

  EXPECT_EQ(p.a.stats().sent, 4u);
  EXPECT_EQ(p.b.stats().delivered, 4u);
  EXPECT_EQ(p.b.stats().received, 4u);
  EXPECT_EQ(p.b.stats().unbound_drops + p.b.stats().queue_full_drops + p.b.stats().malformed, 0u);
}

TEST(SocketFdDatagram, BadPortCreatesNothingAndUnbindAndDestructorClose) {
  UNET_REQUIRE_DEVICE();
  { DatagramEndpoint warm(test::ud_config()); }  // what the verbs library opens once per process
  const int baseline = open_fds();
  {
    DatagramEndpoint ep(test::ud_config());
    ASSERT_EQ(ep.bind(1), Status::kOk);
    ASSERT_EQ(ep.bind(2), Status::kOk);
    const int with_endpoint = open_fds();
    int out = -7;
    EXPECT_EQ(ep.port_fd(3, out), Status::kNotFound);
    EXPECT_EQ(out, -7) << "output untouched on failure";
    EXPECT_EQ(open_fds(), with_endpoint);

    EXPECT_EQ(with_no_fds_left([&] { return ep.port_fd(1, out); }), Status::kNoResource);
    EXPECT_EQ(out, -7);
    EXPECT_EQ(open_fds(), with_endpoint) << "nothing left open by the refusal";

    int f1 = -1, f2 = -1;
    ASSERT_EQ(ep.port_fd(1, f1), Status::kOk);
    ASSERT_EQ(ep.port_fd(2, f2), Status::kOk);
    EXPECT_EQ(open_fds(), with_endpoint + 4) << "an epoll fd and an eventfd per port";
    ASSERT_EQ(ep.unbind(1), Status::kOk);
    EXPECT_EQ(open_fds(), with_endpoint + 2);
    EXPECT_EQ(ep.port_fd(1, out), Status::kNotFound);
    EXPECT_EQ(open_fds(), with_endpoint + 2);
    // Bound again, the port gets a new fd on request.
    ASSERT_EQ(ep.bind(1), Status::kOk);
    ASSERT_EQ(ep.port_fd(1, f1), Status::kOk);
    EXPECT_EQ(open_fds(), with_endpoint + 4);
  }
  EXPECT_EQ(open_fds(), baseline) << "the destructor closes the port fds";
}

// --- streams ---

StreamConfig quiet_config() {
  StreamConfig s;
  s.send_buffer = 64 * 1024;
  s.recv_buffer = 64 * 1024;
  s.dead_peer_timeout = 60s;  // no keepalive lands while a test reads its fds
  s.connect_timeout = 5000ms;
  return s;
}

struct StreamPair {
  StreamEndpoint a{test::ud_config(), quiet_config()}, b{test::ud_config(), quiet_config()};
  ChannelId ab = 0;
  StreamPair() {
    core::ChannelOffer oa = a.offer_peer(), ob = b.offer_peer();
    ab = a.accept_peer(oa, ob.local);
    (void)b.accept_peer(ob, oa.local);
  }
  bool pump(const std::function<bool()>& done) {
    const auto end = std::chrono::steady_clock::now() + 10s;
    do {
      if (a.poll() < 0 || b.poll() < 0 || std::chrono::steady_clock::now() > end) return false;
    } while (!done());
    return true;
  }
  bool established(ConnId c) {
    StreamState s;
    return a.state(c, s) == Status::kOk && s == StreamState::kEstablished;
  }
};

TEST(SocketFdStream, ListenerAndConnectionsSignalOnlyWhenReady) {
  UNET_REQUIRE_DEVICE();
  StreamPair p;
  ASSERT_EQ(p.b.listen(80), Status::kOk);
  int lfd = -1, again = -1;
  ASSERT_EQ(p.b.listener_fd(80, lfd), Status::kOk);
  ASSERT_EQ(p.b.listener_fd(80, again), Status::kOk);
  EXPECT_EQ(again, lfd);
  AppEpoll app;
  ASSERT_GE(app.ep, 0);
  app.add(lfd);
  EXPECT_EQ(ready_sockets(app, p.b), std::vector<int>{}) << "an empty backlog";

  // Two connections come in: the listener fd fires until both are accepted.
  ConnId c1 = kNoConn, c2 = kNoConn, s1 = kNoConn, s2 = kNoConn;
  ASSERT_EQ(p.a.connect(p.ab, 80, c1), Status::kOk);
  ASSERT_EQ(p.a.connect(p.ab, 80, c2), Status::kOk);
  int wakeups = 0;
  ASSERT_TRUE(serve_until(
      app, p.b, p.a, [&] { return p.established(c1) && p.established(c2); }, &wakeups));
  EXPECT_GT(wakeups, 0);
  ASSERT_TRUE(
      serve_until(app, p.b, p.a, [&] { return ready_sockets(app, p.b) == std::vector<int>{lfd}; }));
  ASSERT_EQ(p.b.accept(80, s1), Status::kOk);
  EXPECT_EQ(ready_sockets(app, p.b), std::vector<int>{lfd}) << "one more waits";
  ASSERT_EQ(p.b.accept(80, s2), Status::kOk);
  EXPECT_EQ(ready_sockets(app, p.b), std::vector<int>{}) << "the backlog is empty";

  int f1 = -1, f2 = -1;
  ASSERT_EQ(p.b.conn_fd(s1, f1), Status::kOk);
  ASSERT_EQ(p.b.conn_fd(s2, f2), Status::kOk);
  ASSERT_EQ(p.b.conn_fd(s1, again), Status::kOk);
  EXPECT_EQ(again, f1);
  app.add(f1);
  app.add(f2);
  EXPECT_EQ(p.b.readiness(s1), kWritable) << "established, nothing to read";
  EXPECT_EQ(ready_sockets(app, p.b), std::vector<int>{}) << "the default interest is kReadable";

  // Data on the first connection only.
  constexpr std::size_t kBytes = 3000;
  const std::vector<std::byte> data = pattern(kBytes, 5);
  std::size_t took = 0;
  ASSERT_EQ(p.a.send(c1, data, took), Status::kOk);
  ASSERT_EQ(took, kBytes);
  ASSERT_TRUE(serve_until(
      app, p.b, p.a,
      [&] { return p.b.stats(s1)->bytes_received + p.b.stats(s2)->bytes_received == kBytes; },
      &wakeups));
  if (p.b.stats(s2)->bytes_received ==
      kBytes) {  // accepted the other way round: s1 is c1's from now
    std::swap(s1, s2);
    std::swap(f1, f2);
  }
  EXPECT_EQ(ready_sockets(app, p.b), std::vector<int>{f1});
  EXPECT_EQ(p.b.readiness(s1), kReadable | kWritable);
  EXPECT_EQ(p.b.readiness(s2), kWritable);
  std::vector<std::byte> in(kBytes + 100);
  std::size_t got = 0;
  EXPECT_EQ(p.b.recv(s2, in, got), Status::kNoResource);
  ASSERT_EQ(p.b.recv(s1, std::span(in).first(1000), got), Status::kOk);
  ASSERT_EQ(got, 1000u);
  EXPECT_EQ(ready_sockets(app, p.b), std::vector<int>{f1}) << "2000 bytes still unread";
  ASSERT_EQ(p.b.recv(s1, std::span(in).subspan(1000), got), Status::kOk);
  ASSERT_EQ(got, kBytes - 1000);
  EXPECT_TRUE(std::equal(data.begin(), data.end(), in.begin()));
  EXPECT_EQ(ready_sockets(app, p.b), std::vector<int>{}) << "s1 drained";
  EXPECT_EQ(p.b.stats(s1)->bytes_received, kBytes);
  EXPECT_EQ(p.b.stats(s2)->bytes_received, 0u);
  EXPECT_EQ(p.a.stats(c1)->bytes_sent, kBytes);

  // The peer's FIN on the second: readable, and stays so (end of stream is level-triggered).
  ASSERT_EQ(p.a.shutdown(c2), Status::kOk);
  ASSERT_TRUE(serve_until(app, p.b, p.a, [&] { return (p.b.readiness(s2) & kReadable) != 0; }));
  EXPECT_EQ(ready_sockets(app, p.b), std::vector<int>{f2});
  EXPECT_EQ(p.b.recv(s2, in, got), Status::kClosed);
  EXPECT_EQ(got, 0u);
  EXPECT_EQ(ready_sockets(app, p.b), std::vector<int>{f2}) << "end of stream stays readable";

  // Interest in kWritable: s1 has room, so its fd fires at once; dropping the interest clears it.
  ASSERT_EQ(p.b.set_interest(s1, kReadable | kWritable), Status::kOk);
  EXPECT_EQ(ready_sockets(app, p.b), (std::vector<int>{std::min(f1, f2), std::max(f1, f2)}));
  ASSERT_EQ(p.b.set_interest(s1, kReadable), Status::kOk);
  EXPECT_EQ(ready_sockets(app, p.b), std::vector<int>{f2});

  // After our own shutdown s1 is no longer writable.
  ASSERT_EQ(p.b.set_interest(s1, kWritable), Status::kOk);
  EXPECT_EQ(ready_sockets(app, p.b), (std::vector<int>{std::min(f1, f2), std::max(f1, f2)}));
  ASSERT_EQ(p.b.shutdown(s1), Status::kOk);
  EXPECT_EQ(p.b.readiness(s1) & kWritable, 0u);
  EXPECT_EQ(ready_sockets(app, p.b), std::vector<int>{f2});
}

TEST(SocketFdStream, ConnectShowsAsWritableEitherWay) {
  UNET_REQUIRE_DEVICE();
  StreamPair p;
  ASSERT_EQ(p.b.listen(80), Status::kOk);
  AppEpoll app;  // a's side: it connects
  ASSERT_GE(app.ep, 0);
  ConnId ok = kNoConn, refused = kNoConn;
  ASSERT_EQ(p.a.connect(p.ab, 80, ok), Status::kOk);
  ASSERT_EQ(p.a.connect(p.ab, 81, refused), Status::kOk);  // nobody listens: RST
  int fok = -1, fref = -1;
  ASSERT_EQ(p.a.conn_fd(ok, fok), Status::kOk);
  ASSERT_EQ(p.a.conn_fd(refused, fref), Status::kOk);
  ASSERT_EQ(p.a.set_interest(ok, kWritable), Status::kOk);
  ASSERT_EQ(p.a.set_interest(refused, kWritable), Status::kOk);
  app.add(fok);
  app.add(fref);
  // b has not polled: no SYN-ACK or RST can have come back.
  EXPECT_EQ(p.a.readiness(ok), 0u);
  EXPECT_EQ(ready_sockets(app, p.a), std::vector<int>{}) << "both connects still in progress";

  int wakeups = 0;
  ASSERT_TRUE(serve_until(
      app, p.a, p.b, [&] { return p.established(ok) && (p.a.readiness(refused) & kWritable) != 0; },
      &wakeups));
  EXPECT_GT(wakeups, 0);
  EXPECT_EQ(ready_sockets(app, p.a), (std::vector<int>{std::min(fok, fref), std::max(fok, fref)}));
  EXPECT_EQ(p.a.readiness(ok), kWritable);
  EXPECT_EQ(p.a.readiness(refused), kReadable | kWritable) << "failed: both, as TCP's POLLERR";
  std::size_t took = 0;
  EXPECT_EQ(p.a.send(refused, pattern(10, 1), took), Status::kClosed)
      << "the refusal, reported by send";
  EXPECT_EQ(p.a.send(ok, pattern(10, 1), took), Status::kOk);
  EXPECT_EQ(took, 10u);
  EXPECT_EQ(p.b.stats().refused_syn, 1u);

  // abort() closes the fd (the id is invalid after it); the epoll forgets it.
  ASSERT_EQ(p.a.abort(refused), Status::kOk);
  EXPECT_EQ(ready_sockets(app, p.a), std::vector<int>{fok});
}

TEST(SocketFdStream, BadIdsCreateNothingAndCloseAbortAndDestructorClose) {
  UNET_REQUIRE_DEVICE();
  { StreamEndpoint warm(test::ud_config(), quiet_config()); }  // what the verbs library opens once
  const int baseline = open_fds();
  {
    StreamPair p;
    const int with_endpoints = open_fds();
    int out = -7;
    EXPECT_EQ(p.b.conn_fd(kNoConn, out), Status::kNotFound);
    EXPECT_EQ(p.b.conn_fd(0, out), Status::kNotFound) << "a free slot is no connection";
    EXPECT_EQ(p.b.conn_fd(quiet_config().max_connections, out), Status::kNotFound);
    EXPECT_EQ(p.b.listener_fd(80, out), Status::kNotFound) << "nobody listens";
    EXPECT_EQ(out, -7) << "output untouched on failure";
    EXPECT_EQ(p.b.set_interest(kNoConn, kReadable), Status::kNotFound);
    EXPECT_EQ(p.b.readiness(kNoConn), 0u);
    EXPECT_EQ(open_fds(), with_endpoints);

    ASSERT_EQ(p.b.listen(80), Status::kOk);
    EXPECT_EQ(with_no_fds_left([&] { return p.b.listener_fd(80, out); }), Status::kNoResource);
    EXPECT_EQ(open_fds(), with_endpoints) << "nothing left open by the refusal";
    int lfd = -1;
    ASSERT_EQ(p.b.listener_fd(80, lfd), Status::kOk);
    ConnId c1, c2, c3, s1 = kNoConn;
    ASSERT_EQ(p.a.connect(p.ab, 80, c1), Status::kOk);
    ASSERT_EQ(p.a.connect(p.ab, 80, c2), Status::kOk);
    ASSERT_EQ(p.a.connect(p.ab, 80, c3), Status::kOk);
    ASSERT_TRUE(p.pump([&] { return p.b.accept(80, s1) == Status::kOk; }));
    EXPECT_EQ(p.a.set_interest(c1, kReadable | kWritable | 4u), Status::kInvalidArgument);
    EXPECT_EQ(with_no_fds_left([&] { return p.a.conn_fd(c1, out); }), Status::kNoResource);
    EXPECT_EQ(out, -7);
    EXPECT_EQ(open_fds(), with_endpoints + 2) << "only the listener fd";
    int f1, f2, f3, fs;
    ASSERT_EQ(p.a.conn_fd(c1, f1), Status::kOk);
    ASSERT_EQ(p.a.conn_fd(c2, f2), Status::kOk);
    ASSERT_EQ(p.a.conn_fd(c3, f3), Status::kOk);
    ASSERT_EQ(p.b.conn_fd(s1, fs), Status::kOk);
    EXPECT_EQ(open_fds(), with_endpoints + 2 * 5);
    ASSERT_EQ(p.a.close(c1), Status::kOk);  // finishes in the background, but the id is gone
    EXPECT_EQ(open_fds(), with_endpoints + 2 * 4);
    EXPECT_EQ(p.a.conn_fd(c1, out), Status::kNotFound);
    ASSERT_EQ(p.a.abort(c2), Status::kOk);
    EXPECT_EQ(open_fds(), with_endpoints + 2 * 3);
    EXPECT_EQ(p.a.conn_fd(c2, out), Status::kNotFound);
    EXPECT_EQ(out, -7);
    // c3, s1 and the listener stay open until the destructors.
  }
  EXPECT_EQ(open_fds(), baseline) << "the destructors close the conn and listener fds";
}

}  // namespace
}  // namespace unet::ulp
