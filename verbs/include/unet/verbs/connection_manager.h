// CmListener, cm_connect(), CmConnection: connection set-up through rdma_cm. CmListener
// (listen/accept) and cm_connect() give a CmConnection that owns the rdma_cm_id, its event
// channel and its RC QP.
//
// The QP is created by librdmacm on the caller's PD and CQs (the PD's Context must be the device
// the address resolves to; Context::open() shares librdmacm's contexts, so it is). librdmacm moves
// the QP through INIT/RTR/RTS. Every event wait has a timeout; failures throw Error naming the
// event expected and the one received.
#pragma once

#include <rdma/rdma_cma.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "unet/verbs/queue_pair.h"

namespace unet::verbs {

// Timeouts and the RC parameters rdma_cm negotiates for a connection.
struct CmParams {
  std::chrono::milliseconds timeout{5000};  // per step (resolve, connect, accept, disconnect)
  // RDMA READs the connection takes from the peer and issues to it, clamped to the device
  // (max_qp_rd_atom, max_qp_init_rd_atom). The accepting end decides for both: it takes no more
  // than the request says the peer issues and issues no more than it says the peer takes, and
  // the connecting end gets the mirror image (the IB CM's rule).
  std::uint8_t responder_resources = 1;
  std::uint8_t initiator_depth = 1;
  std::uint8_t retry_count = 6;  // not 7: rxe retries forever at 7 (see PathParams::retry_cnt)
  // The connecting end's type of service (RDMA_OPTION_ID_TOS): on RoCE the traffic class, on IB
  // what the path query maps to a service level. nullopt: the CM's default.
  std::optional<std::uint8_t> tos;
  std::uint8_t rnr_retry_count = 7;
  // Sent with the connect request (at most 56 bytes) or the accept (at most 196).
  std::vector<std::byte> private_data;
};

// What an rdma_cm event means for an established connection: it ended (the peer disconnected, the
// device went away), it changes nothing, or it should not come. Pure.
enum class CmOutcome : std::uint8_t { kEnded, kNothing, kUnexpected };
CmOutcome established_event(rdma_cm_event_type type) noexcept;

// One RC connection made through rdma_cm: owns the cm id, its event channel and its QP.
class CmConnection {
 public:
  ~CmConnection();
  CmConnection(const CmConnection&) = delete;
  CmConnection& operator=(const CmConnection&) = delete;

  // The connection's QP (post on it as on any QP), the rdma_cm id, and whether the connection
  // is established and not yet disconnected.
  QueuePair& qp() noexcept { return *qp_; }
  rdma_cm_id* native() const noexcept { return id_; }
  bool connected() const noexcept { return connected_; }
  // The peer's private data: of its connect request (accepted side) or of its accept (connecting
  // side), as the CM delivered it (padded with zeros to its fixed size on InfiniBand and RoCE).
  const std::vector<std::byte>& peer_private_data() const noexcept { return peer_data_; }

  // Sends a disconnect and waits (up to `timeout`) for RDMA_CM_EVENT_DISCONNECTED. The QP moves
  // to ERROR: WRs still posted complete with kFlushed. Idempotent.
  void disconnect(std::chrono::milliseconds timeout);
  // The same for noexcept callers: kTimeout when the event did not come in time, kDeviceError
  // when the disconnect failed.
  [[nodiscard]] Status close(std::chrono::milliseconds timeout) noexcept;
  // Waits up to `timeout` for the connection's end: the peer's disconnect or the device's removal
  // (the QP moves to ERROR either way). kOk when it came, kTimeout otherwise, kInvalidState for
  // an event an established connection should not get. Events that leave it as it is
  // (TIMEWAIT_EXIT, ADDR_CHANGE) are taken and passed over.
  Status wait_disconnected(std::chrono::milliseconds timeout) noexcept;

 private:
  // Made only by CmListener::accept and cm_connect.
  CmConnection() = default;
  friend class CmListener;
  friend std::unique_ptr<CmConnection> cm_connect(std::string_view, std::uint16_t,
                                                  std::shared_ptr<ProtectionDomain>,
                                                  const QpConfig&, const CmParams&);
  // rdma_create_qp on id_ with `config`, adopted into qp_.
  void create_qp(std::shared_ptr<ProtectionDomain> pd, const QpConfig& config);
  void set_established() noexcept;

  rdma_event_channel* channel_ = nullptr;
  rdma_cm_id* id_ = nullptr;
  std::optional<QueuePair> qp_;
  std::vector<std::byte> peer_data_;
  bool connected_ = false;
};

// A listening rdma_cm id: accepts RC connections on one address and port.
class CmListener {
 public:
  // Binds to host:port (port 0 = pick one, see port()) and listens.
  CmListener(std::string_view host, std::uint16_t port, int backlog = 16);
  ~CmListener();
  CmListener(const CmListener&) = delete;
  CmListener& operator=(const CmListener&) = delete;

  // The port it listens on (the one picked when port 0 was asked for).
  std::uint16_t port() const noexcept;
  // Waits for a connect request, creates its QP on `pd` with `config`, accepts it and waits for
  // the connection to be established.
  std::unique_ptr<CmConnection> accept(std::shared_ptr<ProtectionDomain> pd, const QpConfig& config,
                                       const CmParams& params = {});

 private:
  rdma_event_channel* channel_ = nullptr;
  rdma_cm_id* id_ = nullptr;
};

// Resolves host:port, creates an RC QP on `pd` with `config` and connects.
std::unique_ptr<CmConnection> cm_connect(std::string_view host, std::uint16_t port,
                                         std::shared_ptr<ProtectionDomain> pd,
                                         const QpConfig& config, const CmParams& params = {});

}  // namespace unet::verbs
