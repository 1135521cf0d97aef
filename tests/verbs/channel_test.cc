// Device: a completion channel's fd wakes an epoll wait when a completion arrives.
#include <gtest/gtest.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "verbs_fixture.h"

namespace unet::test {
namespace {

// A receiver whose CQ signals a completion channel, connected to a plain sender; one receive of
// 64 bytes (wr_id 5) posted and the CQ armed.
class Channel : public VerbsTest {
 protected:
  void SetUp() override {
    VerbsTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ch = std::make_shared<verbs::CompletionChannel>(ctx_);
    rcq = std::make_shared<verbs::CompletionQueue>(ctx_, 16, ch);
    receiver = make_qp(verbs::QpType::kRc, rcq);
    sender = make_qp(verbs::QpType::kRc);
    connect_pair(*receiver, *sender);
    dst = std::make_unique<Buffer>(pd_, 64);
    src = std::make_unique<Buffer>(pd_, 64);
    src->fill(9);
    auto r = dst->recv(64, 0, 5);
    ASSERT_EQ(receiver->post_recv(r.wr), Status::kOk);
    ASSERT_EQ(rcq->request_notify(), Status::kOk);
  }
  std::shared_ptr<verbs::CompletionChannel> ch;
  std::shared_ptr<verbs::CompletionQueue> rcq;
  std::unique_ptr<verbs::QueuePair> receiver, sender;
  std::unique_ptr<Buffer> dst, src;
};

TEST_F(Channel, CompletionWakesEpoll) {
  int ep = epoll_create1(EPOLL_CLOEXEC);
  ASSERT_GE(ep, 0);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = ch.get();
  ASSERT_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, ch->fd(), &ev), 0);

  // Nothing yet: a short wait times out, and the channel has no event.
  epoll_event out{};
  EXPECT_EQ(epoll_wait(ep, &out, 1, 50), 0);
  verbs::CompletionQueue* which = nullptr;
  EXPECT_EQ(ch->get_event(which), Status::kNoResource);

  std::thread t([&] {
    std::this_thread::sleep_for(100ms);
    auto s = src->send(IBV_WR_SEND, 64, 0, 0, 0);
    EXPECT_EQ(sender->post_send(s.wr), Status::kOk);
  });
  int n = epoll_wait(ep, &out, 1, 10000);
  t.join();
  close(ep);
  ASSERT_EQ(n, 1) << "epoll did not wake within 10 s";
  EXPECT_EQ(out.data.ptr, ch.get());
  ASSERT_EQ(ch->get_event(which), Status::kOk);
  EXPECT_EQ(which, rcq.get());
  verbs::WorkCompletion wc = wait_one(*rcq, 1s);
  EXPECT_EQ(verbs::status_of(wc), Status::kOk);
  EXPECT_EQ(wc.wr_id, 5u);
  EXPECT_TRUE(dst->matches(9, 64));
}

TEST_F(Channel, WaitTimesOutThenWakes) {
  verbs::CompletionQueue* which = nullptr;
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(ch->wait(100ms, which), Status::kTimeout);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 90ms);
  auto s = src->send(IBV_WR_SEND, 64, 0, 0, 0);
  ASSERT_EQ(sender->post_send(s.wr), Status::kOk);
  ASSERT_EQ(ch->wait(10s, which), Status::kOk);
  EXPECT_EQ(which, rcq.get());
  EXPECT_EQ(verbs::status_of(wait_one(*rcq, 1s)), Status::kOk);
  EXPECT_TRUE(dst->matches(9, 64));
}

// Any timeout: none at all (down to milliseconds::min()) times out at once; milliseconds::max()
// waits for the event instead of overflowing its deadline.
TEST_F(Channel, WaitTakesAnyTimeout) {
  verbs::CompletionQueue* which = nullptr;
  for (const auto t : {std::chrono::milliseconds::min(), -1ms, 0ms})
    EXPECT_EQ(ch->wait(t, which), Status::kTimeout);
  auto s = src->send(IBV_WR_SEND, 64, 0, 0, 0);
  ASSERT_EQ(sender->post_send(s.wr), Status::kOk);
  ASSERT_EQ(ch->wait(std::chrono::milliseconds::max(), which), Status::kOk);
  EXPECT_EQ(which, rcq.get());
  EXPECT_EQ(verbs::status_of(wait_one(*rcq, 1s)), Status::kOk);
  EXPECT_TRUE(dst->matches(9, 64));
}

}  // namespace
}  // namespace unet::test
