// DatagramHeader: the bytes in front of every fragment of a ulp datagram — a fixed, versioned
// layout.
//
// A datagram of up to kMaxDatagram bytes travels as `count` fragments of `stride` bytes each (the
// last one shorter), one per UD message, each behind this 20-byte little-endian header. Version 1:
//
//   offset size field
//   0      1    magic 0x5D
//   1      1    bits 7..4 version (1); bits 3..0 kind (1 = datagram fragment)
//   2      2    source port
//   4      2    destination port
//   6      2    stride: the payload bytes of every fragment but the last (>= kMinStride)
//   8      4    datagram id: the sender's running count, which with the peer and the source
//               port names the datagram for reassembly
//   12     4    datagram length in bytes (0 .. kMaxDatagram)
//   16     2    fragment index (0 .. count-1)
//   18     2    fragment count: ceil(length / stride), or 1 for an empty datagram
//   20     n    fragment bytes: stride, or for the last fragment length - (count-1) * stride
//
// decode() enforces every rule, each with its own DatagramFault, and leaves its output untouched
// on refusal: at least 20 bytes; magic, version and kind match; length <= kMaxDatagram; stride
// >= kMinStride; count is exactly the count that length and stride give (so at most
// kMaxFragments); index < count; and the message is exactly 20 + the fragment's size bytes.
// encode() refuses a header decode() would refuse. Neither allocates nor throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "unet/status.h"

namespace unet::ulp {

// The layout's constants: magic, version, header size, the largest datagram, the smallest
// stride, and so the most fragments a datagram may have.
inline constexpr std::uint8_t kDatagramMagic = 0x5D;
inline constexpr std::uint8_t kDatagramVersion = 1;
inline constexpr std::size_t kDatagramHeaderBytes = 20;
inline constexpr std::uint32_t kMaxDatagram = 64 * 1024;
inline constexpr std::uint32_t kMinStride = 64;
inline constexpr std::uint32_t kMaxFragments = kMaxDatagram / kMinStride;  // 1024

// One fragment's header, decoded: one field per field of the layout above.
struct DatagramHeader {
  std::uint16_t src_port = 0;
  std::uint16_t dst_port = 0;
  std::uint16_t stride = 0;
  std::uint32_t id = 0;
  std::uint32_t length = 0;
  std::uint16_t index = 0;
  std::uint16_t count = 0;

  // Where this fragment's bytes go in the datagram, and how many there are.
  std::uint32_t offset() const noexcept { return std::uint32_t{index} * stride; }
  std::uint32_t fragment_bytes() const noexcept {
    return index + 1 < count ? stride : length - offset();
  }
  friend bool operator==(const DatagramHeader&, const DatagramHeader&) = default;
};

// Fragments a datagram of `length` bytes needs with fragments of `stride` bytes (stride > 0).
constexpr std::uint32_t fragment_count(std::uint32_t length, std::uint32_t stride) noexcept {
  return length == 0 ? 1 : (length + stride - 1) / stride;
}

// Why a fragment was refused, one value per rule (kNone: it was accepted).
enum class DatagramFault : std::uint8_t {
  kNone,
  kTooShort,  // fewer than 20 bytes
  kBadMagic,
  kBadVersion,
  kBadKind,
  kTooLong,         // length > kMaxDatagram
  kBadStride,       // stride < kMinStride
  kBadCount,        // count != fragment_count(length, stride)
  kBadIndex,        // index >= count
  kLengthMismatch,  // message size != 20 + fragment_bytes()
};
// The fault's name, for logs and test messages.
std::string_view to_string(DatagramFault f) noexcept;

// The rules above for a header to be sent with `fragment` bytes; kNone when it may go.
DatagramFault check(const DatagramHeader& h, std::size_t fragment) noexcept;

// Writes the 20 header bytes to the front of `out`. kInvalidArgument (nothing written) when the
// header with `fragment` payload bytes breaks a rule, or `out` is shorter than 20 bytes.
[[nodiscard]] Status encode(const DatagramHeader& h, std::size_t fragment,
                            std::span<std::byte> out) noexcept;

// Reads one whole fragment message; on kOk `out` holds its header and the fragment's bytes are
// in.subspan(kDatagramHeaderBytes). On failure kInvalidArgument, `fault` (when given) names the
// rule, and `out` is untouched.
[[nodiscard]] Status decode(std::span<const std::byte> in, DatagramHeader& out) noexcept;
[[nodiscard]] Status decode(std::span<const std::byte> in, DatagramHeader& out,
                            DatagramFault& fault) noexcept;

}  // namespace unet::ulp
