// BufferTable: who owns each buffer of a communication segment, enforced at every step.
//
//   kSpare        idle; the application may take it to compose a send (take_spare)
//   kApplication  the application's: taken to compose, or arrived and not yet released
//   kSendQueue    on the send queue or in flight; the endpoint's until the send completes
//   kFreeQueue    on the free queue (posted as a receive); the NI's until something arrives
//
//   spare --take_spare--> application --queue_send--> send queue --send_done--> spare
//   free queue --arrived--> application --release--> free queue
//   application --give_back--> spare  (a buffer the endpoint does not repost: the free queue is
//   full)
//
// A move from the wrong state is refused with a Status and changes nothing, so a buffer can never
// be both on the free queue and in flight, and a double release is caught. Pure logic, no device;
// all storage allocated at construction.
#pragma once

#include <cstdint>
#include <vector>

#include "unet/core/descriptor.h"
#include "unet/core/descriptor_ring.h"
#include "unet/status.h"

namespace unet::core {

// Who holds a buffer now (the four states above).
enum class BufferOwner : std::uint8_t { kSpare, kApplication, kSendQueue, kFreeQueue };

// The ownership state of every buffer of one segment, and the spare buffers. One thread.
class BufferTable {
 public:
  // `count` buffers, all spare.
  explicit BufferTable(std::uint32_t count)
      : owner_(count, BufferOwner::kSpare), spare_(count ? count : 1) {
    for (BufferId b = 0; b < count; ++b) (void)spare_.push(b);
  }

  // Buffers in the table; spare ones; the owner of `b` (which must be valid); whether `b` is
  // a buffer of this table.
  std::uint32_t count() const noexcept { return static_cast<std::uint32_t>(owner_.size()); }
  std::uint32_t spare() const noexcept { return spare_.size(); }
  // Buffers the free queue holds now (posted as receives, or waiting to be).
  std::uint32_t in_free_queue() const noexcept { return in_free_queue_; }
  BufferOwner owner(BufferId b) const noexcept { return owner_[b]; }
  bool valid(BufferId b) const noexcept { return b < owner_.size(); }

  // spare -> application. kNoResource when no buffer is spare.
  Status take_spare(BufferId& out) noexcept { return take(BufferOwner::kApplication, out); }
  // spare -> free queue: a spare buffer to post as a receive. kNoResource when none is spare.
  Status take_for_free_queue(BufferId& out) noexcept {
    Status s = take(BufferOwner::kFreeQueue, out);
    in_free_queue_ += s == Status::kOk;
    return s;
  }
  // application -> send queue.
  Status queue_send(BufferId b) noexcept {
    return move(b, BufferOwner::kApplication, BufferOwner::kSendQueue);
  }
  // send queue -> spare (the send completed, or failed and was reported).
  Status send_done(BufferId b) noexcept {
    Status s = move(b, BufferOwner::kSendQueue, BufferOwner::kSpare);
    if (s == Status::kOk) (void)spare_.push(b);  // capacity == count: cannot be full
    return s;
  }
  // free queue -> application (a message arrived in it).
  Status arrived(BufferId b) noexcept {
    Status s = move(b, BufferOwner::kFreeQueue, BufferOwner::kApplication);
    in_free_queue_ -= s == Status::kOk;
    return s;
  }
  // application -> free queue (the application hands it back; the endpoint reposts it).
  Status release(BufferId b) noexcept {
    Status s = move(b, BufferOwner::kApplication, BufferOwner::kFreeQueue);
    in_free_queue_ += s == Status::kOk;
    return s;
  }
  // application -> spare (handed back, but not reposted).
  Status give_back(BufferId b) noexcept {
    Status s = move(b, BufferOwner::kApplication, BufferOwner::kSpare);
    if (s == Status::kOk) (void)spare_.push(b);  // capacity == count: cannot be full
    return s;
  }

 private:
  // Every spare buffer is in spare_ exactly once: it enters on becoming spare, leaves here.
  Status take(BufferOwner to, BufferId& out) noexcept {
    BufferId b = kNoBuffer;
    if (!spare_.pop_into(b)) return Status::kNoResource;
    owner_[b] = to;
    out = b;
    return Status::kOk;
  }
  Status move(BufferId b, BufferOwner from, BufferOwner to) noexcept {
    if (b >= owner_.size()) return Status::kInvalidArgument;
    if (owner_[b] != from) return Status::kInvalidState;
    owner_[b] = to;
    return Status::kOk;
  }

  std::vector<BufferOwner> owner_;
  DescriptorRing<BufferId> spare_;   // exactly the spare buffers
  std::uint32_t in_free_queue_ = 0;  // buffers owned by kFreeQueue
};

}  // namespace unet::core
