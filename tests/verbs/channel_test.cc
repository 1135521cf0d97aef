// Device: a completion channel's fd wakes an epoll wait when a completion arrives.
#include <gtest/gtest.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "verbs_fixture.h"

namespace unet::test {
namespace {

class Channel : public VerbsTest {};

TEST_F(Channel, CompletionWakesEpoll) {
  auto ch = std::make_shared<verbs::CompletionChannel>(ctx_);
  auto rcq = std::make_shared<verbs::CompletionQueue>(ctx_, 16, ch);
  auto receiver = make_qp(verbs::QpType::kRc, rcq), sender = make_qp(verbs::QpType::kRc);
  connect_pair(*receiver, *sender);
  Buffer dst(pd_, 64), src(pd_, 64);
  src.fill(9);
  ibv_sge rs = dst.sge(64);
  ibv_recv_wr r{};
  r.wr_id = 5;
  r.sg_list = &rs;
  r.num_sge = 1;
  ASSERT_EQ(receiver->post_recv(r), Status::kOk);
  ASSERT_EQ(rcq->request_notify(), Status::kOk);

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
    ibv_sge s = src.sge(64);
    ibv_send_wr w{};
    w.sg_list = &s;
    w.num_sge = 1;
    w.opcode = IBV_WR_SEND;
    EXPECT_EQ(sender->post_send(w), Status::kOk);
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
  EXPECT_TRUE(dst.matches(9, 64));
}

TEST_F(Channel, WaitTimesOutThenWakes) {
  auto ch = std::make_shared<verbs::CompletionChannel>(ctx_);
  auto rcq = std::make_shared<verbs::CompletionQueue>(ctx_, 16, ch);
  auto receiver = make_qp(verbs::QpType::kRc, rcq), sender = make_qp(verbs::QpType::kRc);
  connect_pair(*receiver, *sender);
  Buffer dst(pd_, 8), src(pd_, 8);
  ibv_sge rs = dst.sge(8);
  ibv_recv_wr r{};
  r.sg_list = &rs;
  r.num_sge = 1;
  ASSERT_EQ(receiver->post_recv(r), Status::kOk);
  ASSERT_EQ(rcq->request_notify(), Status::kOk);
  verbs::CompletionQueue* which = nullptr;
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(ch->wait(100ms, which), Status::kTimeout);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 90ms);
  ibv_sge s = src.sge(8);
  ibv_send_wr w{};
  w.sg_list = &s;
  w.num_sge = 1;
  w.opcode = IBV_WR_SEND;
  ASSERT_EQ(sender->post_send(w), Status::kOk);
  ASSERT_EQ(ch->wait(10s, which), Status::kOk);
  EXPECT_EQ(which, rcq.get());
  EXPECT_EQ(verbs::status_of(wait_one(*rcq, 1s)), Status::kOk);
}

}  // namespace
}  // namespace unet::test
