// Reassembler: whole datagrams from fragments in any order, duplicates and strays refused, bounded
// slots with eviction and timeouts — all counted.
#include "unet/ulp/reassembler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

namespace unet::ulp {
namespace {

using namespace std::chrono_literals;

struct Datagram {
  DatagramHeader h;
  std::vector<std::byte> bytes;
};

Datagram make(std::uint32_t id, std::uint32_t length, std::uint16_t stride = 100) {
  Datagram d;
  d.h.src_port = 7;
  d.h.dst_port = 9;
  d.h.stride = stride;
  d.h.id = id;
  d.h.length = length;
  d.h.count = static_cast<std::uint16_t>(fragment_count(length, stride));
  d.bytes.resize(length);
  for (std::uint32_t i = 0; i < length; ++i)
    d.bytes[i] = static_cast<std::byte>((id * 31 + i) & 0xFF);
  return d;
}

Reassembler::Outcome add(Reassembler& r, const Datagram& d, std::uint16_t index, Time now,
                         std::uint32_t& slot, std::uint32_t peer = 1) {
  DatagramHeader h = d.h;
  h.index = index;
  return r.add(peer, h, std::span(d.bytes).subspan(h.offset(), h.fragment_bytes()), now, slot);
}

TEST(Reassembler, AnyOrderGivesTheWholeDatagram) {
  Reassembler r;
  std::mt19937 rng(3);
  for (std::uint32_t id = 0; id < 50; ++id) {
    const Datagram d = make(id, 101 + id * 97);
    std::vector<std::uint16_t> order(d.h.count);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    std::uint32_t slot = 99;
    for (std::size_t k = 0; k < order.size(); ++k) {
      const auto o = add(r, d, order[k], Time(0), slot);
      ASSERT_EQ(o, k + 1 < order.size() ? Reassembler::Outcome::kIncomplete
                                        : Reassembler::Outcome::kComplete);
    }
    const auto got = r.data(slot);
    ASSERT_TRUE(std::equal(got.begin(), got.end(), d.bytes.begin(), d.bytes.end()));
    r.release(slot);
  }
  EXPECT_EQ(r.stats().completed, 50u);
  EXPECT_EQ(r.assembling(), 0u);
}

TEST(Reassembler, DuplicatesAndInconsistentFragmentsAreDropped) {
  Reassembler r;
  const Datagram d = make(1, 250);
  std::uint32_t slot;
  ASSERT_EQ(add(r, d, 0, Time(0), slot), Reassembler::Outcome::kIncomplete);
  EXPECT_EQ(add(r, d, 0, Time(0), slot), Reassembler::Outcome::kDropped);
  Datagram other = make(1, 300);  // same id and port, different length
  EXPECT_EQ(add(r, other, 1, Time(0), slot), Reassembler::Outcome::kDropped);
  EXPECT_EQ(r.stats().duplicates, 1u);
  EXPECT_EQ(r.stats().inconsistent, 1u);
  ASSERT_EQ(add(r, d, 1, Time(0), slot), Reassembler::Outcome::kIncomplete);
  ASSERT_EQ(add(r, d, 2, Time(0), slot), Reassembler::Outcome::kComplete);
  EXPECT_TRUE(std::equal(d.bytes.begin(), d.bytes.end(), r.data(slot).begin()));
}

TEST(Reassembler, SamePortAndIdFromAnotherPeerIsAnotherDatagram) {
  Reassembler r;
  const Datagram d = make(5, 150);
  std::uint32_t s1, s2;
  ASSERT_EQ(add(r, d, 0, Time(0), s1, 1), Reassembler::Outcome::kIncomplete);
  ASSERT_EQ(add(r, d, 0, Time(0), s2, 2), Reassembler::Outcome::kIncomplete);
  EXPECT_EQ(r.assembling(), 2u);
}

TEST(Reassembler, TimeoutDropsIncompleteDatagrams) {
  Reassembler r(ReassemblyConfig{4, 10ms});
  const Datagram d = make(1, 250);
  std::uint32_t slot;
  ASSERT_EQ(add(r, d, 0, Time(0), slot), Reassembler::Outcome::kIncomplete);
  EXPECT_EQ(r.expire(Time(9ms)), 0u);
  EXPECT_EQ(r.expire(Time(10ms)), 1u);
  EXPECT_EQ(r.stats().expired, 1u);
  // The rest of it now starts a new datagram, which never completes from these two fragments.
  EXPECT_EQ(add(r, d, 1, Time(11ms), slot), Reassembler::Outcome::kIncomplete);
  EXPECT_EQ(add(r, d, 2, Time(11ms), slot), Reassembler::Outcome::kIncomplete);
}

TEST(Reassembler, FullSlotsEvictTheOldestIncompleteOrDrop) {
  Reassembler r(ReassemblyConfig{2, 1s});
  std::uint32_t slot;
  const Datagram a = make(1, 250), b = make(2, 250), c = make(3, 150);
  ASSERT_EQ(add(r, a, 0, Time(1), slot), Reassembler::Outcome::kIncomplete);
  ASSERT_EQ(add(r, b, 0, Time(2), slot), Reassembler::Outcome::kIncomplete);
  ASSERT_EQ(add(r, c, 0, Time(3), slot), Reassembler::Outcome::kIncomplete);  // evicts a
  EXPECT_EQ(r.stats().evicted, 1u);
  ASSERT_EQ(add(r, c, 1, Time(4), slot), Reassembler::Outcome::kComplete);
  const std::uint32_t held = slot;
  ASSERT_EQ(add(r, b, 1, Time(5), slot), Reassembler::Outcome::kIncomplete);
  ASSERT_EQ(add(r, b, 2, Time(5), slot), Reassembler::Outcome::kComplete);
  // Both slots hold completed datagrams not yet taken: a new one has nowhere to go.
  EXPECT_EQ(add(r, a, 0, Time(6), slot), Reassembler::Outcome::kDropped);
  EXPECT_EQ(r.stats().no_slot, 1u);
  r.release(held);
  EXPECT_EQ(add(r, a, 0, Time(7), slot), Reassembler::Outcome::kIncomplete);
}

TEST(Reassembler, BadConfigurationThrows) {
  EXPECT_THROW(Reassembler(ReassemblyConfig{0, 1s}), std::invalid_argument);
  EXPECT_THROW(Reassembler(ReassemblyConfig{1, 0s}), std::invalid_argument);
}

}  // namespace
}  // namespace unet::ulp
