// Peer death (label fault): a peer *process* (fault_peer.cc) is killed with SIGKILL in the middle
// of traffic, for each layer and transport that has a notion of a peer: core RC, uam RC and UD,
// and the ulp stream. On the survivor:
//   - every operation completes exactly once: those in flight at the kill with an error unless
//     the peer answered them before it died, those sent after the kill with an error, all within
//     the bound the configuration promises (measured from the kill);
//   - once the failure is reported, later operations fail at once;
//   - a second, healthy pair in the same process carries traffic throughout, checked;
//   - the endpoint then closes cleanly (its destructor, under the sanitizers in CI).
// The kernel destroys a killed process's QPs, so the survivor hears nothing more: RC exhausts its
// retries, uam over UD its retransmissions, the stream its dead-peer timeout.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "child_process.h"
#include "endpoint_support.h"
#include "failure_support.h"
#include "peer_protocol.h"
#include "unet/uam/endpoint.h"
#include "unet/ulp/stream_endpoint.h"

namespace unet::test {
namespace {

using namespace std::chrono_literals;
using core::ChannelId;

constexpr auto kLineTimeout = 30s;  // for each line of the peer (it opens a device under emulation)

// The peer process and the out-of-band exchange with it.
struct Peer {
  ChildProcess proc;
  explicit Peer(const char* mode) : proc({UNET_FAULT_PEER_PATH, mode}) {}

  std::string line(const char* what) {
    std::optional<std::string> l = proc.read_line(kLineTimeout);
    if (!l) throw std::runtime_error(std::string("the peer sent no ") + what);
    return *l + "\n";
  }
  // Swaps offers: `accept(peer_half)` opens our end; returns what it returns.
  template <class Offer, class Accept>
  ChannelId join(Offer offer, Accept accept) {
    const std::string theirs = line("offer");
    const core::ChannelOffer ours = offer();
    const ChannelId ch = accept(ours, theirs);
    if (!proc.write_line(ours.local)) throw std::runtime_error("the peer is gone");
    return ch;
  }
  void ready() {
    if (line("ready") != "ready\n") throw std::runtime_error("the peer is not ready");
  }
  // SIGKILL, and the child reaped: it really died of the signal.
  void kill() {
    proc.kill(SIGKILL);
    const std::optional<int> status = proc.wait(10s);
    ASSERT_TRUE(status.has_value()) << "the peer did not die";
    EXPECT_TRUE(WIFSIGNALED(*status) && WTERMSIG(*status) == SIGKILL);
  }
};

TEST(PeerDeath, CoreRcOutstandingWritesFailInBoundAndAHealthyPairKeepsWorking) {
  UNET_REQUIRE_DEVICE();
  Peer peer("core");
  core::EndpointConfig cfg = endpoint_config(core::Transport::kRc);
  cfg.mode = core::Mode::kDirectAccess;
  core::Endpoint survivor(cfg);
  const ChannelId ch = peer.join([&] { return survivor.offer_channel(); },
                                 [&](const core::ChannelOffer& o, const std::string& t) {
                                   return survivor.accept_offer(o, t);
                                 });
  core::RemoteToken window;
  ASSERT_EQ(core::RemoteToken::decode(peer.line("token"), window), Status::kOk);
  peer.ready();
  HealthyCorePair healthy;

  constexpr std::uint64_t kChunk = 4096, kInFlight = 16;
  std::vector<std::byte> src(kChunk, std::byte{0x5a});
  std::uint64_t issued = 0, ok = 0, failed = 0;
  auto take = [&] {
    core::OpCompletion c;
    while (survivor.completion(c) == Status::kOk) ++(c.status == Status::kOk ? ok : failed);
  };
  auto issue = [&] {
    while (issued - ok - failed < kInFlight) {
      const std::uint64_t off = (issued % (kWindowBytes / kChunk)) * kChunk;
      if (survivor.write(ch, src.data(), kChunk, window, off, issued) != Status::kOk) return;
      ++issued;
    }
  };
  // Traffic first: the kill lands in the middle of it.
  const auto start = Clock::now();
  while (ok < 500 && Clock::now() - start < 60s) {
    issue();
    ASSERT_GE(survivor.poll(), 0);
    take();
    ASSERT_TRUE(healthy.step());
  }
  ASSERT_GE(ok, 500u) << "no traffic to the peer before the kill";
  // Drain first: a write in flight at the kill may be acked before the peer's QP goes away, and
  // a full window would then leave nothing to issue to the dead peer.
  const auto drain = Clock::now();
  while (issued > ok + failed && Clock::now() - drain < 30s) {
    ASSERT_GE(survivor.poll(), 0);
    take();
  }
  ASSERT_EQ(issued, ok + failed) << "writes outstanding before the kill";
  const std::uint64_t healthy_before = healthy.delivered;
  const auto killed = Clock::now();
  peer.kill();
  // A full window issued now, with the peer reaped, is outstanding to a dead peer for certain.
  issue();
  ASSERT_GE(survivor.poll(), 0);
  const std::uint64_t at_kill = issued - ok - failed;
  while (issued > ok + failed && Clock::now() - killed < 30s) {
    ASSERT_GE(survivor.poll(), 0);
    take();
    ASSERT_TRUE(healthy.step());
  }
  const double took = ms_since(killed);
  std::printf(
      "core RC: %llu writes outstanding after the kill; all %llu issued completed (%llu ok, %llu "
      "failed) "
      "%.0f ms after it (bound %lld ms); healthy pair %llu messages meanwhile\n",
      static_cast<unsigned long long>(at_kill), static_cast<unsigned long long>(issued),
      static_cast<unsigned long long>(ok), static_cast<unsigned long long>(failed), took,
      static_cast<long long>(rc_bound(cfg).count()),
      static_cast<unsigned long long>(healthy.delivered - healthy_before));
  EXPECT_EQ(ok + failed, issued);  // each exactly once
  EXPECT_EQ(at_kill, kInFlight);
  EXPECT_GE(failed, at_kill);  // at least the window issued to the dead peer
  EXPECT_LE(took, static_cast<double>(rc_bound(cfg).count()));
  EXPECT_NE(survivor.channel_status(ch), Status::kOk);
  EXPECT_NE(survivor.write(ch, src.data(), kChunk, window, 0, issued),
            Status::kOk);  // fails at once
  EXPECT_NE(survivor.send_inline(ch, std::as_bytes(std::span(&issued, 1))), Status::kOk);
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(healthy.step());
  EXPECT_GT(healthy.delivered, healthy_before);
  EXPECT_EQ(survivor.close_channel(ch), Status::kOk);
}

// A ring channel (the core peer's channel is one): messages written into the peer's ring until it
// is killed. The writes after the kill find no QP: the channel fails within the RC bound, the
// failed sends are reported, later ones refused at once, and the ring goes with the close.
TEST(PeerDeath, CoreRingMessagesFailInBoundAndTheRingIsReclaimed) {
  UNET_REQUIRE_DEVICE();
  Peer peer("core");
  const core::EndpointConfig cfg = endpoint_config(core::Transport::kRc);
  core::Endpoint survivor(cfg);
  const ChannelId ch = peer.join([&] { return survivor.offer_channel(); },
                                 [&](const core::ChannelOffer& o, const std::string& t) {
                                   return survivor.accept_offer(o, t);
                                 });
  (void)peer.line("token");
  peer.ready();
  ASSERT_TRUE(survivor.ring_channel(ch));
  HealthyCorePair healthy;
  std::uint64_t n = 0;
  auto send = [&] {
    for (int k = 0; k < 8; ++k) {
      std::byte m[32];
      std::memcpy(m, &n, sizeof n);
      if (survivor.send_inline(ch, m) != Status::kOk) return;
      ++n;
    }
  };
  const auto start = Clock::now();
  while (survivor.stats().ring_sent < 5000 && Clock::now() - start < 60s) {
    send();
    ASSERT_GE(survivor.poll(), 0);
    ASSERT_TRUE(healthy.step());
  }
  ASSERT_GE(survivor.stats().ring_sent, 5000u) << "no ring traffic before the kill";
  const std::uint64_t healthy_before = healthy.delivered;
  const auto killed = Clock::now();
  peer.kill();
  while (survivor.channel_status(ch) == Status::kOk && Clock::now() - killed < 30s) {
    send();
    ASSERT_GE(survivor.poll(), 0);
    ASSERT_TRUE(healthy.step());
  }
  const double took = ms_since(killed);
  for (int i = 0; i < 100; ++i) ASSERT_GE(survivor.poll(), 0);  // what was queued is reported
  std::printf(
      "core ring: %llu messages, %llu by ring; the channel failed %.0f ms after the kill (bound "
      "%lld ms), "
      "%llu sends reported failed\n",
      static_cast<unsigned long long>(n),
      static_cast<unsigned long long>(survivor.stats().ring_sent), took,
      static_cast<long long>(rc_bound(cfg).count()),
      static_cast<unsigned long long>(survivor.stats().send_errors));
  EXPECT_NE(survivor.channel_status(ch), Status::kOk);
  EXPECT_LE(took, static_cast<double>(rc_bound(cfg).count()));
  EXPECT_GT(survivor.stats().send_errors, 0u);
  core::OpCompletion c;
  ASSERT_EQ(survivor.completion(c), Status::kOk)
      << "a failed send is reported on the completion queue";
  EXPECT_EQ(c.channel, ch);
  EXPECT_NE(c.status, Status::kOk);
  std::byte m[8] = {};
  EXPECT_EQ(survivor.send_inline(ch, m), Status::kClosed);
  EXPECT_EQ(survivor.rings(), 1u) << "a failed channel keeps its ring until it is closed";
  EXPECT_EQ(survivor.close_channel(ch), Status::kOk);
  EXPECT_EQ(survivor.rings(), 0u);
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(healthy.step());
  EXPECT_GT(healthy.delivered, healthy_before);
}

// uam: requests outstanding to the killed peer all complete with an error; a healthy uam pair of
// the same transport keeps answering.
void uam_peer_death(core::Transport t, const char* mode) {
  Peer peer(mode);
  const core::EndpointConfig cfg = uam_config(t);
  uam::Endpoint survivor(cfg), ha(cfg), hb(cfg);
  const ChannelId ch = peer.join([&] { return survivor.offer_channel(); },
                                 [&](const core::ChannelOffer& o, const std::string& t2) {
                                   return survivor.accept_offer(o, t2);
                                 });
  peer.ready();
  core::ChannelOffer oa = ha.offer_channel(), ob = hb.offer_channel();
  const ChannelId hab = ha.accept_offer(oa, ob.local);
  (void)hb.accept_offer(ob, oa.local);
  ASSERT_EQ(hb.on_request(kEcho,
                          [&](uam::Token& tok, const uam::Message& m) {
                            (void)hb.reply(tok, kEchoReply, m.args, {});
                            return uam::Disposition::kDone;
                          }),
            Status::kOk);
  std::uint64_t replies = 0, healthy_replies = 0, issued = 0, ok = 0, failed = 0, healthy_done = 0;
  auto count_reply = [](std::uint64_t& n) {
    return [&n](const uam::Message&) {
      ++n;
      return uam::Disposition::kDone;
    };
  };
  ASSERT_EQ(survivor.on_reply(kEchoReply, count_reply(replies)), Status::kOk);
  ASSERT_EQ(ha.on_reply(kEchoReply, count_reply(healthy_replies)), Status::kOk);
  survivor.on_completion(
      [&](ChannelId, std::uint64_t, Status s) { ++(s == Status::kOk ? ok : failed); });
  ha.on_completion([&](ChannelId, std::uint64_t, Status s) { healthy_done += s == Status::kOk; });
  auto step = [&] {
    for (std::uint64_t k = issued; survivor.request(ch, kEcho, std::span(&k, 1)) == Status::kOk;
         k = ++issued) {
    }
    if (ha.outstanding(hab) == 0) (void)ha.request(hab, kEcho, {});
    return survivor.poll() >= 0 && ha.poll() >= 0 && hb.poll() >= 0;
  };
  const auto start = Clock::now();
  while (ok < 500 && Clock::now() - start < 60s) ASSERT_TRUE(step());
  ASSERT_GE(ok, 500u) << "no traffic to the peer before the kill";
  ASSERT_TRUE(step());
  // step() ends with a poll that may have drained the whole window; refill it so the kill
  // finds requests in flight.
  for (std::uint64_t k = issued; survivor.request(ch, kEcho, std::span(&k, 1)) == Status::kOk;
       k = ++issued) {
  }
  const std::uint64_t at_kill = survivor.outstanding(ch), healthy_before = healthy_done;
  ASSERT_GT(at_kill, 0u);
  const auto killed = Clock::now();
  peer.kill();
  // Requests in flight at the kill may well have been answered before the peer's QP went away.
  // The survivor keeps sending, as an application would, until the channel reports the failure;
  // what it sends after the kill is outstanding to a dead peer for certain.
  while ((issued > ok + failed || survivor.channel_status(ch) == Status::kOk) &&
         Clock::now() - killed < 30s) {
    for (std::uint64_t k = issued; survivor.request(ch, kEcho, std::span(&k, 1)) == Status::kOk;
         k = ++issued) {
    }
    ASSERT_GE(survivor.poll(), 0);
    if (ha.outstanding(hab) == 0) (void)ha.request(hab, kEcho, {});
    ASSERT_GE(ha.poll(), 0);
    ASSERT_GE(hb.poll(), 0);
  }
  const double took = ms_since(killed);
  // RC: the QP's retries. UD: max_retries expiries of a timer backing off to rto_max.
  const std::chrono::milliseconds bound =
      t == core::Transport::kUd ? uam_ud_bound(survivor.config().reliability) : rc_bound(cfg);
  std::printf(
      "uam %s: %llu requests outstanding at the kill; all %llu issued completed (%llu ok, %llu "
      "failed) and the channel failed %.0f ms after it (bound %lld ms); healthy pair %llu requests "
      "meanwhile\n",
      mode, static_cast<unsigned long long>(at_kill), static_cast<unsigned long long>(issued),
      static_cast<unsigned long long>(ok), static_cast<unsigned long long>(failed), took,
      static_cast<long long>(bound.count()),
      static_cast<unsigned long long>(healthy_done - healthy_before));
  EXPECT_EQ(ok + failed, issued);
  EXPECT_EQ(replies, ok);  // every request that completed well had its reply run
  EXPECT_GE(failed, 1u);   // at least those sent after the kill
  EXPECT_LE(took, static_cast<double>(bound.count()));
  EXPECT_EQ(survivor.outstanding(ch), 0u);
  EXPECT_EQ(survivor.request(ch, kEcho, {}), Status::kClosed);  // fails at once
  const std::uint64_t healthy_at = healthy_done;
  const auto again = Clock::now();
  while (healthy_done < healthy_at + 100 && Clock::now() - again < 20s) {
    if (ha.outstanding(hab) == 0) (void)ha.request(hab, kEcho, {});
    ASSERT_GE(ha.poll(), 0);
    ASSERT_GE(hb.poll(), 0);
  }
  EXPECT_GE(healthy_done, healthy_at + 100);
  EXPECT_EQ(ha.channel_status(hab), Status::kOk);
  EXPECT_EQ(healthy_replies, healthy_done);
}

TEST(PeerDeath, UamRcOutstandingRequestsFailInBound) {
  UNET_REQUIRE_DEVICE();
  uam_peer_death(core::Transport::kRc, "uam-rc");
}

TEST(PeerDeath, UamUdOutstandingRequestsFailInBound) {
  UNET_REQUIRE_DEVICE();
  uam_peer_death(core::Transport::kUd, "uam-ud");
}

// The stream: an echoing connection whose peer is killed fails with kTimeout within
// dead_peer_timeout; send and recv then return that error; a second connection, between two
// endpoints of this process, streams on, checked.
TEST(PeerDeath, StreamFailsWithinTheDeadPeerTimeoutAndOtherConnectionsStream) {
  UNET_REQUIRE_DEVICE();
  Peer peer("stream");
  const ulp::StreamConfig sc = stream_peer_config();
  ulp::StreamEndpoint survivor(ud_config(), sc);
  const ChannelId ch = peer.join([&] { return survivor.offer_peer(); },
                                 [&](const core::ChannelOffer& o, const std::string& t) {
                                   return survivor.accept_peer(o, t);
                                 });
  peer.ready();
  HealthyStreamPair healthy(sc);
  ulp::ConnId conn;
  ASSERT_EQ(survivor.connect(ch, kStreamPort, conn), Status::kOk);
  // Echo traffic to the peer until 1 MiB came back, checked.
  std::uint64_t sent = 0, echoed = 0;
  std::vector<std::byte> out(4096), in(4096);
  auto pattern = [](std::uint64_t i) { return static_cast<std::byte>(i * 13 + (i >> 9)); };
  const auto start = Clock::now();
  while (echoed < (1u << 20) && Clock::now() - start < 60s) {
    ASSERT_GE(survivor.poll(), 0);
    ASSERT_TRUE(healthy.step());
    ulp::StreamState st;
    ASSERT_EQ(survivor.state(conn, st), Status::kOk);
    if (st != ulp::StreamState::kEstablished) continue;
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = pattern(sent + i);
    std::size_t took = 0, got = 0;
    if (sent - echoed < 32768) {
      const Status s = survivor.send(conn, out, took);
      ASSERT_TRUE(s == Status::kOk || s == Status::kNoResource);
    }
    sent += took;
    const Status r = survivor.recv(conn, in, got);
    ASSERT_TRUE(r == Status::kOk || r == Status::kNoResource);
    for (std::size_t i = 0; i < got; ++i)
      ASSERT_EQ(in[i], pattern(echoed + i)) << "echo byte " << echoed + i;
    echoed += got;
  }
  ASSERT_GE(echoed, 1u << 20) << "no echo traffic before the kill";
  const std::uint64_t healthy_before = healthy.got;
  const auto killed = Clock::now();
  peer.kill();
  Status err = Status::kOk;
  while (Clock::now() - killed < 30s) {  // keeps sending, as an application would
    ASSERT_GE(survivor.poll(), 0);
    ASSERT_TRUE(healthy.step());
    std::size_t took = 0;
    const Status s = survivor.send(conn, out, took);
    if (s != Status::kOk && s != Status::kNoResource) {
      err = s;
      break;
    }
  }
  const double took = ms_since(killed);
  const auto bound = sc.dead_peer_timeout + kSlack;
  std::printf(
      "stream: the connection failed with %d %.0f ms after the kill (bound %lld ms); the healthy "
      "stream moved %llu bytes meanwhile\n",
      static_cast<int>(err), took, static_cast<long long>(bound.count()),
      static_cast<unsigned long long>(healthy.got - healthy_before));
  EXPECT_EQ(err, Status::kTimeout);
  EXPECT_LE(took, static_cast<double>(bound.count()));
  std::size_t n = 0;
  Status r;
  while ((r = survivor.recv(conn, in, n)) == Status::kOk && n > 0) {  // echoes that came in before
  }
  EXPECT_EQ(r, Status::kTimeout);  // then the error, at once
  EXPECT_EQ(survivor.send(conn, out, n), Status::kTimeout);
  const auto again = Clock::now();
  while (healthy.got < healthy_before + (1u << 20) && Clock::now() - again < 30s)
    ASSERT_TRUE(healthy.step());
  EXPECT_GE(healthy.got, healthy_before + (1u << 20));
  EXPECT_EQ(survivor.close(conn), Status::kOk);
}

}  // namespace
}  // namespace unet::test
