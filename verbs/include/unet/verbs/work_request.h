// SendRequest and RecvRequest: single-SGE work requests built in one expression.
//
// Each holds its scatter-gather entry inside itself and points its WR at it, so it can be neither
// copied nor moved (returning one from a function is fine: C++17 elides that copy). Providers copy
// a WR when it is posted, so a request may be reused or changed as soon as post_*() returns.
// Plain data: building one costs the same as filling the libibverbs structs by hand.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

#include "unet/verbs/memory_region.h"

namespace unet::verbs {

// A receive WR with its one SGE.
struct RecvRequest {
  ibv_sge sge;
  ibv_recv_wr wr;

  // Receive into [addr, addr+length) of the region with `lkey`; `wr_id` comes back in the
  // completion.
  RecvRequest(const void* addr, std::uint32_t length, std::uint32_t lkey,
              std::uint64_t wr_id = 0) noexcept
      : sge{reinterpret_cast<std::uint64_t>(addr), length, lkey}, wr{} {
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
  }
  RecvRequest(const RecvRequest&) = delete;
  RecvRequest& operator=(const RecvRequest&) = delete;
};

// A send WR (SEND, RDMA WRITE/READ, ...) with its one SGE.
struct SendRequest {
  ibv_sge sge;
  ibv_send_wr wr;

  // `flags` are IBV_SEND_* (SIGNALED, INLINE, ...).
  SendRequest(ibv_wr_opcode opcode, const void* addr, std::uint32_t length, std::uint32_t lkey,
              std::uint64_t wr_id = 0, unsigned flags = IBV_SEND_SIGNALED) noexcept
      : sge{reinterpret_cast<std::uint64_t>(addr), length, lkey}, wr{} {
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = opcode;
    wr.send_flags = flags;
  }
  SendRequest(const SendRequest&) = delete;
  SendRequest& operator=(const SendRequest&) = delete;

  // RDMA WRITE/READ target: `offset` bytes into the peer's window `key`.
  SendRequest& remote(const RemoteKey& key, std::uint64_t offset = 0) noexcept {
    wr.wr.rdma.remote_addr = key.addr + offset;
    wr.wr.rdma.rkey = key.rkey;
    return *this;
  }
  // UD destination.
  SendRequest& datagram(ibv_ah* ah, std::uint32_t remote_qpn, std::uint32_t remote_qkey) noexcept {
    wr.wr.ud.ah = ah;
    wr.wr.ud.remote_qpn = remote_qpn;
    wr.wr.ud.remote_qkey = remote_qkey;
    return *this;
  }
};

}  // namespace unet::verbs
