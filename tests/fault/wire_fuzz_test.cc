// Wire fuzzer (label fault, ci/rxe-vm --two-dev; issue 25): a hostile raw QP on rxe0 — UD, and
// RC connected to a channel — sends random and mutated packets (every length from 0 past the path
// MTU, valid-looking headers with absurd fields, replays and splices of real traffic) at a core,
// uam, datagram and stream endpoint on rxe1, while a legitimate peer's traffic runs beside it and
// is checked byte for byte both ways. Passes when no sanitizer fires, the legitimate traffic is
// complete and intact, and the target's counters account for every hostile packet (wire_fuzz.h).
// UNET_WIRE_FUZZ_SEED repeats a run, UNET_WIRE_FUZZ_PACKETS sets its length (tests/README.md).
#include "wire_fuzz.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <sstream>
#include <tuple>
#include <type_traits>

#include "endpoint_support.h"
#include "layer_channel.h"
#include "unet/core/little_endian.h"
#include "unet/uam/endpoint.h"
#include "unet/uam/wire_header.h"
#include "unet/ulp/datagram_endpoint.h"
#include "unet/ulp/datagram_header.h"
#include "unet/ulp/segment_header.h"
#include "unet/ulp/stream_endpoint.h"

namespace unet::test::fuzz {
namespace {

using namespace std::chrono_literals;
using core::ChannelId;
using core::Transport;

constexpr std::uint32_t kUdBuffer = 512;   // below rxe's path MTU of 1024: oversize datagrams exist
constexpr std::uint32_t kRcBuffer = 4096;  // above it: messages of several packets

core::EndpointConfig net_config(const char* device, Transport t) {
  core::EndpointConfig c = endpoint_config(t, 512);
  c.device = device;
  c.buffer_bytes = t == Transport::kRc ? kRcBuffer : kUdBuffer;
  c.free_queue_depth = 256;
  c.send_queue_depth = 256;
  c.recv_queue_depth = 512;
  return c;
}

const char* transport_name(Transport t) { return t == Transport::kRc ? "RC" : "UD"; }

// Runs `poll` (the recorder's progress) and keeps what `cap` receives, until `quiet` passes with
// nothing new (at most 2 s).
template <class Poll>
std::vector<Bytes> capture(RawPeer& cap, Poll&& poll, std::chrono::milliseconds quiet = 30ms) {
  std::vector<Bytes> got;
  const auto end = std::chrono::steady_clock::now() + 2s;
  auto last = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - last < quiet &&
         std::chrono::steady_clock::now() < end) {
    (void)poll();
    if (cap.drain([&](std::span<const std::byte> b) { got.emplace_back(b.begin(), b.end()); }) > 0)
      last = std::chrono::steady_clock::now();
  }
  return got;
}

// The corpus: each distinct packet once, in a fixed order (retransmissions are copies).
std::vector<Bytes> distinct(std::vector<Bytes> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

Bytes random_bytes(Rng& r, std::size_t n) {
  Bytes b(n);
  for (std::byte& x : b) x = static_cast<std::byte>(r());
  return b;
}

// A 32-bit field a hostile peer would try: zero, small, huge, random.
std::uint32_t odd_u32(Rng& r) {
  static constexpr std::uint32_t kOdd[] = {0, 1, 2, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF};
  return r() % 3 == 0 ? kOdd[r() % std::size(kOdd)]
         : r() % 2    ? static_cast<std::uint32_t>(r() % 64)
                      : static_cast<std::uint32_t>(r());
}

// What every layer's target shares: the endpoint under attack, its legitimate peer joined to it
// by a channel, and channels to hostile QPs.
template <class E>
class LayerTarget : public Target {
 public:
  const char* name() const override { return name_.c_str(); }
  core::Endpoint& net() override { return net_of(*target_); }
  core::Endpoint& legit_net() override { return net_of(*legit_); }
  std::string open_hostile(std::string_view line) override {
    const core::ChannelOffer o = offer(*target_);
    t_hostile_ = accept(*target_, o, line);
    return o.local;
  }
  ChannelId hostile_channel() const override { return t_hostile_; }
  bool poll_target() override { return target_->poll() >= 0; }

 protected:
  LayerTarget(std::string name, std::unique_ptr<E> target, std::unique_ptr<E> legit)
      : name_(std::move(name)), target_(std::move(target)), legit_(std::move(legit)) {
    std::tie(l_target_, t_legit_) = join(*legit_, *target_);
  }
  // Counts what a codec of one header per packet (ulp's) says of hostile packet `p`.
  template <class Header>
  void judge(const Bytes& p) {
    Header h;
    ++(decode(p, h) == Status::kOk ? decodable_ : malformed_);
  }

  std::string name_;
  std::unique_ptr<E> target_, legit_;
  ChannelId l_target_ = core::kNoChannel, t_legit_ = core::kNoChannel,
            t_hostile_ = core::kNoChannel;
  std::uint64_t malformed_ = 0,
                decodable_ = 0;  // hostile packets the layer's codec refuses, accepts
};

// ---- core: raw messages; every hostile one that reaches the layer is delivered intact, in order.
class CoreTarget : public LayerTarget<core::Endpoint> {
 public:
  // `ring`: RC endpoints with rings of this geometry (slots, slot bytes), not the default one.
  explicit CoreTarget(Transport t, std::pair<std::uint32_t, std::uint32_t> ring = {})
      : LayerTarget(
            std::string("core ") + transport_name(t) + (ring.first ? " ring" : ""),
            std::make_unique<core::Endpoint>(ring_config(net_config(kTargetDevice, t), ring)),
            std::make_unique<core::Endpoint>(ring_config(net_config(kPeerDevice, t), ring))),
        planned_(packets() / 2 + 16) {}
  std::vector<Bytes> record(const char*) override {  // core has no header: legitimate payloads
    std::vector<Bytes> v;
    for (std::uint64_t k = 0; k < 16; ++k) v.push_back(message(1000 + k));
    return v;
  }
  Bytes forge(Rng& r) override { return random_bytes(r, r() % (target_->max_message() + 1)); }
  void legit_step() override {
    while (sent_ - echoed_ < 8 && sent_ < planned_ && send(*legit_, l_target_, sent_)) ++sent_;
  }
  bool poll() override {
    if (legit_->poll() < 0 || target_->poll() < 0) return false;
    core::Descriptor d;
    while (target_->receive(d) == Status::kOk) {
      const Bytes b = take(*target_, d);
      if (d.channel == t_legit_) {
        bad_ += b != message(arrived_);
        legit_bytes_ += b.size();
        echoes_.push_back(arrived_++);
      } else if (hostile_.empty()) {
        ++hostile_unexpected_;
      } else {  // a hostile channel: exactly what it sent, in order
        hostile_altered_ += b != hostile_.front();
        hostile_.pop_front();
        ++hostile_delivered_;
      }
    }
    while (!echoes_.empty() && send(*target_, t_legit_, echoes_.front())) echoes_.pop_front();
    if (target_->flush() < 0)
      return false;  // posted now: none waits to be flushed by a UD recovery
    while (legit_->receive(d) == Status::kOk) {
      const Bytes b = take(*legit_, d);
      bad_ += d.channel != l_target_ || b != message(echoed_);
      legit_bytes_ += b.size();
      ++echoed_;
    }
    return true;
  }
  bool unreliable() const override { return true; }
  bool legit_done() const override { return echoed_ == planned_; }
  void expect(const Bytes& p) override { hostile_.push_back(p); }
  std::uint64_t hostile_taken() const override { return hostile_delivered_ + hostile_unexpected_; }
  std::string check() override {
    EXPECT_EQ(bad_, 0u) << name_ << ": legitimate messages altered";
    EXPECT_EQ(hostile_altered_ + hostile_unexpected_, 0u)
        << name_ << ": hostile messages altered or made up";
    EXPECT_TRUE(hostile_.empty()) << name_ << ": " << hostile_.size()
                                  << " hostile messages never delivered";
    std::ostringstream r;
    r << "core delivered all " << hostile_delivered_
      << " to the application intact and in order (received); "
      << "legitimate: " << planned_ << " messages there and back, " << legit_bytes_
      << " bytes checked";
    return r.str();
  }

 private:
  static core::EndpointConfig ring_config(core::EndpointConfig c,
                                          std::pair<std::uint32_t, std::uint32_t> ring) {
    if (ring.first) std::tie(c.ring_slots, c.ring_slot_bytes) = ring;
    return c;
  }
  Bytes message(std::uint64_t k) const { return pattern(k, size_of(k, 1, target_->max_message())); }
  // Sends message k from `ep` on `ch`; false when the send path is full (try again later).
  static bool send(core::Endpoint& ep, ChannelId ch, std::uint64_t k) {
    const Bytes m = pattern(k, size_of(k, 1, ep.max_message()));
    Status s;
    if (m.size() <= ep.inline_threshold()) {
      s = ep.send_inline(ch, m);
    } else {
      core::BufferId b = core::kNoBuffer;
      if ((s = ep.acquire_buffer(b)) == Status::kOk) {
        std::copy(m.begin(), m.end(), ep.buffer(b).begin());
        s = ep.send(ch, b, static_cast<std::uint32_t>(m.size()));
        if (s != Status::kOk) (void)ep.release(b);
      }
    }
    EXPECT_TRUE(s == Status::kOk || s == Status::kNoResource) << s;
    return s == Status::kOk;
  }
  static Bytes take(core::Endpoint& ep, const core::Descriptor& d) {
    const std::byte* p = d.is_inline() ? d.data : ep.buffer(d.buffer).data();
    Bytes b(p, p + d.length);
    if (!d.is_inline()) (void)ep.release(d.buffer);
    return b;
  }

  std::uint64_t planned_, sent_ = 0, arrived_ = 0, echoed_ = 0, legit_bytes_ = 0, bad_ = 0;
  std::deque<std::uint64_t> echoes_;
  std::deque<Bytes> hostile_;
  std::uint64_t hostile_delivered_ = 0, hostile_altered_ = 0, hostile_unexpected_ = 0;
};

// ---- uam: requests echoed as replies; every hostile message decoded lands in one counter.
constexpr uam::HandlerId kEcho = 1, kEchoReply = 2;

class UamTarget : public LayerTarget<uam::Endpoint> {
 public:
  explicit UamTarget(Transport t)
      : LayerTarget(std::string("uam ") + transport_name(t),
                    std::make_unique<uam::Endpoint>(net_config(kTargetDevice, t), target_config()),
                    std::make_unique<uam::Endpoint>(net_config(kPeerDevice, t))),
        planned_(packets() / 2 + 16) {
    EXPECT_EQ(target_->on_request(
                  kEcho,
                  [this](uam::Token& tok, const uam::Message& m) {
                    if (m.channel != t_legit_) {  // hostile: handled, never answered
                      ++hostile_handled_;
                      return uam::Disposition::kDone;
                    }
                    const std::uint64_t k = m.args.empty() ? ~0ull : m.args[0];
                    const Bytes want = payload(k);
                    bad_ += m.args.size() != 2 || !std::equal(want.begin(), want.end(),
                                                              m.payload.begin(), m.payload.end());
                    legit_bytes_ += m.payload.size();
                    EXPECT_EQ(target_->reply(tok, kEchoReply, m.args, m.payload), Status::kOk);
                    return uam::Disposition::kDone;
                  }),
              Status::kOk);
    EXPECT_EQ(legit_->on_reply(kEchoReply,
                               [this](const uam::Message& m) {
                                 const Bytes want = payload(m.cookie);
                                 bad_ += m.args.size() != 2 || m.args[0] != m.cookie ||
                                         !std::equal(want.begin(), want.end(), m.payload.begin(),
                                                     m.payload.end());
                                 legit_bytes_ += m.payload.size();
                                 ++replies_;
                                 return uam::Disposition::kDone;
                               }),
              Status::kOk);
    legit_->on_completion([this](ChannelId, std::uint64_t, Status s) {
      ++(s == Status::kOk ? completed_ : failed_);
    });
  }
  // A uam endpoint's requests (coalesced into shared packets), and what it sends when they go
  // unanswered: retransmissions and credit probes.
  std::vector<Bytes> record(const char* device) override {
    RawPeer cap(device, verbs::QpType::kUd);
    uam::Endpoint rec(net_config(device, Transport::kUd));
    const ChannelId ch = join_raw(rec, cap);
    static constexpr std::uint32_t kSizes[] = {0, 4, 20, 28, 100, 300, 400, 496};
    for (std::uint64_t k = 0; k < 8; ++k) {
      const std::uint64_t args[4] = {k, 7, 8, 9};
      const Bytes p = pattern(k, std::min<std::uint32_t>(kSizes[k], rec.max_payload(k % 5)));
      EXPECT_EQ(rec.request(ch, kEcho, std::span(args, k % 5), p, k), Status::kOk);
    }
    return distinct(capture(cap, [&] { return rec.poll(); }));
  }
  Bytes forge(Rng& r) override {
    Bytes b = forge_one(r);
    if (r() % 4 == 0) {  // coalesced: more bit on the first, another message behind it
      b[3] |= std::byte{uam::wire::kMoreBit};
      const Bytes tail = forge_one(r);
      b.insert(b.end(), tail.begin(), tail.end());
    }
    return b;
  }
  void legit_step() override {
    while (issued_ < planned_) {
      const std::uint64_t args[2] = {issued_, size_of(issued_, 0, legit_->max_payload(2))};
      const Status s = legit_->request(l_target_, kEcho, args, payload(issued_), issued_);
      if (s == Status::kNoResource) break;
      EXPECT_EQ(s, Status::kOk);
      ++issued_;
    }
  }
  bool poll() override { return legit_->poll() >= 0 && target_->poll() >= 0; }
  bool legit_done() const override { return completed_ + failed_ == planned_; }
  void expect(const Bytes& p) override {  // what uam's decoder makes of it, message by message
    std::span<const std::byte> rest(p);
    do {
      uam::Header h;
      std::size_t used = 0;
      uam::WireFault fault;
      if (uam::decode_front(rest, h, used, fault) != Status::kOk) {
        ++malformed_;
        break;
      }
      ++messages_;
      rest = rest.subspan(used);
    } while (!rest.empty());
  }
  std::string check() override {
    const uam::Stats& s = target_->stats();
    const std::uint64_t fates = s.credit_messages_received + s.bad_credits + s.duplicates +
                                s.out_of_order + s.overruns + s.stray_replies + s.error_replies +
                                s.unknown_handler + s.requests_handled + s.replies_handled;
    const uam::Stats& l = legit_->stats();
    const std::uint64_t legit_messages = l.requests_sent + l.credit_messages + l.retransmitted;
    EXPECT_EQ(s.malformed, malformed_) << name_;
    EXPECT_EQ(s.closed_drops, 0u) << name_;
    EXPECT_EQ(fates, messages_ + legit_messages) << name_ << ": messages decoded";
    EXPECT_EQ(s.requests_handled, planned_ + hostile_handled_) << name_;
    EXPECT_EQ(bad_, 0u) << name_ << ": legitimate payloads altered";
    EXPECT_EQ(replies_, planned_) << name_;
    EXPECT_EQ(completed_, planned_) << name_;
    EXPECT_EQ(target_->channel_status(t_legit_), Status::kOk) << name_;
    std::ostringstream r;
    r << "uam: " << malformed_ << " malformed (stats().malformed " << s.malformed << "), "
      << messages_ << " hostile messages decoded (credit " << s.credit_messages_received
      << ", bad_credits " << s.bad_credits << ", duplicates " << s.duplicates << ", out_of_order "
      << s.out_of_order << ", overruns " << s.overruns << ", stray_replies " << s.stray_replies
      << ", error_replies " << s.error_replies << ", unknown_handler " << s.unknown_handler
      << ", requests_handled " << s.requests_handled << " of which hostile " << hostile_handled_
      << ", replies_handled " << s.replies_handled << "; less " << legit_messages
      << " legitimate); legitimate: " << planned_ << " requests echoed, " << legit_bytes_
      << " bytes checked";
    return r.str();
  }

 private:
  static uam::Config target_config() {
    uam::Config c;
    c.reliability.max_retries = 1u << 30;  // the hostile peer never acknowledges what it is sent
    return c;
  }
  Bytes payload(std::uint64_t k) const { return pattern(k, size_of(k, 0, legit_->max_payload(2))); }
  // One message: a header of mostly right magic, version and kind, anything else in the fields.
  static Bytes forge_one(Rng& r) {
    const std::uint8_t n =
        r() % 8 == 0 ? static_cast<std::uint8_t>(5 + r() % 3) : static_cast<std::uint8_t>(r() % 5);
    const std::size_t body = r() % 3 == 0 ? r() % 600 : r() % 40;
    Bytes b(16 + 8 * std::min<std::size_t>(n, 4) + body);
    b[0] = static_cast<std::byte>(r() % 8 ? uam::kWireMagic : r());
    const std::uint8_t kind =
        r() % 8 ? static_cast<std::uint8_t>(1 + r() % 5) : static_cast<std::uint8_t>(r() % 16);
    b[1] = static_cast<std::byte>((r() % 8 ? uam::kWireVersion : r() % 16) << 4 | kind);
    b[2] = static_cast<std::byte>(r() % 2 ? kEcho : r());
    std::uint8_t flags = n | (r() % 8 == 0 ? uam::wire::kProbeBit : 0);
    if (r() % 16 == 0) flags |= static_cast<std::uint8_t>(r() & 0xE0);  // reserved bits
    b[3] = static_cast<std::byte>(flags);
    core::store_le<std::uint16_t>(b.data() + 4, static_cast<std::uint16_t>(r() % 4 ? body : r()));
    b[6] = static_cast<std::byte>(r() % 2 ? 0 : r());  // credits returned
    b[7] = static_cast<std::byte>(r());                // token
    core::store_le<std::uint32_t>(b.data() + 8, odd_u32(r));
    core::store_le<std::uint32_t>(b.data() + 12, odd_u32(r));
    for (std::size_t i = 16; i < b.size(); ++i) b[i] = static_cast<std::byte>(r());
    return b;
  }

  std::uint64_t planned_, issued_ = 0, replies_ = 0, completed_ = 0, failed_ = 0, bad_ = 0,
                          legit_bytes_ = 0;
  std::uint64_t messages_ = 0, hostile_handled_ = 0;
};

// ---- datagrams: legitimate datagrams (fragmented too) echoed; every hostile fragment counted.
constexpr std::uint16_t kLegitPort = 7, kTargetPort = 9;

class DatagramTarget : public LayerTarget<ulp::DatagramEndpoint> {
 public:
  explicit DatagramTarget(Transport t)  // UD: a DatagramEndpoint refuses RC
      : LayerTarget(std::string("datagram ") + transport_name(t),
                    std::make_unique<ulp::DatagramEndpoint>(net_config(kTargetDevice, t)),
                    std::make_unique<ulp::DatagramEndpoint>(net_config(kPeerDevice, t))),
        planned_(packets() / 8 + 8) {
    EXPECT_EQ(legit_->bind(kLegitPort), Status::kOk);
    EXPECT_EQ(target_->bind(kTargetPort), Status::kOk);
  }
  // Datagrams of every shape (empty, one fragment, the stride's edges, several fragments).
  std::vector<Bytes> record(const char* device) override {
    RawPeer cap(device, verbs::QpType::kUd);
    ulp::DatagramEndpoint rec(net_config(device, Transport::kUd));
    const ChannelId ch = join_raw(rec, cap);
    EXPECT_EQ(rec.bind(kLegitPort), Status::kOk);
    const std::uint32_t st = rec.stride();
    for (const std::uint32_t n : {0u, 10u, 24u, st - 1, st, st + 1, 3 * st + 7})
      EXPECT_EQ(rec.send_to(kLegitPort, ch, kTargetPort, pattern(n, n)), Status::kOk);
    return distinct(capture(cap, [&] { return rec.poll(); }));
  }
  Bytes forge(Rng& r) override {
    ulp::DatagramHeader h;
    h.src_port = static_cast<std::uint16_t>(r() % 2 ? kLegitPort : r());
    h.dst_port = static_cast<std::uint16_t>(r() % 3   ? kTargetPort
                                            : r() % 2 ? kTargetPort + 1
                                                      : r());
    h.stride = static_cast<std::uint16_t>(r() % 2   ? target_->stride()
                                          : r() % 2 ? ulp::kMinStride - r() % 2
                                                    : r());
    h.id = odd_u32(r);
    h.length = r() % 8 == 0 ? ulp::kMaxDatagram + static_cast<std::uint32_t>(r() % 3)
                            : static_cast<std::uint32_t>(r() % 20000);
    h.count = static_cast<std::uint16_t>(
        r() % 4 && h.stride ? ulp::fragment_count(h.length, h.stride) : r());
    h.index = static_cast<std::uint16_t>(r() % 4 && h.count ? r() % h.count : r());
    const std::size_t frag =
        r() % 4 && h.stride ? std::min<std::size_t>(h.fragment_bytes(), 2000) : r() % 600;
    Bytes b(ulp::kDatagramHeaderBytes + frag);
    b[0] = static_cast<std::byte>(r() % 8 ? ulp::kDatagramMagic : r());
    b[1] = static_cast<std::byte>(r() % 8 ? ulp::kDatagramVersion << 4 | 1 : r());
    core::store_le<std::uint16_t>(b.data() + 2, h.src_port);
    core::store_le<std::uint16_t>(b.data() + 4, h.dst_port);
    core::store_le<std::uint16_t>(b.data() + 6, h.stride);
    core::store_le<std::uint32_t>(b.data() + 8, h.id);
    core::store_le<std::uint32_t>(b.data() + 12, h.length);
    core::store_le<std::uint16_t>(b.data() + 16, h.index);
    core::store_le<std::uint16_t>(b.data() + 18, h.count);
    for (std::size_t i = ulp::kDatagramHeaderBytes; i < b.size(); ++i)
      b[i] = static_cast<std::byte>(r());
    return b;
  }
  void legit_step() override {
    while (sent_ - echoed_ < 2 && sent_ < planned_) {
      const Status s = legit_->send_to(kLegitPort, l_target_, kTargetPort, datagram(sent_));
      if (s == Status::kNoResource) break;
      EXPECT_EQ(s, Status::kOk);
      ++sent_;
    }
  }
  bool poll() override {
    if (legit_->poll() < 0 || target_->poll() < 0) return false;
    ulp::DatagramInfo info;
    while (target_->recv_from(kTargetPort, buf_, info) == Status::kOk) {
      if (info.peer != t_legit_) {  // a hostile datagram that passed every check: taken, dropped
        ++hostile_datagrams_;
        continue;
      }
      const Bytes want = datagram(arrived_);
      bad_ += info.src_port != kLegitPort ||
              !std::equal(want.begin(), want.end(), buf_.begin(), buf_.begin() + info.length) ||
              info.length != want.size();
      legit_bytes_ += info.length;
      echoes_.push_back(arrived_++);
    }
    while (!echoes_.empty() && target_->send_to(kTargetPort, t_legit_, kLegitPort,
                                                datagram(echoes_.front())) == Status::kOk)
      echoes_.pop_front();
    while (legit_->recv_from(kLegitPort, buf_, info) == Status::kOk) {
      const Bytes want = datagram(echoed_++);
      bad_ += info.peer != l_target_ || info.length != want.size() ||
              !std::equal(want.begin(), want.end(), buf_.begin(), buf_.begin() + info.length);
      legit_bytes_ += info.length;
    }
    return true;
  }
  bool unreliable() const override { return true; }
  bool legit_done() const override { return echoed_ == planned_; }
  void expect(const Bytes& p) override { judge<ulp::DatagramHeader>(p); }
  std::string check() override {
    const ulp::DatagramStats& s = target_->stats();
    const ulp::ReassemblyStats& a = target_->reassembly_stats();
    EXPECT_EQ(s.malformed, malformed_) << "datagram";
    EXPECT_EQ(s.fragments_received, decodable_ + malformed_ + legit_->stats().fragments_sent)
        << "datagram";
    EXPECT_EQ(s.fragments_received, s.malformed + s.unbound_drops + s.delivered +
                                        s.queue_full_drops + a.held + a.duplicates +
                                        a.inconsistent + a.no_slot)
        << "datagram: every fragment in one counter";
    EXPECT_EQ(s.delivered, arrived_ + hostile_datagrams_) << "datagram";
    EXPECT_EQ(s.queue_full_drops, 0u) << "datagram";
    EXPECT_EQ(bad_, 0u) << "datagram: legitimate datagrams altered";
    std::ostringstream r;
    r << "datagram: " << malformed_ << " malformed (stats().malformed " << s.malformed << "), "
      << decodable_ << " decodable (unbound_drops " << s.unbound_drops << ", reassembly held "
      << a.held << " duplicates " << a.duplicates << " inconsistent " << a.inconsistent
      << " no_slot " << a.no_slot << ", " << hostile_datagrams_
      << " whole hostile datagrams delivered and taken); legitimate: " << planned_
      << " datagrams there and back, " << legit_bytes_ << " bytes checked";
    return r.str();
  }

 private:
  static Bytes datagram(std::uint64_t k) { return pattern(k, size_of(k, 0, 6000)); }

  std::vector<std::byte> buf_ = std::vector<std::byte>(ulp::kMaxDatagram);
  std::uint64_t planned_, sent_ = 0, arrived_ = 0, echoed_ = 0, bad_ = 0, legit_bytes_ = 0;
  std::deque<std::uint64_t> echoes_;
  std::uint64_t hostile_datagrams_ = 0;
};

// ---- stream: a legitimate byte stream echoed; every hostile segment counted.
constexpr std::uint16_t kStreamPort = 80;

ulp::StreamConfig stream_config() {
  ulp::StreamConfig s;
  s.send_buffer = 64 * 1024;
  s.recv_buffer = 64 * 1024;
  s.dead_peer_timeout = 30s;  // no keepalive in the way
  return s;
}

class StreamTarget : public LayerTarget<ulp::StreamEndpoint> {
 public:
  explicit StreamTarget(Transport t)
      : LayerTarget(
            std::string("stream ") + transport_name(t),
            std::make_unique<ulp::StreamEndpoint>(net_config(kTargetDevice, t), stream_config()),
            std::make_unique<ulp::StreamEndpoint>(net_config(kPeerDevice, t), stream_config())),
        planned_(packets() * 256) {
    EXPECT_EQ(target_->listen(kStreamPort), Status::kOk);
    EXPECT_EQ(legit_->connect(l_target_, kStreamPort, lc_), Status::kOk);
    const auto end = std::chrono::steady_clock::now() + 10s;
    while (target_->accept(kStreamPort, tc_) != Status::kOk &&
           std::chrono::steady_clock::now() < end)
      (void)poll();
    EXPECT_NE(tc_, ulp::kNoConn) << name_ << ": no connection";
  }
  // A connection's life as its segments show it: the SYN, the ACK of a (forged) SYN-ACK, data, a
  // duplicate ACK with SACK blocks for data past a gap, the FIN, retransmissions.
  std::vector<Bytes> record(const char* device) override {
    RawPeer cap(device, verbs::QpType::kUd);
    ulp::StreamEndpoint rec(net_config(device, Transport::kUd), stream_config());
    const ChannelId ch = join_raw(rec, cap);
    ulp::ConnId c = ulp::kNoConn;
    EXPECT_EQ(rec.connect(ch, kStreamPort, c), Status::kOk);
    std::vector<Bytes> got = capture(
        cap, [&] { return rec.poll(); }, 5ms);
    ulp::SegmentHeader syn;
    if (got.empty() || ulp::decode(got.front(), syn) != Status::kOk) {
      ADD_FAILURE() << "the recorder sent no SYN";
      return got;
    }
    const std::uint32_t iss = 7000;  // ours
    const auto answer = [&](std::uint8_t flags, std::uint32_t seq, const Bytes& data) {
      ulp::SegmentHeader h;
      h.flags = flags;
      h.src_port = kStreamPort;
      h.dst_port = syn.src_port;
      h.seq = seq;
      h.ack = syn.seq + 1;
      h.window = 65535;
      Bytes b(ulp::kSegmentHeaderBytes);
      EXPECT_EQ(ulp::encode(h, data.size(), b), Status::kOk);
      b.insert(b.end(), data.begin(), data.end());
      EXPECT_EQ(cap.send(b), Status::kOk);
    };
    answer(ulp::kSyn | ulp::kAck, iss, {});
    const auto more = [&](std::chrono::milliseconds quiet) {
      auto v = capture(
          cap, [&] { return rec.poll(); }, quiet);
      got.insert(got.end(), v.begin(), v.end());
    };
    more(5ms);
    // The SYN-ACK may take longer than 5 ms to arrive (ASan under TCG: seen): wait for it.
    for (const auto end = std::chrono::steady_clock::now() + 10s;
         rec.stats(c).value_or(ulp::StreamStats{}).state != ulp::StreamState::kEstablished &&
         std::chrono::steady_clock::now() < end;)
      more(5ms);
    if (rec.stats(c).value_or(ulp::StreamStats{}).state != ulp::StreamState::kEstablished) {
      ADD_FAILURE() << "the recorder's connection did not take the forged SYN-ACK within 10 s";
      return got;
    }
    std::size_t took = 0;
    EXPECT_EQ(rec.send(c, pattern(1, 1500), took), Status::kOk);
    more(5ms);
    answer(ulp::kAck, iss + 1 + 300, pattern(2, 100));  // past a gap: a SACK comes back
    more(5ms);
    EXPECT_EQ(rec.shutdown(c), Status::kOk);
    more(30ms);
    // One of each segment, in sequence order from the recorder's initial number (which comes
    // from its clock): the corpus has the same shape each run, so a seed picks the same packets.
    std::map<std::tuple<std::uint8_t, std::uint32_t, std::size_t>, Bytes> kept;
    for (Bytes& b : got) {
      ulp::SegmentHeader h;
      if (ulp::decode(b, h) == Status::kOk)
        kept.try_emplace({h.flags, h.seq - syn.seq, b.size()}, std::move(b));
    }
    std::vector<Bytes> corpus;
    for (auto& [key, b] : kept) corpus.push_back(std::move(b));
    return corpus;
  }
  Bytes forge(Rng& r) override {
    const std::uint8_t flags =
        static_cast<std::uint8_t>(r() % 32 | (r() % 16 == 0 ? r() & 0xE0 : 0));
    const std::size_t body = flags & ulp::kSack ? 8 * (r() % 6) : r() % 2 ? 0 : r() % 700;
    Bytes b(ulp::kSegmentHeaderBytes + body);
    b[0] = static_cast<std::byte>(r() % 8 ? ulp::kSegmentMagic : r());
    b[1] = static_cast<std::byte>(r() % 8 ? ulp::kSegmentVersion << 4 : r());
    b[2] = static_cast<std::byte>(flags);
    b[3] = static_cast<std::byte>(r() % 16 ? 0 : r());
    core::store_le<std::uint16_t>(b.data() + 4,
                                  static_cast<std::uint16_t>(r() % 2 ? 49152 + r() % 8 : r()));
    core::store_le<std::uint16_t>(b.data() + 6,
                                  static_cast<std::uint16_t>(r() % 2 ? kStreamPort : r()));
    core::store_le<std::uint32_t>(b.data() + 8, odd_u32(r));
    core::store_le<std::uint32_t>(b.data() + 12, odd_u32(r));
    core::store_le<std::uint32_t>(b.data() + 16, odd_u32(r));
    for (std::size_t i = ulp::kSegmentHeaderBytes; i < b.size(); ++i)
      b[i] = static_cast<std::byte>(r());
    return b;
  }
  void legit_step() override {
    if (queued_ == planned_) return;
    const std::size_t n = std::min<std::uint64_t>(planned_ - queued_, size_of(queued_, 1, 8192));
    Bytes chunk(n);
    for (std::size_t i = 0; i < n; ++i) chunk[i] = stream_byte(queued_ + i);
    std::size_t took = 0;
    const Status s = legit_->send(lc_, chunk, took);
    EXPECT_TRUE(s == Status::kOk || s == Status::kNoResource) << s;
    queued_ += took;
  }
  bool poll() override {
    if (legit_->poll() < 0 || target_->poll() < 0) return false;
    std::size_t n = 0;
    while (tc_ != ulp::kNoConn && target_->recv(tc_, buf_, n) == Status::kOk && n > 0) {
      for (std::size_t i = 0; i < n; ++i) bad_ += buf_[i] != stream_byte(got_ + i);
      got_ += n;
      echo_.insert(echo_.end(), buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(n));
    }
    while (!echo_.empty()) {
      std::size_t took = 0;
      const Bytes front(
          echo_.begin(),
          echo_.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(echo_.size(), 16384)));
      if (target_->send(tc_, front, took) != Status::kOk || took == 0) break;
      echo_.erase(echo_.begin(), echo_.begin() + static_cast<std::ptrdiff_t>(took));
    }
    while (lc_ != ulp::kNoConn && legit_->recv(lc_, buf_, n) == Status::kOk && n > 0) {
      for (std::size_t i = 0; i < n; ++i) bad_ += buf_[i] != stream_byte(echoed_ + i);
      echoed_ += n;
    }
    return true;
  }
  bool legit_done() const override { return echoed_ == planned_; }
  void expect(const Bytes& p) override { judge<ulp::SegmentHeader>(p); }
  std::string check() override {
    const ulp::StreamEndpointStats& s = target_->stats();
    EXPECT_EQ(s.malformed, malformed_) << name_;
    EXPECT_EQ(s.segments + s.malformed + s.stray + s.refused_syn, target_->net().stats().upcalls)
        << name_ << ": every segment in one counter";
    EXPECT_EQ(s.segments + s.stray + s.refused_syn, decodable_ + legit_->net().stats().sent)
        << name_;
    EXPECT_EQ(bad_, 0u) << name_ << ": legitimate bytes altered";
    EXPECT_EQ(got_, planned_) << name_;
    ulp::StreamState st;
    EXPECT_EQ(target_->state(tc_, st), Status::kOk);
    EXPECT_EQ(st, ulp::StreamState::kEstablished) << name_;
    std::ostringstream r;
    r << "stream: " << malformed_ << " malformed (stats().malformed " << s.malformed << "), "
      << decodable_ << " decodable (stray " << s.stray << ", refused_syn " << s.refused_syn
      << ", segments " << s.segments << " less " << legit_->net().stats().sent << " legitimate; "
      << s.resets_sent << " RSTs sent back); legitimate: " << planned_
      << " bytes there and back, checked both ways";
    return r.str();
  }

 private:
  static std::byte stream_byte(std::uint64_t i) { return static_cast<std::byte>(i * 7 + (i >> 9)); }

  ulp::ConnId lc_ = ulp::kNoConn, tc_ = ulp::kNoConn;
  std::vector<std::byte> buf_ = std::vector<std::byte>(16384);
  Bytes echo_;
  std::uint64_t planned_, queued_ = 0, got_ = 0, echoed_ = 0, bad_ = 0;
};

class WireFuzz : public ::testing::Test {
 protected:
  void SetUp() override { UNET_REQUIRE_TWO_DEVICES(); }
  // Runs the fuzzer against a T on transport `t` and prints its report (core UD: with a stranger).
  template <class T>
  static void fuzz(Transport t) {
    T target(t);
    const bool rc = t == Transport::kRc;
    const Options o{.rc = rc,
                    .target_buffer = rc ? kRcBuffer : kUdBuffer,
                    .stranger = !rc && std::is_same_v<T, CoreTarget>};
    std::printf("wire fuzz: %s\n", run(target, o).c_str());
  }
};

TEST_F(WireFuzz, CoreUd) { fuzz<CoreTarget>(Transport::kUd); }
TEST_F(WireFuzz, CoreRc) { fuzz<CoreTarget>(Transport::kRc); }
// The ring case (wire_fuzz.h, run_ring): small rings on both sides, so that the hostile peer's
// writes cover every slot many times and the target's messages to it run out of credit.
TEST_F(WireFuzz, CoreRcRing) {
  CoreTarget target(Transport::kRc, {16, 256});
  std::printf("wire fuzz: %s\n",
              run_ring(target, {.hostile_slots = 8, .hostile_slot_bytes = 64}).c_str());
}
TEST_F(WireFuzz, UamUd) { fuzz<UamTarget>(Transport::kUd); }
TEST_F(WireFuzz, UamRc) { fuzz<UamTarget>(Transport::kRc); }
TEST_F(WireFuzz, DatagramUd) { fuzz<DatagramTarget>(Transport::kUd); }
TEST_F(WireFuzz, StreamUd) { fuzz<StreamTarget>(Transport::kUd); }
TEST_F(WireFuzz, StreamRc) { fuzz<StreamTarget>(Transport::kRc); }

}  // namespace
}  // namespace unet::test::fuzz
