// Status: the result of every data-path call in unet (post, poll, send, receive), in every layer.
//
// The data path never throws. It returns a Status so that a caller can tell "try later"
// (kNoResource) from "broken" (every other non-kOk value), the UCX contract. Set-up calls throw
// unet::verbs::Error instead (see error.h).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string_view>

namespace unet {

// [[nodiscard]] on the type: every function returning a Status must have its result looked at.
enum class [[nodiscard]] Status : std::uint8_t{
    kOk = 0,
    kNoResource,       // A queue is full or a resource is exhausted: retry after progress.
    kTimeout,          // A bounded wait ran out.
    kInvalidArgument,  // The call was malformed; nothing was changed.
    kInvalidState,     // The object is in the wrong state for the call (e.g. a QP in RESET).
    kNotFound,         // A named thing (channel, device, handler) does not exist.
    kClosed,           // The object or its peer has been closed.
    // Translations of work-completion errors (ibv_wc_status), one named status each.
    kLocalLengthError, kLocalQpOperationError, kLocalProtectionError,
    kFlushed,  // The WR was flushed: its QP went to the error state.
    kMemoryWindowBindError, kBadResponse, kLocalAccessError, kRemoteInvalidRequest,
    kRemoteAccessError,  // Wrong rkey, out-of-bounds or forbidden remote access.
    kRemoteOperationError,
    kRetryExceeded,     // Transport retries exhausted: the peer is gone or unreachable.
    kRnrRetryExceeded,  // The peer had no receive posted, rnr_retry times over.
    kRemoteAborted,
    kDeviceError,  // Any other completion or provider error.
};

// A stable, human-readable name ("remote access error") for logs and test messages.
std::string_view to_string(Status s) noexcept;

// Writes to_string(s); also makes test failures print the status by name.
std::ostream& operator<<(std::ostream& os, Status s);

// True when the status means "retry later" rather than failure.
constexpr bool is_retryable(Status s) noexcept { return s == Status::kNoResource; }

}  // namespace unet
