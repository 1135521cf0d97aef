// The wire fuzzer's driver (tests/fault/wire_fuzz_test.cc has the layers): a hostile raw QP
// (RawPeer) sends random and mutated packets at a target endpoint while a legitimate peer's
// traffic runs beside it, and every hostile packet is accounted for.
//
// One thread drives all of it. Each round the legitimate peer tops up its traffic, the hostile
// peer sends one packet (and waits for its send completion), and both sides are polled until the
// target's device arrivals have caught up with what was sent to it. A packet's fate is predicted
// from its length (UD: longer than the path MTU never leaves the sending device — rxe completes
// such a UD send without sending it; longer than the target's buffer is a receive error at the
// target) and, for the packets that reach the layer, from the layer's own public codec; the
// target's counters must then match exactly:
//   core   arrivals (received + upcalls + unknown_tag_drops + no_grh_drops + recv_overflow_drops +
//          recv_errors)
//          == the legitimate peer's packets + the hostile packets on the wire; recv_errors == the
//          oversize ones; UD qp_recoveries == recv_errors; RC: each oversize one fails its channel
//          and the hostile peer gets a new one.
//   layer  its own counters against the codec's verdicts (Target::check()).
// An oversize UD datagram leaves rxe's UD QP in ERROR until the target's next poll, and the device
// drops whatever arrives meanwhile without any completion. So before sending one, the driver lets
// everything in flight land (and, for layers without retransmission, the target's own sends
// too), and it polls only the target until the QP is back; the legitimate traffic loses nothing
// and every packet stays accounted for. What rxe drops itself (UD longer than the MTU) is counted
// by the driver as "off the wire" and checked to reach no counter.
//
// Seeded: UNET_WIRE_FUZZ_SEED (default: random, printed) picks every hostile packet, and a seed
// gives the same packets and the same verdicts each run — the recorded traffic it replays has the
// same shape each time, though the stream's sequence numbers start from its recorder's clock; the
// legitimate traffic's timing varies. UNET_WIRE_FUZZ_PACKETS hostile packets per case
// (env_amount(); ctest sets fewer under the sanitizers).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "netem.h"
#include "raw_peer.h"
#include "unet/core/endpoint.h"

namespace unet::test::fuzz {

using Bytes = std::vector<std::byte>;
using Rng = std::mt19937_64;

// The hostile and the legitimate peers sit on rxe0, the target on rxe1: their traffic crosses
// the veth pair as a remote attacker's would.
inline constexpr const char* kPeerDevice = "rxe0";
inline constexpr const char* kTargetDevice = "rxe1";

// The seed of this run (printed once), the seed of the case named `name` (from it), and the
// hostile packets per case.
std::uint64_t seed();
std::uint64_t case_seed(const char* name);
std::uint64_t packets();

// A deterministic byte pattern (legitimate payloads): byte i of message `k`.
inline std::byte pattern_byte(std::uint64_t k, std::size_t i) {
  return static_cast<std::byte>((k * 0x9E3779B97F4A7C15ull >> 56) + i * 7 + (i >> 8));
}
inline Bytes pattern(std::uint64_t k, std::size_t n) {
  Bytes b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = pattern_byte(k, i);
  return b;
}
// A size in [lo, hi] for legitimate message `k` (the same each run).
std::uint32_t size_of(std::uint64_t k, std::uint32_t lo, std::uint32_t hi);

// The target under attack: one layer's endpoint, its legitimate peer and the checks.
class Target {
 public:
  virtual ~Target() = default;
  virtual const char* name() const = 0;
  // The target's and the legitimate peer's core endpoints.
  virtual core::Endpoint& net() = 0;
  virtual core::Endpoint& legit_net() = 0;
  // A channel of the target to a hostile QP whose half is `hostile_line`; returns the target's.
  virtual std::string open_hostile(std::string_view hostile_line) = 0;
  // The target's end of the last hostile channel opened.
  virtual core::ChannelId hostile_channel() const = 0;
  // Real packets of this layer to replay (recorded from one of its endpoints on `device`).
  virtual std::vector<Bytes> record(const char* device) = 0;
  // A header of this layer with valid-looking and absurd fields, and some payload.
  virtual Bytes forge(Rng& rng) = 0;
  // Tops up the legitimate traffic (within its window).
  virtual void legit_step() = 0;
  // Progress on both sides; legitimate arrivals checked byte for byte. False on a device error.
  virtual bool poll() = 0;
  // Progress on the target alone (while its UD QP is recovered).
  virtual bool poll_target() = 0;
  // Whether the target's own sends must land before an oversize datagram (no retransmission).
  virtual bool unreliable() const { return false; }
  // Whether every planned legitimate unit went there and back, checked.
  virtual bool legit_done() const = 0;
  // A hostile packet reached the layer (its length fits the target's buffer): note the codec's
  // verdict.
  virtual void expect(const Bytes& packet) = 0;
  // Messages the application took from hostile channels so far (core; 0 where a layer has none).
  virtual std::uint64_t hostile_taken() const { return 0; }
  // The layer's equations and legitimate totals (EXPECTs), and its line of the report.
  virtual std::string check() = 0;
};

// Makes the hostile packets: random bytes, boundary lengths, replays and mutations of real
// packets, splices of two, and the layer's forged headers.
class Mutator {
 public:
  Mutator(std::uint64_t seed, std::uint32_t max_len, std::vector<std::uint32_t> boundaries,
          std::vector<Bytes> corpus, std::function<Bytes(Rng&)> forge)
      : rng_(seed),
        max_len_(max_len),
        boundaries_(std::move(boundaries)),
        corpus_(std::move(corpus)),
        forge_(std::move(forge)) {}
  // The next packet and what kind it is.
  Bytes next(std::string& kind);
  Rng& rng() { return rng_; }
  // n random bytes, and one to four random edits of `b` (the ring case uses them on slot images).
  Bytes random_bytes(std::size_t n);
  void mutate(Bytes& b);

 private:
  Rng rng_;
  std::uint32_t max_len_;
  std::vector<std::uint32_t> boundaries_;
  std::vector<Bytes> corpus_;
  std::function<Bytes(Rng&)> forge_;
};

// What the driver sent and how it should have ended.
struct Tally {
  std::uint64_t sent = 0;      // hostile packets posted
  std::uint64_t off_wire = 0;  // UD, longer than the path MTU: dropped by the sending device
  std::uint64_t oversize = 0;  // longer than the target's buffer: a receive error there
  std::uint64_t to_layer = 0;  // reached the target's layer
  std::uint64_t stranger = 0;  // ... of which from a QP with no channel (core UD): unknown tags
  std::uint64_t channels = 1;  // hostile channels used (RC: a new one after each oversize)
  std::map<std::string, std::uint64_t> kinds;
};

struct Options {
  bool rc = false;
  std::uint32_t target_buffer = 0;  // the target's buffer_bytes
  bool stranger = false;            // core UD: also a QP the target has no channel to
  std::uint32_t max_rc_kills = 8;   // RC: oversize messages (each costs a channel) at most
};

// Runs the fuzzer against `t`; returns the report line. Fails the test (EXPECT) on any mismatch.
std::string run(Target& t, const Options& o);

// The ring case (wire_fuzz_ring.cc): a hostile RC peer with a ring of its own opens a ring channel
// to `t` (a core RC endpoint) and RDMA-writes random and mutated slot images into the target's
// ring and words into its control block; the target's reader must deliver exactly the well-formed
// messages, in order, count every malformed head and impossible credit, and zero what it took,
// as a shadow copy of its ring read with core's own slot codec predicts. Also the target's own
// messages to the hostile peer, by ring or SEND, arrive intact. 4 × packets() hostile steps;
// `t.record()` and `t.forge()` are not used. Returns the report line.
struct RingOptions {
  std::uint32_t hostile_slots = 8, hostile_slot_bytes = 64;  // the ring the hostile peer offers
};
std::string run_ring(Target& t, const RingOptions& o);

}  // namespace unet::test::fuzz
