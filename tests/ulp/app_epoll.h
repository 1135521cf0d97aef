// AppEpoll: an application's epoll holding socket fds, for the per-socket fd tests; ready()
// lists which fired, sorted, without waiting.
#pragma once

#include <gtest/gtest.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

namespace unet::test {

struct AppEpoll {
  int ep = ::epoll_create1(EPOLL_CLOEXEC);
  AppEpoll() = default;
  AppEpoll(const AppEpoll&) = delete;
  AppEpoll& operator=(const AppEpoll&) = delete;
  ~AppEpoll() { ::close(ep); }
  void add(int fd) const {
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.fd = fd;
    ASSERT_EQ(::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e), 0);
  }
  std::vector<int> ready() const {
    epoll_event ev[16];
    const int n = ::epoll_wait(ep, ev, 16, 0);
    std::vector<int> out;
    for (int i = 0; i < n; ++i) out.push_back(ev[i].data.fd);
    std::sort(out.begin(), out.end());
    return out;
  }
};

}  // namespace unet::test
