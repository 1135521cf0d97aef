// CompletionQueue: owner of an ibv_cq, optionally tied to a CompletionChannel for blocking waits.
#pragma once

#include <cstddef>
#include <memory>
#include <span>

#include "unet/verbs/completion_channel.h"
#include "unet/verbs/work_completion.h"

namespace unet::verbs {

// Owner of an ibv_cq. Holds its Context and channel alive.
class CompletionQueue {
 public:
  // `cqe` is clamped to the device's max_cqe; capacity() tells what was granted.
  CompletionQueue(std::shared_ptr<Context> ctx, std::uint32_t cqe,
                  std::shared_ptr<CompletionChannel> channel = nullptr);
  ~CompletionQueue();
  CompletionQueue(const CompletionQueue&) = delete;
  CompletionQueue& operator=(const CompletionQueue&) = delete;

  // The provider's object, for calls this layer does not wrap (it stays owned here).
  // capacity() is the number of entries granted; channel() the channel it signals (or nullptr).
  ibv_cq* native() const noexcept { return cq_; }
  std::uint32_t capacity() const noexcept { return static_cast<std::uint32_t>(cq_->cqe); }
  CompletionChannel* channel() const noexcept { return channel_.get(); }

  // Polls up to out.size() completions into the caller's array. On kOk, `count` is how many were
  // written (0 when idle). Each entry's own status is checked by the caller (status_of()).
  // Data path: no allocation, no lock of ours, no exception.
  Status poll(std::span<WorkCompletion> out, std::size_t& count) noexcept {
    int n = ibv_poll_cq(cq_, static_cast<int>(out.size()), out.data());
    if (n < 0) [[unlikely]]
      return Status::kDeviceError;
    count = static_cast<std::size_t>(n);
    return Status::kOk;
  }

  // Arms the CQ so the next completion (or next solicited one) signals the channel.
  Status request_notify(bool solicited_only = false) noexcept {
    return errno_to_status(ibv_req_notify_cq(cq_, solicited_only ? 1 : 0));
  }

 private:
  std::shared_ptr<Context> ctx_;
  std::shared_ptr<CompletionChannel> channel_;
  ibv_cq* cq_ = nullptr;
};

}  // namespace unet::verbs
