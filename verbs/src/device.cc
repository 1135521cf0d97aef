#include "unet/verbs/device.h"

#include <rdma/rdma_cma.h>

#include <algorithm>
#include <cerrno>

#include "unet/verbs/error.h"

namespace unet::verbs {
namespace {

struct DeviceList {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  ~DeviceList() {
    if (list) ibv_free_device_list(list);
  }
};

std::uint32_t mtu_bytes(ibv_mtu m) {
  switch (m) {
    case IBV_MTU_256:
      return 256;
    case IBV_MTU_512:
      return 512;
    case IBV_MTU_1024:
      return 1024;
    case IBV_MTU_2048:
      return 2048;
    case IBV_MTU_4096:
      return 4096;
  }
  return 0;
}

DeviceLimits query_limits(ibv_context* ctx, const std::string& name) {
  ibv_device_attr a{};
  if (int rc = ibv_query_device(ctx, &a)) throw_error("ibv_query_device", name, rc);
  DeviceLimits l;
  l.max_qp = static_cast<std::uint32_t>(a.max_qp);
  l.max_qp_wr = static_cast<std::uint32_t>(a.max_qp_wr);
  l.max_sge = static_cast<std::uint32_t>(a.max_sge);
  l.max_cq = static_cast<std::uint32_t>(a.max_cq);
  l.max_cqe = static_cast<std::uint32_t>(a.max_cqe);
  l.max_srq_wr = static_cast<std::uint32_t>(a.max_srq_wr);
  l.max_srq_sge = static_cast<std::uint32_t>(a.max_srq_sge);
  l.max_mr = static_cast<std::uint32_t>(a.max_mr);
  l.max_mr_size = a.max_mr_size;
  l.max_qp_rd_atom = static_cast<std::uint32_t>(a.max_qp_rd_atom);
  l.max_qp_init_rd_atom = static_cast<std::uint32_t>(a.max_qp_init_rd_atom);
  l.max_mw = static_cast<std::uint32_t>(a.max_mw);
  l.max_ah = static_cast<std::uint32_t>(a.max_ah);
  l.phys_port_cnt = a.phys_port_cnt;
  l.mw_type2 = (a.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) != 0;
  return l;
}

}  // namespace

std::vector<std::string> device_names() {
  DeviceList d;
  std::vector<std::string> names;
  for (int i = 0; d.list && i < d.n; ++i) names.emplace_back(ibv_get_device_name(d.list[i]));
  return names;
}

std::shared_ptr<Context> Context::open(std::string_view name) {
  std::string want(name);
  // Prefer librdmacm's contexts so that rdma_cm ids resolve onto this very ibv_context.
  int n = 0;
  if (ibv_context** cm = rdma_get_devices(&n)) {
    for (int i = 0; i < n; ++i) {
      std::string dev = ibv_get_device_name(cm[i]->device);
      if (want.empty() || dev == want)
        return std::make_shared<Context>(Private{}, cm[i], false, cm, dev);
    }
    rdma_free_devices(cm);
  }
  // No rdma_cm (or the device is not in its list): open directly.
  DeviceList d;
  if (!d.list || d.n == 0)
    throw_error("ibv_get_device_list", want.empty() ? "any device" : want, ENODEV,
                "no RDMA device found (load rdma_rxe and run `rdma link add`, or use ci/rxe-vm)");
  for (int i = 0; i < d.n; ++i) {
    std::string dev = ibv_get_device_name(d.list[i]);
    if (!want.empty() && dev != want) continue;
    ibv_context* ctx = ibv_open_device(d.list[i]);
    if (!ctx) throw_error("ibv_open_device", dev, errno);
    return std::make_shared<Context>(Private{}, ctx, true, nullptr, dev);
  }
  std::string have;
  for (int i = 0; i < d.n; ++i)
    have += std::string(have.empty() ? "" : ", ") + ibv_get_device_name(d.list[i]);
  throw_error("Context::open", want, ENODEV, "no such device (present: " + have + ")");
}

Context::Context(Private, ibv_context* ctx, bool owned, ibv_context** cm_list, std::string name)
    : ctx_(ctx), owned_(owned), cm_list_(cm_list), name_(std::move(name)) {
  try {
    limits_ = query_limits(ctx_, name_);
  } catch (...) {
    if (owned_) ibv_close_device(ctx_);
    if (cm_list_) rdma_free_devices(cm_list_);
    throw;
  }
}

Context::~Context() {
  if (owned_) ibv_close_device(ctx_);
  if (cm_list_) rdma_free_devices(cm_list_);
}

PortInfo Context::port(std::uint8_t port) const {
  ibv_port_attr a{};
  std::string object = name_ + " port " + std::to_string(port);
  if (port == 0 || port > limits_.phys_port_cnt)
    throw_error("ibv_query_port", object, EINVAL,
                "the device has " + std::to_string(limits_.phys_port_cnt) + " port(s)");
  if (int rc = ibv_query_port(ctx_, port, &a)) throw_error("ibv_query_port", object, rc);
  PortInfo p;
  p.port = port;
  p.active = a.state == IBV_PORT_ACTIVE;
  p.active_mtu = mtu_bytes(a.active_mtu);
  p.lid = a.lid;
  p.link_layer = a.link_layer == IBV_LINK_LAYER_ETHERNET     ? LinkLayer::kEthernet
                 : a.link_layer == IBV_LINK_LAYER_INFINIBAND ? LinkLayer::kInfiniBand
                                                             : LinkLayer::kUnknown;
  p.gid_table_len = static_cast<std::uint32_t>(a.gid_tbl_len);
  p.max_msg_sz = a.max_msg_sz;
  return p;
}

std::uint32_t Context::clamp(std::uint32_t requested, std::uint32_t limit) noexcept {
  return std::max<std::uint32_t>(1, std::min(requested, limit));
}

std::uint32_t Context::max_inline_data(ibv_qp_type type) {
  int slot = type == IBV_QPT_RC ? 0 : type == IBV_QPT_UC ? 1 : 2;
  std::lock_guard lock(inline_mutex_);
  if (max_inline_[slot] >= 0) return static_cast<std::uint32_t>(max_inline_[slot]);
  // Providers report no inline limit; the only portable way is to ask for QPs and see what fits.
  ibv_pd* pd = ibv_alloc_pd(ctx_);
  if (!pd) throw_error("ibv_alloc_pd", name_ + " (inline probe)", errno);
  ibv_cq* cq = ibv_create_cq(ctx_, 1, nullptr, nullptr, 0);
  if (!cq) {
    ibv_dealloc_pd(pd);
    throw_error("ibv_create_cq", name_ + " (inline probe)", errno);
  }
  std::uint32_t lo = 0, hi = 4096;  // largest known-good, smallest known-bad (+1 step)
  while (lo < hi) {
    std::uint32_t mid = (lo + hi + 1) / 2;
    ibv_qp_init_attr attr{};
    attr.send_cq = attr.recv_cq = cq;
    attr.qp_type = type;
    attr.cap = {1, 1, 1, 1, mid};
    if (ibv_qp* qp = ibv_create_qp(pd, &attr)) {
      ibv_destroy_qp(qp);
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
  max_inline_[slot] = lo;
  return lo;
}

}  // namespace unet::verbs
