// The fork launcher's wire format between a worker and the parent (private to boot/).
//
// A worker sends "<op> <seq> <bytes>\n" and a body of that many bytes; op is "gather" (the body
// is the rank's blob) or "alltoall" (the body is a list, one entry per rank). Once every worker
// sent its part of collective <seq>, the parent answers each "result <seq> <bytes>\n" and a list,
// one entry per rank. A list is its entries in order, each "<length>:" and that many bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace unet::boot::detail {

inline constexpr std::size_t kMaxHeader = 64;        // one header line
inline constexpr std::size_t kMaxBody = 256u << 20;  // one body: far above any set-up data

std::string encode_list(const std::vector<std::string>& entries);
// Throws Error when `bytes` is not a list of exactly `count` entries.
std::vector<std::string> decode_list(std::string_view bytes, std::size_t count);

struct FrameHeader {
  std::string op;
  std::uint64_t seq = 0;
  std::uint64_t bytes = 0;
};
std::string encode_header(std::string_view op, std::uint64_t seq, std::uint64_t bytes);
// Throws Error naming `line` when it is not "<op> <seq> <bytes>" with bytes <= kMaxBody.
FrameHeader decode_header(std::string_view line);

}  // namespace unet::boot::detail
