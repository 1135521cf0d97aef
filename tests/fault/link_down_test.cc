// Link down (label fault): the interface under a connection is taken down (`ip link set DEV
// down`, done here with SIOCSIFFLAGS) in the middle of traffic, for core RC, uam over UD and the
// ulp stream (over UD). Under ci/rxe-vm --two-dev the broken pair is rxe2 (veth2) <-> rxe3
// (veth3), a veth pair of its own (UNET_RXE_DEVS2): veth2 down takes veth3's carrier with it, so
// both ends lose their link, while the healthy pair runs on rxe0 <-> rxe1 (veth0/veth1,
// UNET_RXE_DEVS). On both ends of the broken pair:
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
// back to RTS, so once the link is back a new channel between the same endpoints works. The other end only
// loses its carrier: the kernel flushes its neighbour (ARP) entries, so its packets wait in the
// neighbour queue for a resolution that fails after mcast_solicit * retrans_time_ms (3 s by
// default) before they are dropped; RC reports kRetryExceeded only after that (6-9 s seen with the
// defaults, 0.8-1 s with 100 ms), which the RC test sets to keep short, and its bound includes.
// uam over UD fails both ends on its own timers (kRetryExceeded), the stream on its dead-peer
// timeout (kTimeout). A new RC channel cannot be opened while the link is down (RTR:
// ENETUNREACH). A LinkGuard brings the link back up on every path and waits for both ports to be
// ACTIVE again.
#include <gtest/gtest.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "endpoint_support.h"
#include "failure_support.h"
#include "kernel_files.h"
#include "peer_protocol.h"
#include "unet/core/endpoint.h"
#include "unet/core/remote_token.h"
#include "unet/uam/endpoint.h"
#include "unet/ulp/stream_endpoint.h"
#include "unet/verbs/error.h"

namespace unet::test {
namespace {

using namespace std::chrono_literals;
using core::ChannelId;

// The words of an environment variable ("rxe2 rxe3").
std::vector<std::string> words(const char* var) {
  std::vector<std::string> out;
  const char* v = std::getenv(var);
  std::istringstream in(v ? v : "");
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The netdev under an rxe device's port 1 (the one its RoCEv2 GID, index 1, belongs to).
std::string netdev_of(const std::string& rxe) {
  return read_first_line("/sys/class/infiniband/" + rxe + "/ports/1/gid_attrs/ndevs/1");
}

// Port 1's state as sysfs prints it without the number: "ACTIVE", "DOWN", ...
std::string port_state(const std::string& rxe) {
  const std::string s = read_first_line("/sys/class/infiniband/" + rxe + "/ports/1/state");
  const auto at = s.find(": ");
  return at == std::string::npos ? s : s.substr(at + 2);
}

// Waits up to `timeout` for every device's port to be in `state`.
bool wait_ports(const std::vector<std::string>& devs, const std::string& state,
                std::chrono::milliseconds timeout = 10s) {
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
bool set_link(const std::string& dev, bool up) {
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
long neigh_setting(const std::string& dev, const char* name) {
  return read_long("/proc/sys/net/ipv4/neigh/" + dev + "/" + name);
}
bool set_neigh_setting(const std::string& dev, const char* name, long value) {
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
std::chrono::milliseconds neighbour_hold(const std::string& dev) {
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
      std::fprintf(stderr, "link_down_test: could not bring %s up again\n", dev_.c_str());
      return false;
    }
    down_ = false;
    if (wait_ports(rxes_, "ACTIVE")) return true;
    std::fprintf(stderr, "link_down_test: %s up, but the rxe ports are not ACTIVE\n", dev_.c_str());
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
    ASSERT_TRUE(wait_ports(all(), "ACTIVE", 2s)) << "the ports are not all ACTIVE before the test";
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
    EXPECT_TRUE(wait_ports({broken_[0], broken_[1]}, "DOWN", 2s))
        << broken_[0] << " " << port_state(broken_[0]) << ", " << broken_[1] << " "
        << port_state(broken_[1]);
    EXPECT_EQ(port_state(healthy_[0]), "ACTIVE");
    EXPECT_EQ(port_state(healthy_[1]), "ACTIVE");
  }
  std::vector<std::string> broken_, healthy_;
  std::string netdev_, peer_netdev_;  // the one taken down, and its veth peer
};

// One end of the broken RC pair: RDMA WRITEs into the other end's window, kInFlight at a time.
struct Writer {
  static constexpr std::uint64_t kChunk = 4096, kInFlight = 16, kWindow = 1 << 20;
  core::Endpoint& ep;
  ChannelId ch;
  core::RemoteToken window;
  std::vector<std::byte> src = std::vector<std::byte>(kChunk, std::byte{0x5a});
  std::uint64_t issued = 0, ok = 0, failed = 0;
  Status first_error = Status::kOk;
  double done_ms = -1;  // when the last outstanding write completed, after the link-down

  std::uint64_t outstanding() const { return issued - ok - failed; }
  void issue() {
    while (outstanding() < kInFlight) {
      const std::uint64_t off = (issued % (kWindow / kChunk)) * kChunk;
      if (ep.write(ch, src.data(), kChunk, window, off, issued) != Status::kOk) return;
      ++issued;
    }
  }
  void take() {
    core::OpCompletion c;
    while (ep.completion(c) == Status::kOk) {
      if (c.status == Status::kOk) {
        ++ok;
      } else {
        ++failed;
        if (first_error == Status::kOk) first_error = c.status;
      }
    }
  }
};

TEST_F(LinkDown, CoreRcOutstandingWritesFailInBoundAndAHealthyPairKeepsWorking) {
  core::EndpointConfig cfg = endpoint_config(core::Transport::kRc);
  cfg.mode = core::Mode::kDirectAccess;
  core::Endpoint x(on(broken_[0], cfg)), y(on(broken_[1], cfg));
  const auto [xy, yx] = connect_endpoints(x, y);
  std::vector<std::byte> wx(Writer::kWindow), wy(Writer::kWindow);
  core::RemoteToken tx, ty;
  ASSERT_EQ(x.grant(wx.data(), wx.size(), core::kRemoteWrite, tx), Status::kOk);
  ASSERT_EQ(y.grant(wy.data(), wy.size(), core::kRemoteWrite, ty), Status::kOk);
  Writer w[2] = {{x, xy, ty}, {y, yx, tx}};  // each end writes into the other's window
  HealthyCorePair healthy(on(healthy_[0], endpoint_config(core::Transport::kRc)),
                          on(healthy_[1], endpoint_config(core::Transport::kRc)));
  // See the top of the file: the end that loses its carrier waits for neighbour resolution on
  // every try; 100 ms between ARP probes instead of 1 s keeps the test short.
  NeighbourRetrans fast_arp({netdev_, peer_netdev_}, 100);
  ASSERT_TRUE(fast_arp.ok()) << "cannot set retrans_time_ms on " << netdev_ << " and "
                             << peer_netdev_;
  LinkGuard link(netdev_, {broken_[0], broken_[1]});

  auto progress = [&] {
    for (Writer& s : w) {
      if (s.ep.poll() < 0) return false;
      s.take();
    }
    return healthy.step();
  };
  const auto start = Clock::now();
  while ((w[0].ok < 500 || w[1].ok < 500) && Clock::now() - start < 60s) {
    for (Writer& s : w) s.issue();
    ASSERT_TRUE(progress());
  }
  ASSERT_GE(w[0].ok, 500u) << "no traffic before the link-down";
  ASSERT_GE(w[1].ok, 500u) << "no traffic before the link-down";
  const std::uint64_t healthy_before = healthy.delivered;
  ASSERT_TRUE(link.down()) << "cannot take " << netdev_ << " down (not root?)";
  const auto downed = Clock::now();
  // Writes in flight at the link-down may have completed before it; a full window issued now is
  // outstanding across a dead link for certain.
  std::uint64_t at_down[2];
  for (int i = 0; i < 2; ++i) {
    w[i].issue();
    at_down[i] = w[i].outstanding();
  }
  while ((w[0].outstanding() > 0 || w[1].outstanding() > 0) && Clock::now() - downed < 30s) {
    ASSERT_TRUE(progress());
    for (Writer& s : w)
      if (s.outstanding() == 0 && s.done_ms < 0) s.done_ms = ms_since(downed);
  }
  for (Writer& s : w)
    if (s.done_ms < 0) s.done_ms = ms_since(downed);
  // The end whose netdev went down has no route: its QP fails at the next packet it sends. The
  // other end loses only its carrier: its packets wait in the neighbour queue while the kernel
  // tries to resolve the lost peer, and are dropped when that fails; each of the retry_count + 1
  // tries may wait that long on top of its ack timeout.
  const std::chrono::milliseconds bounds[2] = {
      rc_bound(cfg), rc_bound(cfg) + (cfg.retry_count + 1) * neighbour_hold(peer_netdev_)};
  const Status expected[2] = {Status::kLocalQpOperationError, Status::kRetryExceeded};
  for (int i = 0; i < 2; ++i) {
    Writer& s = w[i];
    const auto bound = bounds[i];
    std::printf(
        "link down, core RC %s->%s: %llu writes outstanding after the link-down; all %llu issued "
        "completed (%llu ok, %llu failed, first error: %s) %.0f ms after it (bound %lld ms)\n",
        broken_[i].c_str(), broken_[1 - i].c_str(), static_cast<unsigned long long>(at_down[i]),
        static_cast<unsigned long long>(s.issued), static_cast<unsigned long long>(s.ok),
        static_cast<unsigned long long>(s.failed), std::string(to_string(s.first_error)).c_str(),
        s.done_ms, static_cast<long long>(bound.count()));
    EXPECT_EQ(s.ok + s.failed, s.issued) << broken_[i];  // each exactly once
    EXPECT_GE(s.failed, at_down[i]) << broken_[i];       // at least the window issued after it
    EXPECT_EQ(s.first_error, expected[i]) << broken_[i];
    EXPECT_LE(s.done_ms, static_cast<double>(bound.count())) << broken_[i];
    EXPECT_NE(s.ep.channel_status(s.ch), Status::kOk) << broken_[i];
    // Later operations fail at once.
    EXPECT_NE(s.ep.write(s.ch, s.src.data(), Writer::kChunk, s.window, 0, s.issued), Status::kOk);
    EXPECT_NE(s.ep.send_inline(s.ch, std::as_bytes(std::span(&s.issued, 1))), Status::kOk);
  }
  std::printf("link down, core RC: healthy pair %s->%s carried %llu messages meanwhile\n",
              healthy_[0].c_str(), healthy_[1].c_str(),
              static_cast<unsigned long long>(healthy.delivered - healthy_before));
  expect_port_states();
  // A new channel while the link is down: moving its QP to RTR needs a route to the peer.
  try {
    (void)connect_endpoints(x, y);
    ADD_FAILURE() << "a channel opened across the downed link";
  } catch (const verbs::Error& e) {
    std::printf("link down, core RC: a new channel while down: %s\n", e.what());
    EXPECT_EQ(e.error_number(), ENETUNREACH) << e.what();
  }
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(healthy.step());
  EXPECT_GT(healthy.delivered, healthy_before);
  EXPECT_EQ(x.close_channel(xy), Status::kOk);
  EXPECT_EQ(y.close_channel(yx), Status::kOk);
  // The link back: a new channel between the same endpoints carries a checked message.
  ASSERT_TRUE(link.up());
  const auto [nx, ny] = connect_endpoints(x, y);
  const std::uint64_t v = 0x600dULL;
  ASSERT_EQ(x.send_inline(nx, std::as_bytes(std::span(&v, 1))), Status::kOk);
  core::Descriptor d;
  ASSERT_TRUE(wait_receive(x, y, d));
  std::uint64_t got = 0;
  std::memcpy(&got, d.inline_payload().data(), sizeof got);
  EXPECT_EQ(d.channel, ny);
  EXPECT_EQ(got, v);
}

// One end of the broken uam pair: requests to the other end, which echoes them.
struct Requester {
  uam::Endpoint& ep;
  ChannelId ch;
  std::uint64_t issued = 0, ok = 0, failed = 0, replies = 0;
  Status first_error = Status::kOk;
  double failed_ms = -1;  // when the channel reported the failure, after the link-down

  void issue() {
    for (std::uint64_t k = issued; ep.request(ch, kEcho, std::span(&k, 1)) == Status::kOk;
         k = ++issued) {
    }
  }
};

// uam over UD: requests outstanding across the dead link, from both ends, all complete with an
// error within uam's retransmission bound; a healthy uam UD pair keeps answering.
TEST_F(LinkDown, UamUdOutstandingRequestsFailInBoundAndAHealthyPairKeepsAnswering) {
  const core::EndpointConfig cfg = uam_config(core::Transport::kUd);
  uam::Endpoint x(on(broken_[0], cfg)), y(on(broken_[1], cfg)), ha(on(healthy_[0], cfg)),
      hb(on(healthy_[1], cfg));
  core::ChannelOffer ox = x.offer_channel(), oy = y.offer_channel();
  Requester r[2] = {{x, x.accept_offer(ox, oy.local)}, {y, y.accept_offer(oy, ox.local)}};
  core::ChannelOffer oa = ha.offer_channel(), ob = hb.offer_channel();
  const ChannelId hab = ha.accept_offer(oa, ob.local);
  (void)hb.accept_offer(ob, oa.local);
  for (uam::Endpoint* e : {&x, &y, &hb})
    ASSERT_EQ(e->on_request(kEcho,
                            [e](uam::Token& tok, const uam::Message& m) {
                              (void)e->reply(tok, kEchoReply, m.args, {});
                              return uam::Disposition::kDone;
                            }),
              Status::kOk);
  std::uint64_t healthy_replies = 0, healthy_done = 0, healthy_next = 0, healthy_bad = 0;
  for (Requester& s : r) {
    ASSERT_EQ(s.ep.on_reply(kEchoReply,
                            [&s](const uam::Message&) {
                              ++s.replies;
                              return uam::Disposition::kDone;
                            }),
              Status::kOk);
    s.ep.on_completion([&s](ChannelId, std::uint64_t, Status st) {
      if (st == Status::kOk) {
        ++s.ok;
      } else {
        ++s.failed;
        if (s.first_error == Status::kOk) s.first_error = st;
      }
    });
  }
  ASSERT_EQ(ha.on_reply(kEchoReply,
                        [&](const uam::Message& m) {  // checked: the echo of the word sent
                          healthy_bad += m.args.size() != 1 || m.args[0] != healthy_replies;
                          ++healthy_replies;
                          return uam::Disposition::kDone;
                        }),
            Status::kOk);
  ha.on_completion([&](ChannelId, std::uint64_t, Status st) { healthy_done += st == Status::kOk; });
  auto healthy_step = [&] {
    if (ha.outstanding(hab) == 0) {
      const std::uint64_t k = healthy_next;
      if (ha.request(hab, kEcho, std::span(&k, 1)) == Status::kOk) ++healthy_next;
    }
    return ha.poll() >= 0 && hb.poll() >= 0;
  };
  LinkGuard link(netdev_, {broken_[0], broken_[1]});

  const auto start = Clock::now();
  while ((r[0].ok < 500 || r[1].ok < 500) && Clock::now() - start < 60s) {
    for (Requester& s : r) {
      s.issue();
      ASSERT_GE(s.ep.poll(), 0);
    }
    ASSERT_TRUE(healthy_step());
  }
  ASSERT_GE(r[0].ok, 500u) << "no traffic before the link-down";
  ASSERT_GE(r[1].ok, 500u) << "no traffic before the link-down";
  const std::uint64_t healthy_before = healthy_done;
  ASSERT_TRUE(link.down()) << "cannot take " << netdev_ << " down (not root?)";
  const auto downed = Clock::now();
  // Both ends keep sending, as an application would, until their channel reports the failure.
  for (;;) {
    bool all_failed = true;
    for (Requester& s : r) {
      s.issue();
      ASSERT_GE(s.ep.poll(), 0);
      const bool done = s.ep.channel_status(s.ch) != Status::kOk && s.issued == s.ok + s.failed;
      if (done && s.failed_ms < 0) s.failed_ms = ms_since(downed);
      all_failed = all_failed && done;
    }
    ASSERT_TRUE(healthy_step());
    if (all_failed || Clock::now() - downed > 30s) break;
  }
  const auto bound = uam_ud_bound(x.config().reliability);
  for (int i = 0; i < 2; ++i) {
    Requester& s = r[i];
    std::printf(
        "link down, uam UD %s->%s: all %llu requests issued completed (%llu ok, %llu failed, first "
        "error: %s) and the channel failed %.0f ms after the link-down (bound %lld ms)\n",
        broken_[i].c_str(), broken_[1 - i].c_str(), static_cast<unsigned long long>(s.issued),
        static_cast<unsigned long long>(s.ok), static_cast<unsigned long long>(s.failed),
        std::string(to_string(s.first_error)).c_str(), s.failed_ms,
        static_cast<long long>(bound.count()));
    EXPECT_EQ(s.ok + s.failed, s.issued) << broken_[i];
    EXPECT_EQ(s.replies, s.ok)
        << broken_[i];  // every request that completed well had its reply run
    EXPECT_GE(s.failed, 1u) << broken_[i];
    EXPECT_GE(s.failed_ms, 0) << broken_[i] << ": the channel did not fail within 30 s";
    EXPECT_LE(s.failed_ms, static_cast<double>(bound.count())) << broken_[i];
    EXPECT_EQ(s.ep.outstanding(s.ch), 0u) << broken_[i];
    EXPECT_EQ(s.first_error, Status::kRetryExceeded) << broken_[i];
    EXPECT_EQ(s.ep.request(s.ch, kEcho, {}), Status::kClosed) << broken_[i];  // fails at once
  }
  std::printf("link down, uam UD: healthy pair %s->%s answered %llu requests meanwhile\n",
              healthy_[0].c_str(), healthy_[1].c_str(),
              static_cast<unsigned long long>(healthy_done - healthy_before));
  expect_port_states();
  const std::uint64_t healthy_at = healthy_done;
  const auto again = Clock::now();
  while (healthy_done < healthy_at + 100 && Clock::now() - again < 20s) ASSERT_TRUE(healthy_step());
  EXPECT_GT(healthy_at, healthy_before);
  EXPECT_GE(healthy_done, healthy_at + 100);
  EXPECT_EQ(ha.channel_status(hab), Status::kOk);
  EXPECT_EQ(healthy_replies, healthy_done);
  EXPECT_EQ(healthy_bad, 0u);
  for (Requester& s : r) EXPECT_EQ(s.ep.close_channel(s.ch), Status::kOk);
  // The end on the netdev taken down had sends fail at the device (no route), which put its one
  // UD QP in the error state; core reset it and moved it back to RTS. So once the link is back, a
  // new channel between the same two endpoints carries requests both ways.
  std::printf("link down, uam UD: core send errors %s %llu, %s %llu; QP recoveries %llu, %llu\n",
              broken_[0].c_str(), static_cast<unsigned long long>(x.net().stats().send_errors),
              broken_[1].c_str(), static_cast<unsigned long long>(y.net().stats().send_errors),
              static_cast<unsigned long long>(x.net().stats().qp_recoveries),
              static_cast<unsigned long long>(y.net().stats().qp_recoveries));
  EXPECT_GT(x.net().stats().send_errors, 0u);
  EXPECT_GT(x.net().stats().qp_recoveries, 0u);
  ASSERT_TRUE(link.up());
  core::ChannelOffer o2x = x.offer_channel(), o2y = y.offer_channel();
  const ChannelId c2[2] = {x.accept_offer(o2x, o2y.local), y.accept_offer(o2y, o2x.local)};
  for (int i = 0; i < 2; ++i) {
    Requester& s = r[i];
    const std::uint64_t ok = s.ok, replies = s.replies, k = 42;
    ASSERT_EQ(s.ep.request(c2[i], kEcho, std::span(&k, 1)), Status::kOk) << broken_[i];
    const auto t0 = Clock::now();
    while (s.ok == ok && Clock::now() - t0 < 10s) {
      ASSERT_GE(x.poll(), 0);
      ASSERT_GE(y.poll(), 0);
    }
    EXPECT_EQ(s.ok, ok + 1) << "no answer on a new channel from " << broken_[i] << " after the link came back";
    EXPECT_EQ(s.replies, replies + 1) << broken_[i];
  }
}

// The ulp stream over UD: a connection in both directions across the dead link fails at both
// ends with kTimeout within dead_peer_timeout; send and recv then return that error; a healthy
// stream on the other pair moves on, checked.
TEST_F(LinkDown, StreamFailsWithinTheDeadPeerTimeoutAndAHealthyStreamMovesOn) {
  const ulp::StreamConfig sc = stream_peer_config();
  ulp::StreamEndpoint x(on(broken_[0], ud_config()), sc), y(on(broken_[1], ud_config()), sc);
  core::ChannelOffer ox = x.offer_peer(), oy = y.offer_peer();
  const ChannelId xy = x.accept_peer(ox, oy.local);
  (void)y.accept_peer(oy, ox.local);
  ASSERT_EQ(y.listen(kStreamPort), Status::kOk);
  ulp::ConnId cx;
  ASSERT_EQ(x.connect(xy, kStreamPort, cx), Status::kOk);
  HealthyStreamPair healthy(sc, on(healthy_[0], ud_config()), on(healthy_[1], ud_config()));
  LinkGuard link(netdev_, {broken_[0], broken_[1]});

  // Each end sends its own byte pattern and checks the other's.
  struct End {
    ulp::StreamEndpoint& ep;
    ulp::ConnId conn;
    std::uint8_t seed;
    std::uint64_t sent = 0, got = 0;
    bool established = false;
    Status error = Status::kOk;
    double failed_ms = -1;
  };
  End e[2] = {{x, cx, 13}, {y, ulp::kNoConn, 29}};
  std::vector<std::byte> out(4096), in(4096);
  auto byte = [](std::uint8_t seed, std::uint64_t i) {
    return static_cast<std::byte>(i * seed + (i >> 9));
  };
  // One step of one end: false on a wrong byte; a failed connection is recorded, not false.
  auto step = [&](End& me, const End& peer) {
    if (me.ep.poll() < 0) return false;
    if (me.conn == ulp::kNoConn && me.ep.accept(kStreamPort, me.conn) != Status::kOk) return true;
    ulp::StreamState st;
    if (!me.established)
      me.established =
          me.ep.state(me.conn, st) == Status::kOk && st == ulp::StreamState::kEstablished;
    if (!me.established || me.error != Status::kOk) return true;
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = byte(me.seed, me.sent + i);
    std::size_t took = 0, got = 0;
    Status s = me.ep.send(me.conn, out, took);
    me.sent += took;
    if (s == Status::kOk || s == Status::kNoResource) s = me.ep.recv(me.conn, in, got);
    for (std::size_t i = 0; i < got; ++i)
      if (in[i] != byte(peer.seed, me.got + i)) return false;
    me.got += got;
    if (s != Status::kOk && s != Status::kNoResource) me.error = s;
    return true;
  };
  const auto start = Clock::now();
  while ((e[0].got < (512u << 10) || e[1].got < (512u << 10)) && Clock::now() - start < 60s) {
    ASSERT_TRUE(step(e[0], e[1]));
    ASSERT_TRUE(step(e[1], e[0]));
    ASSERT_TRUE(healthy.step());
  }
  ASSERT_EQ(e[0].error, Status::kOk);
  ASSERT_EQ(e[1].error, Status::kOk);
  ASSERT_GE(e[0].got, 512u << 10) << "no stream traffic before the link-down";
  ASSERT_GE(e[1].got, 512u << 10) << "no stream traffic before the link-down";
  const std::uint64_t healthy_before = healthy.got;
  ASSERT_TRUE(link.down()) << "cannot take " << netdev_ << " down (not root?)";
  const auto downed = Clock::now();
  while ((e[0].error == Status::kOk || e[1].error == Status::kOk) && Clock::now() - downed < 30s) {
    for (int i = 0; i < 2; ++i) {  // both keep sending, as an application would
      ASSERT_TRUE(step(e[i], e[1 - i]));
      if (e[i].error != Status::kOk && e[i].failed_ms < 0) e[i].failed_ms = ms_since(downed);
    }
    ASSERT_TRUE(healthy.step());
  }
  const auto bound = sc.dead_peer_timeout + kSlack;
  for (int i = 0; i < 2; ++i) {
    End& me = e[i];
    std::printf(
        "link down, stream %s->%s: failed with %s %.0f ms after the link-down (bound %lld ms)\n",
        broken_[i].c_str(), broken_[1 - i].c_str(), std::string(to_string(me.error)).c_str(),
        me.failed_ms, static_cast<long long>(bound.count()));
    EXPECT_EQ(me.error, Status::kTimeout) << broken_[i];
    EXPECT_GE(me.failed_ms, 0) << broken_[i];
    EXPECT_LE(me.failed_ms, static_cast<double>(bound.count())) << broken_[i];
    std::size_t n = 0;
    Status r;
    while ((r = me.ep.recv(me.conn, in, n)) == Status::kOk && n > 0) {  // bytes that came in before
    }
    EXPECT_EQ(r, Status::kTimeout) << broken_[i];  // then the error, at once
    EXPECT_EQ(me.ep.send(me.conn, out, n), Status::kTimeout) << broken_[i];
    EXPECT_EQ(me.ep.close(me.conn), Status::kOk) << broken_[i];
  }
  std::printf("link down, stream: the healthy stream %s->%s moved %llu bytes meanwhile\n",
              healthy_[0].c_str(), healthy_[1].c_str(),
              static_cast<unsigned long long>(healthy.got - healthy_before));
  expect_port_states();
  const std::uint64_t healthy_at = healthy.got;
  const auto again = Clock::now();
  while (healthy.got < healthy_at + (1u << 20) && Clock::now() - again < 30s)
    ASSERT_TRUE(healthy.step());
  EXPECT_GT(healthy_at, healthy_before);
  EXPECT_GE(healthy.got, healthy_at + (1u << 20));
  ASSERT_TRUE(link.up());
}

}  // namespace
}  // namespace unet::test
