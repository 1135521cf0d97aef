// Fault: ulp datagrams between two rxe devices across a veth pair with netem loss, duplication
// and reordering (ci/rxe-vm --two-dev). Fragments are lost, so some datagrams are too — but every
// datagram that is delivered must be whole and byte-exact, never partial or mixed, and the
// incomplete ones must be dropped and counted by reassembly.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "netem.h"
#include "unet/ulp/datagram_endpoint.h"

namespace unet::test {
namespace {

using namespace std::chrono_literals;
// Datagram n: its number in the first 4 bytes, then a pattern seeded by it.
std::vector<std::byte> datagram(std::uint32_t n) {
  const std::size_t size =
      n % 50 == 0 ? ulp::kMaxDatagram : 4 + (std::size_t{n} * 2654435761u) % 12000;
  std::vector<std::byte> v(size);
  std::memcpy(v.data(), &n, 4);
  for (std::size_t i = 4; i < size; ++i) v[i] = static_cast<std::byte>((n * 131 + i * 7) & 0xFF);
  return v;
}

class UlpLossyLink : public NetemTest {
 protected:
  UlpLossyLink() : NetemTest({"veth0"}) {}
};

TEST_F(UlpLossyLink, DatagramsArriveWholeOrNotAtAll) {
  constexpr std::uint32_t kDatagrams = 3000;
  ulp::DatagramConfig cfg;
  cfg.reassembly.timeout = 20ms;
  // netem sits on veth0's egress: the sender is rxe0.
  ulp::DatagramEndpoint rx(lossy_ud_config("rxe1"), cfg), tx(lossy_ud_config("rxe0"), cfg);
  core::ChannelOffer orx = rx.offer_peer(), otx = tx.offer_peer();
  (void)rx.accept_peer(orx, otx.local);
  const core::ChannelId to_rx = tx.accept_peer(otx, orx.local);
  ASSERT_EQ(rx.bind(7), Status::kOk);
  ASSERT_EQ(tx.bind(8), Status::kOk);
  const long drops_before = drops();
  std::vector<std::byte> buf(ulp::kMaxDatagram);
  std::vector<std::uint8_t> seen(kDatagrams, 0);
  std::uint64_t received = 0, corrupt = 0;
  auto drain = [&] {
    ulp::DatagramInfo info;
    while (rx.recv_from(7, buf, info) == Status::kOk) {
      ++received;
      std::uint32_t n = UINT32_MAX;
      if (info.length >= 4) std::memcpy(&n, buf.data(), 4);
      if (n >= kDatagrams) {
        ++corrupt;
        continue;
      }
      const auto want = datagram(n);
      if (info.length != want.size() || std::memcmp(buf.data(), want.data(), want.size()) != 0)
        ++corrupt;
      seen[n] = 1;
    }
  };
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  for (std::uint32_t n = 0; n < kDatagrams && std::chrono::steady_clock::now() < deadline;) {
    const auto data = datagram(n);
    const Status s = tx.send_to(8, to_rx, 7, data);
    if (s == Status::kOk)
      ++n;
    else
      ASSERT_EQ(s, Status::kNoResource);
    ASSERT_GE(tx.poll(), 0);
    ASSERT_GE(rx.poll(), 0);
    drain();
  }
  const auto quiet =
      std::chrono::steady_clock::now() + 500ms;  // stragglers and reassembly timeouts
  while (std::chrono::steady_clock::now() < quiet) {
    ASSERT_GE(tx.poll(), 0);
    ASSERT_GE(rx.poll(), 0);
    drain();
  }
  std::uint64_t distinct = 0;
  for (auto s : seen) distinct += s;
  const ulp::ReassemblyStats& rs = rx.reassembly_stats();
  const long dropped_now = drops() - drops_before;
  EXPECT_EQ(tx.stats().sent, kDatagrams);
  EXPECT_EQ(corrupt, 0u) << "a datagram arrived partial, mixed or corrupted";
  EXPECT_GT(dropped_now, 0) << "netem dropped nothing";
  EXPECT_GT(distinct, kDatagrams / 2) << "most datagrams should get through 5% loss";
  EXPECT_LT(distinct, kDatagrams) << "with fragments lost, some 64 KiB datagrams must be lost";
  EXPECT_GT(rs.expired + rs.evicted, 0u) << "incomplete datagrams must be dropped and counted";
  EXPECT_EQ(rx.stats().malformed, 0u);
  std::printf(
      "ulp lossy link (%s): %u datagrams sent, %llu distinct delivered whole (%llu deliveries), 0 "
      "corrupt; netem dropped %ld packets; reassembly dropped %llu incomplete (%llu expired, %llu "
      "evicted), %llu duplicate fragments\n",
      netem().c_str(), kDatagrams, static_cast<unsigned long long>(distinct),
      static_cast<unsigned long long>(received), dropped_now,
      static_cast<unsigned long long>(rs.expired + rs.evicted),
      static_cast<unsigned long long>(rs.expired), static_cast<unsigned long long>(rs.evicted),
      static_cast<unsigned long long>(rs.duplicates));
}

}  // namespace
}  // namespace unet::test
