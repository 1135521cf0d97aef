// Error: the exception thrown by set-up calls (open, register, create, connect).
//
// It names the failing call, the object involved and the errno text, e.g.
//   "ibv_create_qp(rxe0, RC QP): Invalid argument"
// Data-path calls never throw; they return unet::Status (status.h).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace unet::verbs {

// The set-up exception: what() is "call(object)", then ": detail" and ": errno text" when given.
class Error : public std::runtime_error {
 public:
  // `err` is an errno value (0 when the failure is not an errno, e.g. a bad argument).
  Error(std::string_view call, std::string_view object, int err, std::string_view detail = {});

  // The failing call and the object it was made on, as given.
  const std::string& call() const noexcept { return call_; }
  const std::string& object() const noexcept { return object_; }
  int error_number() const noexcept { return err_; }  // errno, or 0

 private:
  int err_;
  std::string call_;
  std::string object_;
};

// Throws Error(call, object, err). Out of line so that callers stay small.
[[noreturn]] void throw_error(std::string_view call, std::string_view object, int err,
                              std::string_view detail = {});

}  // namespace unet::verbs
