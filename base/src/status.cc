#include "unet/status.h"

#include <ostream>

namespace unet {

std::string_view to_string(Status s) noexcept {
  switch (s) {
    case Status::kOk:
      return "ok";
    case Status::kNoResource:
      return "no resource";
    case Status::kTimeout:
      return "timeout";
    case Status::kInvalidArgument:
      return "invalid argument";
    case Status::kInvalidState:
      return "invalid state";
    case Status::kNotFound:
      return "not found";
    case Status::kClosed:
      return "closed";
    case Status::kLocalLengthError:
      return "local length error";
    case Status::kLocalQpOperationError:
      return "local QP operation error";
    case Status::kLocalProtectionError:
      return "local protection error";
    case Status::kFlushed:
      return "flushed";
    case Status::kMemoryWindowBindError:
      return "memory window bind error";
    case Status::kBadResponse:
      return "bad response";
    case Status::kLocalAccessError:
      return "local access error";
    case Status::kRemoteInvalidRequest:
      return "remote invalid request";
    case Status::kRemoteAccessError:
      return "remote access error";
    case Status::kRemoteOperationError:
      return "remote operation error";
    case Status::kRetryExceeded:
      return "retry exceeded";
    case Status::kRnrRetryExceeded:
      return "RNR retry exceeded";
    case Status::kRemoteAborted:
      return "remote aborted";
    case Status::kDeviceError:
      return "device error";
  }
  return "unknown status";
}

std::ostream& operator<<(std::ostream& os, Status s) { return os << to_string(s); }

}  // namespace unet
