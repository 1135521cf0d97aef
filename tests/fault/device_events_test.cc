// The device's asynchronous events (label fault, ci/rxe-vm --two-dev), on the rxe2/rxe3 pair the
// link-down tests break (UNET_RXE_DEVS2): veth2 down raises PORT_ERR on rxe2, up PORT_ACTIVE, and
// taking its IPv4 address away raises GID_CHANGE (the IPv4-mapped GID goes). Several endpoints on
// one device share its event queue, so each must see every event: an RC and a UD endpoint here.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "endpoint_support.h"
#include "link_down.h"
#include "netem.h"
#include "unet/core/endpoint.h"

namespace unet::test {
namespace {

using namespace std::chrono_literals;

// Calls service_channels() on every endpoint until `done` or 10 s.
template <class Done>
bool serve_until(std::vector<core::Endpoint*> eps, Done&& done) {
  const auto end = std::chrono::steady_clock::now() + 10s;
  while (!done()) {
    for (core::Endpoint* e : eps) (void)e->service_channels();
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

class DeviceEvents : public ::testing::Test {
 protected:
  void SetUp() override {
    UNET_REQUIRE_TWO_DEVICES();
    devs_ = words("UNET_RXE_DEVS2");
    ASSERT_EQ(devs_.size(), 2u) << "UNET_RXE_DEVS2";
    ASSERT_TRUE(wait_ports(devs_, "ACTIVE"));
  }
  core::EndpointConfig on(core::Transport t) {
    core::EndpointConfig c = endpoint_config(t, 32);
    c.device = devs_[0];
    return c;
  }
  std::vector<std::string> devs_;
};

TEST_F(DeviceEvents, PortDownAndUpReachEveryEndpointOnTheDevice) {
  core::Endpoint rc(on(core::Transport::kRc)), ud(on(core::Transport::kUd));
  EXPECT_TRUE(rc.port_active());
  EXPECT_TRUE(ud.port_active());
  {
    LinkGuard link(netdev_of(devs_[0]), devs_);
    ASSERT_TRUE(link.down());
    ASSERT_TRUE(serve_until({&rc, &ud}, [&] { return !rc.port_active() && !ud.port_active(); }))
        << "PORT_ERR not seen: rc " << rc.stats().port_errors << ", ud " << ud.stats().port_errors
        << " (device events " << rc.stats().device_events << ", " << ud.stats().device_events
        << ")";
    EXPECT_GE(rc.stats().port_errors, 1u);
    EXPECT_GE(ud.stats().port_errors, 1u);
    ASSERT_TRUE(link.up());
  }
  ASSERT_TRUE(serve_until({&rc, &ud}, [&] { return rc.port_active() && ud.port_active(); }))
      << "PORT_ACTIVE not seen";
  EXPECT_FALSE(rc.device_failed());
  EXPECT_FALSE(ud.device_failed());
  EXPECT_EQ(rc.stats().qp_errors, 0u);
  // The endpoints work on: a message each way over a fresh UD channel to the peer device.
  core::EndpointConfig peer_config = on(core::Transport::kUd);
  peer_config.device = devs_[1];
  core::Endpoint peer(peer_config);
  const auto [up, pu] = connect_endpoints(ud, peer);
  const std::byte hello[3] = {std::byte{1}, std::byte{2}, std::byte{3}};
  ASSERT_EQ(ud.send_inline(up, hello), Status::kOk);
  core::Descriptor d;
  ASSERT_TRUE(wait_receive(ud, peer, d));
  EXPECT_EQ(d.length, 3u);
  (void)pu;
}

TEST_F(DeviceEvents, AnAddressTakenAwayIsAGidChangeAndOurGidIsGone) {
  core::Endpoint ep(on(core::Transport::kUd));
  ASSERT_TRUE(ep.gid_current());
  const std::string dev = netdev_of(devs_[0]);
  // The IPv4 address with its prefix, as `ip -4 -o addr show` prints it ("198.18.1.1/24").
  const std::string shown = run("ip -4 -o addr show dev " + dev + " | awk '{print $4}' | head -1");
  const std::string cidr = shown.substr(0, shown.find('\n'));
  ASSERT_NE(cidr.find('/'), std::string::npos) << "no IPv4 address on " << dev << ": " << shown;
  struct Restore {
    std::string dev, cidr;
    ~Restore() { (void)run("ip addr add " + cidr + " dev " + dev + " 2>/dev/null"); }
  } restore{dev, cidr};
  ASSERT_EQ(run("ip addr del " + cidr + " dev " + dev + " && echo ok"), "ok\n");
  ASSERT_TRUE(serve_until({&ep}, [&] { return ep.stats().gid_changes >= 1 && !ep.gid_current(); }))
      << "gid_changes " << ep.stats().gid_changes << ", gid_current " << ep.gid_current();
  const std::uint64_t seen = ep.stats().gid_changes;
  ASSERT_EQ(run("ip addr add " + cidr + " dev " + dev + " && echo ok"), "ok\n");
  ASSERT_TRUE(serve_until({&ep}, [&] { return ep.stats().gid_changes > seen; }))
      << "no GID_CHANGE on re-adding";
  EXPECT_FALSE(ep.device_failed());
  EXPECT_TRUE(ep.port_active());
}

}  // namespace
}  // namespace unet::test
