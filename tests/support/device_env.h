// Device tests: which RDMA device to use, and the skip-or-fail rule.
//
// A device test calls UNET_REQUIRE_DEVICE() first. With no RDMA device it skips with a clear
// reason; with UNET_REQUIRE_DEVICE=1 in the environment (CI) it fails instead, so that CI cannot
// pass by skipping. UNET_DEVICE names the device (default: the first), UNET_GID_INDEX forces a GID.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>

namespace unet::test {

// Empty when a device is present; otherwise why not.
std::string missing_device_reason();
bool device_required();  // UNET_REQUIRE_DEVICE=1
std::string device_name();  // UNET_DEVICE or ""
std::optional<std::uint32_t> gid_index();  // UNET_GID_INDEX

}  // namespace unet::test

#define UNET_REQUIRE_DEVICE()                                                              \
  do {                                                                                     \
    std::string unet_reason_ = ::unet::test::missing_device_reason();                      \
    if (!unet_reason_.empty()) {                                                           \
      if (::unet::test::device_required())                                                 \
        FAIL() << "UNET_REQUIRE_DEVICE=1 but " << unet_reason_;                            \
      GTEST_SKIP() << unet_reason_ << " (run under ci/rxe-vm, or set up rxe: ci/rxe-host)"; \
    }                                                                                      \
  } while (0)
