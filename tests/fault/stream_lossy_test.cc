// Fault: 100 MiB through a ulp stream between two rxe devices across a veth pair with netem loss,
// duplication and reordering in both directions (ci/rxe-vm --two-dev): every byte arrives once, in
// order and intact, and the connection's counters show the repairs.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <vector>

#include "netem.h"
#include "unet/ulp/stream_endpoint.h"

namespace unet::test {
namespace {

using namespace std::chrono_literals;
class StreamLossyLink : public NetemTest {};

std::byte byte_at(std::uint64_t i) { return static_cast<std::byte>((i * 13 + (i >> 11)) & 0xFF); }

TEST_F(StreamLossyLink, HundredMiBArriveExactlyOnceInOrder) {
  // 100 MiB; a sanitizer build (several times slower) moves UNET_STREAM_FAULT_MIB instead.
  const char* mib = std::getenv("UNET_STREAM_FAULT_MIB");
  const std::uint64_t kTotal = (mib ? std::strtoull(mib, nullptr, 10) : 100ull) << 20;
  ASSERT_GT(kTotal, 0u);
  ulp::StreamConfig cfg;
  cfg.dead_peer_timeout = 10s;
  ulp::StreamEndpoint tx(lossy_ud_config("rxe0"), cfg), rx(lossy_ud_config("rxe1"), cfg);
  core::ChannelOffer ot = tx.offer_peer(), orx = rx.offer_peer();
  const core::ChannelId to_rx = tx.accept_peer(ot, orx.local);
  (void)rx.accept_peer(orx, ot.local);
  ASSERT_EQ(rx.listen(9), Status::kOk);
  ulp::ConnId ct, cr = ulp::kNoConn;
  ASSERT_EQ(tx.connect(to_rx, 9, ct), Status::kOk);
  const auto t0 = std::chrono::steady_clock::now();
  const auto deadline = t0 + 500s;  // about 100 s under emulation; sanitizer builds are slower
  while (rx.accept(9, cr) != Status::kOk && std::chrono::steady_clock::now() < deadline) {
    ASSERT_GE(tx.poll(), 0);
    ASSERT_GE(rx.poll(), 0);
  }
  ASSERT_NE(cr, ulp::kNoConn);
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
  std::printf("stream lossy link (%s, both ways): %llu MiB in %.1f s (%.1f MiB/s), 0 lost, 0 corrupt; netem "
              "dropped %ld packets; sender: %llu segments, %llu retransmitted, %llu timeouts, %llu fast "
              "retransmits; srtt %.0f us, cwnd %u B; receiver held %llu out of order\n",
              netem().c_str(), static_cast<unsigned long long>(got >> 20), secs, static_cast<double>(got) / (1 << 20) / secs, dropped_now,
              static_cast<unsigned long long>(s->segments_sent),
              static_cast<unsigned long long>(s->retransmitted_segments), static_cast<unsigned long long>(s->timeouts),
              static_cast<unsigned long long>(s->fast_retransmits), s->srtt.count() / 1e3, s->cwnd,
              static_cast<unsigned long long>(rx.stats(cr)->held_out_of_order));
}

}  // namespace
}  // namespace unet::test
