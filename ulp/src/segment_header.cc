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

bool sack_blocks_ok(std::span<const std::byte> payload, std::uint32_t ack) noexcept {
  std::array<SackBlock, kMaxSackBlocks> blocks;
  const std::size_t n = read_sack(payload, blocks);
  for (std::size_t i = 0; i < n; ++i)
    if (!block_ok(blocks[i], ack)) return false;
  return true;
}

}  // namespace unet::ulp
