// libFuzzer target for the UAM wire header: decode() must accept or refuse any bytes without
// crashing or reading past them, leave its output untouched on refusal, and whatever it accepts
// must encode back to the same header bytes (the codec is canonical).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>

#include "unet/uam/wire_header.h"

using namespace unet::uam;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data), size);
  Header out;
  out.handler = 0x5A;
  const Header before = out;
  WireFault fault = WireFault::kNone;
  if (decode(in, out, fault) != unet::Status::kOk) {
    if (fault == WireFault::kNone || !(out == before)) std::abort();
    return 0;
  }
  if (fault != WireFault::kNone || check(out) != WireFault::kNone || message_bytes(out) != size)
    std::abort();
  std::byte again[header_bytes(kMaxArgs)];
  if (encode(out, again) != unet::Status::kOk) std::abort();
  if (std::memcmp(again, data, header_bytes(out.arg_count)) != 0) std::abort();
  return 0;
}
