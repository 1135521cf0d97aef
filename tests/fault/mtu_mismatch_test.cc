// Two ends with different path MTUs (label fault, ci/rxe-vm --two-dev): veth2 is set to 9000
// bytes, so rxe2's active MTU is 4096, while veth3 stays at 1500 (rxe3: 1024). Sized by its own
// MTU, rxe2's end would send 4 KiB UD packets the 1500-byte side cannot take. Each end's offer
// states its MTU and buffer size, so a UD channel between them carries at most 1024 bytes either
// way: the largest message arrives intact both ways, one byte more is refused at the sender with
// nothing changed; active messages and datagrams over UD size their messages and fragments the
// same way.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "endpoint_support.h"
#include "kernel_files.h"
#include "link_down.h"
#include "netem.h"
#include "unet/core/endpoint.h"
#include "unet/uam/endpoint.h"
#include "unet/ulp/datagram_endpoint.h"
#include "unet/verbs/device.h"

namespace unet::test {
namespace {

using namespace std::chrono_literals;

// The active MTU of rxe device `rxe`'s port 1.
std::uint32_t active_mtu(const std::string& rxe) {
  return verbs::Context::open(rxe)->port(1).active_mtu;
}

// Sets `netdev`'s MTU for the test and puts 1500 back after, waiting each time until `rxe`'s
// port shows the MTU that follows from it.
class NetdevMtu {
 public:
  NetdevMtu(std::string rxe, std::string netdev)
      : rxe_(std::move(rxe)), netdev_(std::move(netdev)) {}
  ~NetdevMtu() { (void)set(1500, 1024); }
  bool set(int mtu, std::uint32_t expect) {
    (void)run("ip link set dev " + netdev_ + " mtu " + std::to_string(mtu));
    const auto end = std::chrono::steady_clock::now() + 10s;
    while (active_mtu(rxe_) != expect) {
      if (std::chrono::steady_clock::now() > end) return false;
      std::this_thread::sleep_for(20ms);
    }
    return true;
  }

 private:
  std::string rxe_, netdev_;
};

// The two devices, the first with the jumbo MTU for the test's length.
class MtuMismatch : public ::testing::Test {
 protected:
  void SetUp() override {
    UNET_REQUIRE_TWO_DEVICES();
    devs_ = words("UNET_RXE_DEVS2");
    ASSERT_EQ(devs_.size(), 2u) << "UNET_RXE_DEVS2";
    jumbo_ = std::make_unique<NetdevMtu>(devs_[0], netdev_of(devs_[0]));
    ASSERT_TRUE(jumbo_->set(9000, 4096)) << devs_[0] << " did not take the jumbo MTU";
    ASSERT_EQ(active_mtu(devs_[1]), 1024u);
  }
  // `c` on the jumbo device (0) or the other (1).
  core::EndpointConfig on(core::EndpointConfig c, int device) const {
    c.device = devs_[static_cast<std::size_t>(device)];
    return c;
  }
  std::vector<std::string> devs_;
  std::unique_ptr<NetdevMtu> jumbo_;
};

TEST_F(MtuMismatch, AUdChannelCarriesTheSmallerMtuAndRefusesMore) {
  core::EndpointConfig c = endpoint_config(core::Transport::kUd, 64);
  c.buffer_bytes = 4096;
  core::Endpoint a(on(c, 0)), b(on(c, 1));
  ASSERT_EQ(a.max_message(), 4096u);
  ASSERT_EQ(b.max_message(), 1024u);
  const auto [ab, ba] = connect_endpoints(a, b);
  EXPECT_EQ(a.max_message(ab), 1024u) << "the peer's MTU bounds the channel";
  EXPECT_EQ(b.max_message(ba), 1024u);

  for (int round = 0; round < 3; ++round) {
    const auto to_b = pattern(1024, round), to_a = pattern(1024, round + 100);
    ASSERT_EQ(send_bytes(a, ab, to_b), Status::kOk);
    core::Descriptor d;
    ASSERT_TRUE(wait_receive(a, b, d))
        << "round " << round << ": the largest message a->b was lost";
    EXPECT_EQ(take(b, d), to_b);
    ASSERT_EQ(send_bytes(b, ba, to_a), Status::kOk);
    ASSERT_TRUE(wait_receive(b, a, d))
        << "round " << round << ": the largest message b->a was lost";
    EXPECT_EQ(take(a, d), to_a);
  }
  const core::EndpointStats before = a.stats();
  EXPECT_EQ(send_bytes(a, ab, pattern(1025, 7)), Status::kInvalidArgument);
  EXPECT_EQ(send_bytes(a, ab, pattern(4096, 8)), Status::kInvalidArgument);
  EXPECT_EQ(a.stats().sent, before.sent) << "a refused send went out";
  EXPECT_EQ(b.stats().recv_errors, 0u);
  EXPECT_EQ(a.stats().send_errors, 0u);
}

// Active messages over UD across the two MTUs: each channel's payload limit is the 1024-byte
// side's, the largest request and reply arrive intact both ways, and one byte more is refused.
TEST_F(MtuMismatch, ActiveMessagesCarryTheSmallerMtu) {
  const core::EndpointConfig c = uam_config(core::Transport::kUd);
  uam::Endpoint a(on(c, 0)), b(on(c, 1));
  const core::ChannelOffer oa = a.offer_channel(), ob = b.offer_channel();
  const core::ChannelId ab = a.accept_offer(oa, ob.local), ba = b.accept_offer(ob, oa.local);
  const auto most = static_cast<std::uint32_t>(1024 - uam::header_bytes(1));
  ASSERT_EQ(a.max_payload(ab, 1), most);
  ASSERT_EQ(b.max_payload(ba, 1), most);
  EXPECT_GT(a.max_payload(1), most) << "a's own limit is its 4096-byte MTU";
  const auto request = pattern(most, 1), reply = pattern(most, 2);
  int replies = 0;
  ASSERT_EQ(b.on_request(1,
                         [&](uam::Token& t, const uam::Message& m) {
                           EXPECT_TRUE(std::equal(m.payload.begin(), m.payload.end(),
                                                  request.begin(), request.end()));
                           const std::uint64_t w = 7;
                           EXPECT_EQ(b.reply(t, 2, std::span(&w, 1), reply), Status::kOk);
                           return uam::Disposition::kDone;
                         }),
            Status::kOk);
  ASSERT_EQ(a.on_reply(2,
                       [&](const uam::Message& m) {
                         EXPECT_TRUE(std::equal(m.payload.begin(), m.payload.end(), reply.begin(),
                                                reply.end()));
                         ++replies;
                         return uam::Disposition::kDone;
                       }),
            Status::kOk);
  const std::uint64_t w = 3;
  EXPECT_EQ(a.request(ab, 1, std::span(&w, 1), pattern(most + 1, 3)), Status::kInvalidArgument);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(a.request(ab, 1, std::span(&w, 1), request), Status::kOk);
  const auto end = std::chrono::steady_clock::now() + 20s;
  while (replies < 3 && std::chrono::steady_clock::now() < end) ASSERT_GE(a.poll() + b.poll(), 0);
  EXPECT_EQ(replies, 3);
  EXPECT_EQ(b.stats().requests_handled, 3u);
  // A slow VM may resend before the ack comes; each such resend is a duplicate at b. A resend
  // that b did not see twice replaced a lost original.
  EXPECT_LE(a.stats().retransmitted, b.stats().duplicates) << "a request was lost";
  EXPECT_EQ(b.net().stats().recv_errors + a.net().stats().recv_errors, 0u);
}

// Datagrams across the two MTUs: the jumbo side fragments to the 1024-byte side's stride, and a
// 64 KiB datagram arrives whole both ways.
TEST_F(MtuMismatch, DatagramsFragmentToTheSmallerMtu) {
  ulp::DatagramEndpoint a(on(ud_config(), 0)), b(on(ud_config(), 1));
  const core::ChannelOffer oa = a.offer_peer(), ob = b.offer_peer();
  const core::ChannelId ab = a.accept_peer(oa, ob.local), ba = b.accept_peer(ob, oa.local);
  const auto st = static_cast<std::uint32_t>(1024 - ulp::kDatagramHeaderBytes);
  EXPECT_EQ(a.stride(), 4096 - ulp::kDatagramHeaderBytes);
  EXPECT_EQ(a.stride(ab), st);
  EXPECT_EQ(b.stride(ba), st);
  ASSERT_EQ(a.bind(1), Status::kOk);
  ASSERT_EQ(b.bind(2), Status::kOk);
  std::vector<std::byte> got(ulp::kMaxDatagram);
  for (int round = 0; round < 2; ++round) {
    ulp::DatagramEndpoint& from = round == 0 ? a : b;
    ulp::DatagramEndpoint& to = round == 0 ? b : a;
    const auto data = pattern(ulp::kMaxDatagram, 10 + round);
    ASSERT_EQ(from.send_to(round == 0 ? 1 : 2, round == 0 ? ab : ba, round == 0 ? 2 : 1, data),
              Status::kOk);
    ulp::DatagramInfo info;
    Status s = Status::kNoResource;
    const auto end = std::chrono::steady_clock::now() + 20s;
    while ((s = to.recv_from(round == 0 ? 2 : 1, got, info)) == Status::kNoResource &&
           std::chrono::steady_clock::now() < end)
      ASSERT_GE(a.poll() + b.poll(), 0);
    ASSERT_EQ(s, Status::kOk) << "round " << round << ": the 64 KiB datagram was lost";
    EXPECT_EQ(info.length, data.size());
    EXPECT_TRUE(std::equal(data.begin(), data.end(), got.begin())) << "round " << round;
  }
  EXPECT_EQ(a.stats().fragments_sent, ulp::fragment_count(ulp::kMaxDatagram, st));
  EXPECT_EQ(b.net().stats().recv_errors + a.net().stats().recv_errors, 0u);
}

}  // namespace
}  // namespace unet::test
