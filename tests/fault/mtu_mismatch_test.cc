// Two ends with different path MTUs (label fault, ci/rxe-vm --two-dev): veth2 is set to 9000
// bytes, so rxe2's active MTU is 4096, while veth3 stays at 1500 (rxe3: 1024). Sized by its own
// MTU, rxe2's end would send 4 KiB UD packets the 1500-byte side cannot take. Each end's offer
// states its MTU and buffer size, so a UD channel between them carries at most 1024 bytes either
// way: the largest message arrives intact both ways, one byte more is refused at the sender with
// nothing changed.
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
#include "unet/verbs/device.h"

namespace unet::test {
namespace {

using namespace std::chrono_literals;

// The active MTU of rxe device `rxe`'s port 1.
std::uint32_t active_mtu(const std::string& rxe) { return verbs::Context::open(rxe)->port(1).active_mtu; }

// Sets `netdev`'s MTU for the test and puts 1500 back after, waiting each time until `rxe`'s
// port shows the MTU that follows from it.
class NetdevMtu {
 public:
  NetdevMtu(std::string rxe, std::string netdev) : rxe_(std::move(rxe)), netdev_(std::move(netdev)) {}
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

TEST(MtuMismatch, AUdChannelCarriesTheSmallerMtuAndRefusesMore) {
  UNET_REQUIRE_TWO_DEVICES();
  const std::vector<std::string> devs = words("UNET_RXE_DEVS2");
  ASSERT_EQ(devs.size(), 2u) << "UNET_RXE_DEVS2";
  NetdevMtu jumbo(devs[0], netdev_of(devs[0]));
  ASSERT_TRUE(jumbo.set(9000, 4096)) << devs[0] << " did not take the jumbo MTU";
  ASSERT_EQ(active_mtu(devs[1]), 1024u);

  core::EndpointConfig c = endpoint_config(core::Transport::kUd, 64);
  c.buffer_bytes = 4096;
  c.device = devs[0];
  core::Endpoint a(c);
  c.device = devs[1];
  core::Endpoint b(c);
  ASSERT_EQ(a.max_message(), 4096u);
  ASSERT_EQ(b.max_message(), 1024u);
  const auto [ab, ba] = connect_endpoints(a, b);
  EXPECT_EQ(a.max_message(ab), 1024u) << "the peer's MTU bounds the channel";
  EXPECT_EQ(b.max_message(ba), 1024u);

  for (int round = 0; round < 3; ++round) {
    const auto to_b = pattern(1024, round), to_a = pattern(1024, round + 100);
    ASSERT_EQ(send_bytes(a, ab, to_b), Status::kOk);
    core::Descriptor d;
    ASSERT_TRUE(wait_receive(a, b, d)) << "round " << round << ": the largest message a->b was lost";
    EXPECT_EQ(take(b, d), to_b);
    ASSERT_EQ(send_bytes(b, ba, to_a), Status::kOk);
    ASSERT_TRUE(wait_receive(b, a, d)) << "round " << round << ": the largest message b->a was lost";
    EXPECT_EQ(take(a, d), to_a);
  }
  const core::EndpointStats before = a.stats();
  EXPECT_EQ(send_bytes(a, ab, pattern(1025, 7)), Status::kInvalidArgument);
  EXPECT_EQ(send_bytes(a, ab, pattern(4096, 8)), Status::kInvalidArgument);
  EXPECT_EQ(a.stats().sent, before.sent) << "a refused send went out";
  EXPECT_EQ(b.stats().recv_errors, 0u);
  EXPECT_EQ(a.stats().send_errors, 0u);
}

}  // namespace
}  // namespace unet::test
