// Unit: the handler table — ids 0..255, request vs reply kinds, refusals that change nothing,
// unknown ids reported as kNotFound.
#include "unet/uam/handler_table.h"

#include <gtest/gtest.h>

#include <functional>

namespace unet::uam {
namespace {

using Fn = int (*)(int);
int twice(int x) { return 2 * x; }
int negate(int x) { return -x; }

TEST(HandlerTable, RegisterAndLookUpEveryId) {
  HandlerTable<Fn> t;
  for (int id = 0; id < 256; ++id) {
    const auto kind = id % 2 ? HandlerKind::kReply : HandlerKind::kRequest;
    ASSERT_EQ(t.add(static_cast<HandlerId>(id), kind, id % 3 ? &twice : &negate), Status::kOk)
        << id;
  }
  EXPECT_EQ(t.size(), 256u);
  for (int id = 0; id < 256; ++id) {
    const auto kind = id % 2 ? HandlerKind::kReply : HandlerKind::kRequest;
    const Fn* f = nullptr;
    ASSERT_EQ(t.lookup(static_cast<HandlerId>(id), kind, f), Status::kOk);
    EXPECT_EQ((*f)(5), id % 3 ? 10 : -5);
  }
}

TEST(HandlerTable, TakenIdIsRefusedAndKeepsTheFirst) {
  HandlerTable<Fn> t;
  ASSERT_EQ(t.add(7, HandlerKind::kRequest, &twice), Status::kOk);
  EXPECT_EQ(t.add(7, HandlerKind::kRequest, &negate), Status::kInvalidState);
  EXPECT_EQ(t.add(7, HandlerKind::kReply, &negate), Status::kInvalidState) << "one id space";
  const Fn* f = nullptr;
  ASSERT_EQ(t.lookup(7, HandlerKind::kRequest, f), Status::kOk);
  EXPECT_EQ((*f)(3), 6);
  EXPECT_EQ(t.size(), 1u);
}

TEST(HandlerTable, UnknownIdIsNotFoundAndOutUntouched) {
  HandlerTable<Fn> t;
  ASSERT_EQ(t.add(1, HandlerKind::kRequest, &twice), Status::kOk);
  const Fn sentinel = &negate;
  const Fn* f = &sentinel;
  EXPECT_EQ(t.lookup(0, HandlerKind::kRequest, f), Status::kNotFound);
  EXPECT_EQ(t.lookup(255, HandlerKind::kReply, f), Status::kNotFound);
  EXPECT_EQ(f, &sentinel);
  EXPECT_FALSE(t.contains(0));
  EXPECT_TRUE(t.contains(1));
}

TEST(HandlerTable, WrongKindIsRefused) {
  HandlerTable<Fn> t;
  ASSERT_EQ(t.add(3, HandlerKind::kReply, &twice), Status::kOk);
  const Fn* f = nullptr;
  EXPECT_EQ(t.lookup(3, HandlerKind::kRequest, f), Status::kInvalidArgument)
      << "a request naming a reply handler";
  EXPECT_EQ(f, nullptr);
}

TEST(HandlerTable, EmptyHandlerRefused) {
  HandlerTable<Fn> t;
  EXPECT_EQ(t.add(4, HandlerKind::kRequest, nullptr), Status::kInvalidArgument);
  EXPECT_FALSE(t.contains(4));
  HandlerTable<std::function<void()>> s;
  EXPECT_EQ(s.add(4, HandlerKind::kRequest, {}), Status::kInvalidArgument);
  EXPECT_EQ(s.add(4, HandlerKind::kRequest, [] {}), Status::kOk);
}

TEST(HandlerTable, RemoveFreesTheId) {
  HandlerTable<Fn> t;
  EXPECT_EQ(t.remove(9), Status::kNotFound);
  ASSERT_EQ(t.add(9, HandlerKind::kRequest, &twice), Status::kOk);
  ASSERT_EQ(t.remove(9), Status::kOk);
  const Fn* f = nullptr;
  EXPECT_EQ(t.lookup(9, HandlerKind::kRequest, f), Status::kNotFound);
  EXPECT_EQ(t.add(9, HandlerKind::kReply, &negate), Status::kOk);
  EXPECT_EQ(t.size(), 1u);
}

}  // namespace
}  // namespace unet::uam
