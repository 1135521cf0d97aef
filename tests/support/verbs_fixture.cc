#include "verbs_fixture.h"

#include <thread>

#include "unet/verbs/device.h"

namespace unet::test {

void VerbsTest::SetUp() {
  UNET_REQUIRE_DEVICE();
  ctx_ = verbs::Context::open(device_name());
  pd_ = std::make_shared<verbs::ProtectionDomain>(ctx_);
  cq_ = std::make_shared<verbs::CompletionQueue>(ctx_, 256);
  gid_ = verbs::select_gid(*ctx_, 1, gid_index());
}

std::unique_ptr<verbs::QueuePair> VerbsTest::make_qp(
    verbs::QpType type, std::shared_ptr<verbs::CompletionQueue> cq,
    std::shared_ptr<verbs::SharedReceiveQueue> srq) {
  verbs::QpConfig c;
  c.type = type;
  c.send_cq = cq ? cq : cq_;
  c.srq = std::move(srq);
  c.max_send_wr = 64;
  c.max_recv_wr = 64;
  return std::make_unique<verbs::QueuePair>(pd_, c);
}

verbs::PathParams VerbsTest::path() const {
  verbs::PathParams p;
  p.sgid_index = static_cast<std::uint8_t>(gid_.index);
  return p;
}

void VerbsTest::connect_pair(verbs::QueuePair& a, verbs::QueuePair& b, verbs::PathParams p) {
  verbs::ConnectionInfo ia = a.local_info(p), ib = b.local_info(p);
  a.connect(ia, ib, p);
  b.connect(ib, ia, p);
}

verbs::WorkCompletion VerbsTest::wait_one(verbs::CompletionQueue& cq,
                                          std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  verbs::WorkCompletion wc{};
  std::size_t n = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (cq.poll({&wc, 1}, n) != Status::kOk) {
      ADD_FAILURE() << "ibv_poll_cq failed";
      return wc;
    }
    if (n == 1) return wc;
    std::this_thread::yield();
  }
  ADD_FAILURE() << "no completion within " << timeout.count() << " ms";
  wc.status = IBV_WC_GENERAL_ERR;
  return wc;
}

Buffer::Buffer(std::shared_ptr<verbs::ProtectionDomain> pd, std::size_t n, int access)
    : bytes(n), mr(std::make_unique<verbs::MemoryRegion>(std::move(pd), bytes.data(), n, access)) {}

void Buffer::fill(std::uint8_t seed) {
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(seed + i * 7);
}

bool Buffer::matches(std::uint8_t seed, std::size_t n, std::size_t offset) const {
  for (std::size_t i = 0; i < n; ++i)
    if (bytes[offset + i] != static_cast<std::uint8_t>(seed + i * 7)) return false;
  return true;
}

verbs::RecvRequest Buffer::recv(std::size_t n, std::size_t offset, std::uint64_t wr_id) const {
  return {bytes.data() + offset, static_cast<std::uint32_t>(n), mr->lkey(), wr_id};
}

verbs::SendRequest Buffer::send(ibv_wr_opcode op, std::size_t n, std::size_t offset,
                                std::uint64_t wr_id, unsigned flags) const {
  return {op, bytes.data() + offset, static_cast<std::uint32_t>(n), mr->lkey(), wr_id, flags};
}

}  // namespace unet::test
