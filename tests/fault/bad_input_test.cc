// Bad input, table-driven (label fault): invalid calls across verbs/, core/, uam/ and ulp/ on real
// endpoints, and invalid unet_perf flags. Each row asserts the status it names, and that nothing
// changed: a fingerprint of every counter, queue and connection state of every object in the
// world is the same before and after the call. A refused call must leave no trace.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "endpoint_support.h"
#include "options.h"
#include "unet/core/remote_token.h"
#include "unet/uam/endpoint.h"
#include "unet/ulp/datagram_endpoint.h"
#include "unet/ulp/stream_endpoint.h"
#include "unet/verbs/connection_info.h"

namespace unet::test {
namespace {

using core::BufferId;
using core::ChannelId;

template <class T>
void append(std::string& out, const T& v) {
  static_assert(std::is_trivially_copyable_v<T>);
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

// Every object a row may call, set up once: base-level and direct-access core pairs, a uam pair,
// a datagram pair and a stream pair with one connection opening.
struct World {
  core::EndpointConfig da_config() {
    core::EndpointConfig c = endpoint_config(core::Transport::kRc);
    c.mode = core::Mode::kDirectAccess;
    return c;
  }
  core::Endpoint ea{endpoint_config(core::Transport::kRc)},
      eb{endpoint_config(core::Transport::kRc)};
  core::Endpoint da{da_config()}, db{da_config()};
  uam::Endpoint ua{uam_config(core::Transport::kRc)}, ub{uam_config(core::Transport::kRc)};
  ulp::DatagramEndpoint ga{ud_config()}, gb{ud_config()};
  ulp::StreamEndpoint sa{ud_config()}, sb{ud_config()};
  ChannelId eab = 0, dab = 0, uab = 0, gab = 0, sab = 0;
  BufferId own = core::kNoBuffer;
  std::vector<std::byte> window = std::vector<std::byte>(4096), src = std::vector<std::byte>(8192);
  core::RemoteToken token;
  ulp::ConnId opening = ulp::kNoConn;

  World() {
    eab = connect_endpoints(ea, eb).first;
    dab = connect_endpoints(da, db).first;
    core::ChannelOffer o1 = ua.offer_channel(), o2 = ub.offer_channel();
    uab = ua.accept_offer(o1, o2.local);
    (void)ub.accept_offer(o2, o1.local);
    core::ChannelOffer g1 = ga.offer_peer(), g2 = gb.offer_peer();
    gab = ga.accept_peer(g1, g2.local);
    (void)gb.accept_peer(g2, g1.local);
    core::ChannelOffer s1 = sa.offer_peer(), s2 = sb.offer_peer();
    sab = sa.accept_peer(s1, s2.local);
    (void)sb.accept_peer(s2, s1.local);
    if (ea.acquire_buffer(own) != Status::kOk) throw std::runtime_error("no buffer");
    if (db.grant(window.data(), window.size(), core::kRemoteWrite, token) != Status::kOk)
      throw std::runtime_error("no grant");
    if (ua.on_request(1, [](uam::Token&, const uam::Message&) {
          return uam::Disposition::kDone;
        }) != Status::kOk)
      throw std::runtime_error("no handler");
    if (ga.bind(1) != Status::kOk || sa.listen(5) != Status::kOk ||
        sa.connect(sab, 9, opening) != Status::kOk)
      throw std::runtime_error("no port");
  }

  // Everything a refused call could have changed, as bytes.
  std::string fingerprint() {
    std::string f;
    for (core::Endpoint* e :
         {&ea, &eb, &da, &db, &ua.net(), &ub.net(), &ga.net(), &gb.net(), &sa.net(), &sb.net()}) {
      append(f, e->stats());
      append(f, e->send_queue_space());
      append(f, e->spare_buffers());
      append(f, e->registration_stats());
    }
    append(f, ua.stats());
    append(f, ub.stats());
    append(f, ua.outstanding(uab));
    append(f, ga.stats());
    append(f, gb.stats());
    append(f, sa.stats());
    append(f, sb.stats());
    // Which ports are bound or listened on, and which connections exist: asked of each, through
    // calls that change nothing (an empty port's queue or backlog answers kNoResource).
    std::byte none[1];
    ulp::DatagramInfo info;
    ulp::ConnId c = ulp::kNoConn;
    for (std::uint16_t port = 0; port < 16; ++port) {
      append(f, ga.recv_from(port, none, info));
      append(f, gb.recv_from(port, none, info));
      append(f, sa.accept(port, c));
      append(f, sb.accept(port, c));
    }
    for (ulp::ConnId id = 0; id < 16; ++id) {
      ulp::StreamState st{};
      append(f, sa.state(id, st));
      append(f, st);
      append(f, sb.state(id, st));
      append(f, st);
    }
    append(f, ea.channel_status(eab));
    append(f, da.channel_status(dab));
    f.append(reinterpret_cast<const char*>(window.data()), window.size());
    return f;
  }
};

struct Row {
  const char* layer;
  const char* call;
  Status expected;
  std::function<Status(World&)> run;
};

std::vector<Row> rows() {
  using S = Status;
  static std::byte small[4] = {};
  static std::byte big_inline[core::Descriptor::kInlineBytes + 1] = {};
  static const std::uint64_t five[5] = {};
  static std::byte buf[16] = {};
  static std::size_t n = 0;
  static ulp::ConnId c = ulp::kNoConn;
  static ulp::DatagramInfo info;
  static core::RemoteToken token_out;
  static verbs::ConnectionInfo ci;
  return {
      // verbs/: the out-of-band line and its parser.
      {"verbs", "decode: empty line", S::kInvalidArgument,
       [](World&) { return verbs::decode("", ci); }},
      {"verbs", "decode: wrong magic", S::kInvalidArgument,
       [](World&) { return verbs::decode("unet-oob/9 lid=0000 qpn=000001\n", ci); }},
      {"verbs", "decode: line past the limit", S::kInvalidArgument,
       [](World&) {
         return verbs::decode(std::string(verbs::kConnectionInfoMaxLine + 1, 'x'), ci);
       }},
      // core/: base level.
      {"core", "send on an unknown channel", S::kNotFound,
       [](World& w) { return w.ea.send(w.eab + 100, w.own, 10); }},
      {"core", "send_inline on an unknown channel", S::kNotFound,
       [](World& w) { return w.ea.send_inline(w.eab + 100, small); }},
      {"core", "send of 0 bytes", S::kInvalidArgument,
       [](World& w) { return w.ea.send(w.eab, w.own, 0); }},
      {"core", "send past max_message", S::kInvalidArgument,
       [](World& w) { return w.ea.send(w.eab, w.own, w.ea.max_message() + 1); }},
      {"core", "send of a buffer id out of range", S::kInvalidArgument,
       [](World& w) { return w.ea.send(w.eab, 100000, 10); }},
      {"core", "send of a buffer the application does not own", S::kInvalidState,
       [](World& w) { return w.ea.send(w.eab, w.own == 0 ? 1 : 0, 10); }},
      {"core", "send_inline past the inline limit", S::kInvalidArgument,
       [](World& w) { return w.ea.send_inline(w.eab, big_inline); }},
      {"core", "send_inline of nothing", S::kInvalidArgument,
       [](World& w) { return w.ea.send_inline(w.eab, {}); }},
      {"core", "release of a buffer not held", S::kInvalidState,
       [](World& w) { return w.ea.release(w.own == 0 ? 1 : 0); }},
      {"core", "release of a buffer id out of range", S::kInvalidArgument,
       [](World& w) { return w.ea.release(100000); }},
      {"core", "grant on a base-level endpoint", S::kInvalidState,
       [](World& w) { return w.ea.grant(w.window.data(), 16, core::kRemoteWrite, token_out); }},
      {"core", "RemoteToken::decode of garbage", S::kInvalidArgument,
       [](World&) { return core::RemoteToken::decode("unet-token/1 addr=zz\n", token_out); }},
      // core/: direct access.
      {"core", "write past the window", S::kInvalidArgument,
       [](World& w) { return w.da.write(w.dab, w.src.data(), 4097, w.token, 0, 1); }},
      {"core", "write straddling the window's end", S::kInvalidArgument,
       [](World& w) { return w.da.write(w.dab, w.src.data(), 16, w.token, 4090, 1); }},
      {"core", "write at an overflowing offset", S::kInvalidArgument,
       [](World& w) { return w.da.write(w.dab, w.src.data(), 16, w.token, ~0ull, 1); }},
      {"core", "write from nullptr", S::kInvalidArgument,
       [](World& w) { return w.da.write(w.dab, nullptr, 16, w.token, 0, 1); }},
      {"core", "write of 0 bytes", S::kInvalidArgument,
       [](World& w) { return w.da.write(w.dab, w.src.data(), 0, w.token, 0, 1); }},
      {"core", "write on an unknown channel", S::kNotFound,
       [](World& w) { return w.da.write(w.dab + 9, w.src.data(), 16, w.token, 0, 1); }},
      {"core", "read past the window", S::kInvalidArgument,
       [](World& w) { return w.da.read(w.dab, w.src.data(), 4097, w.token, 0, 1); }},
      {"core", "grant of nullptr", S::kInvalidArgument,
       [](World& w) { return w.db.grant(nullptr, 16, core::kRemoteWrite, token_out); }},
      {"core", "grant with no access", S::kInvalidArgument,
       [](World& w) { return w.db.grant(w.window.data(), 16, 0, token_out); }},
      {"core", "grant with unknown access bits", S::kInvalidArgument,
       [](World& w) { return w.db.grant(w.window.data(), 16, 0x80, token_out); }},
      {"core", "revoke of a forged token", S::kNotFound,
       [](World& w) {
         core::RemoteToken forged = w.token;
         forged.rkey ^= 1;
         return w.db.revoke(forged);
       }},
      // uam/.
      {"uam", "request with 5 argument words", S::kInvalidArgument,
       [](World& w) { return w.ua.request(w.uab, 1, std::span(five, 5)); }},
      {"uam", "request past max_payload", S::kInvalidArgument,
       [](World& w) {
         std::vector<std::byte> big(w.ua.max_payload(0) + 1);
         return w.ua.request(w.uab, 1, {}, big);
       }},
      {"uam", "request on an unknown channel", S::kNotFound,
       [](World& w) { return w.ua.request(w.uab + 7, 1, {}); }},
      {"uam", "on_request for a taken id", S::kInvalidState,
       [](World& w) {
         return w.ua.on_request(
             1, [](uam::Token&, const uam::Message&) { return uam::Disposition::kDone; });
       }},
      {"uam", "on_reply for a request handler's id", S::kInvalidState,
       [](World& w) {
         return w.ua.on_reply(1, [](const uam::Message&) { return uam::Disposition::kDone; });
       }},
      {"uam", "on_request with an empty handler", S::kInvalidArgument,
       [](World& w) { return w.ua.on_request(2, nullptr); }},
      {"uam", "release of a buffer that is not kept", S::kInvalidState,
       [](World& w) { return w.ua.release(3); }},
      {"uam", "store on a base-level endpoint", S::kInvalidState,
       [](World& w) { return w.ua.store(w.uab, w.src.data(), 16, w.token, 0, 1, {}, 0); }},
      // ulp/ datagrams.
      {"ulp", "bind of a bound port", S::kInvalidState, [](World& w) { return w.ga.bind(1); }},
      {"ulp", "send_to past 64 KiB", S::kInvalidArgument,
       [](World& w) {
         std::vector<std::byte> huge(ulp::kMaxDatagram + 1);
         return w.ga.send_to(1, w.gab, 2, huge);
       }},
      {"ulp", "send_to from an unbound port", S::kNotFound,
       [](World& w) { return w.ga.send_to(3, w.gab, 2, buf); }},
      {"ulp", "send_to an unknown peer", S::kNotFound,
       [](World& w) { return w.ga.send_to(1, w.gab + 5, 2, buf); }},
      {"ulp", "recv_from an unbound port", S::kNotFound,
       [](World& w) { return w.ga.recv_from(9, buf, info); }},
      {"ulp", "unbind of an unbound port", S::kNotFound, [](World& w) { return w.ga.unbind(9); }},
      // ulp/ stream.
      {"ulp", "stream send on an unknown connection", S::kNotFound,
       [](World& w) { return w.sa.send(77, buf, n); }},
      {"ulp", "stream recv on an unknown connection", S::kNotFound,
       [](World& w) { return w.sa.recv(77, buf, n); }},
      {"ulp", "listen on port 0", S::kInvalidArgument, [](World& w) { return w.sa.listen(0); }},
      {"ulp", "listen on a port listened on", S::kInvalidState,
       [](World& w) { return w.sa.listen(5); }},
      {"ulp", "accept on a port nobody listens on", S::kNotFound,
       [](World& w) { return w.sa.accept(6, c); }},
      {"ulp", "connect to an unknown peer", S::kNotFound,
       [](World& w) { return w.sa.connect(w.sab + 9, 5, c); }},
      {"ulp", "connect to port 0", S::kInvalidArgument,
       [](World& w) { return w.sa.connect(w.sab, 0, c); }},
      {"ulp", "stream send before the connection is established", S::kInvalidState,
       [](World& w) { return w.sa.send(w.opening, buf, n); }},
  };
}

TEST(BadInput, EveryInvalidCallIsRefusedWithItsStatusAndChangesNothing) {
  UNET_REQUIRE_DEVICE();
  World w;
  const std::vector<Row> table = rows();
  for (const Row& r : table) {
    const std::string before = w.fingerprint();
    const Status got = r.run(w);
    EXPECT_EQ(got, r.expected) << r.layer << ": " << r.call;
    EXPECT_TRUE(w.fingerprint() == before) << r.layer << ": " << r.call << " changed state";
  }
  // Nothing was queued by any of them: a poll of each endpoint finds nothing to post.
  EXPECT_EQ(w.ea.poll(), 0);
  EXPECT_EQ(w.da.poll(), 0);
  core::OpCompletion oc;
  EXPECT_EQ(w.da.completion(oc), Status::kNoResource);
  std::printf("bad input: %zu invalid calls across verbs, core, uam and ulp tried\n", table.size());
  EXPECT_GE(table.size(), 30u);
}

// unet_perf's flags: each bad value is refused with a message naming the flag.
TEST(BadInput, UnetPerfFlagsAreRefusedNamingTheFlag) {
  struct Flag {
    const char* name;  // what the message must name
    std::function<void(perf::RawFlags&)> set;
  };
  const std::vector<Flag> flags = {
      {"--test", [](perf::RawFlags& f) { f.test = ""; }},
      {"--test", [](perf::RawFlags& f) { f.test = "nope"; }},
      {"-i", [](perf::RawFlags& f) { f.ib_port = 0; }},
      {"-x", [](perf::RawFlags& f) { f.gid_index = 256; }},
      {"-p", [](perf::RawFlags& f) { f.tcp_port = 70000; }},
      {"-c", [](perf::RawFlags& f) { f.connection = "XRC"; }},
      {"-s", [](perf::RawFlags& f) { f.size = 0; }},
      {"-a", [](perf::RawFlags& f) { f.all_sizes = true, f.size = 8; }},
      {"-n", [](perf::RawFlags& f) { f.iterations = 0; }},
      {"--batch", [](perf::RawFlags& f) { f.batch = 0; }},
      {"--batch", [](perf::RawFlags& f) { f.batch = 4; }},  // a latency test
      {"--mode", [](perf::RawFlags& f) { f.mode = "turbo"; }},
      {"--timeout_ms", [](perf::RawFlags& f) { f.timeout_ms = 0; }},
      {"--oob", [](perf::RawFlags& f) { f.oob = "carrier-pigeon"; }},
      {"--window", [](perf::RawFlags& f) { f.window = 4; }},  // not an am_* test
      {"-m", [](perf::RawFlags& f) { f.mtu = 1024; }},        // unet peers use the port's
  };
  for (const Flag& fl : flags) {
    perf::RawFlags f;
    f.test = "ep_lat";
    fl.set(f);
    const auto r = perf::make_config(f);
    ASSERT_TRUE(std::holds_alternative<std::string>(r)) << fl.name << " was accepted";
    EXPECT_NE(std::get<std::string>(r).find(fl.name), std::string::npos)
        << "'" << std::get<std::string>(r) << "' does not name " << fl.name;
  }
  std::printf("bad input: %zu invalid unet_perf flag sets tried\n", flags.size());
}

}  // namespace
}  // namespace unet::test
