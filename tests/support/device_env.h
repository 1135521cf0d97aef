// Device tests: which RDMA device to use, and the skip-or-fail rule.
//
// A device test calls UNET_REQUIRE_DEVICE() first. With no RDMA device it skips with a clear
// reason; with UNET_REQUIRE_DEVICE=1 in the environment (CI) it fails instead, so that CI cannot
// pass by skipping. UNET_DEVICE names the device (default: the first), UNET_GID_INDEX forces a GID.
// An rdma_cm test then calls UNET_REQUIRE_CM_ADDRESS(), with the same rule for UNET_RXE_ADDR0.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>

namespace unet::test {

// Empty when a device is present; otherwise why not.
std::string missing_device_reason();
bool device_required();                    // UNET_REQUIRE_DEVICE=1
std::string device_name();                 // UNET_DEVICE or ""
std::optional<std::uint32_t> gid_index();  // UNET_GID_INDEX
// The IPv4 address of the device's netdev, for rdma_cm: UNET_RXE_ADDR0 (the VM sets it), or "".
std::string cm_address();

}  // namespace unet::test

#define UNET_REQUIRE_DEVICE()                                                                      \
  do {                                                                                             \
    std::string unet_reason_ = ::unet::test::missing_device_reason();                              \
    if (!unet_reason_.empty()) {                                                                   \
      if (::unet::test::device_required()) FAIL() << "UNET_REQUIRE_DEVICE=1 but " << unet_reason_; \
      GTEST_SKIP() << unet_reason_ << " (run under ci/rxe-vm, or set up rxe: ci/rxe-host)";        \
    }                                                                                              \
  } while (0)

#define UNET_REQUIRE_CM_ADDRESS()                                                           \
  do {                                                                                      \
    if (::unet::test::cm_address().empty()) {                                               \
      if (::unet::test::device_required())                                                  \
        FAIL() << "UNET_RXE_ADDR0 (the device's IPv4 address) is not set";                  \
      GTEST_SKIP() << "set UNET_RXE_ADDR0 to the IPv4 address of the RDMA device's netdev"; \
    }                                                                                       \
  } while (0)
