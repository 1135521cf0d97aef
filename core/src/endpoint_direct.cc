// Endpoint, direct-access mode: grants and revocation of remote tokens, RDMA WRITE/READ and
// zero-copy sends from any application memory (registered through the registration cache), and
// the completion queue that reports them.
#include <cerrno>
#include <cstring>

#include "endpoint_impl.h"
#include "unet/verbs/error.h"

namespace unet::core {

Status Endpoint::grant(void* addr, std::size_t len, unsigned access, RemoteToken& out) noexcept {
  if (config_.mode != Mode::kDirectAccess) return Status::kInvalidState;
  if (!addr || len == 0 || access == 0 || (access & ~(kRemoteRead | kRemoteWrite)))
    return Status::kInvalidArgument;
  auto& grants = v_->grants;
  std::uint32_t id = 0;
  while (id < grants.size() && grants[id]) ++id;
  if (id == grants.size()) return Status::kNoResource;
  int flags = IBV_ACCESS_LOCAL_WRITE | (access & kRemoteRead ? IBV_ACCESS_REMOTE_READ : 0) |
              (access & kRemoteWrite ? IBV_ACCESS_REMOTE_WRITE : 0);
  try {
    // A dedicated registration of exactly this range: the device checks every access against its
    // bounds. (rxe does not bound type-2 memory-window accesses by the window, only by the MR.)
    grants[id] = std::make_unique<verbs::MemoryRegion>(v_->pd, addr, len, flags);
  } catch (const verbs::Error& e) {
    return e.error_number() == ENOMEM || e.error_number() == EPERM ? Status::kNoResource
                                                                   : Status::kDeviceError;
  }
  out = {reinterpret_cast<std::uint64_t>(addr), len, grants[id]->rkey(), id};
  return Status::kOk;
}

Status Endpoint::revoke(const RemoteToken& token) noexcept {
  if (config_.mode != Mode::kDirectAccess) return Status::kInvalidState;
  auto& grants = v_->grants;
  if (token.id >= grants.size() || !grants[token.id] || grants[token.id]->rkey() != token.rkey)
    return Status::kNotFound;
  grants[token.id].reset();  // deregistered: the rkey is dead from here on
  return Status::kOk;
}

Status Endpoint::push_op(ChannelId ch, OpKind kind, const void* local, std::size_t len,
                         const RemoteToken* token, std::uint64_t offset, std::uint64_t tag,
                         std::span<const std::byte> head) noexcept {
  if (config_.mode != Mode::kDirectAccess) return Status::kInvalidState;
  Status why = Status::kOk;
  const Channel* c = open_channel(ch, why);
  if (!c) return why;
  if (!local || len == 0) return Status::kInvalidArgument;
  if (kind == OpKind::kSend) {
    // In 64 bits: head and payload together, however small max_message() is.
    if (head.size() > kMaxSendHead || head.size() + len > c->max_message)
      return Status::kInvalidArgument;
  } else {
    if (config_.transport != Transport::kRc) return Status::kInvalidState;  // one-sided needs RC
    // Refuse what cannot be inside the window (the peer's device would refuse it anyway).
    if (len > max_rdma_ || offset > token->length || len > token->length - offset)
      return Status::kInvalidArgument;
  }
  // Every operation's completion must find room in the completion queue: operations in flight
  // and completions not yet read together stay within max_operations. (So a slot is free below.)
  if (completions_.size() >= v_->free_ops->size()) return Status::kNoResource;
  std::uint32_t slot = 0;
  (void)v_->free_ops->pop_into(slot);
  Descriptor* d = send_queue_.reserve();
  Op& op = v_->ops[slot];
  // A small WRITE or headless send is posted inline (copied at post): no registration to look up.
  const bool copied = kind != OpKind::kRead && head.empty() && len <= inline_post_limit_;
  Status s = !d       ? Status::kNoResource
             : copied ? Status::kOk
                      : v_->cache->acquire(local, len, op.lease);
  if (s != Status::kOk) {
    (void)v_->free_ops->push(slot);
    return s;
  }
  op.tag = tag;
  op.channel = ch;
  op.kind = kind;
  op.local = reinterpret_cast<std::uint64_t>(local);
  op.length = static_cast<std::uint32_t>(len);
  op.lkey = copied ? 0 : op.lease.lkey();
  op.copied = copied;
  op.remote = token ? token->addr + offset : 0;
  op.rkey = token ? token->rkey : 0;
  op.head_length = static_cast<std::uint32_t>(head.size());
  if (!head.empty())
    std::memcpy(v_->heads.get() + std::size_t{slot} * kMaxSendHead, head.data(), head.size());
  d->channel = ch;
  d->length = op.length;
  d->buffer = slot;
  d->flags = Descriptor::kOp;
  send_queue_.commit();
  return Status::kOk;
}

Status Endpoint::write(ChannelId ch, const void* local, std::size_t len, const RemoteToken& token,
                       std::uint64_t offset, std::uint64_t tag) noexcept {
  return push_op(ch, OpKind::kWrite, local, len, &token, offset, tag);
}

Status Endpoint::read(ChannelId ch, void* local, std::size_t len, const RemoteToken& token,
                      std::uint64_t offset, std::uint64_t tag) noexcept {
  return push_op(ch, OpKind::kRead, local, len, &token, offset, tag);
}

Status Endpoint::send_from(ChannelId ch, const void* local, std::uint32_t len,
                           std::uint64_t tag) noexcept {
  return push_op(ch, OpKind::kSend, local, len, nullptr, 0, tag);
}

Status Endpoint::send_from(ChannelId ch, std::span<const std::byte> head, const void* local,
                           std::uint32_t len, std::uint64_t tag) noexcept {
  return push_op(ch, OpKind::kSend, local, len, nullptr, 0, tag, head);
}

RegistrationCacheStats Endpoint::registration_stats() const noexcept {
  return v_->cache ? v_->cache->stats() : RegistrationCacheStats{};
}

Status Endpoint::pin(const void* addr, std::size_t len) noexcept {
  if (config_.mode != Mode::kDirectAccess) return Status::kInvalidState;
  if (!addr || len == 0) return Status::kInvalidArgument;
  Cache::Lease lease;  // given back on return: the registration stays cached, unleased
  return v_->cache->acquire(addr, len, lease);
}

void Endpoint::forget(const void* addr, std::size_t len) noexcept {
  if (v_->cache) v_->cache->invalidate(addr, len);
}

}  // namespace unet::core
