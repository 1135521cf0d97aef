// libFuzzer target for the ulp datagram header: decode() must accept or refuse any bytes without
// crashing or reading past them, leave its output untouched on refusal, and whatever it accepts
// must satisfy check() and encode back to the same 20 bytes (the codec is canonical).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>

#include "unet/ulp/datagram_header.h"

using namespace unet::ulp;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data), size);
  DatagramHeader out;
  out.id = 0x5A5A;
  const DatagramHeader before = out;
  DatagramFault fault = DatagramFault::kNone;
  if (decode(in, out, fault) != unet::Status::kOk) {
    if (fault == DatagramFault::kNone || !(out == before)) std::abort();
    return 0;
  }
  const std::size_t fragment = size - kDatagramHeaderBytes;
  if (fault != DatagramFault::kNone || check(out, fragment) != DatagramFault::kNone) std::abort();
  if (out.offset() + fragment > out.length && out.length != 0) std::abort();
  std::byte again[kDatagramHeaderBytes];
  if (encode(out, fragment, again) != unet::Status::kOk) std::abort();
  if (std::memcmp(again, data, kDatagramHeaderBytes) != 0) std::abort();
  return 0;
}
