#include "device_env.h"

#include <cstdlib>

#include "unet/verbs/device.h"

namespace unet::test {

std::string missing_device_reason() {
  auto names = verbs::device_names();
  if (names.empty()) return "no RDMA device (ibv_get_device_list found none)";
  std::string want = device_name();
  if (want.empty()) return {};
  for (const auto& n : names)
    if (n == want) return {};
  return "UNET_DEVICE=" + want + " is not present";
}

bool device_required() {
  const char* v = std::getenv("UNET_REQUIRE_DEVICE");
  return v && std::string(v) == "1";
}

std::string device_name() {
  const char* v = std::getenv("UNET_DEVICE");
  return v ? v : "";
}

std::string cm_address() {
  const char* v = std::getenv("UNET_RXE_ADDR0");
  return v ? v : "";
}

std::optional<std::uint32_t> gid_index() {
  const char* v = std::getenv("UNET_GID_INDEX");
  if (!v || !*v) return std::nullopt;
  return static_cast<std::uint32_t>(std::strtoul(v, nullptr, 10));
}

}  // namespace unet::test
