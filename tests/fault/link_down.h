// Link down (label fault), shared by link_down_{core,uam,stream}_test.cc: the interface under a
// connection is taken down (`ip link set DEV down`, done here with SIOCSIFFLAGS) in the middle of
// traffic, for core RC, uam over UD and the ulp stream (over UD). Under ci/rxe-vm --two-dev the
// broken pair is rxe2 (veth2) <-> rxe3 (veth3), a veth pair of its own (UNET_RXE_DEVS2): veth2 down
// takes veth3's carrier with it, so both ends lose their link, while the healthy pair runs on rxe0
// <-> rxe1 (veth0/veth1, UNET_RXE_DEVS). On both ends of the broken pair:
//   - every operation completes exactly once: those in flight at the link-down with an error
//     unless they completed before it, those issued after it with an error, all within the
//     bound the configuration promises (measured from the link-down);
//   - once the failure is reported, later operations fail at once;
//   - a second, healthy pair in the same process carries checked traffic throughout;
//   - the channels then close cleanly, and once the link is back new channels work.
// What rxe does (Debian 6.1, seen in the VM): both ports go PORT_DOWN at once (rxe2 "Disabled",
// rxe3 "Polling"), the GIDs stay. The end whose netdev went down has no route any more: the next
// packet its RC QP builds fails at once (kLocalQpOperationError, within milliseconds), and so do
// UD sends, which put that endpoint's one UD QP in the error state: core resets it and moves it
// back to RTS, so once the link is back a new channel between the same endpoints works. The other
// end only loses its carrier: the kernel flushes its neighbour (ARP) entries, so its packets wait
// in the neighbour queue for a resolution that fails after mcast_solicit * retrans_time_ms (3 s by
// default) before they are dropped; RC reports kRetryExceeded only after that wait on every try
// (times in tests/README.md): the RC test sets retrans_time_ms to 100 to keep it short, and its
// bound includes it.
// uam over UD fails both ends on its own timers (kRetryExceeded), the stream on its dead-peer
// timeout (kTimeout). A new RC channel cannot be opened while the link is down (RTR:
// ENETUNREACH). A LinkGuard brings the link back up on every path and waits for both ports to be
// ACTIVE again.
#pragma once

#include <gtest/gtest.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "endpoint_support.h"
#include "failure_support.h"
#include "kernel_files.h"
#include "unet/core/endpoint.h"

namespace unet::test {

// The words of an environment variable ("rxe2 rxe3").
inline std::vector<std::string> words(const char* var) {
  std::vector<std::string> out;
  const char* v = std::getenv(var);
  std::istringstream in(v ? v : "");
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The netdev under an rxe device's port 1 (the one its RoCEv2 GID, index 1, belongs to).
inline std::string netdev_of(const std::string& rxe) {
  return read_first_line("/sys/class/infiniband/" + rxe + "/ports/1/gid_attrs/ndevs/1");
}

// Port 1's state as sysfs prints it without the number: "ACTIVE", "DOWN", ...
inline std::string port_state(const std::string& rxe) {
  const std::string s = read_first_line("/sys/class/infiniband/" + rxe + "/ports/1/state");
  const auto at = s.find(": ");
  return at == std::string::npos ? s : s.substr(at + 2);
}

// Waits up to `timeout` for every device's port to be in `state`.
inline bool wait_ports(const std::vector<std::string>& devs, const std::string& state,
                       std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto until = Clock::now() + timeout;
  for (;;) {
    bool all = true;
    for (const auto& d : devs) all = all && port_state(d) == state;
    if (all) return true;
    if (Clock::now() > until) return false;
    ::usleep(10000);
  }
}

// `ip link set DEV up|down`, without a process: SIOCGIFFLAGS, then SIOCSIFFLAGS.
inline bool set_link(const std::string& dev, bool up) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  ifreq r{};
  std::strncpy(r.ifr_name, dev.c_str(), IFNAMSIZ - 1);
  bool ok = ::ioctl(fd, SIOCGIFFLAGS, &r) == 0;
  if (ok) {
    r.ifr_flags = static_cast<short>(up ? (r.ifr_flags | IFF_UP) : (r.ifr_flags & ~IFF_UP));
    ok = ::ioctl(fd, SIOCSIFFLAGS, &r) == 0;
  }
  ::close(fd);
  return ok;
}

// A neighbour (ARP) setting of a netdev, /proc/sys/net/ipv4/neigh/DEV/NAME; -1 when unreadable.
inline long neigh_setting(const std::string& dev, const char* name) {
  return read_long("/proc/sys/net/ipv4/neigh/" + dev + "/" + name);
}
inline bool set_neigh_setting(const std::string& dev, const char* name, long value) {
  return write_file("/proc/sys/net/ipv4/neigh/" + dev + "/" + name, std::to_string(value) + "\n");
}

// Sets the neighbour retransmission time of some netdevs for its lifetime, and puts the old
// values back after.
class NeighbourRetrans {
 public:
  NeighbourRetrans(std::vector<std::string> devs, long ms) : devs_(std::move(devs)) {
    for (const auto& d : devs_) {
      old_.push_back(neigh_setting(d, "retrans_time_ms"));
      ok_ = ok_ && old_.back() > 0 && set_neigh_setting(d, "retrans_time_ms", ms);
    }
  }
  ~NeighbourRetrans() {
    for (std::size_t i = 0; i < devs_.size(); ++i)
      if (old_[i] > 0) (void)set_neigh_setting(devs_[i], "retrans_time_ms", old_[i]);
  }
  NeighbourRetrans(const NeighbourRetrans&) = delete;
  NeighbourRetrans& operator=(const NeighbourRetrans&) = delete;
  bool ok() const { return ok_; }

 private:
  std::vector<std::string> devs_;
  std::vector<long> old_;
  bool ok_ = true;
};

// How long the kernel holds a packet to a neighbour it is resolving before it drops it (the
// failed resolution): mcast_solicit probes, retrans_time_ms apart.
inline std::chrono::milliseconds neighbour_hold(const std::string& dev) {
  return std::chrono::milliseconds(neigh_setting(dev, "mcast_solicit") *
                                   neigh_setting(dev, "retrans_time_ms"));
}

// Takes a netdev down on down() and brings it up again on up() or, whatever happened, on
// destruction, waiting until the rxe ports on it and on its veth peer are ACTIVE again, so later
// tests find the link as they expect.
class LinkGuard {
 public:
  LinkGuard(std::string netdev, std::vector<std::string> rxes)
      : dev_(std::move(netdev)), rxes_(std::move(rxes)) {}
  ~LinkGuard() {
    if (down_) (void)up();
  }
  LinkGuard(const LinkGuard&) = delete;
  LinkGuard& operator=(const LinkGuard&) = delete;
  [[nodiscard]] bool down() { return down_ = set_link(dev_, false); }
  [[nodiscard]] bool up() {
    if (!set_link(dev_, true)) {
      std::fprintf(stderr, "link_down: could not bring %s up again\n", dev_.c_str());
      return false;
    }
    down_ = false;
    if (wait_ports(rxes_, "ACTIVE")) return true;
    std::fprintf(stderr, "link_down: %s up, but the rxe ports are not ACTIVE\n", dev_.c_str());
    return false;
  }

 private:
  std::string dev_;
  std::vector<std::string> rxes_;
  bool down_ = false;
};

class LinkDown : public ::testing::Test {
 protected:
  void SetUp() override {
    broken_ = words("UNET_RXE_DEVS2");
    healthy_ = words("UNET_RXE_DEVS");
    if (broken_.size() != 2 || healthy_.size() != 2) {
      if (device_required())
        FAIL() << "UNET_REQUIRE_DEVICE=1 but UNET_RXE_DEVS2 is not two devices";
      GTEST_SKIP() << "needs two independent rxe pairs across veth pairs: ci/rxe-vm --two-dev";
    }
    netdev_ = netdev_of(broken_[0]);
    peer_netdev_ = netdev_of(broken_[1]);
    ASSERT_FALSE(netdev_.empty()) << "no netdev under " << broken_[0];
    ASSERT_FALSE(peer_netdev_.empty()) << "no netdev under " << broken_[1];
    ASSERT_TRUE(wait_ports(all(), "ACTIVE", std::chrono::seconds(2)))
        << "the ports are not all ACTIVE before the test";
  }
  std::vector<std::string> all() const {
    return {broken_[0], broken_[1], healthy_[0], healthy_[1]};
  }
  static core::EndpointConfig on(const std::string& dev, core::EndpointConfig c) {
    c.device = dev;
    return c;
  }
  // After the link went down: both broken ports DOWN, both healthy ones still ACTIVE.
  void expect_port_states() const {
    EXPECT_TRUE(wait_ports({broken_[0], broken_[1]}, "DOWN", std::chrono::seconds(2)))
        << broken_[0] << " " << port_state(broken_[0]) << ", " << broken_[1] << " "
        << port_state(broken_[1]);
    EXPECT_EQ(port_state(healthy_[0]), "ACTIVE");
    EXPECT_EQ(port_state(healthy_[1]), "ACTIVE");
  }
  std::vector<std::string> broken_, healthy_;
  std::string netdev_, peer_netdev_;  // the one taken down, and its veth peer
};

}  // namespace unet::test
