#include "wire_fuzz.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <sstream>

namespace unet::test::fuzz {

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Everything the target's device handed to core, whatever became of it.
std::uint64_t arrivals(const core::EndpointStats& s) {
  return s.received + s.upcalls + s.unknown_tag_drops + s.no_grh_drops + s.recv_overflow_drops +
         s.recv_errors;
}

std::uint64_t splitmix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

std::uint64_t seed() {
  static const std::uint64_t s = [] {
    const std::uint64_t v = env_amount("UNET_WIRE_FUZZ_SEED", std::random_device{}() | 1ull << 32);
    std::printf("wire fuzz: seed %llu (UNET_WIRE_FUZZ_SEED=%llu repeats it)\n",
                static_cast<unsigned long long>(v), static_cast<unsigned long long>(v));
    return v;
  }();
  return s;
}

std::uint64_t case_seed(const char* name) {
  std::uint64_t s = seed();
  for (const char* c = name; *c; ++c) s = splitmix(s ^ static_cast<unsigned char>(*c));
  return s;
}

std::uint64_t packets() { return env_amount("UNET_WIRE_FUZZ_PACKETS", 3000); }

std::uint32_t size_of(std::uint64_t k, std::uint32_t lo, std::uint32_t hi) {
  return lo + static_cast<std::uint32_t>(splitmix(k) % (std::uint64_t{hi} - lo + 1));
}

Bytes Mutator::random_bytes(std::size_t n) {
  Bytes b(n);
  for (std::byte& x : b) x = static_cast<std::byte>(rng_());
  return b;
}

// One to four edits: bit flips, random or extreme bytes, extreme 16/32-bit fields in the first
// 24 bytes (where every layer keeps its header), truncation, extension.
void Mutator::mutate(Bytes& b) {
  for (int edits = 1 + static_cast<int>(rng_() % 4); edits > 0; --edits) {
    const std::size_t at = b.empty() ? 0 : rng_() % b.size();
    switch (rng_() % 6) {
      case 0:
        if (!b.empty()) b[at] ^= static_cast<std::byte>(1u << (rng_() % 8));
        break;
      case 1:
        if (!b.empty()) b[at] = static_cast<std::byte>(rng_() % 2 ? 0xFF : rng_());
        break;
      case 2: {  // a header field at an extreme
        static constexpr std::uint32_t kExtremes[] = {0,          1,      0x7FFFFFFF, 0x80000000,
                                                      0xFFFFFFFF, 0xFFFF, 0x7FFF};
        const std::size_t width = rng_() % 2 ? 2 : 4, off = rng_() % 24;
        const std::uint32_t v = kExtremes[rng_() % std::size(kExtremes)];
        for (std::size_t i = 0; i < width && off + i < b.size(); ++i)
          b[off + i] = static_cast<std::byte>(v >> (8 * i));
        break;
      }
      case 3:
        b.resize(b.empty() ? 0 : rng_() % b.size());
        break;
      case 4: {
        const Bytes more = random_bytes(1 + rng_() % 64);
        b.insert(b.end(), more.begin(), more.end());
        break;
      }
      default:
        if (!b.empty()) b[at] = static_cast<std::byte>(rng_() % 3);
        break;
    }
  }
}

Bytes Mutator::next(std::string& kind) {
  const auto pick = [this]() -> Bytes {
    return corpus_.empty() ? random_bytes(rng_() % (max_len_ + 1))
                           : corpus_[rng_() % corpus_.size()];
  };
  Bytes b;
  switch (rng_() % 10) {
    case 0:
    case 1:
      kind = "random";
      b = random_bytes(rng_() % (max_len_ + 1));
      break;
    case 2:
      kind = "boundary";
      b = random_bytes(boundaries_[rng_() % boundaries_.size()]);
      break;
    case 3:
      kind = "replay";
      b = pick();
      break;
    case 4:
    case 5:
      kind = "mutated";
      b = pick();
      mutate(b);
      break;
    case 6: {  // the head of one real packet and the tail of another (coalesced uam packets too)
      kind = "spliced";
      b = pick();
      const Bytes tail = pick();
      b.resize(b.empty() ? 0 : rng_() % (b.size() + 1));
      b.insert(b.end(),
               tail.begin() + static_cast<std::ptrdiff_t>(tail.empty() ? 0 : rng_() % tail.size()),
               tail.end());
      break;
    }
    default:
      kind = "forged";
      b = forge_(rng_);
      if (rng_() % 4 == 0) mutate(b);
      break;
  }
  if (b.size() > max_len_) b.resize(max_len_);
  return b;
}

std::string run(Target& t, const Options& o) {
  core::Endpoint& net = t.net();
  core::Endpoint& legit = t.legit_net();
  RawPeer hostile(kPeerDevice, o.rc ? verbs::QpType::kRc : verbs::QpType::kUd);
  hostile.connect(t.open_hostile(hostile.line()));
  std::unique_ptr<RawPeer> stranger;
  if (o.stranger) {  // aims at the target's UD QP, which has no channel to it
    stranger = std::make_unique<RawPeer>(kPeerDevice, verbs::QpType::kUd);
    stranger->connect(net.offer_channel().local);
  }
  const std::uint32_t mtu = hostile.mtu(), buf = o.target_buffer;
  const std::uint32_t max_len = o.rc ? buf + 64 : mtu + 64;
  std::vector<std::uint32_t> edges = {0,       1,   2,       15,      16,  17,      19,     20,
                                      21,      23,  24,      43,      44,  45,      47,     48,
                                      buf - 1, buf, buf + 1, mtu - 1, mtu, mtu + 1, max_len};
  std::erase_if(edges, [&](std::uint32_t e) { return e > max_len; });
  Mutator mut(case_seed(t.name()), max_len, edges, t.record(kPeerDevice),
              [&t](Rng& r) { return t.forge(r); });

  const core::EndpointStats t0 = net.stats(), l0 = legit.stats();
  Tally tally;
  std::uint64_t hostile_received = 0, rc_kills = 0;
  const auto drained = [&] {
    hostile_received += hostile.drain();
    if (stranger) (void)stranger->drain();
  };
  // What the target's device should have handed to core by now: every legitimate packet posted
  // (probes are RDMA WRITEs: no arrival) and every hostile one on the wire.
  const auto expected_in = [&] {
    return (legit.stats().sent - l0.sent) - (legit.stats().probes - l0.probes) + tally.to_layer +
           tally.oversize;
  };
  const auto landed = [&] { return arrivals(net.stats()) - arrivals(t0) >= expected_in(); };
  // ... and the target's own sends (for layers that do not retransmit them).
  const auto sent_landed = [&] {
    const core::EndpointStats& s = net.stats();
    return arrivals(legit.stats()) - arrivals(l0) + hostile_received >=
           (s.sent - t0.sent) - (s.send_errors - t0.send_errors);
  };
  bool ok = true;
  const auto wait_for = [&](auto&& done, bool target_only, const char* what) {
    const auto end = Clock::now() + 20s;
    while (ok && !done()) {
      if (!(target_only ? t.poll_target() : t.poll())) ok = false;
      drained();
      if (Clock::now() > end) ok = false;
    }
    EXPECT_TRUE(ok) << t.name() << ": " << what << " (after " << tally.sent << " hostile packets)";
  };

  // One hostile packet, and what must come of it.
  const auto hostile_packet = [&] {
    std::string kind;
    Bytes p = mut.next(kind);
    const bool from_stranger = stranger && mut.rng()() % 4 == 0;
    const std::optional<std::uint32_t> imm =
        mut.rng()() % 4 == 0 ? std::optional<std::uint32_t>(static_cast<std::uint32_t>(mut.rng()()))
                             : std::nullopt;
    const bool write_imm = o.rc && p.empty() && mut.rng()() % 2 == 0;
    if (o.rc && p.size() > buf && rc_kills >= o.max_rc_kills) p.resize(buf);  // channels are finite
    const bool off_wire = !o.rc && p.size() > mtu, oversize = !off_wire && p.size() > buf;
    if (oversize && !o.rc)  // nothing may be in flight when the UD QP goes to ERROR
      wait_for([&] { return landed() && (!t.unreliable() || sent_landed()); }, false,
               "traffic in flight");
    RawPeer& from = from_stranger ? *stranger : hostile;
    const Status s = write_imm ? hostile.write_imm(imm.value_or(0)) : from.send(p, imm);
    ++tally.sent;
    ++tally.kinds[write_imm ? "rdma-write-imm" : kind];
    if (off_wire) {
      ++tally.off_wire;
    } else if (!oversize) {
      EXPECT_EQ(s, Status::kOk) << t.name() << ": a hostile send of " << p.size() << " bytes";
      ++tally.to_layer;
      if (from_stranger)
        ++tally.stranger;
      else
        t.expect(p);
    } else if (!o.rc) {
      EXPECT_EQ(s, Status::kOk);
      ++tally.oversize;
      wait_for(
          [&] {
            return net.stats().recv_errors - t0.recv_errors == tally.oversize &&
                   net.stats().qp_recoveries - t0.qp_recoveries == tally.oversize;
          },
          true, "an oversize datagram counted and the QP recovered");
    } else {  // RC: the target's device fails the message and the channel with it
      EXPECT_NE(s, Status::kOk);
      ++tally.oversize;
      ++rc_kills;
      wait_for([&] { return net.stats().recv_errors - t0.recv_errors == tally.oversize; }, false,
               "an oversize message counted");
      hostile.renew();
      hostile.connect(t.open_hostile(hostile.line()));
      ++tally.channels;
    }
  };
  const std::uint64_t n = packets();
  for (std::uint64_t i = 0; ok && i < n; ++i) {
    t.legit_step();
    hostile_packet();
    wait_for(landed, false, "arrivals");
  }
  // The rest of the legitimate traffic (it keeps pace with the hostile packets, or nearly).
  wait_for(
      [&] {
        t.legit_step();
        return landed() && t.legit_done();
      },
      false, "the end of the legitimate traffic");

  const core::EndpointStats& s = net.stats();
  EXPECT_EQ(arrivals(s) - arrivals(t0), expected_in())
      << t.name() << ": arrivals at the target's device";
  EXPECT_EQ(s.recv_errors - t0.recv_errors, tally.oversize) << t.name();
  if (!o.rc) {
    EXPECT_EQ(s.qp_recoveries - t0.qp_recoveries, tally.oversize) << t.name();
  }
  EXPECT_EQ(s.unknown_tag_drops - t0.unknown_tag_drops, tally.stranger) << t.name();
  EXPECT_EQ(s.recv_overflow_drops - t0.recv_overflow_drops, 0u) << t.name();
  EXPECT_EQ(s.no_grh_drops, 0u) << t.name() << ": RoCE carries a GRH on every UD packet";
  EXPECT_EQ(legit.stats().send_errors - l0.send_errors, 0u)
      << t.name() << ": legitimate sends failed";
  EXPECT_TRUE(t.legit_done()) << t.name();

  std::ostringstream r;
  r << t.name() << ": " << tally.sent << " hostile packets (";
  for (auto it = tally.kinds.begin(); it != tally.kinds.end(); ++it)
    r << (it == tally.kinds.begin() ? "" : ", ") << it->first << " " << it->second;
  r << "): " << tally.off_wire << " longer than the MTU (dropped by the sending rxe), "
    << tally.oversize << " longer than the buffer (recv_errors " << s.recv_errors - t0.recv_errors;
  if (!o.rc) r << ", qp_recoveries " << s.qp_recoveries - t0.qp_recoveries;
  r << "), " << tally.to_layer << " to the layer";
  if (o.stranger)
    r << " (" << tally.stranger << " from a stranger: unknown_tag_drops "
      << s.unknown_tag_drops - t0.unknown_tag_drops << ")";
  if (o.rc) r << "; " << tally.channels << " hostile channels";
  r << "; " << t.check();
  return r.str();
}

}  // namespace unet::test::fuzz
