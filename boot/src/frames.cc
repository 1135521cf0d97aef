#include "frames.h"

#include <charconv>

#include "unet/boot/job.h"

namespace unet::boot::detail {

namespace {

bool parse_u64(std::string_view s, std::uint64_t& out) {
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

std::string encode_list(const std::vector<std::string>& entries) {
  std::string out;
  for (const auto& e : entries) {
    out += std::to_string(e.size());
    out += ':';
    out += e;
  }
  return out;
}

std::vector<std::string> decode_list(std::string_view bytes, std::size_t count) {
  std::vector<std::string> out;
  out.reserve(count);
  while (!bytes.empty()) {
    const auto colon = bytes.find(':');
    std::uint64_t len = 0;
    if (colon == std::string_view::npos || !parse_u64(bytes.substr(0, colon), len) ||
        len > bytes.size() - colon - 1)
      throw Error("fork launcher: a malformed list (entry " + std::to_string(out.size()) + ")");
    out.emplace_back(bytes.substr(colon + 1, len));
    bytes.remove_prefix(colon + 1 + len);
  }
  if (out.size() != count)
    throw Error("fork launcher: a list of " + std::to_string(out.size()) + " entries, not " +
                std::to_string(count));
  return out;
}

std::string encode_header(std::string_view op, std::uint64_t seq, std::uint64_t bytes) {
  return std::string(op) + ' ' + std::to_string(seq) + ' ' + std::to_string(bytes) + '\n';
}

FrameHeader decode_header(std::string_view line) {
  FrameHeader h;
  const auto a = line.find(' ');
  const auto b = a == std::string_view::npos ? a : line.find(' ', a + 1);
  if (b == std::string_view::npos || !parse_u64(line.substr(a + 1, b - a - 1), h.seq) ||
      !parse_u64(line.substr(b + 1), h.bytes) || h.bytes > kMaxBody || a == 0)
    throw Error("fork launcher: a malformed header '" + std::string(line) + "'");
  h.op = line.substr(0, a);
  return h;
}

}  // namespace unet::boot::detail
