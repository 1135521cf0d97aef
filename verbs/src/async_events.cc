#include "unet/verbs/async_events.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <mutex>
#include <unordered_map>

#include "unet/verbs/error.h"

namespace unet::verbs {

AsyncKind to_async_kind(ibv_event_type type) noexcept {
  switch (type) {
    case IBV_EVENT_CQ_ERR:
      return AsyncKind::kCqError;
    case IBV_EVENT_QP_FATAL:
      return AsyncKind::kQpFatal;
    case IBV_EVENT_QP_REQ_ERR:
      return AsyncKind::kQpRequestError;
    case IBV_EVENT_QP_ACCESS_ERR:
      return AsyncKind::kQpAccessError;
    case IBV_EVENT_QP_LAST_WQE_REACHED:
      return AsyncKind::kQpLastWqe;
    case IBV_EVENT_COMM_EST:
      return AsyncKind::kCommEstablished;
    case IBV_EVENT_SRQ_ERR:
      return AsyncKind::kSrqError;
    case IBV_EVENT_SRQ_LIMIT_REACHED:
      return AsyncKind::kSrqLimit;
    case IBV_EVENT_PORT_ACTIVE:
      return AsyncKind::kPortActive;
    case IBV_EVENT_PORT_ERR:
      return AsyncKind::kPortError;
    case IBV_EVENT_LID_CHANGE:
      return AsyncKind::kLidChange;
    case IBV_EVENT_PKEY_CHANGE:
      return AsyncKind::kPkeyChange;
    case IBV_EVENT_GID_CHANGE:
      return AsyncKind::kGidChange;
    case IBV_EVENT_SM_CHANGE:
      return AsyncKind::kSmChange;
    case IBV_EVENT_CLIENT_REREGISTER:
      return AsyncKind::kClientReregister;
    case IBV_EVENT_DEVICE_FATAL:
      return AsyncKind::kDeviceFatal;
    default:
      return AsyncKind::kOther;
  }
}

AsyncEvent to_async_event(const ibv_async_event& e) noexcept {
  AsyncEvent out;
  out.kind = to_async_kind(e.event_type);
  switch (out.kind) {
    case AsyncKind::kQpFatal:
    case AsyncKind::kQpRequestError:
    case AsyncKind::kQpAccessError:
    case AsyncKind::kQpLastWqe:
    case AsyncKind::kCommEstablished:
      out.qp_num = e.element.qp ? e.element.qp->qp_num : 0;
      break;
    case AsyncKind::kCqError:
      out.cq = e.element.cq;
      break;
    case AsyncKind::kSrqError:
    case AsyncKind::kSrqLimit:
      out.srq = e.element.srq;
      break;
    case AsyncKind::kPortActive:
    case AsyncKind::kPortError:
    case AsyncKind::kLidChange:
    case AsyncKind::kPkeyChange:
    case AsyncKind::kGidChange:
    case AsyncKind::kSmChange:
    case AsyncKind::kClientReregister:
      out.port = static_cast<std::uint8_t>(e.element.port_num);
      break;
    default:
      break;
  }
  return out;
}

// Every device's subscribers, by the provider's context (one per device and process).
struct AsyncHub {
  static std::mutex& lock() {
    static std::mutex m;
    return m;
  }
  static std::unordered_map<ibv_context*, std::vector<AsyncEvents*>>& subscribers() {
    static std::unordered_map<ibv_context*, std::vector<AsyncEvents*>> s;
    return s;
  }
  static constexpr std::size_t kMailbox = 1024;
  // Reads what `ctx` has posted and copies it to every subscriber. Under lock().
  static void pump(ibv_context* ctx) noexcept {
    const auto it = subscribers().find(ctx);
    if (it == subscribers().end()) return;
    const auto& subs = it->second;
    ibv_async_event e;
    while (ibv_get_async_event(ctx, &e) == 0) {
      const AsyncEvent ev = to_async_event(e);
      ibv_ack_async_event(&e);
      for (AsyncEvents* s : subs) {
        if (s->mailbox_.size() < kMailbox)
          s->mailbox_.push_back(ev);
        else
          s->overflows_.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }
};

AsyncEvents::AsyncEvents(std::shared_ptr<Context> ctx) : ctx_(std::move(ctx)) {
  mailbox_.reserve(AsyncHub::kMailbox);
  std::lock_guard<std::mutex> g(AsyncHub::lock());
  const int fd = ctx_->native()->async_fd;
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
    throw_error("fcntl(async_fd, O_NONBLOCK)", ctx_->name(), errno);
  AsyncHub::subscribers()[ctx_->native()].push_back(this);
}

AsyncEvents::~AsyncEvents() {
  std::lock_guard<std::mutex> g(AsyncHub::lock());
  auto& all = AsyncHub::subscribers();
  auto it = all.find(ctx_->native());
  if (it == all.end()) return;
  std::erase(it->second, this);
  if (it->second.empty()) all.erase(it);
}

std::size_t AsyncEvents::take(std::span<AsyncEvent> out) noexcept {
  std::lock_guard<std::mutex> g(AsyncHub::lock());
  AsyncHub::pump(ctx_->native());
  const std::size_t n = std::min(out.size(), mailbox_.size());
  std::copy_n(mailbox_.begin(), n, out.begin());
  mailbox_.erase(mailbox_.begin(), mailbox_.begin() + static_cast<std::ptrdiff_t>(n));
  return n;
}

int AsyncEvents::fd() const noexcept { return ctx_->native()->async_fd; }

}  // namespace unet::verbs
