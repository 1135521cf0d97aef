#include "unet/verbs/queue_pair.h"

#include <algorithm>
#include <cerrno>
#include <string>

#include "qp_init_attr.h"
#include "unet/verbs/address_handle.h"
#include "unet/verbs/error.h"

namespace unet::verbs {
namespace {

const char* type_name(QpType t) {
  switch (t) {
    case QpType::kRc:
      return "RC";
    case QpType::kUc:
      return "UC";
    case QpType::kUd:
      return "UD";
  }
  return "?";
}

ibv_mtu to_ibv_mtu(std::uint32_t bytes) {
  if (bytes >= 4096) return IBV_MTU_4096;
  if (bytes >= 2048) return IBV_MTU_2048;
  if (bytes >= 1024) return IBV_MTU_1024;
  if (bytes >= 512) return IBV_MTU_512;
  return IBV_MTU_256;
}

}  // namespace

ibv_qp_type to_ibv(QpType t) noexcept {
  switch (t) {
    case QpType::kRc:
      return IBV_QPT_RC;
    case QpType::kUc:
      return IBV_QPT_UC;
    case QpType::kUd:
      return IBV_QPT_UD;
  }
  return IBV_QPT_RC;
}

ibv_qp_init_attr make_qp_init_attr(Context& ctx, const QpConfig& config,
                                   const std::string& object) {
  if (!config.send_cq) throw_error("create QP", object, EINVAL, "no send CQ given");
  const DeviceLimits& l = ctx.limits();
  ibv_qp_init_attr attr{};
  attr.qp_type = to_ibv(config.type);
  attr.send_cq = config.send_cq->native();
  attr.recv_cq = (config.recv_cq ? config.recv_cq : config.send_cq)->native();
  attr.srq = config.srq ? config.srq->native() : nullptr;
  attr.sq_sig_all = config.signal_all ? 1 : 0;
  attr.cap.max_send_wr = Context::clamp(config.max_send_wr, l.max_qp_wr);
  attr.cap.max_recv_wr = config.srq ? 0 : Context::clamp(config.max_recv_wr, l.max_qp_wr);
  attr.cap.max_send_sge = Context::clamp(config.max_send_sge, l.max_sge);
  attr.cap.max_recv_sge = config.srq ? 0 : Context::clamp(config.max_recv_sge, l.max_sge);
  attr.cap.max_inline_data =
      config.max_inline_data ? std::min(config.max_inline_data, ctx.max_inline_data(attr.qp_type))
                             : 0;
  return attr;
}

bool shrink_send_queue(ibv_qp_cap& cap, int err) noexcept {
  if ((err != EINVAL && err != ENOMEM) || cap.max_inline_data == 0 || cap.max_send_wr <= 16)
    return false;
  cap.max_send_wr = std::max<std::uint32_t>(cap.max_send_wr / 2, 16);
  return true;
}

QueuePair::QueuePair(std::shared_ptr<ProtectionDomain> pd, const QpConfig& config)
    : pd_(std::move(pd)),
      send_cq_(config.send_cq),
      recv_cq_(config.recv_cq ? config.recv_cq : config.send_cq),
      srq_(config.srq),
      type_(config.type),
      has_srq_(config.srq != nullptr) {
  std::string object = pd_->context().name() + " " + type_name(type_) + " QP";
  ibv_qp_init_attr attr = make_qp_init_attr(pd_->context(), config, object);
  qp_ =
      create_shrinking(attr, [&](ibv_qp_init_attr& a) { return ibv_create_qp(pd_->native(), &a); });
  if (!qp_) throw_error("ibv_create_qp", object, errno);
  caps_ = {attr.cap.max_send_wr, attr.cap.max_recv_wr, attr.cap.max_send_sge, attr.cap.max_recv_sge,
           attr.cap.max_inline_data};
}

QueuePair::QueuePair(Adopt, std::shared_ptr<ProtectionDomain> pd, const QpConfig& config,
                     ibv_qp* qp)
    : pd_(std::move(pd)),
      send_cq_(config.send_cq),
      recv_cq_(config.recv_cq ? config.recv_cq : config.send_cq),
      srq_(config.srq),
      qp_(qp),
      type_(config.type),
      state_(QpState::kInit),  // rdma_create_qp leaves the QP in INIT
      has_srq_(config.srq != nullptr),
      adopted_(true) {
  ibv_qp_attr a{};
  ibv_qp_init_attr init{};
  if (ibv_query_qp(qp_, &a, IBV_QP_CAP, &init) == 0)
    caps_ = {init.cap.max_send_wr, init.cap.max_recv_wr, init.cap.max_send_sge,
             init.cap.max_recv_sge, init.cap.max_inline_data};
}

QueuePair::~QueuePair() {
  if (!adopted_) ibv_destroy_qp(qp_);
}

ConnectionInfo QueuePair::local_info(const PathParams& path) const {
  Context& ctx = pd_->context();
  PortInfo port = ctx.port(path.port);
  ibv_gid gid{};
  if (int rc = ibv_query_gid(ctx.native(), path.port, path.sgid_index, &gid))
    throw_error("ibv_query_gid", ctx.name() + " index " + std::to_string(path.sgid_index), rc);
  ConnectionInfo info;
  info.lid = port.lid;
  info.qpn = qp_num();
  info.psn = random_psn();
  std::copy(std::begin(gid.raw), std::end(gid.raw), info.gid.raw.begin());
  info.mtu = std::min(path.mtu, port.active_mtu);
  info.qkey = type_ == QpType::kUd ? path.qkey : 0;
  return info;
}

void QueuePair::modify(ibv_qp_attr& attr, int mask, QpState next, const char* what) {
  if (int rc = ibv_modify_qp(qp_, &attr, mask)) {
    throw_error("ibv_modify_qp",
                pd_->context().name() + " " + type_name(type_) + " QP " + std::to_string(qp_num()),
                rc, what);
  }
  state_ = next;
}

Status QueuePair::try_modify(ibv_qp_attr& attr, int mask, QpState next) noexcept {
  if (ibv_modify_qp(qp_, &attr, mask) != 0) return Status::kDeviceError;
  state_ = next;
  return Status::kOk;
}

int QueuePair::init_attr(const PathParams& path, ibv_qp_attr& a) const noexcept {
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = path.pkey_index;
  a.port_num = path.port;
  int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
  if (type_ == QpType::kUd) {
    a.qkey = path.qkey;
    mask |= IBV_QP_QKEY;
  } else {
    // UC cannot grant remote read.
    a.qp_access_flags = type_ == QpType::kUc ? path.access & ~IBV_ACCESS_REMOTE_READ : path.access;
    mask |= IBV_QP_ACCESS_FLAGS;
  }
  return mask;
}

void QueuePair::to_init(const PathParams& path) {
  ibv_qp_attr a{};
  const int mask = init_attr(path, a);
  modify(a, mask, QpState::kInit, "RESET->INIT");
}

void QueuePair::to_rtr(const ConnectionInfo& remote, const PathParams& path) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  int mask = IBV_QP_STATE;
  if (type_ != QpType::kUd) {
    Context& ctx = pd_->context();
    std::uint32_t mtu = std::min(path.mtu, ctx.port(path.port).active_mtu);
    if (remote.mtu) mtu = std::min(mtu, remote.mtu);
    a.path_mtu = to_ibv_mtu(mtu);
    a.dest_qp_num = remote.qpn;
    a.rq_psn = remote.psn;
    RemotePort rp;
    rp.lid = remote.lid;
    rp.gid = remote.gid;
    rp.global = !remote.gid.is_zero();
    rp.sgid_index = path.sgid_index;
    rp.port = path.port;
    rp.sl = path.sl;
    rp.traffic_class = path.traffic_class;
    a.ah_attr = make_ah_attr(rp);
    mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
    if (type_ == QpType::kRc) {
      a.max_dest_rd_atomic = static_cast<std::uint8_t>(
          std::min<std::uint32_t>(path.max_dest_rd_atomic, ctx.limits().max_qp_rd_atom));
      a.min_rnr_timer = path.min_rnr_timer;
      mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    }
  }
  modify(a, mask, QpState::kRtr, "INIT->RTR");
}

void QueuePair::to_rts(std::uint32_t sq_psn, const PathParams& path) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = sq_psn & 0xffffff;
  int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
  if (type_ == QpType::kRc) {
    a.timeout = path.timeout;
    a.retry_cnt = path.retry_cnt;
    a.rnr_retry = path.rnr_retry;
    a.max_rd_atomic = static_cast<std::uint8_t>(
        std::min<std::uint32_t>(path.max_rd_atomic, pd_->context().limits().max_qp_init_rd_atom));
    mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
  }
  modify(a, mask, QpState::kRts, "RTR->RTS");
}

void QueuePair::to_error() {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_ERR;
  modify(a, IBV_QP_STATE, QpState::kError, "->ERROR");
}

Status QueuePair::refresh_state() noexcept {
  ibv_qp_attr a{};
  ibv_qp_init_attr init{};
  if (ibv_query_qp(qp_, &a, IBV_QP_STATE, &init) != 0) return Status::kDeviceError;
  switch (a.qp_state) {
    case IBV_QPS_RESET:
      state_ = QpState::kReset;
      break;
    case IBV_QPS_INIT:
      state_ = QpState::kInit;
      break;
    case IBV_QPS_RTR:
      state_ = QpState::kRtr;
      break;
    case IBV_QPS_RTS:
      state_ = QpState::kRts;
      break;
    default:
      state_ = QpState::kError;
      break;  // ERR, SQE, SQD: sends do not go out
  }
  return Status::kOk;
}

Status QueuePair::read_depth(std::uint8_t& initiator, std::uint8_t& responder) const noexcept {
  ibv_qp_attr a{};
  ibv_qp_init_attr init{};
  if (ibv_query_qp(qp_, &a, IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC, &init) != 0)
    return Status::kDeviceError;
  initiator = a.max_rd_atomic;
  responder = a.max_dest_rd_atomic;
  return Status::kOk;
}

void QueuePair::reset() {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RESET;
  modify(a, IBV_QP_STATE, QpState::kReset, "->RESET");
}

Status QueuePair::enter_error() noexcept {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_ERR;
  return try_modify(a, IBV_QP_STATE, QpState::kError);
}

Status QueuePair::enter_reset() noexcept {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RESET;
  return try_modify(a, IBV_QP_STATE, QpState::kReset);
}

Status QueuePair::restart(std::uint32_t sq_psn, const PathParams& path) noexcept {
  if (type_ != QpType::kUd) return Status::kInvalidState;  // RC/UC need the peer: connect()
  if (state_ != QpState::kReset)
    if (Status s = enter_reset(); s != Status::kOk) return s;
  ibv_qp_attr init{};
  const int mask = init_attr(path, init);
  if (Status s = try_modify(init, mask, QpState::kInit); s != Status::kOk) return s;
  ibv_qp_attr rtr{};
  rtr.qp_state = IBV_QPS_RTR;
  if (Status s = try_modify(rtr, IBV_QP_STATE, QpState::kRtr); s != Status::kOk) return s;
  ibv_qp_attr rts{};
  rts.qp_state = IBV_QPS_RTS;
  rts.sq_psn = sq_psn & 0xffffff;
  return try_modify(rts, IBV_QP_STATE | IBV_QP_SQ_PSN, QpState::kRts);
}

void QueuePair::connect(const ConnectionInfo& local, const ConnectionInfo& remote,
                        const PathParams& path) {
  if (state_ != QpState::kReset) reset();
  to_init(path);
  to_rtr(remote, path);
  to_rts(local.psn, path);
}

Status QueuePair::post_bind(MemoryWindow& mw, const MemoryRegion& mr, const void* addr,
                            std::size_t length, int access, std::uint64_t wr_id) noexcept {
  if (state_ < QpState::kRts) return Status::kInvalidState;
  if (!mr.contains(addr, length)) return Status::kInvalidArgument;
  ibv_mw_bind_info info{};
  info.mr = mr.native();
  info.addr = reinterpret_cast<std::uint64_t>(addr);
  info.length = length;
  info.mw_access_flags = static_cast<unsigned>(access);
  if (mw.type() == MemoryWindowType::kType1) {
    ibv_mw_bind bind{};
    bind.wr_id = wr_id;
    bind.send_flags = IBV_SEND_SIGNALED;
    bind.bind_info = info;
    if (int rc = ibv_bind_mw(qp_, mw.native(), &bind)) return errno_to_status(rc);
    mw.rkey_ = mw.native()->rkey;
    return Status::kOk;
  }
  std::uint32_t rkey = ibv_inc_rkey(mw.rkey_ ? mw.rkey_ : mw.native()->rkey);
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.opcode = IBV_WR_BIND_MW;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.bind_mw.mw = mw.native();
  wr.bind_mw.rkey = rkey;
  wr.bind_mw.bind_info = info;
  ibv_send_wr* bad = nullptr;
  if (int rc = ibv_post_send(qp_, &wr, &bad)) return errno_to_status(rc);
  mw.rkey_ = rkey;
  return Status::kOk;
}

Status QueuePair::post_invalidate(std::uint32_t rkey, std::uint64_t wr_id) noexcept {
  if (state_ < QpState::kRts) return Status::kInvalidState;
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.opcode = IBV_WR_LOCAL_INV;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.invalidate_rkey = rkey;
  ibv_send_wr* bad = nullptr;
  return errno_to_status(ibv_post_send(qp_, &wr, &bad));
}

}  // namespace unet::verbs
