#include "raw_peer.h"

#include <endian.h>

#include <cstring>
#include <stdexcept>

#include "device_env.h"
#include "offer_line.h"
#include "unet/verbs/connection_info.h"

namespace unet::test {

namespace {
constexpr std::uint32_t kGrhSlot = 64;  // each receive: a GRH slot (UD), then max_bytes
}  // namespace

RawPeer::RawPeer(const std::string& device, verbs::QpType type, std::uint32_t max_bytes,
                 std::uint32_t recv_depth)
    : type_(type), max_bytes_(max_bytes), recv_depth_(recv_depth) {
  ctx_ = verbs::Context::open(device);
  pd_ = std::make_shared<verbs::ProtectionDomain>(ctx_);
  scq_ = std::make_shared<verbs::CompletionQueue>(ctx_, 64);
  rcq_ = std::make_shared<verbs::CompletionQueue>(ctx_, recv_depth * 2);
  gid_ = verbs::select_gid(*ctx_, 1, gid_index());
  mtu_ = ctx_->port(1).active_mtu;
  path_.sgid_index = static_cast<std::uint8_t>(gid_.index);
  path_.mtu = mtu_;
  path_.rnr_retry = 7;
  send_buf_.resize(max_bytes);
  recv_buf_.resize(std::size_t{recv_depth} * (kGrhSlot + max_bytes));
  send_mr_ = std::make_unique<verbs::MemoryRegion>(pd_, send_buf_.data(), send_buf_.size(),
                                                   IBV_ACCESS_LOCAL_WRITE);
  recv_mr_ = std::make_unique<verbs::MemoryRegion>(pd_, recv_buf_.data(), recv_buf_.size(),
                                                   IBV_ACCESS_LOCAL_WRITE);
  make_qp();
}

RawPeer::~RawPeer() {
  qp_.reset();  // QP before AH, CQs, MRs and PD
  ah_.reset();
}

void RawPeer::make_qp() {
  verbs::QpConfig c;
  c.type = type_;
  c.send_cq = scq_;
  c.recv_cq = rcq_;
  c.max_send_wr = 16;
  c.max_recv_wr = recv_depth_;
  c.max_recv_sge = 2;
  qp_ = std::make_unique<verbs::QueuePair>(pd_, c);
  local_ = qp_->local_info(path_);
  if (type_ == verbs::QpType::kUd) {
    qp_->connect(local_, local_, path_);  // UD: INIT -> RTR -> RTS; the peer is per send
    post_recvs();
  }
}

void RawPeer::renew() {
  qp_.reset();
  for (std::size_t n = 1; n > 0;) n = drain();  // what the old QP left (flushes)
  make_qp();
}

void RawPeer::offer_ring(std::uint32_t slots, std::uint32_t slot_bytes) {
  const core::ring::Geometry g{slots, slot_bytes};
  if (type_ != verbs::QpType::kRc || !core::ring::valid(g))
    throw std::invalid_argument("RawPeer: no such ring");
  ring_.assign(g.remote_bytes() / 8, 0);  // a slot the endpoint may write is all zeros
  ring_mr_ = std::make_unique<verbs::MemoryRegion>(
      pd_, ring_.data(), g.remote_bytes(),
      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  ring_slots_ = slots;
  ring_slot_bytes_ = slot_bytes;
}

// Our line; with a ring, its key in the memory fields and the ring field before the newline.
std::string RawPeer::line() const {
  if (!ring_mr_) return verbs::encode(local_);
  verbs::ConnectionInfo info = local_;
  info.memory = ring_mr_->remote_key();
  std::string s = verbs::encode(info);
  s.insert(s.size() - 1, core::ring::encode_field({ring_slots_, ring_slot_bytes_}));
  return s;
}

void RawPeer::connect(std::string_view endpoint_line) {
  // An RC endpoint's offer may end with a ring field: its ring's key and geometry. The channel
  // is a ring channel when ours has one too; else it uses SEND/RECV only.
  core::ring::Geometry g;
  verbs::ConnectionInfo remote;
  std::uint32_t buffer = 0;  // the endpoint's buffer size: what the tests send stays below it
  if (!core::offer::parse_offer(endpoint_line, remote, g, buffer))
    throw std::invalid_argument("RawPeer: bad line");
  endpoint_ring_ = {};
  if (ring_mr_ && g.slots != 0)
    endpoint_ring_ = {remote.memory.addr, remote.memory.rkey, remote.memory.length, g.slots,
                      g.slot_bytes};
  if (type_ == verbs::QpType::kUd) {
    verbs::RemotePort rp;
    rp.lid = remote.lid;
    rp.gid = remote.gid;
    rp.sgid_index = path_.sgid_index;
    ah_ = std::make_unique<verbs::AddressHandle>(pd_, rp);
    remote_qpn_ = remote.qpn;
    remote_qkey_ = remote.qkey;
    return;
  }
  qp_->connect(local_, remote, path_);
  post_recvs();
}

void RawPeer::post_recvs() {
  for (std::uint32_t i = 0; i < recv_depth_; ++i) post_recv(i);
}

void RawPeer::post_recv(std::uint32_t slot) {
  std::byte* at = recv_buf_.data() + std::size_t{slot} * (kGrhSlot + max_bytes_);
  ibv_sge sge[2] = {{reinterpret_cast<std::uint64_t>(at), 40, recv_mr_->lkey()},
                    {reinterpret_cast<std::uint64_t>(at + kGrhSlot), max_bytes_, recv_mr_->lkey()}};
  ibv_recv_wr wr{};
  wr.wr_id = slot;
  const bool ud = type_ == verbs::QpType::kUd;
  wr.sg_list = ud ? sge : sge + 1;
  wr.num_sge = ud ? 2 : 1;
  if (qp_->post_recv(wr) != Status::kOk) throw std::runtime_error("RawPeer: post_recv failed");
}

Status RawPeer::post_and_wait(ibv_send_wr& wr) {
  wr.send_flags |= IBV_SEND_SIGNALED;
  if (type_ == verbs::QpType::kUd) {
    wr.wr.ud.ah = ah_->native();
    wr.wr.ud.remote_qpn = remote_qpn_;
    wr.wr.ud.remote_qkey = remote_qkey_;
  }
  if (Status s = qp_->post_send(wr); s != Status::kOk) return s;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  verbs::WorkCompletion wc{};
  for (std::size_t n = 0; n == 0;) {
    if (scq_->poll({&wc, 1}, n) != Status::kOk) throw std::runtime_error("RawPeer: poll failed");
    if (n == 0 && std::chrono::steady_clock::now() > end)
      throw std::runtime_error("RawPeer: no send completion within 10 s");
  }
  const Status s = verbs::to_status(wc.status);
  if (s != Status::kOk && type_ == verbs::QpType::kUd) {  // back to RTS, every receive posted once
    (void)drain();
    qp_->connect(local_, local_, path_);
    post_recvs();
  }
  return s;
}

Status RawPeer::send(std::span<const std::byte> bytes, std::optional<std::uint32_t> imm) {
  if (bytes.size() > max_bytes_) throw std::invalid_argument("RawPeer: message past max_bytes");
  if (!bytes.empty()) std::memcpy(send_buf_.data(), bytes.data(), bytes.size());
  ibv_sge sge{reinterpret_cast<std::uint64_t>(send_buf_.data()),
              static_cast<std::uint32_t>(bytes.size()), send_mr_->lkey()};
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = bytes.empty() ? 0 : 1;
  wr.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
  if (imm) wr.imm_data = htobe32(*imm);
  return post_and_wait(wr);
}

Status RawPeer::write_imm(std::uint32_t imm) {
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr.imm_data = htobe32(imm);
  return post_and_wait(wr);
}

// An RDMA WRITE from, or READ into, the start of our send buffer, at `offset` in the endpoint's
// ring.
Status RawPeer::rdma(ibv_wr_opcode op, std::uint64_t offset, std::uint32_t len) {
  if (len > max_bytes_) throw std::invalid_argument("RawPeer: RDMA past max_bytes");
  ibv_sge sge{reinterpret_cast<std::uint64_t>(send_buf_.data()), len, send_mr_->lkey()};
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = len > 0 ? 1 : 0;
  wr.opcode = op;
  wr.wr.rdma.remote_addr = endpoint_ring_.addr + offset;
  wr.wr.rdma.rkey = endpoint_ring_.rkey;
  return post_and_wait(wr);
}

Status RawPeer::write_ring(std::uint64_t offset, std::span<const std::byte> bytes) {
  if (bytes.size() > max_bytes_) throw std::invalid_argument("RawPeer: RDMA past max_bytes");
  if (!bytes.empty()) std::memcpy(send_buf_.data(), bytes.data(), bytes.size());
  return rdma(IBV_WR_RDMA_WRITE, offset, static_cast<std::uint32_t>(bytes.size()));
}

Status RawPeer::read_ring(std::uint64_t offset, std::span<std::byte> out) {
  const Status s = rdma(IBV_WR_RDMA_READ, offset, static_cast<std::uint32_t>(out.size()));
  if (s == Status::kOk && !out.empty()) std::memcpy(out.data(), send_buf_.data(), out.size());
  return s;
}

std::size_t RawPeer::drain(const std::function<void(std::span<const std::byte>)>& sink) {
  std::size_t total = 0;
  verbs::WorkCompletion wc[16];
  for (std::size_t n = 1; n > 0; total += n) {
    if (rcq_->poll(wc, n) != Status::kOk) throw std::runtime_error("RawPeer: poll failed");
    for (std::size_t i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS || !qp_) continue;  // flushed: its QP is gone
      const auto slot = static_cast<std::uint32_t>(wc[i].wr_id);
      std::byte* at = recv_buf_.data() + std::size_t{slot} * (kGrhSlot + max_bytes_);
      const bool ud = type_ == verbs::QpType::kUd;
      const std::uint32_t len = ud ? wc[i].byte_len - 40 : wc[i].byte_len;
      if (sink) sink(std::span<const std::byte>(at + kGrhSlot, len));
      post_recv(slot);
    }
  }
  return total;
}

}  // namespace unet::test
