// WorkCompletion: what a completion queue hands back, and its translation to a named Status.
//
// Per ibv_poll_cq(3), when status is not success only wr_id, status, qp_num and vendor_err are
// valid. The provider's struct is used as is, so polling costs nothing over libibverbs.
#pragma once

#include <infiniband/verbs.h>

#include <cerrno>

#include "unet/status.h"

namespace unet::verbs {

// One completion, as the provider fills it (ibv_wc).
using WorkCompletion = ibv_wc;

// The named Status for a completion status: one value each, kDeviceError for any other.
constexpr Status to_status(ibv_wc_status s) noexcept {
  switch (s) {
    case IBV_WC_SUCCESS:
      return Status::kOk;
    case IBV_WC_LOC_LEN_ERR:
      return Status::kLocalLengthError;
    case IBV_WC_LOC_QP_OP_ERR:
      return Status::kLocalQpOperationError;
    case IBV_WC_LOC_PROT_ERR:
      return Status::kLocalProtectionError;
    case IBV_WC_WR_FLUSH_ERR:
      return Status::kFlushed;
    case IBV_WC_MW_BIND_ERR:
      return Status::kMemoryWindowBindError;
    case IBV_WC_BAD_RESP_ERR:
      return Status::kBadResponse;
    case IBV_WC_LOC_ACCESS_ERR:
      return Status::kLocalAccessError;
    case IBV_WC_REM_INV_REQ_ERR:
      return Status::kRemoteInvalidRequest;
    case IBV_WC_REM_ACCESS_ERR:
      return Status::kRemoteAccessError;
    case IBV_WC_REM_OP_ERR:
      return Status::kRemoteOperationError;
    case IBV_WC_RETRY_EXC_ERR:
      return Status::kRetryExceeded;
    case IBV_WC_RNR_RETRY_EXC_ERR:
      return Status::kRnrRetryExceeded;
    case IBV_WC_REM_ABORT_ERR:
      return Status::kRemoteAborted;
    default:
      return Status::kDeviceError;
  }
}

// The Status of one completion.
inline Status status_of(const WorkCompletion& wc) noexcept { return to_status(wc.status); }

// Translates an errno returned by a provider's post call. ENOMEM is the provider's "queue full".
constexpr Status errno_to_status(int err) noexcept {
  switch (err) {
    case 0:
      return Status::kOk;
    case ENOMEM:
      return Status::kNoResource;
    case EINVAL:
      return Status::kInvalidArgument;
    default:
      return Status::kDeviceError;
  }
}

}  // namespace unet::verbs
