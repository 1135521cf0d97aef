// Unit: what an endpoint does about each of its device's asynchronous events, and how a
// provider's event is named.
#include "device_event.h"

#include <gtest/gtest.h>

namespace unet::core {
namespace {

using verbs::AsyncEvent;
using verbs::AsyncKind;

int objects[4];  // their addresses stand for a CQ, another CQ, an SRQ, another SRQ
const void* const kCq = &objects[0];
const void* const kOtherCq = &objects[1];
const void* const kSrq = &objects[2];
const void* const kOtherSrq = &objects[3];

DeviceFacts rc_facts() {
  DeviceFacts f;
  f.cq = kCq;
  f.srq = kSrq;
  f.port = 1;
  return f;
}

DeviceFacts ud_facts() {
  DeviceFacts f;
  f.ud = true;
  f.ud_qpn = 0x11;
  f.cq = kCq;
  f.port = 2;
  return f;
}

AsyncEvent event(AsyncKind k, std::uint32_t qpn = 0, const void* cq = nullptr,
                 const void* srq = nullptr, std::uint8_t port = 0) {
  AsyncEvent e;
  e.kind = k;
  e.qp_num = qpn;
  e.cq = cq;
  e.srq = srq;
  e.port = port;
  return e;
}

TEST(DeviceEvent, OurCqOrAFatalDeviceFailsTheEndpointAnotherCqDoesNot) {
  EXPECT_EQ(action_for(event(AsyncKind::kCqError, 0, kCq), rc_facts()),
            DeviceAction::kFailEndpoint);
  EXPECT_EQ(action_for(event(AsyncKind::kCqError, 0, kOtherCq), rc_facts()), DeviceAction::kNone);
  EXPECT_EQ(action_for(event(AsyncKind::kDeviceFatal), ud_facts()), DeviceAction::kFailEndpoint);
}

TEST(DeviceEvent, ABrokenQpFailsItsRcChannelOrRecoversOurUdQp) {
  for (AsyncKind k : {AsyncKind::kQpFatal, AsyncKind::kQpRequestError, AsyncKind::kQpAccessError}) {
    EXPECT_EQ(action_for(event(k, 0x42), rc_facts()), DeviceAction::kFailChannel)
        << "ours if its QPN is a tag";
    EXPECT_EQ(action_for(event(k, 0x11), ud_facts()), DeviceAction::kRecoverUd);
    EXPECT_EQ(action_for(event(k, 0x12), ud_facts()), DeviceAction::kNone)
        << "another endpoint's UD QP";
  }
}

TEST(DeviceEvent, OurSrqBreakingFailsEveryRcChannel) {
  EXPECT_EQ(action_for(event(AsyncKind::kSrqError, 0, nullptr, kSrq), rc_facts()),
            DeviceAction::kFailRcChannels);
  EXPECT_EQ(action_for(event(AsyncKind::kSrqError, 0, nullptr, kOtherSrq), rc_facts()),
            DeviceAction::kNone);
  EXPECT_EQ(action_for(event(AsyncKind::kSrqLimit, 0, nullptr, kSrq), rc_facts()),
            DeviceAction::kNone);
}

TEST(DeviceEvent, PortAndGidEventsCountOnlyForOurPort) {
  EXPECT_EQ(action_for(event(AsyncKind::kPortError, 0, nullptr, nullptr, 1), rc_facts()),
            DeviceAction::kPortDown);
  EXPECT_EQ(action_for(event(AsyncKind::kPortActive, 0, nullptr, nullptr, 1), rc_facts()),
            DeviceAction::kPortUp);
  EXPECT_EQ(action_for(event(AsyncKind::kGidChange, 0, nullptr, nullptr, 1), rc_facts()),
            DeviceAction::kCheckGid);
  EXPECT_EQ(action_for(event(AsyncKind::kPortError, 0, nullptr, nullptr, 1), ud_facts()),
            DeviceAction::kNone);
  EXPECT_EQ(action_for(event(AsyncKind::kGidChange, 0, nullptr, nullptr, 1), ud_facts()),
            DeviceAction::kNone);
  for (AsyncKind k : {AsyncKind::kLidChange, AsyncKind::kPkeyChange, AsyncKind::kSmChange,
                      AsyncKind::kClientReregister, AsyncKind::kCommEstablished,
                      AsyncKind::kQpLastWqe, AsyncKind::kOther})
    EXPECT_EQ(action_for(event(k, 0x42, kCq, kSrq, 1), rc_facts()), DeviceAction::kNone);
}

TEST(AsyncEvents, ProviderEventsAreNamedWithTheirObject) {
  ibv_qp qp{};
  qp.qp_num = 0x1234;
  ibv_async_event e{};
  e.event_type = IBV_EVENT_QP_FATAL;
  e.element.qp = &qp;
  verbs::AsyncEvent a = verbs::to_async_event(e);
  EXPECT_EQ(a.kind, AsyncKind::kQpFatal);
  EXPECT_EQ(a.qp_num, 0x1234u);

  ibv_cq cq{};
  e = {};
  e.event_type = IBV_EVENT_CQ_ERR;
  e.element.cq = &cq;
  a = verbs::to_async_event(e);
  EXPECT_EQ(a.kind, AsyncKind::kCqError);
  EXPECT_EQ(a.cq, &cq);

  e = {};
  e.event_type = IBV_EVENT_PORT_ERR;
  e.element.port_num = 2;
  a = verbs::to_async_event(e);
  EXPECT_EQ(a.kind, AsyncKind::kPortError);
  EXPECT_EQ(a.port, 2);
  EXPECT_EQ(a.qp_num, 0u);

  EXPECT_EQ(verbs::to_async_kind(IBV_EVENT_GID_CHANGE), AsyncKind::kGidChange);
  EXPECT_EQ(verbs::to_async_kind(IBV_EVENT_SRQ_ERR), AsyncKind::kSrqError);
  EXPECT_EQ(verbs::to_async_kind(IBV_EVENT_DEVICE_FATAL), AsyncKind::kDeviceFatal);
  EXPECT_EQ(verbs::to_async_kind(static_cast<ibv_event_type>(999)), AsyncKind::kOther);
}

}  // namespace
}  // namespace unet::core
