// The ulp stream segment header codec: explicit little-endian byte stores, independent of the
// host's byte order and of struct padding.
#include "unet/ulp/segment_header.h"

#include <algorithm>
#include <array>

#include "unet/core/little_endian.h"
#include "unet/core/serial_number.h"

namespace unet::ulp {
namespace {

using core::load_le;
using core::store_le;

using core::seq_lt;
// A block names bytes past the ack, at least one.
bool block_ok(const SackBlock& b, std::uint32_t ack) noexcept {
  return seq_lt(ack, b.start) && seq_lt(b.start, b.end);
}

}  // namespace

std::string_view to_string(SegmentFault f) noexcept {
  switch (f) {
    case SegmentFault::kNone:
      return "none";
    case SegmentFault::kTooShort:
      return "too short";
    case SegmentFault::kBadMagic:
      return "bad magic";
    case SegmentFault::kBadVersion:
      return "bad version";
    case SegmentFault::kReservedBits:
      return "reserved bits set";
    case SegmentFault::kSynAndFin:
      return "SYN and FIN together";
    case SegmentFault::kPayloadNotAllowed:
      return "payload on a SYN or an RST";
    case SegmentFault::kMissingAck:
      return "ACK missing";
    case SegmentFault::kSackNotAllowed:
      return "SACK on other than a pure ACK";
    case SegmentFault::kBadSackLength:
      return "SACK payload not 1 to 4 blocks";
    case SegmentFault::kBadSackBlock:
      return "SACK block empty or not after ack";
  }
  return "unknown segment fault";
}

Status encode_sack(std::span<const SackBlock> blocks, std::uint32_t ack,
                   std::span<std::byte> out) noexcept {
  if (blocks.empty() || blocks.size() > kMaxSackBlocks ||
      out.size() < blocks.size() * kSackBlockBytes)
    return Status::kInvalidArgument;
  for (const SackBlock& b : blocks)
    if (!block_ok(b, ack)) return Status::kInvalidArgument;
  std::byte* p = out.data();
  for (const SackBlock& b : blocks) {
    store_le(p, b.start);
    store_le(p + 4, b.end);
    p += kSackBlockBytes;
  }
  return Status::kOk;
}

std::size_t read_sack(std::span<const std::byte> payload,
                      std::span<SackBlock, kMaxSackBlocks> out) noexcept {
  const std::size_t n = std::min(payload.size() / kSackBlockBytes, kMaxSackBlocks);
  for (std::size_t i = 0; i < n; ++i) {
    out[i].start = load_le<std::uint32_t>(payload.data() + i * kSackBlockBytes);
    out[i].end = load_le<std::uint32_t>(payload.data() + i * kSackBlockBytes + 4);
  }
  return n;
}

Status decode(std::span<const std::byte> in, SegmentHeader& out) noexcept {
  SegmentFault ignored;
  return decode(in, out, ignored);
}

Status decode(std::span<const std::byte> in, SegmentHeader& out, SegmentFault& fault) noexcept {
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
  h.src_port = load_le<std::uint16_t>(p + 4);
  h.dst_port = load_le<std::uint16_t>(p + 6);
  h.seq = load_le<std::uint32_t>(p + 8);
  h.ack = load_le<std::uint32_t>(p + 12);
  h.window = load_le<std::uint32_t>(p + 16);
  if (SegmentFault f = check(h, in.size() - kSegmentHeaderBytes); f != SegmentFault::kNone)
    return refuse(f);
  if (h.has(kSack)) {
    std::array<SackBlock, kMaxSackBlocks> blocks;
    const std::size_t n = read_sack(in.subspan(kSegmentHeaderBytes), blocks);
    for (std::size_t i = 0; i < n; ++i)
      if (!block_ok(blocks[i], h.ack)) return refuse(SegmentFault::kBadSackBlock);
  }
  out = h;
  fault = SegmentFault::kNone;
  return Status::kOk;
}

}  // namespace unet::ulp
