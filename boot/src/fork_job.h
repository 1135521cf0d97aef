// ForkJob: the Job of a worker the fork launcher started; its collectives go through the parent
// (frames.h). Private to boot/: run() makes it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "unet/boot/job.h"
#include "unet/verbs/oob.h"

namespace unet::boot::detail {

class ForkJob final : public Job {
 public:
  // `fd`: this worker's end of the socket pair to the parent (non-blocking; owned from here on).
  ForkJob(int rank, int size, int fd, std::chrono::milliseconds timeout);

  void barrier(const Progress& progress) override;
  std::vector<std::string> allgather(std::string_view mine) override;
  std::vector<std::string> alltoall(const std::vector<std::string>& to_each) override;
  [[noreturn]] void abort(int status, std::string_view message) noexcept override;

 private:
  // Sends our part of the next collective, waits for the parent's answer (calling `progress`
  // meanwhile, if given) and returns its body.
  std::string collective(std::string_view op, std::string_view body, const Progress& progress);

  verbs::OobSocket parent_;
  std::uint64_t seq_ = 0;
};

}  // namespace unet::boot::detail
