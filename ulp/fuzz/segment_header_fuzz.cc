// libFuzzer target for the ulp stream segment header: decode() must accept or refuse any bytes
// without crashing or reading past them, leave its output untouched on refusal, and whatever it
// accepts must satisfy check() and encode back to the same 20 bytes (the codec is canonical); an
// accepted SACK segment's blocks read back and encode to the same payload bytes.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>

#include "unet/ulp/segment_header.h"

using namespace unet::ulp;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data), size);
  SegmentHeader out;
  out.seq = 0x5A5A5A5A;
  const SegmentHeader before = out;
  SegmentFault fault = SegmentFault::kNone;
  if (decode(in, out, fault) != unet::Status::kOk) {
    if (fault == SegmentFault::kNone || !(out == before)) std::abort();
    return 0;
  }
  const std::size_t payload = size - kSegmentHeaderBytes;
  if (fault != SegmentFault::kNone || check(out, payload) != SegmentFault::kNone) std::abort();
  if (payload != 0 && (out.has(kSyn) || out.has(kRst))) std::abort();
  if (out.has(kSyn) && out.has(kFin)) std::abort();
  std::byte again[kSegmentHeaderBytes];
  if (encode(out, payload, again) != unet::Status::kOk) std::abort();
  if (std::memcmp(again, data, kSegmentHeaderBytes) != 0) std::abort();
  if (out.has(kSack)) {
    std::array<SackBlock, kMaxSackBlocks> blocks;
    const std::size_t n = read_sack(in.subspan(kSegmentHeaderBytes), blocks);
    if (n == 0 || n * kSackBlockBytes != payload) std::abort();
    std::byte bytes[kMaxSackBlocks * kSackBlockBytes];
    if (encode_sack(std::span<const SackBlock>(blocks.data(), n), out.ack, bytes) !=
        unet::Status::kOk)
      std::abort();
    if (std::memcmp(bytes, data + kSegmentHeaderBytes, payload) != 0) std::abort();
  }
  return 0;
}
