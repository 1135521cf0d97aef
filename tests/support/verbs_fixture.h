// VerbsTest: a fixture with a device context, PD, CQ and the chosen GID, plus helpers to make
// connected QP pairs on one device and to wait for completions with a timeout.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <vector>

#include "device_env.h"
#include "unet/verbs/completion_queue.h"
#include "unet/verbs/gid.h"
#include "unet/verbs/memory_region.h"
#include "unet/verbs/queue_pair.h"
#include "unet/verbs/work_request.h"

namespace unet::test {

using namespace std::chrono_literals;

class VerbsTest : public ::testing::Test {
 protected:
  void SetUp() override;

  // A QP of `type` on this fixture's PD; its CQ is `cq` (default: the fixture's).
  std::unique_ptr<verbs::QueuePair> make_qp(
      verbs::QpType type, std::shared_ptr<verbs::CompletionQueue> cq = nullptr,
      std::shared_ptr<verbs::SharedReceiveQueue> srq = nullptr);
  // Connects a and b to each other (RC/UC), both moved to RTS.
  void connect_pair(verbs::QueuePair& a, verbs::QueuePair& b, verbs::PathParams path = {});
  verbs::PathParams path() const;

  // Polls `cq` until one completion arrives or `timeout` passes (then the test fails).
  verbs::WorkCompletion wait_one(verbs::CompletionQueue& cq,
                                 std::chrono::milliseconds timeout = 10s);

  std::shared_ptr<verbs::Context> ctx_;
  std::shared_ptr<verbs::ProtectionDomain> pd_;
  std::shared_ptr<verbs::CompletionQueue> cq_;
  verbs::GidEntry gid_;
};

// A registered buffer with a fill pattern, for content checks.
struct Buffer {
  Buffer(std::shared_ptr<verbs::ProtectionDomain> pd, std::size_t n,
         int access = verbs::kDefaultAccess);
  void fill(std::uint8_t seed);
  bool matches(std::uint8_t seed, std::size_t n, std::size_t offset = 0) const;
  // Requests over [offset, offset + n) of this buffer.
  verbs::RecvRequest recv(std::size_t n, std::size_t offset = 0, std::uint64_t wr_id = 0) const;
  verbs::SendRequest send(ibv_wr_opcode op, std::size_t n, std::size_t offset = 0,
                          std::uint64_t wr_id = 0, unsigned flags = IBV_SEND_SIGNALED) const;
  verbs::RemoteKey key() const { return mr->remote_key(); }

  std::vector<std::uint8_t> bytes;
  std::unique_ptr<verbs::MemoryRegion> mr;
};

}  // namespace unet::test
