// Unit: Status names and the translation of completion statuses and errnos.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "unet/verbs/work_completion.h"

namespace unet::verbs {
namespace {

TEST(Status, EveryStatusHasADistinctName) {
  std::set<std::string> names;
  for (int i = 0; i <= static_cast<int>(Status::kDeviceError); ++i) {
    std::string n(to_string(static_cast<Status>(i)));
    EXPECT_NE(n, "unknown status") << i;
    EXPECT_TRUE(names.insert(n).second) << "duplicate name " << n;
  }
}

TEST(Status, WorkCompletionErrorsAreNamed) {
  EXPECT_EQ(to_status(IBV_WC_SUCCESS), Status::kOk);
  EXPECT_EQ(to_status(IBV_WC_REM_ACCESS_ERR), Status::kRemoteAccessError);
  EXPECT_EQ(to_status(IBV_WC_RETRY_EXC_ERR), Status::kRetryExceeded);
  EXPECT_EQ(to_status(IBV_WC_RNR_RETRY_EXC_ERR), Status::kRnrRetryExceeded);
  EXPECT_EQ(to_status(IBV_WC_WR_FLUSH_ERR), Status::kFlushed);
  EXPECT_EQ(to_status(IBV_WC_LOC_LEN_ERR), Status::kLocalLengthError);
  EXPECT_EQ(to_status(IBV_WC_LOC_PROT_ERR), Status::kLocalProtectionError);
  EXPECT_EQ(to_status(IBV_WC_REM_INV_REQ_ERR), Status::kRemoteInvalidRequest);
  EXPECT_EQ(to_status(IBV_WC_REM_OP_ERR), Status::kRemoteOperationError);
  EXPECT_EQ(to_status(IBV_WC_MW_BIND_ERR), Status::kMemoryWindowBindError);
  EXPECT_EQ(to_status(IBV_WC_GENERAL_ERR), Status::kDeviceError);
  EXPECT_EQ(to_string(to_status(IBV_WC_REM_ACCESS_ERR)), "remote access error");
}

TEST(Status, PostErrnosSeparateRetryFromFailure) {
  EXPECT_EQ(errno_to_status(0), Status::kOk);
  EXPECT_EQ(errno_to_status(ENOMEM), Status::kNoResource);
  EXPECT_TRUE(is_retryable(errno_to_status(ENOMEM)));
  EXPECT_EQ(errno_to_status(EINVAL), Status::kInvalidArgument);
  EXPECT_FALSE(is_retryable(errno_to_status(EINVAL)));
  EXPECT_EQ(errno_to_status(EIO), Status::kDeviceError);
}

}  // namespace
}  // namespace unet::verbs
