// SocketFd without a device (label unit): a pipe stands in for the endpoint's notify fd. The
// socket fd is readable exactly while the socket is set ready or the notify fd is readable, both
// level-triggered, seen through an application's own epoll; bad notify fds are refused with
// nothing left open; the destructor closes both fds.
#include "unet/ulp/socket_fd.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <vector>

#include "app_epoll.h"

namespace unet::ulp {
namespace {

int open_fds() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

// A pipe whose read end plays the notify fd.
struct Pipe {
  int fds[2] = {-1, -1};
  Pipe() { EXPECT_EQ(::pipe(fds), 0); }
  ~Pipe() {
    ::close(fds[0]);
    ::close(fds[1]);
  }
  int notify() const { return fds[0]; }
  void fire() const { ASSERT_EQ(::write(fds[1], "x", 1), 1); }
  void drain() const {
    char c;
    ASSERT_EQ(::read(fds[0], &c, 1), 1);
  }
};

using unet::test::AppEpoll;  // app_epoll.h

TEST(SocketFd, ReadableExactlyWhileSetReady) {
  Pipe notify;
  std::unique_ptr<SocketFd> a, b;
  ASSERT_EQ(SocketFd::create(notify.notify(), a), Status::kOk);
  ASSERT_EQ(SocketFd::create(notify.notify(), b), Status::kOk);
  ASSERT_NE(a->fd(), b->fd());
  AppEpoll app;
  ASSERT_GE(app.ep, 0);
  app.add(a->fd());
  app.add(b->fd());
  EXPECT_TRUE(app.ready().empty()) << "a new socket fd is not ready";
  EXPECT_FALSE(a->ready());

  a->set(true);
  EXPECT_TRUE(a->ready());
  EXPECT_EQ(app.ready(), std::vector<int>{a->fd()});
  EXPECT_EQ(app.ready(), std::vector<int>{a->fd()}) << "level-triggered: still readable";
  a->set(true);  // no change: still one event's worth, cleared by one set(false)
  a->set(false);
  EXPECT_FALSE(a->ready());
  EXPECT_TRUE(app.ready().empty());

  b->set(true);
  EXPECT_EQ(app.ready(), std::vector<int>{b->fd()});
  b->set(false);
  b->set(false);
  EXPECT_TRUE(app.ready().empty());
}

TEST(SocketFd, NotifyFdWakesEverySocketUntilDrained) {
  Pipe notify;
  std::unique_ptr<SocketFd> a, b;
  ASSERT_EQ(SocketFd::create(notify.notify(), a), Status::kOk);
  ASSERT_EQ(SocketFd::create(notify.notify(), b), Status::kOk);
  AppEpoll app;
  app.add(a->fd());
  app.add(b->fd());
  notify.fire();  // device work: every socket of the endpoint must wake so poll() runs
  EXPECT_EQ(app.ready().size(), 2u);
  EXPECT_FALSE(a->ready()) << "device work is not the socket's readiness";
  notify.drain();  // what arm() does to the completion channel
  EXPECT_TRUE(app.ready().empty());
  a->set(true);
  notify.fire();
  EXPECT_EQ(app.ready().size(), 2u);
  notify.drain();
  EXPECT_EQ(app.ready(), std::vector<int>{a->fd()});
}

TEST(SocketFd, PollableDirectlyWithoutAnAppEpoll) {
  Pipe notify;
  std::unique_ptr<SocketFd> a;
  ASSERT_EQ(SocketFd::create(notify.notify(), a), Status::kOk);
  epoll_event ev;
  EXPECT_EQ(::epoll_wait(a->fd(), &ev, 1, 0), 0);
  a->set(true);
  ASSERT_EQ(::epoll_wait(a->fd(), &ev, 1, 0), 1);
  EXPECT_TRUE(ev.events & EPOLLIN);
}

TEST(SocketFd, BadNotifyFdIsRefusedAndNothingLeaks) {
  const int before = open_fds();
  std::unique_ptr<SocketFd> out;
  EXPECT_EQ(SocketFd::create(-1, out), Status::kInvalidArgument);
  EXPECT_EQ(out, nullptr);
  EXPECT_EQ(SocketFd::create(1 << 20, out), Status::kInvalidArgument);  // not open
  // A regular file cannot be in an epoll set (EPERM).
  const int file = ::open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(file, 0);
  EXPECT_EQ(SocketFd::create(file, out), Status::kInvalidArgument);
  ::close(file);
  EXPECT_EQ(out, nullptr);
  EXPECT_EQ(open_fds(), before);
}

TEST(SocketFd, DestructorClosesBothFds) {
  Pipe notify;
  const int before = open_fds();
  {
    std::unique_ptr<SocketFd> a;
    ASSERT_EQ(SocketFd::create(notify.notify(), a), Status::kOk);
    a->set(true);
    EXPECT_EQ(open_fds(), before + 2) << "an epoll fd and an eventfd";
  }
  EXPECT_EQ(open_fds(), before);
}

TEST(SocketFd, OutOfFdsIsNoResource) {
  Pipe notify;
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &old), 0);
  const int before = open_fds();
  // Room for the epoll fd but not the eventfd (new fds take the lowest free number, which must be
  // below the limit): the epoll fd must be closed again.
  const int lowest = ::dup(notify.notify());
  ASSERT_GE(lowest, 0);
  ::close(lowest);
  rlimit tight = old;
  tight.rlim_cur = static_cast<rlim_t>(lowest + 1);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &tight), 0);
  std::unique_ptr<SocketFd> out;
  const Status s = SocketFd::create(notify.notify(), out);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &old), 0);
  EXPECT_EQ(s, Status::kNoResource);
  EXPECT_EQ(out, nullptr);
  EXPECT_EQ(open_fds(), before);
}

}  // namespace
}  // namespace unet::ulp
