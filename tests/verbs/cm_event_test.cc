// Unit: what an rdma_cm event means for an established connection.
#include <gtest/gtest.h>

#include "unet/verbs/connection_manager.h"

namespace unet::verbs {
namespace {

TEST(CmEvent, ADisconnectOrTheDevicesRemovalEndsTheConnection) {
  EXPECT_EQ(established_event(RDMA_CM_EVENT_DISCONNECTED), CmOutcome::kEnded);
  EXPECT_EQ(established_event(RDMA_CM_EVENT_DEVICE_REMOVAL), CmOutcome::kEnded);
}

TEST(CmEvent, TimewaitExitAndAnAddressChangeLeaveItAsItIs) {
  EXPECT_EQ(established_event(RDMA_CM_EVENT_TIMEWAIT_EXIT), CmOutcome::kNothing);
  EXPECT_EQ(established_event(RDMA_CM_EVENT_ADDR_CHANGE), CmOutcome::kNothing);
}

TEST(CmEvent, SetUpEventsAreUnexpectedOnceEstablished) {
  for (rdma_cm_event_type t :
       {RDMA_CM_EVENT_ADDR_RESOLVED, RDMA_CM_EVENT_ROUTE_RESOLVED, RDMA_CM_EVENT_CONNECT_REQUEST,
        RDMA_CM_EVENT_ESTABLISHED, RDMA_CM_EVENT_REJECTED, RDMA_CM_EVENT_UNREACHABLE})
    EXPECT_EQ(established_event(t), CmOutcome::kUnexpected) << rdma_event_str(t);
}

}  // namespace
}  // namespace unet::verbs
