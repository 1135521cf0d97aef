// libFuzzer target for the out-of-band ConnectionInfo line: decode() must accept or refuse any
// bytes without crashing or reading past them, leave its output untouched on refusal, and accept
// exactly what encode() writes: an accepted line is encode() of what it decoded to (its newline
// optional), and that encoding decodes to an equal ConnectionInfo.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "unet/verbs/connection_info.h"

using namespace unet::verbs;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  ConnectionInfo out;
  out.lid = 0x5A5A;
  const ConnectionInfo before = out;
  if (decode(line, out) != unet::Status::kOk) {
    if (!(out == before)) std::abort();
    return 0;
  }
  if (size > kConnectionInfoMaxLine || out.qpn == 0 || out.qpn > 0xffffff || out.psn > 0xffffff)
    std::abort();
  const std::string again = encode(out);
  if (again.size() > kConnectionInfoMaxLine || again.back() != '\n') std::abort();
  if (line != again && line != std::string_view(again).substr(0, again.size() - 1)) std::abort();
  ConnectionInfo back;
  if (decode(again, back) != unet::Status::kOk || !(back == out)) std::abort();
  return 0;
}
