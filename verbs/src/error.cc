#include "unet/verbs/error.h"

#include <cstring>

namespace unet::verbs {
namespace {

std::string describe(std::string_view call, std::string_view object, int err,
                     std::string_view detail) {
  std::string s(call);
  s += '(';
  s += object;
  s += ')';
  if (!detail.empty()) {
    s += ": ";
    s += detail;
  }
  if (err != 0) {
    s += ": ";
    s += std::strerror(err);
  }
  return s;
}

}  // namespace

Error::Error(std::string_view call, std::string_view object, int err, std::string_view detail)
    : std::runtime_error(describe(call, object, err, detail)),
      err_(err),
      call_(call),
      object_(object) {}

void throw_error(std::string_view call, std::string_view object, int err, std::string_view detail) {
  throw Error(call, object, err, detail);
}

}  // namespace unet::verbs
