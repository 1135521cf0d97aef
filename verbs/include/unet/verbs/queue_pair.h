// QueuePair: owner of an ibv_qp (RC, UC or UD), its state transitions and its data path.
//
// Lifecycle: RESET -> INIT -> RTR -> RTS (connect() does all three), ERROR on failure or by
// to_error(). The wrapper caches the state it moved the QP to and refuses posts that cannot work
// (sends before RTS, receives in RESET) with kInvalidState; everything else goes straight to the
// provider. Set-up throws Error; posting returns a Status and never throws.
//
// Destruction order (guaranteed by shared ownership): QP, then SRQ and CQs, then PD, then Context.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "unet/verbs/completion_queue.h"
#include "unet/verbs/connection_info.h"
#include "unet/verbs/memory_window.h"
#include "unet/verbs/shared_receive_queue.h"

namespace unet::verbs {

// The transport: reliable connected, unreliable connected, unreliable datagram.
enum class QpType : std::uint8_t { kRc, kUc, kUd };
// The states this wrapper moves a QP through (the ones it caches).
enum class QpState : std::uint8_t { kReset, kInit, kRtr, kRts, kError };

// A UD receive buffer starts with the 40-byte GRH; the payload follows it, and the completion's
// byte_len counts both.
inline constexpr std::size_t kGrhBytes = 40;
inline constexpr std::uint32_t kDefaultQkey = 0x11111111;
inline constexpr int kDefaultAccess =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

// How to create a QP: its type, CQs, optional SRQ and queue sizes.
struct QpConfig {
  QpType type = QpType::kRc;
  std::shared_ptr<CompletionQueue> send_cq;
  std::shared_ptr<CompletionQueue> recv_cq;  // null: use send_cq
  std::shared_ptr<SharedReceiveQueue> srq;   // null: the QP has its own receive queue
  std::uint32_t max_send_wr = 64;            // each clamped to the device's limits
  std::uint32_t max_recv_wr = 64;
  std::uint32_t max_send_sge = 1;
  std::uint32_t max_recv_sge = 1;
  std::uint32_t max_inline_data = 0;  // clamped to what the device accepts
  bool signal_all = false;            // false: only WRs with IBV_SEND_SIGNALED complete
};

// What the QP was actually granted (after clamping and the provider's own rounding).
struct QpCaps {
  std::uint32_t max_send_wr = 0;
  std::uint32_t max_recv_wr = 0;
  std::uint32_t max_send_sge = 0;
  std::uint32_t max_recv_sge = 0;
  std::uint32_t max_inline_data = 0;
};

// Transport parameters for the transitions. Defaults are ibv_rc_pingpong's, except retry_cnt:
// rxe treats retry_cnt 7 as "retry forever" (its completer never decrements a count of 7), so a
// dead peer would never be reported; 6 reports it after about 4.096 us * 2^timeout * 7 (0.47 s at
// timeout 14, seen on rxe).
struct PathParams {
  std::uint8_t port = 1;
  std::uint8_t sgid_index = 0;
  std::uint16_t pkey_index = 0;
  std::uint32_t mtu = 1024;           // bytes; clamped to the port's active MTU and the peer's
  int access = kDefaultAccess;        // RC/UC: remote access the QP allows
  std::uint32_t qkey = kDefaultQkey;  // UD
  std::uint8_t min_rnr_timer = 12;
  std::uint8_t timeout = 14;
  std::uint8_t retry_cnt = 6;
  std::uint8_t rnr_retry = 7;      // 7 = retry forever; 0 = fail at the first RNR NAK
  std::uint8_t sl = 0;             // RC/UC: the path's service level and GRH traffic class
  std::uint8_t traffic_class = 0;  // (RemotePort's)
  // RDMA READs (and atomics) in flight from the QP, clamped to the device's max_qp_init_rd_atom,
  // and to it, clamped to max_qp_rd_atom. A peer must not start more than we take.
  std::uint8_t max_rd_atomic = 1;
  std::uint8_t max_dest_rd_atomic = 1;
};

// Owner of an ibv_qp (see the top of this file). Holds its PD, CQs and SRQ alive.
class QueuePair {
 public:
  // Creates the QP in RESET with `config` (sizes clamped to the device). Throws Error on failure.
  QueuePair(std::shared_ptr<ProtectionDomain> pd, const QpConfig& config);
  ~QueuePair();
  QueuePair(const QueuePair&) = delete;
  QueuePair& operator=(const QueuePair&) = delete;

  // Adopts a QP created by librdmacm (rdma_create_qp), which also destroys it. Not for users:
  // only the connection manager can make an Adopt key.
  class Adopt {
    Adopt() = default;
    friend class CmConnection;
  };
  QueuePair(Adopt, std::shared_ptr<ProtectionDomain> pd, const QpConfig& config, ibv_qp* qp);

  // The provider's object, for calls this layer does not wrap (it stays owned here).
  // Then its number, type, cached state, granted capacities and PD.
  ibv_qp* native() const noexcept { return qp_; }
  std::uint32_t qp_num() const noexcept { return qp_->qp_num; }
  QpType type() const noexcept { return type_; }
  QpState state() const noexcept { return state_; }
  const QpCaps& caps() const noexcept { return caps_; }
  ProtectionDomain& pd() const noexcept { return *pd_; }

  // This QP's half of an out-of-band exchange: LID, QPN, a fresh PSN, the GID at
  // `path.sgid_index`, the MTU `path` asks for (clamped to the port) and `path.qkey`.
  ConnectionInfo local_info(const PathParams& path) const;

  // Transitions. Each throws Error naming the transition and the QP.
  void to_init(const PathParams& path);
  void to_rtr(const ConnectionInfo& remote, const PathParams& path);  // RC/UC: path to `remote`
  void to_rts(std::uint32_t sq_psn, const PathParams& path);
  void to_error();
  void reset();
  // Reads the state the device has the QP in (it moves a QP to ERROR by itself on a failure) into
  // the cached state(); SQE and SQD read as kError. kDeviceError when the query fails. A slow path.
  Status refresh_state() noexcept;
  // RC: the READs the QP may have in flight as initiator and take as responder, as the device
  // set them (ibv_query_qp). kDeviceError when the query fails. A slow path.
  Status read_depth(std::uint8_t& initiator, std::uint8_t& responder) const noexcept;
  // RESET -> INIT -> RTR -> RTS, sending with `local.psn` and receiving from `remote`.
  void connect(const ConnectionInfo& local, const ConnectionInfo& remote, const PathParams& path);

  // The transitions a data path makes, for noexcept callers: kDeviceError when the device
  // refuses, the cached state unchanged. enter_error: -> ERROR (posted
  // work flushes); enter_reset: -> RESET; restart (UD only, kInvalidState otherwise): RESET ->
  // INIT -> RTR -> RTS with `path`'s port, P_Key and Q_Key, sending from `sq_psn`.
  [[nodiscard]] Status enter_error() noexcept;
  [[nodiscard]] Status enter_reset() noexcept;
  [[nodiscard]] Status restart(std::uint32_t sq_psn, const PathParams& path) noexcept;

  // Posts a send WR or a list linked through wr.next (one doorbell for the list).
  Status post_send(ibv_send_wr& wr) noexcept {
    if (state_ < QpState::kRts) [[unlikely]]
      return Status::kInvalidState;
    ibv_send_wr* bad = nullptr;
    const int rc = ibv_post_send(qp_, &wr, &bad);
    return rc == 0 ? Status::kOk : errno_to_status(rc);
  }

  // Posts a receive WR or a list (not on a QP that uses an SRQ: post to the SRQ instead).
  Status post_recv(ibv_recv_wr& wr) noexcept {
    if (state_ == QpState::kReset || has_srq_) [[unlikely]]
      return Status::kInvalidState;
    ibv_recv_wr* bad = nullptr;
    return errno_to_status(ibv_post_recv(qp_, &wr, &bad));
  }

  // Binds `mw` to [addr, addr+length) of `mr` with `access` (IBV_ACCESS_REMOTE_*). Type 2: posts a
  // bind WR on this QP and gives the window a new rkey; type 1: ibv_bind_mw. `mw.rkey()` is the
  // key to hand to the peer once the bind has completed.
  Status post_bind(MemoryWindow& mw, const MemoryRegion& mr, const void* addr, std::size_t length,
                   int access, std::uint64_t wr_id) noexcept;
  // Revokes a type-2 window's rkey (local invalidate). After it completes, the peer's accesses
  // with that rkey fail with a remote access error.
  Status post_invalidate(std::uint32_t rkey, std::uint64_t wr_id) noexcept;

 private:
  friend class CmConnection;  // mirrors the states librdmacm moves an adopted QP through
  void mark_state(QpState s) noexcept { state_ = s; }
  void modify(ibv_qp_attr& attr, int mask, QpState next, const char* what);
  Status try_modify(ibv_qp_attr& attr, int mask, QpState next) noexcept;
  int init_attr(const PathParams& path, ibv_qp_attr& a) const noexcept;  // returns the mask

  std::shared_ptr<ProtectionDomain> pd_;
  std::shared_ptr<CompletionQueue> send_cq_;
  std::shared_ptr<CompletionQueue> recv_cq_;
  std::shared_ptr<SharedReceiveQueue> srq_;
  ibv_qp* qp_ = nullptr;
  QpType type_;
  QpState state_ = QpState::kReset;
  bool has_srq_ = false;
  bool adopted_ = false;
  QpCaps caps_{};
};

// The ibv_qp_type for a QpType.
ibv_qp_type to_ibv(QpType t) noexcept;

}  // namespace unet::verbs
