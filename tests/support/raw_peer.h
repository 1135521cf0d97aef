// RawPeer: a bare queue pair (UD or RC) that a unet endpoint accepts as a channel like any other,
// and that then sends whatever bytes a test hands it — any length, empty ones included, with or
// without immediate data — past every check of every layer. The tests of hostile input use it
// (tests/fault/wire_fuzz_test.cc, and the class tests of tests/core, tests/uam, tests/ulp).
//
// It has its own device context, PD, CQs and registered memory, so it may sit on another device
// than the endpoint (rxe0 against rxe1 in the fault tier). It keeps receives posted, so an RC
// endpoint's answers never stall on it, and hands what arrives to the test (drain()).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "unet/verbs/address_handle.h"
#include "unet/verbs/completion_queue.h"
#include "unet/verbs/device.h"
#include "unet/verbs/gid.h"
#include "unet/verbs/memory_region.h"
#include "unet/verbs/queue_pair.h"

namespace unet::test {

class RawPeer {
 public:
  // A QP of `type` (kUd or kRc) on `device` ("" = the first), with room for messages of
  // `max_bytes` and `recv_depth` receives posted.
  RawPeer(const std::string& device, verbs::QpType type, std::uint32_t max_bytes = 16384,
          std::uint32_t recv_depth = 64);
  ~RawPeer();
  RawPeer(const RawPeer&) = delete;
  RawPeer& operator=(const RawPeer&) = delete;

  // Our half of a channel, as a core::ChannelOffer::local line (the endpoint's accept_offer takes
  // it as the peer's half), and the connection to the endpoint's half.
  std::string line() const;
  void connect(std::string_view endpoint_line);
  // RC: a fresh QP, unconnected (after the old one failed); line() changes with it.
  void renew();

  // Posts one SEND of `bytes` (SEND_WITH_IMM when `imm` is set) and waits for its completion;
  // returns its status (kOk: UD, it left this device; RC, the endpoint's device took it). A failed
  // UD QP is brought back at once; a failed RC QP stays failed until renew().
  Status send(std::span<const std::byte> bytes, std::optional<std::uint32_t> imm = std::nullopt);
  // RC: a zero-byte RDMA WRITE with immediate data (no rkey needed), which consumes a receive at
  // the endpoint like an empty SEND.
  Status write_imm(std::uint32_t imm);
  // Takes every arrival, reposting its buffer; `sink` (if given) sees each payload (UD: without
  // the GRH). Returns how many arrived.
  std::size_t drain(const std::function<void(std::span<const std::byte>)>& sink = {});

  // The path MTU of our port, and the QP (for its number).
  std::uint32_t mtu() const { return mtu_; }
  verbs::QueuePair& qp() { return *qp_; }
  verbs::QpType type() const { return type_; }

 private:
  Status post_and_wait(ibv_send_wr& wr);
  void make_qp();
  void post_recvs();
  void post_recv(std::uint32_t slot);

  verbs::QpType type_;
  std::uint32_t max_bytes_, recv_depth_;
  std::shared_ptr<verbs::Context> ctx_;
  std::shared_ptr<verbs::ProtectionDomain> pd_;
  std::shared_ptr<verbs::CompletionQueue> scq_, rcq_;
  verbs::GidEntry gid_;
  verbs::PathParams path_;
  std::uint32_t mtu_ = 0;
  std::vector<std::byte> send_buf_, recv_buf_;
  std::unique_ptr<verbs::MemoryRegion> send_mr_, recv_mr_;
  std::unique_ptr<verbs::QueuePair> qp_;
  verbs::ConnectionInfo local_{};
  std::unique_ptr<verbs::AddressHandle> ah_;  // UD: the endpoint
  std::uint32_t remote_qpn_ = 0, remote_qkey_ = 0;
};

}  // namespace unet::test
