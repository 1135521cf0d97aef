// device_names(), Context: device discovery, and the device Context: open a device by name,
// query its limits and ports.
//
// Ownership: every object made on a device (PD, CQ, QP, ...) holds a std::shared_ptr to its parent,
// so a parent is never destroyed before its children, whatever order the caller drops them in.
//
// A Context is opened through librdmacm's device list when rdma_cm is available, so that the same
// ibv_context serves both rdma_cm connections and out-of-band set-up; otherwise directly with
// ibv_open_device.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace unet::verbs {

// Names of the RDMA devices present ("rxe0", "mlx5_0"); empty when there are none.
std::vector<std::string> device_names();

// What a port runs on: InfiniBand or Ethernet (RoCE).
enum class LinkLayer : std::uint8_t { kInfiniBand, kEthernet, kUnknown };

// A port's state as ibv_query_port reports it.
struct PortInfo {
  std::uint8_t port = 1;
  bool active = false;
  std::uint32_t active_mtu = 0;  // bytes (256 ... 4096)
  std::uint16_t lid = 0;
  LinkLayer link_layer = LinkLayer::kUnknown;
  std::uint32_t gid_table_len = 0;
  std::uint32_t max_msg_sz = 0;  // the largest message (SEND, WRITE, READ) the port carries
};

// The device limits requested sizes are clamped to.
struct DeviceLimits {
  std::uint32_t max_qp = 0;
  std::uint32_t max_qp_wr = 0;
  std::uint32_t max_sge = 0;
  std::uint32_t max_cq = 0;
  std::uint32_t max_cqe = 0;
  std::uint32_t max_srq_wr = 0;
  std::uint32_t max_srq_sge = 0;
  std::uint32_t max_mr = 0;
  std::uint64_t max_mr_size = 0;
  std::uint32_t max_qp_rd_atom = 0;       // RDMA READs / atomics in flight to a QP (responder)
  std::uint32_t max_qp_init_rd_atom = 0;  // ... from a QP (initiator)
  std::uint32_t max_mw = 0;
  std::uint32_t max_ah = 0;  // address handles, device-wide (every process's)
  std::uint8_t phys_port_cnt = 0;
  bool mw_type2 = false;  // memory windows of type 2 (bound by a posted WR to one QP)
};

// An open device (ibv_context): its limits and ports. Shared by everything made on it.
class Context : public std::enable_shared_from_this<Context> {
 public:
  // Opens the device called `name`, or the first device when `name` is empty.
  // Throws Error naming the device when it does not exist or cannot be opened.
  static std::shared_ptr<Context> open(std::string_view name = {});

  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // The device's name ("rxe0"), the provider's object (for calls this layer does not wrap),
  // and the limits read at open.
  const std::string& name() const noexcept { return name_; }
  ibv_context* native() const noexcept { return ctx_; }
  const DeviceLimits& limits() const noexcept { return limits_; }

  // Queries `port` now (its state may change). Throws Error for a port the device lacks.
  PortInfo port(std::uint8_t port) const;

  // Largest inline payload the device accepts on a QP of `type`; probed once by creating
  // throw-away QPs, then cached. Setup path only.
  std::uint32_t max_inline_data(ibv_qp_type type);

  // Clamps a requested size to a device limit: min(requested, limit), and at least 1.
  static std::uint32_t clamp(std::uint32_t requested, std::uint32_t limit) noexcept;

 private:
  struct Private {};

 public:
  // Used by open() only (Private cannot be named outside).
  Context(Private, ibv_context* ctx, bool owned, ibv_context** cm_list, std::string name);

 private:
  ibv_context* ctx_;
  bool owned_;             // ibv_close_device on destruction (else borrowed from librdmacm)
  ibv_context** cm_list_;  // rdma_get_devices() list to free, or nullptr
  std::string name_;
  DeviceLimits limits_{};
  std::mutex inline_mutex_;
  std::int64_t max_inline_[3] = {-1, -1, -1};  // RC, UC, UD; -1 = not probed yet
};

}  // namespace unet::verbs
