// The ib_send_lat (perftest 6.06) out-of-band exchange, plain and -R: the links and the sequence.
// The field codecs are in perftest_codec.cc; the facts in the header and in PERFTEST.md.
#include "ib_send_lat_oob.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>

#include "unet/verbs/connection_info.h"
#include "unet/verbs/device.h"
#include "unet/verbs/error.h"
#include "unet/verbs/oob.h"

namespace unet::bench {
namespace {

using Clock = std::chrono::steady_clock;
using Millis = std::chrono::milliseconds;

constexpr char kDone[5] = {'d', 'o', 'n', 'e', '\0'};
constexpr const char* kPeer = "ib_send_lat peer";

Millis left(Clock::time_point deadline) {
  auto d = std::chrono::duration_cast<Millis>(deadline - Clock::now());
  return d > Millis(1) ? d : Millis(1);
}

std::string printable(std::span<const char> s) {
  std::string t;
  for (char c : s) t += (c >= 0x20 && c < 0x7f) ? c : '.';
  return t;
}

// "6.06" -> 6.06 without locale: digits, one '.', digits.
double version_number(std::string_view v) {
  double whole = 0, frac = 0, scale = 1;
  bool after_dot = false;
  for (char c : v) {
    if (c == '.') {
      after_dot = true;
      continue;
    }
    if (after_dot) {
      scale /= 10;
      frac += (c - '0') * scale;
    } else {
      whole = whole * 10 + (c - '0');
    }
  }
  return whole + frac;
}

// One exchange in the tool's order (the client sends first, the server receives first): over the
// TCP socket (plain) or as SENDs on the comm channel of the endpoint (-R). Returns the peer's
// message, which must be exactly `n` bytes.
class Link {
 public:
  virtual ~Link() = default;
  virtual std::string exchange(std::string_view mine, std::size_t n,
                               Clock::time_point deadline) = 0;
};

class TcpLink final : public Link {
 public:
  TcpLink(verbs::OobSocket& s, bool client) : s_(s), client_(client) {}
  std::string exchange(std::string_view mine, std::size_t n, Clock::time_point deadline) override {
    std::string peer(n, '\0');
    if (client_) s_.send_all(mine, left(deadline));
    s_.recv_exact(peer, left(deadline));
    if (!client_) s_.send_all(mine, left(deadline));
    return peer;
  }

 private:
  verbs::OobSocket& s_;
  bool client_;
};

class CmLink final : public Link {
 public:
  CmLink(core::Endpoint& ep, core::ChannelId comm, bool client)
      : ep_(ep), comm_(comm), client_(client) {}
  std::string exchange(std::string_view mine, std::size_t n, Clock::time_point deadline) override {
    if (client_) send(mine, deadline);
    std::string peer = receive(deadline);
    if (!client_) send(mine, deadline);
    if (peer.size() != n)
      verbs::throw_error("exchange", kPeer, EPROTO,
                         "a message of " + std::to_string(peer.size()) + " bytes where " +
                             std::to_string(n) + " were due");
    return peer;
  }

 private:
  template <class F>
  void retry(F attempt, const char* what, Clock::time_point deadline) {
    for (;;) {
      Status st = attempt();
      if (st == Status::kOk) return;
      if (st != Status::kNoResource)
        verbs::throw_error(what, "comm channel", EIO, std::string(to_string(st)));
      if (ep_.poll() < 0) verbs::throw_error("poll", "endpoint", EIO);
      if (Clock::now() > deadline) verbs::throw_error(what, "comm channel", ETIMEDOUT);
    }
  }
  void send(std::string_view mine, Clock::time_point deadline) {
    auto bytes = std::as_bytes(std::span<const char>(mine.data(), mine.size()));
    if (bytes.size() <= ep_.inline_threshold()) {
      retry([&] { return ep_.send_inline(comm_, bytes); }, "send_inline", deadline);
    } else {
      core::BufferId b = core::kNoBuffer;
      retry([&] { return ep_.acquire_buffer(b); }, "acquire_buffer", deadline);
      std::memcpy(ep_.buffer(b).data(), bytes.data(), bytes.size());
      retry([&] { return ep_.send(comm_, b, static_cast<std::uint32_t>(bytes.size())); }, "send",
            deadline);
    }
    if (ep_.poll() < 0) verbs::throw_error("poll", "endpoint", EIO);  // posts it
  }
  std::string receive(Clock::time_point deadline) {
    core::Descriptor d;
    for (;;) {
      if (ep_.poll() < 0) verbs::throw_error("poll", "endpoint", EIO);
      if (ep_.receive(d) == Status::kOk) break;
      if (Clock::now() > deadline) verbs::throw_error("receive", "comm channel", ETIMEDOUT);
    }
    auto in = d.is_inline() ? d.inline_payload()
                            : std::span<const std::byte>(ep_.buffer(d.buffer).first(d.length));
    std::string peer(reinterpret_cast<const char*>(in.data()), in.size());
    if (!d.is_inline()) (void)ep_.release(d.buffer);
    if (d.channel != comm_)
      verbs::throw_error("receive", kPeer, EPROTO,
                         "a message on channel " + std::to_string(d.channel) + " during set-up");
    return peer;
  }

  core::Endpoint& ep_;
  core::ChannelId comm_;
  bool client_;
};

std::span<const char> chars(std::string_view s) { return {s.data(), s.size()}; }

}  // namespace

namespace {

// The address exchange: the text line (plain) or the binary struct (-R).
PerftestAddress exchange_address(Link& link, bool rdma_cm, bool with_gid, std::string_view mine,
                                 Clock::time_point deadline) {
  const std::size_t n = rdma_cm    ? kPerftestDestBytes
                        : with_gid ? kPerftestLineGidBytes
                                   : kPerftestLineBytes;
  std::string in = link.exchange(mine, n, deadline);
  PerftestAddress a;
  const char* why = "malformed binary address";
  Status st = rdma_cm ? decode_perftest_dest(std::as_bytes(chars(in)), a)
                      : decode_perftest_address(chars(in), with_gid, a, &why);
  if (st != Status::kOk)
    verbs::throw_error("decode", kPeer, EPROTO,
                       std::string(why) + ": \"" + printable(chars(in)) + "\"");
  return a;
}

// The tool sends and receives by SEND/RECV and grants no ring: our rdma_cm channels offer none.
constexpr core::ChannelOptions kNoRing{.ring = false};

// -R data connection as the client: the tool's server listens again only after the exchange
// before it, and rejects us until then; retry until the deadline.
core::ChannelId connect_cm_retrying(core::Endpoint& ep, const std::string& host, std::uint16_t port,
                                    Clock::time_point deadline) {
  for (;;) {
    try {
      return ep.connect_cm(host, port, std::min(left(deadline), Millis(2000)), kNoRing);
    } catch (const verbs::Error& e) {
      if (Clock::now() + Millis(50) >= deadline)
        verbs::throw_error("connect_cm", host + ":" + std::to_string(port), ETIMEDOUT,
                           std::string("the tool's rdma_cm listener never accepted: ") + e.what());
    }
    std::this_thread::sleep_for(Millis(50));
  }
}

}  // namespace

IbSendLatPeer::IbSendLatPeer(IbSendLatPeer&&) noexcept = default;
IbSendLatPeer& IbSendLatPeer::operator=(IbSendLatPeer&&) noexcept = default;
IbSendLatPeer::~IbSendLatPeer() = default;

void IbSendLatPeer::finish(std::chrono::milliseconds timeout) {
  if (!sock_ && !ep_)
    verbs::throw_error("IbSendLatPeer::finish", kPeer, EINVAL, "already finished");
  const auto deadline = Clock::now() + timeout;
  if (ep_) {  // -R: one closing exchange on the comm channel; the tool then disconnects
    core::Endpoint* ep = std::exchange(ep_, nullptr);
    CmLink link(*ep, comm_, client_);
    (void)exchange_address(link, true, with_gid_, line_, deadline);
    return;
  }
  std::unique_ptr<verbs::OobSocket> s = std::move(sock_);  // closed on return, whatever happens
  TcpLink link(*s, client_);
  (void)exchange_address(link, false, with_gid_, line_, deadline);
  s->send_all({kDone, sizeof kDone}, left(deadline));
  // Read the tool's own "done" before closing, so that its write never meets a reset socket.
  char done[sizeof kDone] = {};
  s->recv_exact(done, left(deadline));
  if (std::memcmp(done, kDone, sizeof kDone) != 0)
    verbs::throw_error("IbSendLatPeer::finish", kPeer, EPROTO,
                       "expected \"done\" and its NUL, got \"" + printable(done) + "\"");
}

IbSendLatPeer connect_ib_send_lat(core::Endpoint& ep, const IbSendLatOptions& o) {
  const char* who = "connect_ib_send_lat";
  if (ep.config().transport != core::Transport::kRc)
    verbs::throw_error(who, "endpoint", ENOTSUP, "ib_send_lat (RC) needs an RC endpoint");
  if (o.timeout <= Millis(0))
    verbs::throw_error(who, "options", EINVAL, "timeout must be positive");
  if (!o.host.empty() && o.listener)
    verbs::throw_error(who, "options", EINVAL, "a listener is for the server side (empty host)");
  if (o.rdma_cm && o.listener)
    verbs::throw_error(who, "options", EINVAL, "-R uses no TCP listener");
  const auto my_version = encode_perftest_version(o.version);
  if (version_number(o.version) < 5.70)
    verbs::throw_error(who, "options", EINVAL, "the tool refuses peers older than 5.70");
  const auto deadline = Clock::now() + o.timeout;

  IbSendLatPeer p;
  p.client_ = !o.host.empty();
  p.with_gid_ = o.with_gid;
  const bool client = p.client_;

  // Plain: our channel's half now (its QPN, PSN and GID go into the address line). -R: rdma_cm
  // makes the data channel later, and the address fields are only printed by the tool.
  std::optional<core::ChannelOffer> offer;
  verbs::ConnectionInfo local;
  std::uint32_t port_mtu = 0;
  if (!o.rdma_cm) {
    offer = ep.offer_channel({.ring = false});  // the tool sends and receives by SEND/RECV
    if (core::offer_info(offer->local, local) != Status::kOk)
      verbs::throw_error(who, "endpoint", EPROTO, "the endpoint's own offer does not decode");
    port_mtu = local.mtu;
  } else {
    port_mtu = verbs::Context::open(ep.config().device)->port(ep.config().port).active_mtu;
  }
  std::uint32_t my_mtu = port_mtu;  // the port's active MTU: the tool's default too
  if (o.mtu != 0) {
    const bool valid =
        o.mtu == 256 || o.mtu == 512 || o.mtu == 1024 || o.mtu == 2048 || o.mtu == 4096;
    if (!valid || o.mtu > port_mtu)
      verbs::throw_error(who, "options", EINVAL,
                         "MTU " + std::to_string(o.mtu) + " is not one the port (active MTU " +
                             std::to_string(port_mtu) + ") can use");
    my_mtu = o.mtu;
  }

  // The link the exchange runs on: TCP (the tool's server listens on IPv4, its client connects
  // once), or the -R comm connection made with rdma_cm.
  std::unique_ptr<Link> link;
  if (!o.rdma_cm) {
    if (client) {
      p.sock_ = std::make_unique<verbs::OobSocket>(
          verbs::OobSocket::connect(o.host, o.port, left(deadline)));
    } else {
      std::optional<verbs::OobListener> own;
      verbs::OobListener* listener = o.listener ? o.listener : &own.emplace("", o.port);
      p.sock_ = std::make_unique<verbs::OobSocket>(listener->accept(left(deadline)));
    }
    link = std::make_unique<TcpLink>(*p.sock_, client);
  } else {
    if (client) {
      p.comm_ = connect_cm_retrying(ep, o.host, o.port, deadline);
    } else {
      if (!o.cm_listening) (void)ep.listen_cm(o.cm_bind, o.port);
      p.comm_ = ep.accept_cm(left(deadline), kNoRing);
    }
    p.ep_ = &ep;
    link = std::make_unique<CmLink>(ep, p.comm_, client);
  }

  // 1. Versions.
  std::string version =
      link->exchange({my_version.data(), my_version.size()}, kPerftestVersionBytes, deadline);
  if (decode_perftest_version(chars(version), p.peer_version_) != Status::kOk)
    verbs::throw_error("decode", kPeer, EPROTO,
                       "bad version field \"" + printable(chars(version)) + "\"");
  if (version_number(p.peer_version_) < 5.70)
    verbs::throw_error(who, kPeer, EPROTONOSUPPORT,
                       "perftest " + p.peer_version_ + " predates the 5.70 exchange this speaks");

  // 2. System data: page size and cache line size, big-endian; only the tool's buffer layout uses
  // them.
  for (std::uint32_t value :
       {static_cast<std::uint32_t>(sysconf(_SC_PAGESIZE)), std::uint32_t{64}}) {
    const std::uint32_t be = htonl(value);
    char mine[4];
    std::memcpy(mine, &be, 4);
    (void)link->exchange({mine, 4}, 4, deadline);
  }

  // 3. MTU: both sides use the smaller (-R: rdma_cm sets the data QP's path MTU itself).
  const auto mtu_field = encode_perftest_mtu(my_mtu);
  std::string peer_mtu_field = link->exchange({mtu_field.data(), mtu_field.size()}, 2, deadline);
  const std::uint32_t peer_mtu = decode_perftest_mtu(chars(peer_mtu_field));
  if (peer_mtu == 0)
    verbs::throw_error("decode", kPeer, EPROTO,
                       "bad MTU field \"" + printable(chars(peer_mtu_field)) + "\"");
  p.mtu_ = std::min(my_mtu, peer_mtu);

  PerftestAddress mine;
  mine.out_reads = 1;
  if (!o.rdma_cm) {
    // 4. Addresses; our QP goes to RTS right away (the tool's first message comes after the
    // barriers).
    mine.lid = local.lid;
    mine.qpn = local.qpn;
    mine.psn = local.psn;
    mine.gid = o.with_gid ? local.gid : verbs::Gid{};
    p.line_ = encode_perftest_address(mine, o.with_gid);
    p.peer_ = exchange_address(*link, false, o.with_gid, p.line_, deadline);
    if (p.peer_.lid == 0 && (!o.with_gid || p.peer_.gid.is_zero()))
      verbs::throw_error(who, kPeer, EINVAL, "the peer sent neither a LID nor a GID");
    verbs::ConnectionInfo remote;
    remote.lid = p.peer_.lid;
    remote.qpn = p.peer_.qpn;
    remote.psn = p.peer_.psn;
    remote.gid = o.with_gid ? p.peer_.gid : verbs::Gid{};
    remote.mtu = p.mtu_;
    p.channel_ = ep.accept_offer(*offer, verbs::encode(remote));
  } else {
    // 4 (-R). One exchange (the tool's address is still all zero), the data connection, one more
    // exchange, then the addresses proper. Ours carry OUT_READS only: the endpoint does not expose
    // an rdma_cm channel's QPN, and the tool only prints these fields in -R mode.
    const auto dest = encode_perftest_dest(mine, 0);
    p.line_.assign(reinterpret_cast<const char*>(dest.data()), dest.size());
    (void)exchange_address(*link, true, o.with_gid, p.line_, deadline);
    p.channel_ = client ? connect_cm_retrying(ep, o.host, o.port, deadline)
                        : ep.accept_cm(left(deadline), kNoRing);
    (void)exchange_address(*link, true, o.with_gid, p.line_, deadline);
    p.peer_ = exchange_address(*link, true, o.with_gid, p.line_, deadline);
  }

  // 5. The barriers before the run.
  try {
    for (int i = 0; i < kIbSendLatPreRunBarriers; ++i)
      (void)exchange_address(*link, o.rdma_cm, o.with_gid, p.line_, deadline);
  } catch (...) {
    (void)ep.close_channel(p.channel_);
    throw;
  }
  return p;
}

}  // namespace unet::bench
