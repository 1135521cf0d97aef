// The wire fuzzer's ring case (run_ring, wire_fuzz.h): a hostile RC peer that offered a ring
// writes into the target's ring and control block with RDMA WRITEs, as only a ring peer can.
//
// One thread drives it, as run() does. Each step the hostile peer does one thing and waits for its
// completion — a WRITE is then placed in the target's memory, and the target is not polled while
// it lands — so what the target's reader must make of the ring is a function of the bytes there:
// a shadow copy (Shadow) gets the same writes and is read by core's own slot codec
// (core/src/ring_slot.h) by the rules of core/README.md ("Ring channels"). The target is then
// polled until it has taken what the shadow says (the legitimate traffic runs meanwhile), and must
// have taken no more: the same messages in the same order (CoreTarget compares the bytes), the same
// malformed heads and impossible credits (ring_protocol_errors), and, read back by RDMA READ from
// time to time, the same bytes in its ring (what it took zeroed, nothing else touched).
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <deque>
#include <map>
#include <sstream>

#include "ring_channel.h"  // core's RingControl, SendWindow and slot codec
#include "wire_fuzz.h"

namespace unet::test::fuzz {

namespace {

namespace ring = core::ring;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// The target's ring as its reader should find it, and what the reader should have done with the
// hostile peer's channel: slots taken in order (a message once the SEND arrivals its head names
// were taken), a malformed head counted and its slot zeroed, a taken message's bytes zeroed, the
// credit in its head — and, when the target's window over our ring is empty, the credit word —
// checked against what the target sent us (core::ring::SendWindow, the target's own bookkeeping).
class Shadow {
 public:
  Shadow(const RawPeer::EndpointRing& r, std::uint32_t our_slots)
      : slots_(r.slots),
        slot_bytes_(r.slot_bytes),
        control_(r.control()),
        mem_(r.bytes / 8),
        tx_(our_slots) {}

  std::uint32_t capacity() const { return ring::capacity(slot_bytes_); }
  std::uint32_t next_seq() const { return taken_; }
  std::uint16_t fallbacks() const { return fallbacks_taken_; }
  std::uint64_t slot_offset(std::uint32_t seq) const {
    return std::uint64_t{seq & (slots_ - 1)} * slot_bytes_;
  }
  std::uint64_t control_offset(std::size_t field) const { return control_ + field; }
  std::span<const std::byte> bytes() const {
    return {reinterpret_cast<const std::byte*>(mem_.data()), mem_.size() * 8};
  }

  void write(std::uint64_t offset, std::span<const std::byte> b) {
    if (!b.empty())
      std::memcpy(reinterpret_cast<std::byte*>(mem_.data()) + offset, b.data(), b.size());
  }
  // Takes what the reader would; `deliver` gets each message's payload, in order.
  template <class F>
  void settle(F&& deliver) {
    for (;;) {
      std::byte* slot = reinterpret_cast<std::byte*>(mem_.data()) + slot_offset(taken_);
      std::uint64_t w = 0;
      const ring::Slot c =
          ring::read_slot(slot, slot_bytes_, static_cast<std::uint16_t>(taken_), w);
      if (c == ring::Slot::kMalformed) {
        ++malformed_;
        std::memset(slot, 0, slot_bytes_);
        ++taken_;
        continue;
      }
      if (c != ring::Slot::kMessage || ring::waits_for_send(w, fallbacks_taken_)) return;
      credit_errors_ += !tx_.update16(ring::credit_of(w));
      const std::byte* p = slot + ring::payload_offset(ring::imm_of(w));
      deliver(Bytes(p, p + ring::length_of(w)));
      std::memset(slot, 0, ring::wire_bytes(ring::length_of(w), ring::imm_of(w)));
      ++taken_;
      ++ring_delivered_;
    }
  }
  // A SEND of ours arrived: the ring messages before it first, then it, then those it unblocks.
  template <class F>
  void send_arrived(const Bytes& p, F&& deliver) {
    settle(deliver);
    ++fallbacks_taken_;
    deliver(p);
    settle(deliver);
  }
  // The target routes a small message to us (core's ring_route): it publishes it, then goes by
  // SEND while our sleep flag is set or no credit is left after a look at the credit word.
  bool route() {
    word(offsetof(core::RingControl, published)) = ++published_;
    if (word(offsetof(core::RingControl, peer_asleep)) != 0) return false;
    if (tx_.available() == 0 && !tx_.update(word(offsetof(core::RingControl, credit))))
      ++credit_errors_;
    if (tx_.available() == 0) return false;
    (void)tx_.take();
    return true;
  }

  std::uint64_t malformed_ = 0, credit_errors_ = 0, ring_delivered_ = 0;

 private:
  std::uint64_t& word(std::size_t field) { return mem_[(control_ + field) / 8]; }

  std::uint32_t slots_, slot_bytes_;
  std::uint64_t control_;
  std::vector<std::uint64_t> mem_;  // the ring and its control block
  ring::SendWindow tx_;             // the target's window over our ring
  std::uint32_t taken_ = 0, published_ = 0;
  std::uint16_t fallbacks_taken_ = 0;
};

// A slot image: head, imm word (with `imm`), payload padded to 8, tail.
Bytes image(const ring::Head& h, std::uint32_t imm_value, const Bytes& payload) {
  Bytes b(ring::wire_bytes(h.length, h.imm));
  const std::uint64_t w = ring::head_word(h), imm = imm_value;
  std::memcpy(b.data(), &w, 8);
  if (h.imm) std::memcpy(b.data() + 8, &imm, 8);
  std::copy(payload.begin(), payload.end(), b.begin() + ring::payload_offset(h.imm));
  std::memcpy(b.data() + ring::tail_offset(w), &w, 8);
  return b;
}

// The target's messages to the hostile peer, 1 to 8 bytes: by ring (the hostile's own ring, read
// as core reads a ring) or by SEND.
Bytes to_hostile(std::uint64_t k) { return pattern(k ^ 0x5a5a, 1 + k % 8); }

}  // namespace

std::string run_ring(Target& t, const RingOptions& o) {
  core::Endpoint& net = t.net();
  core::Endpoint& legit = t.legit_net();
  RawPeer hostile(kPeerDevice, verbs::QpType::kRc);
  hostile.offer_ring(o.hostile_slots, o.hostile_slot_bytes);
  hostile.connect(t.open_hostile(hostile.line()));
  const RawPeer::EndpointRing er = hostile.endpoint_ring();
  const core::ChannelId ch = t.hostile_channel();
  EXPECT_TRUE(net.ring_channel(ch))
      << t.name() << ": the target opened no ring toward the hostile peer";
  if (er.slots == 0 || !net.ring_channel(ch)) return "no ring";

  Mutator mut(case_seed(t.name()), er.slot_bytes, {0}, {}, {});
  Rng& rng = mut.rng();
  Shadow shadow(er, o.hostile_slots);
  std::uint64_t expected_taken = 0;  // hostile messages the target should have delivered
  const auto deliver = [&](const Bytes& p) {
    t.expect(p);
    ++expected_taken;
  };
  const core::EndpointStats t0 = net.stats(), l0 = legit.stats();
  const std::uint64_t taken0 = t.hostile_taken();
  std::map<std::string, std::uint64_t> kinds;

  // The target's messages to the hostile peer: what went each way (message numbers, in order),
  // and what arrived — by ring in the hostile peer's own ring, read as core reads one, or by SEND.
  std::deque<std::uint64_t> by_ring, by_send;
  std::uint64_t target_sent = 0, ring_in = 0, send_in = 0, inbox_bad = 0;
  std::uint32_t own_seq = 0;  // the next message expected in the hostile peer's ring
  const auto inbox = [&] {
    const std::span<std::byte> own = hostile.own_ring();
    for (;;) {
      std::byte* slot =
          own.data() + std::size_t{own_seq & (o.hostile_slots - 1)} * o.hostile_slot_bytes;
      std::uint64_t w = 0;
      const ring::Slot c =
          ring::read_slot(slot, o.hostile_slot_bytes, static_cast<std::uint16_t>(own_seq), w);
      inbox_bad += c == ring::Slot::kMalformed;
      if (c != ring::Slot::kMessage) break;
      const std::byte* p = slot + ring::payload_offset(ring::imm_of(w));
      inbox_bad +=
          by_ring.empty() || Bytes(p, p + ring::length_of(w)) != to_hostile(by_ring.front());
      if (!by_ring.empty()) by_ring.pop_front();
      ring::zero_words(slot, ring::wire_bytes(ring::length_of(w), ring::imm_of(w)));
      ++own_seq;
      ++ring_in;
    }
    (void)hostile.drain([&](std::span<const std::byte> b) {
      inbox_bad += by_send.empty() || Bytes(b.begin(), b.end()) != to_hostile(by_send.front());
      if (!by_send.empty()) by_send.pop_front();
      ++send_in;
    });
  };

  bool ok = true;
  std::uint64_t step = 0;
  // Polls both sides (the legitimate traffic topped up) at least once, until `done`. Not after a
  // failure: the first one is the one to read.
  const auto wait_for = [&](auto&& done, const char* what) {
    if (!ok) return;
    const auto end = Clock::now() + 10s;
    do {
      t.legit_step();
      if (!t.poll()) ok = false;
      inbox();
      if (Clock::now() > end) ok = false;
    } while (ok && !done());
    EXPECT_TRUE(ok) << t.name() << ": " << what << " (step " << step << ")";
  };
  const auto errors = [&] { return net.stats().ring_protocol_errors - t0.ring_protocol_errors; };
  // The target has taken what the shadow says; then it must have taken no more.
  const auto caught_up = [&] {
    wait_for(
        [&] {
          return t.hostile_taken() - taken0 >= expected_taken &&
                 errors() >= shadow.malformed_ + shadow.credit_errors_;
        },
        "the ring's arrivals and errors");
    const bool same = t.hostile_taken() - taken0 == expected_taken &&
                      errors() == shadow.malformed_ + shadow.credit_errors_;
    EXPECT_TRUE(same) << t.name() << ": step " << step << ": took " << t.hostile_taken() - taken0
                      << " (shadow " << expected_taken << "), ring_protocol_errors " << errors()
                      << " (shadow " << shadow.malformed_ + shadow.credit_errors_ << ")";
    ok = ok && same;
  };
  // The target's ring and control block, read back, hold what the shadow does.
  std::uint64_t compares = 0;
  const auto compare = [&] {
    Bytes got(er.bytes);
    EXPECT_EQ(hostile.read_ring(0, got), Status::kOk);
    const std::span<const std::byte> want = shadow.bytes();
    const auto diff = std::mismatch(got.begin(), got.end(), want.begin()).first;
    EXPECT_TRUE(diff == got.end())
        << t.name() << ": the target's ring differs from its shadow at byte " << diff - got.begin()
        << " (step " << step << ")";
    ok = ok && diff == got.end();
    ++compares;
  };
  // One hostile WRITE, kept inside what the ring's key covers.
  const auto put = [&](std::uint64_t off, Bytes b) {
    off %= er.bytes;
    if (off + b.size() > er.bytes) b.resize(er.bytes - off);
    const Status s = hostile.write_ring(off, b);
    EXPECT_EQ(s, Status::kOk) << t.name() << ": a WRITE of " << b.size() << " bytes at " << off;
    ok = ok && s == Status::kOk;
    shadow.write(off, b);
  };

  const std::uint32_t cap = shadow.capacity();
  const auto pick = [&](std::initializer_list<std::uint64_t> v) {
    return *(v.begin() + rng() % v.size());
  };
  // A head as the hostile peer chooses it: mostly the next message's, with a credit total that is
  // mostly right (what its own ring freed) and sometimes ahead or random.
  const auto head = [&] {
    ring::Head h;
    const std::uint32_t next = shadow.next_seq();
    h.seq = static_cast<std::uint16_t>(
        rng() % 4 ? next
                  : pick({next + 1, next + 2, next + er.slots, next - 1, next - er.slots, rng()}));
    h.length = static_cast<std::uint16_t>(
        rng() % 4 ? 1 + rng() % cap
                  : pick({1, cap, net.inline_threshold(), net.inline_threshold() + 1}));
    h.imm = rng() % 4 == 0;
    h.fallbacks = static_cast<std::uint16_t>(shadow.fallbacks() + (rng() % 10 == 0 ? 1 : 0));
    h.credit = static_cast<std::uint16_t>(rng() % 8 ? own_seq
                                                    : pick({own_seq + 1, own_seq + 0x7fff, rng()}));
    return h;
  };
  const auto message = [&](const ring::Head& h) {
    return image(h, static_cast<std::uint32_t>(rng()), mut.random_bytes(h.length));
  };
  std::deque<std::pair<std::uint64_t, Bytes>> pending;  // the rest of images written in part
  std::deque<std::pair<std::uint64_t, Bytes>> history;  // whole images written, for replays

  const auto hostile_step = [&] {
    const std::uint32_t r = static_cast<std::uint32_t>(rng() % 100);
    const ring::Head h = head();
    std::uint64_t at = shadow.slot_offset(h.seq);
    const char* kind;
    if (r < 22) {  // a whole image, or one written in two WRITEs (either half first)
      const Bytes b = message(h);
      history.emplace_back(at, b);
      if (history.size() > 32) history.pop_front();
      if (rng() % 5) {
        kind = "message";
        put(at, b);
      } else {
        kind = "half-written";
        const std::size_t k = 1 + rng() % (b.size() - 1);
        const bool front = rng() % 2;
        put(front ? at : at + k,
            front ? Bytes(b.begin(), b.begin() + k) : Bytes(b.begin() + k, b.end()));
        if (rng() % 4)
          pending.emplace_back(front ? at + k : at, front ? Bytes(b.begin() + k, b.end())
                                                          : Bytes(b.begin(), b.begin() + k));
      }
    } else if (r < 30) {  // the next seq with a length no writer makes, or 0; a tail or not
      kind = "bad-length";
      ring::Head bad = h;
      bad.seq = static_cast<std::uint16_t>(shadow.next_seq());
      bad.length = static_cast<std::uint16_t>(pick(
          {0, cap + 1, cap + 8, ring::kMaxLength, cap + 1 + rng() % (ring::kMaxLength - cap)}));
      const std::uint64_t w = ring::head_word(bad);
      Bytes b(8);
      std::memcpy(b.data(), &w, 8);
      put(at = shadow.slot_offset(bad.seq), b);
      if (ring::tail_offset(w) + 8 <= er.slot_bytes && rng() % 4) {
        const std::uint64_t tail = rng() % 3 ? w : w ^ 1ull << (rng() % 64);
        std::memcpy(b.data(), &tail, 8);
        put(at + ring::tail_offset(w), b);
      }
    } else if (r < 38) {  // a tail that does not repeat the head; later, maybe, the right one
      kind = "tail-mismatch";
      Bytes b = message(h);
      const std::uint64_t w = ring::head_word(h), wrong = w ^ 1ull << (rng() % 64);
      std::memcpy(b.data() + ring::tail_offset(w), &wrong, 8);
      put(at, b);
      Bytes tail(8);
      std::memcpy(tail.data(), &w, 8);
      if (rng() % 3) pending.emplace_back(at + ring::tail_offset(w), tail);
    } else if (r < 48) {  // an image with random edits (extreme fields in its first 24 bytes)
      kind = "mutated";
      Bytes b = message(h);
      mut.mutate(b);
      put(at + (rng() % 8 ? 0 : pick({1, 7, 8, er.slot_bytes - 8})), b);
    } else if (r < 54) {
      kind = "zeros";
      put(rng() % 2 ? at : rng() % er.control(),
          Bytes(rng() % 2 ? er.slot_bytes : 1 + rng() % (2 * er.slot_bytes)));
    } else if (r < 60) {
      kind = "random";
      put(rng() % er.control(), mut.random_bytes(1 + rng() % (2 * er.slot_bytes)));
    } else if (r < 64 && !history.empty()) {  // an image already taken (or not): an old lap's seq
      kind = "replay";
      const auto& [off, b] = history[rng() % history.size()];
      put(off, b);
    } else if (r < 72) {  // the control block: credit word, sleep flag, published counts, spare
      kind = "control";
      const std::size_t field = 8 * (rng() % 8);
      std::uint64_t v = rng();
      if (field == offsetof(core::RingControl, credit))
        v = pick({own_seq, own_seq + 1, own_seq + 0x7fffffffull, own_seq - 1, rng()});
      else if (field == offsetof(core::RingControl, peer_asleep))
        v = rng() % 4 ? 0 : pick({1, rng()});
      Bytes b(8);
      std::memcpy(b.data(), &v, 8);
      if (rng() % 8 == 0) b.resize(1 + rng() % 7);  // part of a word
      put(shadow.control_offset(field + (b.size() < 8 ? rng() % (9 - b.size()) : 0)), b);
    } else if (r < 78 && !pending.empty()) {
      kind = "completion";
      put(pending.front().first, pending.front().second);
      pending.pop_front();
    } else if (r < 84) {  // a SEND on the channel: taken after the ring messages before it
      kind = "send";
      const Bytes p = mut.random_bytes(rng() % 300);
      const Status s = hostile.send(p);
      EXPECT_EQ(s, Status::kOk) << t.name() << ": a hostile SEND";
      ok = ok && s == Status::kOk;
      shadow.send_arrived(p, deliver);
    } else {  // the target sends the hostile peer a message: by its ring, or by SEND
      kind = "target-send";
      const Bytes m = to_hostile(target_sent);
      const Status s = net.send_inline(ch, m);
      EXPECT_TRUE(s == Status::kOk || s == Status::kNoResource) << s;
      if (s == Status::kOk) {
        (shadow.route() ? by_ring : by_send).push_back(target_sent++);
        if (net.flush() < 0) ok = false;  // posted now, with the flags and credit it sees now
        wait_for([&] { return ring_in + send_in == target_sent; },
                 "the target's message to the hostile peer");
      }
    }
    ++kinds[kind];
    shadow.settle(deliver);
    caught_up();
  };

  const std::uint64_t n = 4 * packets();  // a step costs less than a packet of run()'s cases
  for (step = 0; ok && step < n; ++step) {
    hostile_step();
    if (ok && step % 64 == 63) compare();
  }
  wait_for([&] { return t.legit_done(); }, "the end of the legitimate traffic");
  if (ok) compare();

  const core::EndpointStats& s = net.stats();
  const core::EndpointStats& l = legit.stats();
  EXPECT_EQ(inbox_bad, 0u) << t.name() << ": the target's messages to the hostile peer altered";
  EXPECT_EQ(ring_in + send_in, target_sent) << t.name();
  EXPECT_EQ(s.ring_received - t0.ring_received,
            (l.ring_sent - l0.ring_sent) + shadow.ring_delivered_)
      << t.name() << ": ring arrivals, legitimate and hostile";
  EXPECT_EQ(s.ring_sent - t0.ring_sent, (l.ring_received - l0.ring_received) + ring_in) << t.name();
  EXPECT_EQ(s.recv_errors - t0.recv_errors, 0u) << t.name();
  EXPECT_EQ(l.ring_protocol_errors - l0.ring_protocol_errors, 0u) << t.name();
  EXPECT_EQ(l.send_errors - l0.send_errors, 0u) << t.name() << ": legitimate sends failed";
  EXPECT_TRUE(t.legit_done()) << t.name();

  // Last, a WRITE one byte past what the ring's key covers: refused at the hostile peer (which
  // fails its channel). tests/core/ring_channel_test.cc checks such writes from another QP change
  // nothing.
  std::array<std::byte, 9> past{};
  const Status refused = hostile.write_ring(er.bytes - 8, past);
  EXPECT_EQ(refused, Status::kRemoteAccessError) << t.name();
  wait_for([&] { return true; }, "polls after the refused WRITE");

  std::ostringstream rep;
  rep << t.name() << ": " << step << " hostile steps (";
  for (auto it = kinds.begin(); it != kinds.end(); ++it)
    rep << (it == kinds.begin() ? "" : ", ") << it->first << " " << it->second;
  rep << "): " << shadow.ring_delivered_ << " ring messages and "
      << expected_taken - shadow.ring_delivered_ << " SENDs delivered as predicted, "
      << shadow.malformed_ << " malformed heads and " << shadow.credit_errors_
      << " impossible credits (ring_protocol_errors " << errors() << "), " << compares
      << " ring read-backs equal; "
      << "the target's " << target_sent << " messages to the hostile peer: " << ring_in
      << " by ring, " << send_in << " by SEND; a WRITE past the ring: " << refused << "; "
      << t.check();
  return rep.str();
}

}  // namespace unet::test::fuzz
