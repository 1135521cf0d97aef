// Unit: the ring slot codec (core/src/ring_slot.h), the offer's ring field and the rdma_cm grant
// (ring_offer.h).
#include "ring_slot.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <span>
#include <string>

#include "ring_offer.h"
#include "unet/core/endpoint.h"

namespace unet::core::ring {
namespace {

constexpr std::uint32_t kSlot = 128;

// A slot image as one WRITE of the writer puts it: head, imm word, payload, zero padding, tail.
struct SlotImage {
  alignas(8) std::array<std::byte, kSlot> bytes{};
  void write(const Head& h, std::uint32_t imm, std::byte fill) {
    const std::uint64_t w0 = head_word(h), w1 = imm;
    std::memcpy(bytes.data(), &w0, 8);
    if (h.imm) std::memcpy(bytes.data() + 8, &w1, 8);
    std::memset(bytes.data() + payload_offset(h.imm), static_cast<int>(fill), h.length);
    std::memcpy(bytes.data() + tail_offset(w0), &w0, 8);
  }
};

TEST(RingSlot, SizesAndOffsets) {
  EXPECT_EQ(capacity(kSlot), kSlot - 24);
  EXPECT_EQ(pad8(0), 0u);
  EXPECT_EQ(pad8(1), 8u);
  EXPECT_EQ(pad8(8), 8u);
  EXPECT_EQ(pad8(9), 16u);
  EXPECT_EQ(wire_bytes(8, false), 24u) << "an 8-byte message: head, payload, tail";
  EXPECT_EQ(wire_bytes(8, true), 32u);
  EXPECT_EQ(wire_bytes(capacity(kSlot), true), kSlot)
      << "the largest payload with imm fills the slot";
  EXPECT_LE(wire_bytes(capacity(kSlot), false), kSlot);
  Head h;
  h.length = 13;
  EXPECT_EQ(tail_offset(head_word(h)), 24u);
  h.imm = true;
  EXPECT_EQ(tail_offset(head_word(h)), 32u);
}

TEST(RingSlot, HeadFieldsRoundTrip) {
  Head h;
  h.seq = 0xfffe;
  h.length = kMaxLength;
  h.imm = true;
  h.fallbacks = 0xabcd;
  h.credit = 0x8001;
  std::uint64_t w = head_word(h);
  EXPECT_EQ(seq_of(w), 0xfffe);
  EXPECT_EQ(length_of(w), kMaxLength);
  EXPECT_TRUE(imm_of(w));
  EXPECT_EQ(fallbacks_of(w), 0xabcd);
  EXPECT_EQ(credit_of(w), 0x8001);
  h.imm = false;
  h.length = 1;
  w = head_word(h);
  EXPECT_FALSE(imm_of(w));
  EXPECT_EQ(length_of(w), 1u);
  EXPECT_NE(head_word(Head{0, 1, false, 0, 0}), 0u)
      << "a head is never zero, so a zeroed slot is never a message";
}

TEST(RingSlot, ATakenSlotNeedsTheExpectedSeqAndTheTailThatRepeatsTheHead) {
  for (bool imm : {false, true})
    for (std::uint32_t len : {1u, 7u, 8u, 9u, 50u, capacity(kSlot)}) {
      SlotImage s;
      std::uint64_t head = 0;
      EXPECT_EQ(read_slot(s.bytes.data(), kSlot, 5, head), Slot::kEmpty) << "zeros";
      Head h;
      h.seq = 5;
      h.length = static_cast<std::uint16_t>(len);
      h.imm = imm;
      s.write(h, 0x12345678, std::byte{0x5a});
      const std::uint32_t tail = tail_offset(head_word(h));
      ASSERT_LE(tail + kTailBytes, kSlot);
      EXPECT_EQ(read_slot(s.bytes.data(), kSlot, 5, head), Slot::kMessage) << len;
      EXPECT_EQ(head, head_word(h));
      EXPECT_EQ(read_slot(s.bytes.data(), kSlot, 6, head), Slot::kEmpty)
          << "another seq: not this lap";
      // Half written, either way round: the head without the tail, or the tail without the head.
      SlotImage first = s;
      std::memset(first.bytes.data() + tail, 0, 8);
      EXPECT_EQ(read_slot(first.bytes.data(), kSlot, 5, head), Slot::kIncomplete) << len;
      SlotImage last = s;
      std::memset(last.bytes.data(), 0, 8);
      EXPECT_EQ(read_slot(last.bytes.data(), kSlot, 5, head), Slot::kEmpty) << len;
      // A tail from another lap (another seq) at the same place is no tail.
      SlotImage stale = s;
      Head other = h;
      other.seq = static_cast<std::uint16_t>(5 + 64);
      const std::uint64_t ow = head_word(other);
      std::memcpy(stale.bytes.data() + tail, &ow, 8);
      EXPECT_EQ(read_slot(stale.bytes.data(), kSlot, 5, head), Slot::kIncomplete) << len;
    }
}

TEST(RingSlot, ImpossibleHeadsAreMalformedAndNothingBeyondTheSlotIsRead) {
  SlotImage s;
  std::uint64_t head = 0;
  Head h;
  h.seq = 9;
  for (std::uint32_t len : {capacity(kSlot) + 1, kMaxLength}) {  // a tail past the slot
    h.length = static_cast<std::uint16_t>(len);
    const std::uint64_t w = head_word(h);
    std::memcpy(s.bytes.data(), &w, 8);
    EXPECT_EQ(read_slot(s.bytes.data(), kSlot, 9, head), Slot::kMalformed) << len;
  }
  // No payload: a head half written looks the same until the word after it repeats it.
  h.length = 0;
  const std::uint64_t w = head_word(h);
  std::memcpy(s.bytes.data(), &w, 8);
  EXPECT_EQ(read_slot(s.bytes.data(), kSlot, 9, head), Slot::kIncomplete);
  std::memcpy(s.bytes.data() + tail_offset(w), &w, 8);
  EXPECT_EQ(read_slot(s.bytes.data(), kSlot, 9, head), Slot::kMalformed);
}

// A WRITE placed byte by byte (rxe's CPU copy may store so, and an emulated CPU does), in address
// order or the reverse: at every point of it the reader finds nothing, or a message not yet all
// there, or — only once every byte that is not zero is in place — the message itself. Never a
// malformed one, and never other bytes than the writer's.
TEST(RingSlot, AWritePlacedByteByByteIsTakenOnlyWhenItsBytesAreAllThere) {
  for (bool imm : {false, true})
    for (std::uint32_t len : {1u, 8u, 13u, 50u, capacity(kSlot)})
      for (std::uint16_t credit : {std::uint16_t{0}, std::uint16_t{0x0102}})
        for (bool ascending : {true, false}) {
          Head h;
          h.seq = 0x0105;
          h.length = static_cast<std::uint16_t>(len);
          h.imm = imm;
          h.credit = credit;
          SlotImage full;
          full.write(h, 0x00a1b2c3, std::byte{0x5a});
          const std::uint32_t wire = wire_bytes(len, imm);
          for (std::uint32_t k = 0; k <= wire; ++k) {  // k bytes placed
            SlotImage s;
            for (std::uint32_t i = 0; i < k; ++i) {
              const std::uint32_t at = ascending ? i : wire - 1 - i;
              s.bytes[at] = full.bytes[at];
            }
            std::uint64_t head = 0;
            const Slot got = read_slot(s.bytes.data(), kSlot, h.seq, head);
            ASSERT_NE(got, Slot::kMalformed) << len << " " << k;
            if (got == Slot::kMessage) {
              EXPECT_EQ(head, head_word(h));
              EXPECT_EQ(std::memcmp(s.bytes.data(), full.bytes.data(), wire), 0)
                  << "taken with bytes missing: len " << len << ", " << k << " of " << wire
                  << " placed";
            }
            if (k == wire) {
              EXPECT_EQ(got, Slot::kMessage) << len;
            }
          }
        }
}

// A ring message waits only for SENDs sent before it that have not arrived; one that names fewer
// SENDs than have arrived (a later SEND was dropped for a full receive queue) is next. Mod 2^16.
TEST(RingSlot, AMessageWaitsOnlyForSendsSentBeforeIt) {
  for (std::uint16_t taken : {std::uint16_t{0}, std::uint16_t{7}, std::uint16_t{0xffff}}) {
    Head h{1, 8, false, taken, 0};
    EXPECT_FALSE(waits_for_send(head_word(h), taken)) << taken;
    h.fallbacks = static_cast<std::uint16_t>(taken + 1);
    EXPECT_TRUE(waits_for_send(head_word(h), taken))
        << taken << ": the SEND before it is on its way";
    h.fallbacks = static_cast<std::uint16_t>(taken - 1);
    EXPECT_FALSE(waits_for_send(head_word(h), taken)) << taken << ": from before a dropped SEND";
  }
}

TEST(RingOffer, FieldRoundTripsAndIsSplitOffTheLine) {
  const Geometry g{64, 1024};
  ASSERT_TRUE(valid(g));
  EXPECT_EQ(encode_field(g), " ring=40x400");
  std::string line = "unet-oob/1 lid=0000 rest" + encode_field(g) + "\n";
  std::string_view v = line;
  Geometry out;
  ASSERT_TRUE(split_offer(v, out));
  EXPECT_EQ(v, "unet-oob/1 lid=0000 rest");
  EXPECT_EQ(out.slots, 64u);
  EXPECT_EQ(out.slot_bytes, 1024u);
  EXPECT_EQ(out.remote_bytes(), 64u * 1024 + kControlBytes);
  std::string_view plain = "unet-oob/1 lid=0000 rest\n";
  Geometry none;
  ASSERT_TRUE(split_offer(plain, none)) << "no field: no ring, not an error";
  EXPECT_EQ(none.slots, 0u);
  EXPECT_EQ(plain, "unet-oob/1 lid=0000 rest\n");
}

TEST(RingOffer, MalformedOrInvalidFieldsAreRefusedWithNothingChanged) {
  for (const char* bad :
       {" ring=", " ring=40", " ring=40x", " ring=x400", " ring=3x400", " ring=1x400",
        " ring=8000x400", " ring=40x404", " ring=40x10", " ring=40x10008", " ring=040x400",
        " ring=40X400", " ring=4gx400", " ring=40x400 ", " ring=40x400x8", " ring=-40x400",
        " ring=40x+400", " ring=123456789x400"}) {
    const std::string line = std::string("unet-oob/1 head") + bad + "\n";
    std::string_view v = line;
    Geometry g{7, 9};
    EXPECT_FALSE(split_offer(v, g)) << bad;
    EXPECT_EQ(v, line) << bad;
    EXPECT_EQ(g.slots, 7u) << bad;
    EXPECT_EQ(g.slot_bytes, 9u) << bad;
  }
}

// rdma_cm's private data: a grant round-trips at the start of CM-padded data; data without the
// magic (another application's, or none) is no ring; a grant cut short, of an invalid geometry
// or with no address is refused with nothing changed.
TEST(RingGrant, RoundTripsInPaddedPrivateDataAndOthersAreNoRing) {
  const Grant g{{64, 1024}, 0x00007f1234567000ull, 0xa1b2c3d4};
  std::array<std::byte, 56> pd{};  // a connect request's private data as the CM delivers it
  encode_grant(g, std::span<std::byte, kGrantBytes>(pd.data(), kGrantBytes));
  EXPECT_EQ(pd[0], std::byte{0x55}) << "little-endian magic";
  Grant out;
  ASSERT_TRUE(decode_grant(pd, out));
  EXPECT_EQ(out.geometry.slots, 64u);
  EXPECT_EQ(out.geometry.slot_bytes, 1024u);
  EXPECT_EQ(out.addr, g.addr);
  EXPECT_EQ(out.rkey, g.rkey);
  ASSERT_TRUE(decode_grant(std::span<const std::byte>(pd.data(), kGrantBytes), out))
      << "exactly the grant";

  const std::array<std::byte, 56> zeros{};
  Grant none{{8, 64}, 1, 1};
  ASSERT_TRUE(decode_grant(zeros, none));
  EXPECT_EQ(none.geometry.slots, 0u);
  EXPECT_EQ(none.addr, 0u);
  ASSERT_TRUE(decode_grant({}, none)) << "no private data at all";
  EXPECT_EQ(none.geometry.slots, 0u);
}

TEST(RingGrant, CutShortInvalidOrNullGrantsAreRefusedWithNothingChanged) {
  const auto encoded = [](Grant g) {
    std::array<std::byte, kGrantBytes> b{};
    encode_grant(g, b);
    return b;
  };
  const Grant keep{{16, 256}, 0x1000, 7};
  for (const Grant& bad :
       {Grant{{3, 1024}, 0x1000, 1}, Grant{{0, 1024}, 0x1000, 1}, Grant{{64, 1020}, 0x1000, 1},
        Grant{{64, 16}, 0x1000, 1}, Grant{{1u << 15, 1024}, 0x1000, 1}, Grant{{64, 1024}, 0, 1}}) {
    Grant g = keep;
    EXPECT_FALSE(decode_grant(encoded(bad), g))
        << bad.geometry.slots << "x" << bad.geometry.slot_bytes;
    EXPECT_EQ(g.geometry.slots, 16u);
    EXPECT_EQ(g.addr, 0x1000u);
  }
  const auto good = encoded({{64, 1024}, 0x1000, 1});
  for (std::size_t cut = 4; cut < kGrantBytes; ++cut) {
    Grant g = keep;
    EXPECT_FALSE(decode_grant(std::span<const std::byte>(good.data(), cut), g)) << cut;
    EXPECT_EQ(g.geometry.slots, 16u);
  }
}

// What a ring channel pins (boot's plan counts it per channel): slots x slot bytes, the control
// block and 32 B of staging per send-queue entry, page-aligned; slots shrink to small buffers.
TEST(RingSlot, MemoryOfOneRingChannel) {
  EndpointConfig c;  // RC, 64 slots of 256 B, send queue 128, 4 KiB buffers
  EXPECT_EQ(ring_channel_bytes(c), (64u * 256 + kControlBytes + 128 * 32 + 4095) / 4096 * 4096);
  EXPECT_EQ(ring_channel_bytes(c), 24u * 1024);
  c.buffer_bytes = 128;  // a slot carries at most one buffer: 128 + 24 bytes
  EXPECT_EQ(ring_channel_bytes(c), (64u * 152 + kControlBytes + 128 * 32 + 4095) / 4096 * 4096);
  c.ring_slots = 0;
  EXPECT_EQ(ring_channel_bytes(c), 0u);
  c.ring_slots = 64;
  c.transport = Transport::kUd;
  EXPECT_EQ(ring_channel_bytes(c), 0u) << "UD has no rings";
}

}  // namespace
}  // namespace unet::core::ring
