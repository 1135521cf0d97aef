// SegmentHeader: the bytes in front of every segment of a ulp stream — a fixed, versioned layout.
//
// One segment per UD message; the payload follows the header and its length is the message's
// length less the header. Little-endian, 20 bytes. Version 2 (version 1 had no SACK):
//
//   offset size field
//   0      1    magic 0x5E
//   1      1    bits 7..4 version (2); bits 3..0 reserved, zero
//   2      1    flags: bit 0 SYN, bit 1 ACK, bit 2 FIN, bit 3 RST, bit 4 SACK; bits 7..5 reserved,
//               zero
//   3      1    reserved, zero
//   4      2    source port
//   6      2    destination port
//   8      4    sequence number of the first payload byte (SYN and FIN each take one number)
//   12     4    acknowledgement: the next byte expected from the peer (valid with ACK)
//   16     4    window: bytes the sender can still take beyond `ack`
//   20     n    payload
//
// A SACK segment (selective acknowledgement, after RFC 2018) is a pure ACK whose payload is 1 to 4
// blocks of 8 bytes instead of data: each names [start, end), sequence numbers of bytes the ack's
// sender holds past `ack`; start at offset 0 of the block, end at offset 4.
//
// Rules decode() enforces, each with its own SegmentFault, leaving its output untouched on
// refusal: at least 20 bytes; magic and version; reserved bits zero; SYN and FIN not together;
// SYN, RST carry no payload; every segment but a first SYN (SYN without ACK) and an RST carries
// ACK; SACK only on an ACK without SYN, FIN or RST, with 1 to 4 whole blocks, each block
// non-empty and after `ack` (serial-number order). encode() refuses what decode() would refuse.
// Neither allocates nor throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "unet/core/little_endian.h"
#include "unet/status.h"

namespace unet::ulp {

// The layout's constants: magic, version, header size.
inline constexpr std::uint8_t kSegmentMagic = 0x5E;
inline constexpr std::uint8_t kSegmentVersion = 2;
inline constexpr std::size_t kSegmentHeaderBytes = 20;
inline constexpr std::size_t kSackBlockBytes = 8;
inline constexpr std::size_t kMaxSackBlocks = 4;

// The flag bits of byte 2.
enum SegmentFlags : std::uint8_t {
  kSyn = 1 << 0,
  kAck = 1 << 1,
  kFin = 1 << 2,
  kRst = 1 << 3,
  kSack = 1 << 4,
};

// One SACK block: bytes [start, end) of the sequence space that arrived past a gap.
struct SackBlock {
  std::uint32_t start = 0;
  std::uint32_t end = 0;
  friend bool operator==(const SackBlock&, const SackBlock&) = default;
};

// One segment's header, decoded: one field per field of the layout above.
struct SegmentHeader {
  std::uint8_t flags = 0;
  std::uint16_t src_port = 0;
  std::uint16_t dst_port = 0;
  std::uint32_t seq = 0;
  std::uint32_t ack = 0;
  std::uint32_t window = 0;

  // Whether flag `f` is set.
  bool has(SegmentFlags f) const noexcept { return flags & f; }
  friend bool operator==(const SegmentHeader&, const SegmentHeader&) = default;
};

// Why a segment was refused, one value per rule (kNone: it was accepted).
enum class SegmentFault : std::uint8_t {
  kNone,
  kTooShort,
  kBadMagic,
  kBadVersion,
  kReservedBits,  // reserved bits of bytes 1..3 set
  kSynAndFin,
  kPayloadNotAllowed,  // payload on a SYN or an RST
  kMissingAck,         // no ACK on a segment other than a first SYN or an RST
  kSackNotAllowed,     // SACK without ACK, or with SYN, FIN or RST
  kBadSackLength,      // a SACK payload that is not 1 to 4 whole blocks
  kBadSackBlock,       // a SACK block that is empty or not after `ack`
};
// The fault's name, for logs and test messages.
std::string_view to_string(SegmentFault f) noexcept;

// The rules above for a header sent with `payload` bytes; kNone when it may go. Inline, as
// encode(): the stream runs both for every segment it sends.
inline SegmentFault check(const SegmentHeader& h, std::size_t payload) noexcept {
  constexpr std::uint8_t kKnownFlags = kSyn | kAck | kFin | kRst | kSack;
  if (h.flags & ~kKnownFlags) return SegmentFault::kReservedBits;
  if (h.has(kSyn) && h.has(kFin)) return SegmentFault::kSynAndFin;
  if (payload != 0 && (h.has(kSyn) || h.has(kRst))) return SegmentFault::kPayloadNotAllowed;
  // Only a first SYN (no ACK: nothing to acknowledge yet) and an RST may go without ACK.
  if (!h.has(kAck) && !h.has(kSyn) && !h.has(kRst)) return SegmentFault::kMissingAck;
  if (h.has(kSack)) {
    if (!h.has(kAck) || h.has(kSyn) || h.has(kFin) || h.has(kRst))
      return SegmentFault::kSackNotAllowed;
    if (payload == 0 || payload % kSackBlockBytes != 0 ||
        payload > kMaxSackBlocks * kSackBlockBytes)
      return SegmentFault::kBadSackLength;
  }
  return SegmentFault::kNone;
}

// Writes the 20 header bytes to the front of `out`; kInvalidArgument (nothing written) when the
// header with `payload` bytes breaks a rule or `out` is shorter than 20 bytes.
[[nodiscard]] inline Status encode(const SegmentHeader& h, std::size_t payload,
                                   std::span<std::byte> out) noexcept {
  if (out.size() < kSegmentHeaderBytes || check(h, payload) != SegmentFault::kNone)
    return Status::kInvalidArgument;
  std::byte* p = out.data();
  p[0] = static_cast<std::byte>(kSegmentMagic);
  p[1] = static_cast<std::byte>(kSegmentVersion << 4);
  p[2] = static_cast<std::byte>(h.flags);
  p[3] = std::byte{0};
  core::store_le(p + 4, h.src_port);
  core::store_le(p + 6, h.dst_port);
  core::store_le(p + 8, h.seq);
  core::store_le(p + 12, h.ack);
  core::store_le(p + 16, h.window);
  return Status::kOk;
}

// Writes a SACK segment's payload: `blocks` (1 to 4, each non-empty and after `ack`) at the
// front of `out`, 8 bytes each. kInvalidArgument (nothing written) otherwise, or when `out` is
// shorter than the blocks.
[[nodiscard]] Status encode_sack(std::span<const SackBlock> blocks, std::uint32_t ack,
                                 std::span<std::byte> out) noexcept;

// The blocks of a SACK segment's payload, which decode() has accepted: payload.size() / 8 of them
// (at most 4) into `out`; returns how many.
std::size_t read_sack(std::span<const std::byte> payload,
                      std::span<SackBlock, kMaxSackBlocks> out) noexcept;

// Whether every block of a SACK segment's payload (which check() accepted) is non-empty and after
// `ack`.
bool sack_blocks_ok(std::span<const std::byte> payload, std::uint32_t ack) noexcept;

// Reads one whole segment; on kOk `out` holds its header and the payload is
// in.subspan(kSegmentHeaderBytes). On failure kInvalidArgument, `fault` names the rule, `out`
// untouched. Inline, as encode(): the stream runs it for every segment that arrives.
[[nodiscard]] inline Status decode(std::span<const std::byte> in, SegmentHeader& out,
                                   SegmentFault& fault) noexcept {
  auto refuse = [&](SegmentFault f) {
    fault = f;
    return Status::kInvalidArgument;
  };
  if (in.size() < kSegmentHeaderBytes) return refuse(SegmentFault::kTooShort);
  const std::byte* p = in.data();
  if (static_cast<std::uint8_t>(p[0]) != kSegmentMagic) return refuse(SegmentFault::kBadMagic);
  const auto version = static_cast<std::uint8_t>(p[1]);
  if (version >> 4 != kSegmentVersion) return refuse(SegmentFault::kBadVersion);
  if ((version & 0x0F) != 0 || p[3] != std::byte{0}) return refuse(SegmentFault::kReservedBits);
  SegmentHeader h;
  h.flags = static_cast<std::uint8_t>(p[2]);  // its reserved bits are check()'s
  h.src_port = core::load_le<std::uint16_t>(p + 4);
  h.dst_port = core::load_le<std::uint16_t>(p + 6);
  h.seq = core::load_le<std::uint32_t>(p + 8);
  h.ack = core::load_le<std::uint32_t>(p + 12);
  h.window = core::load_le<std::uint32_t>(p + 16);
  if (SegmentFault f = check(h, in.size() - kSegmentHeaderBytes); f != SegmentFault::kNone)
    return refuse(f);
  if (h.has(kSack) && !sack_blocks_ok(in.subspan(kSegmentHeaderBytes), h.ack))
    return refuse(SegmentFault::kBadSackBlock);
  out = h;
  fault = SegmentFault::kNone;
  return Status::kOk;
}
[[nodiscard]] inline Status decode(std::span<const std::byte> in, SegmentHeader& out) noexcept {
  SegmentFault ignored;
  return decode(in, out, ignored);
}

}  // namespace unet::ulp
