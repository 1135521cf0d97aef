// Job: one process's place in a parallel job — its rank, the job's size, the node it runs on — and
// the out-of-band collectives that wire the job up before any RDMA traffic.
//
// A Job comes from a launcher. Under a PMIx launcher (Open MPI's mpirun, srun --mpi=pmix),
// join_pmix() gives the process its Job, whose collectives are PMIx_Put / PMIx_Commit / PMIx_Fence
// (PMIX_COLLECT_DATA) / PMIx_Get. A program started alone is forked into workers by boot::run()
// (launch.h), which hands each worker a Job whose collectives go through the parent over a socket.
//
// Collectives: every rank calls the same ones in the same order (the fork launcher checks it;
// PMIx cannot). They are set-up, not data path: each waits at most timeout() and throws Error on
// failure or timeout, naming the collective. Blobs are opaque bytes (any content, newlines
// included), meant to be small: channel offers, addresses, a verdict.
//
// Threading: one thread calls a Job. PMIx runs a progress thread of its own inside libpmix.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace unet::boot {

// A set-up failure of the job: a collective that failed or timed out, a launcher that is absent
// or refused, a job that does not fit (endpoint_plan.h).
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// An Error every rank of the job throws alike (they agreed on it): run() prints it once, from
// rank 0.
class AgreedError : public Error {
 public:
  using Error::Error;
};

// Who started the processes of the job.
enum class Launcher : std::uint8_t { kFork, kPmix };
std::string_view launcher_name(Launcher l) noexcept;  // "fork" / "pmix"

// What a rank calls while it waits in a barrier: e.g. polls its endpoint, so that peers still
// waiting for its acknowledgements get them. May throw; the barrier passes the exception on.
using Progress = std::function<void()>;

// One process's view of the job (see the top of this file).
class Job {
 public:
  virtual ~Job();
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  int rank() const noexcept { return rank_; }  // 0 .. size()-1
  int size() const noexcept { return size_; }
  int local_rank() const noexcept { return local_rank_; }  // among the ranks on this node, from 0
  int local_size() const noexcept { return local_size_; }
  const std::string& node() const noexcept { return node_; }  // as the launcher names it
  Launcher launcher() const noexcept { return launcher_; }
  std::chrono::milliseconds timeout() const noexcept { return timeout_; }  // of each collective

  // Returns once every rank has called it; while it waits, calls `progress` about once a
  // millisecond (sleeping in between, so that ranks sharing CPUs let the others run).
  virtual void barrier(const Progress& progress = {}) = 0;
  // Every rank's blob, by rank (ours included).
  virtual std::vector<std::string> allgather(std::string_view mine) = 0;
  // to_each[r] goes to rank r (size() entries); returns what each rank sent this one, by rank.
  // Throws std::invalid_argument for a wrong number of entries.
  virtual std::vector<std::string> alltoall(const std::vector<std::string>& to_each) = 0;
  // Ends the whole job now, every rank, with exit status `status`; the launcher reports
  // `message`. For a failure that the other ranks cannot see. Does not return.
  [[noreturn]] virtual void abort(int status, std::string_view message) noexcept = 0;

 protected:
  Job(Launcher launcher, int rank, int size, int local_rank, int local_size, std::string node,
      std::chrono::milliseconds timeout);

 private:
  Launcher launcher_;
  int rank_, size_, local_rank_, local_size_;
  std::string node_;
  std::chrono::milliseconds timeout_;
};

// Collective: where the ranks run, as runs of consecutive ranks with the same node and `what`
// (e.g. their device): "0-1 on nodeA (rxe0), 2-3 on nodeB (rxe1)".
std::string placement(Job& job, std::string_view what);

// True when a PMIx launcher started this process: its environment names a PMIx namespace and
// rank (PMIX_NAMESPACE, PMIX_RANK), as mpirun and srun --mpi=pmix set them.
bool started_by_pmix() noexcept;

// True when this build of unet has the PMIx path (UNET_PMIX found libpmix).
bool have_pmix() noexcept;

// Joins the job of the PMIx launcher that started this process (PMIx_Init, then the job's size
// and this rank's place from PMIx). Collectives wait at most `timeout`. Throws Error when this
// build has no PMIx, or PMIx_Init fails — UNREACHABLE when no launcher started the process.
std::unique_ptr<Job> join_pmix(std::chrono::milliseconds timeout);

}  // namespace unet::boot
