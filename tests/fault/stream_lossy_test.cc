// Fault: 100 MiB through a ulp stream between two rxe devices across a veth pair with netem loss,
// duplication and reordering in both directions (ci/rxe-vm --two-dev): every byte arrives once, in
// order and intact, and the connection's counters show the repairs.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <vector>

#include "netem.h"
#include "unet/ulp/stream_endpoint.h"

namespace unet::test {
namespace {

using namespace std::chrono_literals;
class StreamLossyLink : public NetemTest {};

std::byte byte_at(std::uint64_t i) { return static_cast<std::byte>((i * 13 + (i >> 11)) & 0xFF); }

// `full` MiB, or UNET_STREAM_FAULT_MIB when a (slower) sanitizer build sets it, whichever is less.
std::uint64_t total_bytes(std::uint64_t full) {
  return std::min(full, env_amount("UNET_STREAM_FAULT_MIB", full)) << 20;
}

// A connected stream pair between rxe0 (tx) and rxe1 (rx) over the lossy veths.
struct LossyPair {
  ulp::StreamEndpoint tx, rx;
  ulp::ConnId ct = ulp::kNoConn, cr = ulp::kNoConn;
  LossyPair(const core::EndpointConfig& t, const core::EndpointConfig& r,
            const ulp::StreamConfig& cfg)
      : tx(t, cfg), rx(r, cfg) {}
  void connect(std::chrono::steady_clock::time_point deadline) {
    core::ChannelOffer ot = tx.offer_peer(), orx = rx.offer_peer();
    const core::ChannelId to_rx = tx.accept_peer(ot, orx.local);
    (void)rx.accept_peer(orx, ot.local);
    ASSERT_EQ(rx.listen(9), Status::kOk);
    ASSERT_EQ(tx.connect(to_rx, 9, ct), Status::kOk);
    while (rx.accept(9, cr) != Status::kOk && std::chrono::steady_clock::now() < deadline) {
      ASSERT_GE(tx.poll(), 0);
      ASSERT_GE(rx.poll(), 0);
    }
    ASSERT_NE(cr, ulp::kNoConn);
  }
};

// Selective acks are on unless UNET_STREAM_SACK=0 (to measure what they save, by hand).
bool sack_on() {
  const char* v = std::getenv("UNET_STREAM_SACK");
  return !v || std::string_view(v) != "0";
}

TEST_F(StreamLossyLink, HundredMiBArriveExactlyOnceInOrder) {
  const std::uint64_t kTotal = total_bytes(100);
  ASSERT_GT(kTotal, 0u);
  ulp::StreamConfig cfg;
  cfg.dead_peer_timeout = 10s;
  cfg.selective_acks = sack_on();
  LossyPair pair(lossy_ud_config("rxe0"), lossy_ud_config("rxe1"), cfg);
  ulp::StreamEndpoint &tx = pair.tx, &rx = pair.rx;
  const auto t0 = std::chrono::steady_clock::now();
  const auto deadline = t0 + 500s;  // sanitizer builds take far longer than a normal run
  ASSERT_NO_FATAL_FAILURE(pair.connect(deadline));
  const ulp::ConnId ct = pair.ct, cr = pair.cr;
  const long drops_before = drops();
  std::vector<std::byte> chunk(64 * 1024), in(256 * 1024);
  std::uint64_t sent = 0, got = 0, bad = 0;
  bool eof = false;
  while (!eof && std::chrono::steady_clock::now() < deadline) {
    if (sent < kTotal) {
      const std::size_t n = std::min<std::uint64_t>(chunk.size(), kTotal - sent);
      for (std::size_t i = 0; i < n; ++i) chunk[i] = byte_at(sent + i);
      std::size_t took = 0;
      const Status s = tx.send(ct, std::span(chunk).first(n), took);
      ASSERT_TRUE(s == Status::kOk || s == Status::kNoResource) << s;
      sent += took;
      if (sent == kTotal) {
        ASSERT_EQ(tx.shutdown(ct), Status::kOk);
      }
    }
    ASSERT_GE(tx.poll(), 0);
    ASSERT_GE(rx.poll(), 0);
    std::size_t n = 0;
    Status r;
    while ((r = rx.recv(cr, in, n)) == Status::kOk) {
      for (std::size_t i = 0; i < n; ++i) bad += in[i] != byte_at(got + i);
      got += n;
    }
    ASSERT_TRUE(r == Status::kNoResource || r == Status::kClosed) << r;
    eof = r == Status::kClosed;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const long dropped_now = drops() - drops_before;
  EXPECT_TRUE(eof) << "end of stream not reached";
  EXPECT_EQ(got, kTotal);
  EXPECT_EQ(bad, 0u);
  EXPECT_GT(dropped_now, 0);
  const std::optional<ulp::StreamStats> s = tx.stats(ct);
  ASSERT_TRUE(s.has_value());
  EXPECT_GT(s->retransmitted_segments, 0u);
  // With selective acks, holes the SACK blocks revealed were resent in recovery; without, none.
  if (cfg.selective_acks)
    EXPECT_GT(s->sack_resent, 0u);
  else
    EXPECT_EQ(s->sack_resent, 0u);
  std::printf(
      "stream lossy link (%s, both ways, selective acks %s): %llu MiB in %.1f s (%.1f MiB/s), 0 "
      "lost, "
      "0 corrupt; netem dropped %ld packets; sender: %llu segments, %llu retransmitted (%llu on "
      "SACK), "
      "%llu timeouts, %llu fast retransmits; srtt %.0f us, cwnd %u B; receiver held %llu out of "
      "order\n",
      netem().c_str(), cfg.selective_acks ? "on" : "off",
      static_cast<unsigned long long>(got >> 20), secs, static_cast<double>(got) / (1 << 20) / secs,
      dropped_now, static_cast<unsigned long long>(s->segments_sent),
      static_cast<unsigned long long>(s->retransmitted_segments),
      static_cast<unsigned long long>(s->sack_resent), static_cast<unsigned long long>(s->timeouts),
      static_cast<unsigned long long>(s->fast_retransmits), s->srtt.count() / 1e3, s->cwnd,
      static_cast<unsigned long long>(rx.stats(cr)->held_out_of_order));
}

// Zero-copy sends through the same loss: every retransmission is gathered from the application's
// memory again, so a send must not complete before the peer acknowledged all of it — the test
// overwrites each send's memory the moment its completion comes, and any stray completion would
// put the overwritten bytes on the wire.
TEST_F(StreamLossyLink, ZeroCopySendsRetransmitFromApplicationMemoryAndCompleteOnlyWhenAcked) {
  const std::uint64_t kTotal = total_bytes(16);
  constexpr std::size_t kChunk = 32 * 1024, kSlots = 8;
  ulp::StreamConfig cfg;
  cfg.dead_peer_timeout = 10s;
  core::EndpointConfig net = lossy_ud_config("rxe0");
  net.mode = core::Mode::kDirectAccess;
  LossyPair pair(net, lossy_ud_config("rxe1"), cfg);
  const auto t0 = std::chrono::steady_clock::now();
  const auto deadline = t0 + 300s;
  ASSERT_NO_FATAL_FAILURE(pair.connect(deadline));
  const long drops_before = drops();
  // kSlots buffers of application memory, each refilled for its next send after its completion.
  std::vector<std::byte> memory(kSlots * kChunk);
  std::array<bool, kSlots> busy{};
  std::uint64_t sent = 0, got = 0, bad = 0, completed = 0, stray = 0;
  std::size_t next_slot = 0;
  std::vector<std::byte> in(256 * 1024);
  const std::uint64_t sends = (kTotal + kChunk - 1) / kChunk;
  bool eof = false;
  // Until the end of the stream and the last completion (it needs the peer's ack of the last data).
  while (!(eof && completed == sends) && std::chrono::steady_clock::now() < deadline) {
    while (sent < kTotal && !busy[next_slot]) {
      std::byte* slot = memory.data() + next_slot * kChunk;
      const std::size_t n = std::min<std::uint64_t>(kChunk, kTotal - sent);
      for (std::size_t i = 0; i < n; ++i) slot[i] = byte_at(sent + i);
      const Status s = pair.tx.send_zero_copy(pair.ct, std::span(slot, n), next_slot);
      if (s == Status::kNoResource) break;
      ASSERT_EQ(s, Status::kOk);
      busy[next_slot] = true;
      next_slot = (next_slot + 1) % kSlots;
      sent += n;
      if (sent == kTotal) {
        ASSERT_EQ(pair.tx.shutdown(pair.ct), Status::kOk);
      }
    }
    ulp::ZeroCopyCompletion z;
    while (pair.tx.zero_copy_completion(z) == Status::kOk) {
      ASSERT_EQ(z.status, Status::kOk);
      ASSERT_LT(z.tag, kSlots);
      stray += !busy[z.tag];
      busy[z.tag] = false;
      std::fill_n(memory.data() + z.tag * kChunk, kChunk, std::byte{0xEE});  // ours again: scribble
      ++completed;
    }
    ASSERT_GE(pair.tx.poll(), 0);
    ASSERT_GE(pair.rx.poll(), 0);
    std::size_t n = 0;
    Status r;
    while ((r = pair.rx.recv(pair.cr, in, n)) == Status::kOk) {
      for (std::size_t i = 0; i < n; ++i) bad += in[i] != byte_at(got + i);
      got += n;
    }
    ASSERT_TRUE(r == Status::kNoResource || r == Status::kClosed) << r;
    eof = r == Status::kClosed;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(eof) << "end of stream not reached";
  EXPECT_EQ(got, kTotal);
  EXPECT_EQ(bad, 0u) << "bytes overwritten after their completion reached the receiver";
  EXPECT_EQ(stray, 0u);
  EXPECT_EQ(completed, sends);
  EXPECT_GT(drops() - drops_before, 0);
  const std::optional<ulp::StreamStats> s = pair.tx.stats(pair.ct);
  ASSERT_TRUE(s.has_value());
  EXPECT_GT(s->retransmitted_segments, 0u);
  EXPECT_GE(s->zero_copy_segments, kTotal / pair.tx.mss());
  std::printf(
      "stream zero-copy lossy link: %llu MiB in %.1f s, %llu sends completed, %llu corrupt; %llu "
      "zero-copy segments, %llu retransmitted\n",
      static_cast<unsigned long long>(got >> 20), secs, static_cast<unsigned long long>(completed),
      static_cast<unsigned long long>(bad), static_cast<unsigned long long>(s->zero_copy_segments),
      static_cast<unsigned long long>(s->retransmitted_segments));
}

}  // namespace
}  // namespace unet::test
