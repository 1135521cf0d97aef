// SharedReceiveQueue: one pool of posted receive buffers serving many QPs (U-Net's free queue maps
// onto it: one free queue for every channel of an endpoint).
#pragma once

#include <cstdint>
#include <memory>

#include "unet/verbs/protection_domain.h"
#include "unet/verbs/work_completion.h"

namespace unet::verbs {

// Owner of an ibv_srq. Holds its PD alive.
class SharedReceiveQueue {
 public:
  // `max_wr` and `max_sge` are clamped to the device's max_srq_wr / max_srq_sge.
  SharedReceiveQueue(std::shared_ptr<ProtectionDomain> pd, std::uint32_t max_wr,
                     std::uint32_t max_sge = 1);
  ~SharedReceiveQueue();
  SharedReceiveQueue(const SharedReceiveQueue&) = delete;
  SharedReceiveQueue& operator=(const SharedReceiveQueue&) = delete;

  // The provider's object, for calls this layer does not wrap (it stays owned here).
  // And the sizes granted.
  ibv_srq* native() const noexcept { return srq_; }
  std::uint32_t max_wr() const noexcept { return max_wr_; }
  std::uint32_t max_sge() const noexcept { return max_sge_; }

  // Posts a receive WR or a list (linked through wr.next): one doorbell for the whole list.
  Status post_recv(ibv_recv_wr& wr) noexcept {
    ibv_recv_wr* bad = nullptr;
    return errno_to_status(ibv_post_srq_recv(srq_, &wr, &bad));
  }

 private:
  std::shared_ptr<ProtectionDomain> pd_;
  ibv_srq* srq_ = nullptr;
  std::uint32_t max_wr_ = 0;
  std::uint32_t max_sge_ = 0;
};

}  // namespace unet::verbs
