#include "unet/core/remote_token.h"

#include <charconv>
#include <cinttypes>
#include <cstdio>

namespace unet::core {

std::string RemoteToken::encode() const {
  char buf[96];
  int n = std::snprintf(buf, sizeof buf,
                        "unet-token/1 addr=%016" PRIx64 " len=%016" PRIx64 " rkey=%08x id=%08x\n",
                        addr, length, rkey, id);
  return std::string(buf, static_cast<std::size_t>(n));
}

namespace {

// `field=` then exactly `width` lowercase hex digits.
template <class T>
bool field(std::string_view& s, std::string_view name, std::size_t width, T& out) {
  if (s.substr(0, name.size()) != name || s.size() < name.size() + width) return false;
  std::string_view digits = s.substr(name.size(), width);
  for (char c : digits)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  auto r = std::from_chars(digits.data(), digits.data() + width, out, 16);
  if (r.ec != std::errc()) return false;
  s.remove_prefix(name.size() + width);
  return true;
}

}  // namespace

Status RemoteToken::decode(std::string_view s, RemoteToken& out) noexcept {
  RemoteToken t;
  if (!s.empty() && s.back() == '\n') s.remove_suffix(1);
  bool ok = field(s, "unet-token/1 addr=", 16, t.addr) && field(s, " len=", 16, t.length) &&
            field(s, " rkey=", 8, t.rkey) && field(s, " id=", 8, t.id) && s.empty() &&
            t.length != 0;
  if (!ok) return Status::kInvalidArgument;
  out = t;
  return Status::kOk;
}

}  // namespace unet::core
