#include "unet/verbs/connection_manager.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "addr_info.h"
#include "qp_init_attr.h"
#include "unet/verbs/deadline.h"
#include "unet/verbs/error.h"

namespace unet::verbs {
namespace {

rdma_event_channel* make_channel(const std::string& object) {
  rdma_event_channel* ch = rdma_create_event_channel();
  if (!ch)
    throw_error("rdma_create_event_channel", object, errno,
                "is the rdma_ucm module loaded and /dev/infiniband/rdma_cm present?");
  int flags = fcntl(ch->fd, F_GETFL);
  if (flags < 0 || fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    int err = errno;
    rdma_destroy_event_channel(ch);
    throw_error("fcntl(O_NONBLOCK)", object, err);
  }
  return ch;
}

// An event taken from a channel; acknowledged when it goes out of scope.
struct Event {
  rdma_cm_event* ev = nullptr;
  Event() = default;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event() {
    if (ev) rdma_ack_cm_event(ev);
  }
};

// Waits up to `timeout` for the next event. false on timeout.
bool next_event(rdma_event_channel* ch, std::chrono::milliseconds timeout, Event& out) {
  const Deadline deadline(timeout);
  for (;;) {
    if (rdma_get_cm_event(ch, &out.ev) == 0) return true;
    if (errno != EAGAIN) throw_error("rdma_get_cm_event", "event channel", errno);
    if (deadline.passed()) return false;
    pollfd p{ch->fd, POLLIN, 0};
    if (::poll(&p, 1, deadline.poll_timeout()) < 0 && errno != EINTR)
      throw_error("poll", "rdma_cm event channel", errno);
  }
}

// Waits for `expected`; anything else (REJECTED, UNREACHABLE, ADDR_ERROR ...) is an error.
void expect_event(rdma_event_channel* ch, rdma_cm_event_type expected,
                  std::chrono::milliseconds timeout, const std::string& object, Event& out) {
  if (!next_event(ch, timeout, out))
    throw_error("rdma_cm", object, ETIMEDOUT,
                std::string("waiting for ") + rdma_event_str(expected));
  if (out.ev->event != expected)
    throw_error("rdma_cm", object, out.ev->status < 0 ? -out.ev->status : 0,
                std::string("expected ") + rdma_event_str(expected) + ", got " +
                    rdma_event_str(out.ev->event));
}

// The parameters of a connect or accept; READ depths clamped to the device (librdmacm refuses
// more) and, for an accept, to the request's: the accept decides both ends' depths (the
// connecting end issues what we take, and takes what we issue). A request event states the
// peer's depths from our side: initiator_depth is what it takes, responder_resources what it
// issues.
rdma_conn_param conn_param(const CmParams& p, const ProtectionDomain& pd, const std::string& object,
                           std::uint8_t peer_takes = 255, std::uint8_t peer_issues = 255) {
  rdma_conn_param c{};
  const DeviceLimits& l = pd.context().limits();
  if (p.private_data.size() > 196)
    throw_error("rdma_cm", object, EINVAL, "private data longer than 196 bytes");
  c.private_data = p.private_data.empty() ? nullptr : p.private_data.data();
  c.private_data_len = static_cast<std::uint8_t>(p.private_data.size());
  c.responder_resources = static_cast<std::uint8_t>(
      std::min<std::uint32_t>({p.responder_resources, l.max_qp_rd_atom, peer_issues}));
  c.initiator_depth = static_cast<std::uint8_t>(
      std::min<std::uint32_t>({p.initiator_depth, l.max_qp_init_rd_atom, peer_takes}));
  c.retry_count = p.retry_count;
  c.rnr_retry_count = p.rnr_retry_count;
  return c;
}

std::vector<std::byte> private_data_of(const rdma_cm_event* ev) {
  const auto* p = static_cast<const std::byte*>(ev->param.conn.private_data);
  return p ? std::vector<std::byte>(p, p + ev->param.conn.private_data_len)
           : std::vector<std::byte>{};
}

}  // namespace

void CmConnection::create_qp(std::shared_ptr<ProtectionDomain> pd, const QpConfig& config) {
  std::string object = "rdma_cm id";
  if (config.type != QpType::kRc)
    throw_error("rdma_create_qp", object, EINVAL, "only RC is supported");
  if (id_->verbs != pd->context().native())
    throw_error(
        "rdma_create_qp", object, EINVAL,
        "the address resolves to a different device than the PD's (" + pd->context().name() + ")");
  ibv_qp_init_attr attr = make_qp_init_attr(pd->context(), config, object);
  if (!create_shrinking(
          attr, [&](ibv_qp_init_attr& a) { return rdma_create_qp(id_, pd->native(), &a) == 0; }))
    throw_error("rdma_create_qp", object, errno);
  qp_.emplace(QueuePair::Adopt{}, std::move(pd), config, id_->qp);
}

void CmConnection::set_established() noexcept {
  connected_ = true;
  // librdmacm has taken the QP to RTS; mirror it in the wrapper's state.
  ibv_qp_attr a{};
  ibv_qp_init_attr init{};
  if (ibv_query_qp(id_->qp, &a, IBV_QP_STATE, &init) == 0 && a.qp_state == IBV_QPS_RTS)
    qp_->mark_state(QpState::kRts);
}

CmConnection::~CmConnection() {
  if (connected_) rdma_disconnect(id_);  // no wait: the peer sees DISCONNECTED
  bool had_qp = qp_.has_value();
  qp_.reset();
  if (id_) {
    if (had_qp) rdma_destroy_qp(id_);
    rdma_destroy_id(id_);
  }
  if (channel_) rdma_destroy_event_channel(channel_);
}

void CmConnection::disconnect(std::chrono::milliseconds timeout) {
  if (!connected_) return;
  if (rdma_disconnect(id_) != 0) throw_error("rdma_disconnect", "rdma_cm connection", errno);
  connected_ = false;
  qp_->mark_state(QpState::kError);
  Event ev;
  expect_event(channel_, RDMA_CM_EVENT_DISCONNECTED, timeout, "rdma_cm connection", ev);
}

Status CmConnection::close(std::chrono::milliseconds timeout) noexcept {
  try {
    disconnect(timeout);
    return Status::kOk;
  } catch (const Error& e) {
    return e.error_number() == ETIMEDOUT ? Status::kTimeout : Status::kDeviceError;
  } catch (...) {
    return Status::kDeviceError;
  }
}

CmOutcome established_event(rdma_cm_event_type type) noexcept {
  switch (type) {
    case RDMA_CM_EVENT_DISCONNECTED:
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
      return CmOutcome::kEnded;
    case RDMA_CM_EVENT_TIMEWAIT_EXIT:
    case RDMA_CM_EVENT_ADDR_CHANGE:
      return CmOutcome::kNothing;
    default:
      return CmOutcome::kUnexpected;
  }
}

Status CmConnection::wait_disconnected(std::chrono::milliseconds timeout) noexcept {
  try {
    const Deadline deadline(timeout);
    for (;;) {
      Event ev;
      if (!next_event(channel_, deadline.left(), ev)) return Status::kTimeout;
      switch (established_event(ev.ev->event)) {
        case CmOutcome::kNothing:
          continue;
        case CmOutcome::kUnexpected:
          return Status::kInvalidState;
        case CmOutcome::kEnded:
          break;
      }
      connected_ = false;
      qp_->mark_state(QpState::kError);
      if (ev.ev->event == RDMA_CM_EVENT_DISCONNECTED) rdma_disconnect(id_);  // completes our half
      return Status::kOk;
    }
  } catch (const Error&) {
    return Status::kDeviceError;
  }
}

CmListener::CmListener(std::string_view host, std::uint16_t port, int backlog) {
  std::string object = "rdma_cm listener " + std::string(host) + ":" + std::to_string(port);
  channel_ = make_channel(object);
  try {
    if (rdma_create_id(channel_, &id_, nullptr, RDMA_PS_TCP) != 0)
      throw_error("rdma_create_id", object, errno);
    // An address given picks its family (IPv6: "fe80::1%eth0" or a global one); none listens on
    // every IPv4 address, as before.
    AddrInfo ai(host, port, host.empty() ? AF_INET : AF_UNSPEC, true);
    if (rdma_bind_addr(id_, ai.list->ai_addr) != 0) throw_error("rdma_bind_addr", object, errno);
    if (rdma_listen(id_, backlog) != 0) throw_error("rdma_listen", object, errno);
  } catch (...) {
    if (id_) rdma_destroy_id(id_);
    rdma_destroy_event_channel(channel_);
    throw;
  }
}

CmListener::~CmListener() {
  rdma_destroy_id(id_);
  rdma_destroy_event_channel(channel_);
}

std::uint16_t CmListener::port() const noexcept { return ntohs(rdma_get_src_port(id_)); }

std::unique_ptr<CmConnection> CmListener::accept(std::shared_ptr<ProtectionDomain> pd,
                                                 const QpConfig& config, const CmParams& params) {
  std::string object = "rdma_cm listener :" + std::to_string(port());
  std::unique_ptr<CmConnection> conn(new CmConnection());
  std::uint8_t peer_takes = 0, peer_issues = 0;
  {
    Event ev;
    expect_event(channel_, RDMA_CM_EVENT_CONNECT_REQUEST, params.timeout, object, ev);
    conn->id_ = ev.ev->id;  // a new id for this connection
    conn->peer_data_ = private_data_of(ev.ev);
    peer_takes = ev.ev->param.conn.initiator_depth;
    peer_issues = ev.ev->param.conn.responder_resources;
  }
  try {
    rdma_conn_param c = conn_param(params, *pd, object, peer_takes, peer_issues);
    conn->create_qp(std::move(pd), config);
    if (rdma_accept(conn->id_, &c) != 0) throw_error("rdma_accept", object, errno);
    Event ev;
    expect_event(channel_, RDMA_CM_EVENT_ESTABLISHED, params.timeout, object, ev);
  } catch (...) {
    if (!conn->qp_) rdma_reject(conn->id_, nullptr, 0);
    throw;  // ~CmConnection destroys the id
  }
  // Give the connection its own channel so its events never interleave with the listener's.
  conn->channel_ = make_channel(object);
  if (rdma_migrate_id(conn->id_, conn->channel_) != 0)
    throw_error("rdma_migrate_id", object, errno);
  conn->set_established();
  return conn;
}

std::unique_ptr<CmConnection> cm_connect(std::string_view host, std::uint16_t port,
                                         std::shared_ptr<ProtectionDomain> pd,
                                         const QpConfig& config, const CmParams& params) {
  std::string object = "rdma_cm connect " + std::string(host) + ":" + std::to_string(port);
  std::unique_ptr<CmConnection> conn(new CmConnection());
  conn->channel_ = make_channel(object);
  if (rdma_create_id(conn->channel_, &conn->id_, nullptr, RDMA_PS_TCP) != 0)
    throw_error("rdma_create_id", object, errno);
  AddrInfo ai(host, port, AF_UNSPEC, false);  // IPv4 or IPv6, as the host names it
  const int ms = clamp_ms(params.timeout);
  if (params.tos) {  // before the route is resolved: the path (and its SL) follows from it
    std::uint8_t tos = *params.tos;
    if (rdma_set_option(conn->id_, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, sizeof tos) != 0)
      throw_error("rdma_set_option(TOS)", object, errno);
  }
  {
    if (rdma_resolve_addr(conn->id_, nullptr, ai.list->ai_addr, ms) != 0)
      throw_error("rdma_resolve_addr", object, errno);
    Event ev;
    expect_event(conn->channel_, RDMA_CM_EVENT_ADDR_RESOLVED, params.timeout, object, ev);
  }
  {
    if (rdma_resolve_route(conn->id_, ms) != 0) throw_error("rdma_resolve_route", object, errno);
    Event ev;
    expect_event(conn->channel_, RDMA_CM_EVENT_ROUTE_RESOLVED, params.timeout, object, ev);
  }
  rdma_conn_param c = conn_param(params, *pd, object);
  conn->create_qp(std::move(pd), config);
  if (rdma_connect(conn->id_, &c) != 0) throw_error("rdma_connect", object, errno);
  Event ev;
  expect_event(conn->channel_, RDMA_CM_EVENT_ESTABLISHED, params.timeout, object, ev);
  conn->peer_data_ = private_data_of(ev.ev);  // the accept's
  conn->set_established();
  return conn;
}

}  // namespace unet::verbs
