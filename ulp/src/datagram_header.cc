// The ulp datagram header codec: explicit little-endian byte stores, independent of the host's
// byte order and of struct padding.
#include "unet/ulp/datagram_header.h"

#include "unet/core/little_endian.h"

namespace unet::ulp {
namespace {

using core::load_le;
using core::store_le;

constexpr std::uint8_t kKindFragment = 1;

}  // namespace

std::string_view to_string(DatagramFault f) noexcept {
  switch (f) {
    case DatagramFault::kNone:
      return "none";
    case DatagramFault::kTooShort:
      return "too short";
    case DatagramFault::kBadMagic:
      return "bad magic";
    case DatagramFault::kBadVersion:
      return "bad version";
    case DatagramFault::kBadKind:
      return "bad kind";
    case DatagramFault::kTooLong:
      return "datagram too long";
    case DatagramFault::kBadStride:
      return "stride below the minimum";
    case DatagramFault::kBadCount:
      return "fragment count does not match length and stride";
    case DatagramFault::kBadIndex:
      return "fragment index beyond the count";
    case DatagramFault::kLengthMismatch:
      return "fragment size mismatch";
  }
  return "unknown datagram fault";
}

DatagramFault check(const DatagramHeader& h, std::size_t fragment) noexcept {
  if (h.length > kMaxDatagram) return DatagramFault::kTooLong;
  if (h.stride < kMinStride) return DatagramFault::kBadStride;
  if (h.count != fragment_count(h.length, h.stride)) return DatagramFault::kBadCount;
  if (h.index >= h.count) return DatagramFault::kBadIndex;
  if (fragment != h.fragment_bytes()) return DatagramFault::kLengthMismatch;
  return DatagramFault::kNone;
}

Status encode(const DatagramHeader& h, std::size_t fragment, std::span<std::byte> out) noexcept {
  if (out.size() < kDatagramHeaderBytes || check(h, fragment) != DatagramFault::kNone)
    return Status::kInvalidArgument;
  std::byte* p = out.data();
  p[0] = static_cast<std::byte>(kDatagramMagic);
  p[1] = static_cast<std::byte>(kDatagramVersion << 4 | kKindFragment);
  store_le(p + 2, h.src_port);
  store_le(p + 4, h.dst_port);
  store_le(p + 6, h.stride);
  store_le(p + 8, h.id);
  store_le(p + 12, h.length);
  store_le(p + 16, h.index);
  store_le(p + 18, h.count);
  return Status::kOk;
}

Status decode(std::span<const std::byte> in, DatagramHeader& out) noexcept {
  DatagramFault ignored;
  return decode(in, out, ignored);
}

Status decode(std::span<const std::byte> in, DatagramHeader& out, DatagramFault& fault) noexcept {
  auto refuse = [&](DatagramFault f) {
    fault = f;
    return Status::kInvalidArgument;
  };
  if (in.size() < kDatagramHeaderBytes) return refuse(DatagramFault::kTooShort);
  const std::byte* p = in.data();
  if (static_cast<std::uint8_t>(p[0]) != kDatagramMagic) return refuse(DatagramFault::kBadMagic);
  const auto vk = static_cast<std::uint8_t>(p[1]);
  if (vk >> 4 != kDatagramVersion) return refuse(DatagramFault::kBadVersion);
  if ((vk & 0x0F) != kKindFragment) return refuse(DatagramFault::kBadKind);
  DatagramHeader h;
  h.src_port = load_le<std::uint16_t>(p + 2);
  h.dst_port = load_le<std::uint16_t>(p + 4);
  h.stride = load_le<std::uint16_t>(p + 6);
  h.id = load_le<std::uint32_t>(p + 8);
  h.length = load_le<std::uint32_t>(p + 12);
  h.index = load_le<std::uint16_t>(p + 16);
  h.count = load_le<std::uint16_t>(p + 18);
  if (DatagramFault f = check(h, in.size() - kDatagramHeaderBytes); f != DatagramFault::kNone)
    return refuse(f);
  out = h;
  fault = DatagramFault::kNone;
  return Status::kOk;
}

}  // namespace unet::ulp
