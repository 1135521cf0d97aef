// RawPeer: a bare queue pair (UD or RC) that a unet endpoint accepts as a channel like any other,
// and that then sends whatever bytes a test hands it — any length, empty ones included, with or
// without immediate data — past every check of every layer. The tests of hostile input use it
// (tests/fault/wire_fuzz_test.cc, and the class tests of tests/core, tests/uam, tests/ulp).
//
// It has its own device context, PD, CQs and registered memory, so it may sit on another device
// than the endpoint (rxe0 against rxe1 in the fault tier). It keeps receives posted, so an RC
// endpoint's answers never stall on it, and hands what arrives to the test (drain()).
//
// By default its offers carry no ring, so an RC endpoint's channel to it is plain (SEND/RECV).
// After offer_ring() they carry one (core/README.md, "Ring channels"): the endpoint then opens a
// ring channel, writes its small messages into own_ring(), and RawPeer learns the endpoint's ring
// from its offer line, to write any bytes anywhere in it (write_ring()) or read it (read_ring()).
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
  // RC, before line() and connect(): our offers grant the endpoint a ring of `slots` slots of
  // `slot_bytes` (with a control block after it), registered for its remote writes and reads.
  void offer_ring(std::uint32_t slots, std::uint32_t slot_bytes);
  // Our ring and its control block, as the endpoint writes them (empty without offer_ring()).
  std::span<std::byte> own_ring() {
    return {reinterpret_cast<std::byte*>(ring_.data()), ring_.size() * 8};
  }
  // The endpoint's ring, learned at connect() from its offer when both offers carry one (else
  // all zero): its key, geometry and where its control block starts.
  struct EndpointRing {
    std::uint64_t addr = 0;
    std::uint32_t rkey = 0;
    std::uint64_t bytes = 0;  // the ring and its control block: what the key covers
    std::uint32_t slots = 0, slot_bytes = 0;
    std::uint64_t control() const { return std::uint64_t{slots} * slot_bytes; }
  };
  const EndpointRing& endpoint_ring() const { return endpoint_ring_; }
  // An RDMA WRITE of `bytes` at `offset` into the endpoint's ring, with its key (any offset and
  // length: past what the key covers is a remote access error, which fails the QP), and an RDMA
  // READ of `out.size()` bytes from there. Each waits for its completion and returns its status.
  Status write_ring(std::uint64_t offset, std::span<const std::byte> bytes);
  Status read_ring(std::uint64_t offset, std::span<std::byte> out);
  // Takes every arrival, reposting its buffer; `sink` (if given) sees each payload (UD: without
  // the GRH). Returns how many arrived.
  std::size_t drain(const std::function<void(std::span<const std::byte>)>& sink = {});

  // The path MTU of our port, and the QP (for its number).
  std::uint32_t mtu() const { return mtu_; }
  verbs::QueuePair& qp() { return *qp_; }
  verbs::QpType type() const { return type_; }

 private:
  Status post_and_wait(ibv_send_wr& wr);
  Status rdma(ibv_wr_opcode op, std::uint64_t offset, std::uint32_t len);
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
  std::vector<std::uint64_t> ring_;  // offer_ring(): our ring and control block (8-byte aligned)
  std::unique_ptr<verbs::MemoryRegion> ring_mr_;
  std::uint32_t ring_slots_ = 0, ring_slot_bytes_ = 0;
  EndpointRing endpoint_ring_;
  verbs::ConnectionInfo local_{};
  std::unique_ptr<verbs::AddressHandle> ah_;  // UD: the endpoint
  std::uint32_t remote_qpn_ = 0, remote_qkey_ = 0;
};

}  // namespace unet::test
