// join_pmix(): the Job of a process a PMIx launcher started. Collectives are PMIx_Put /
// PMIx_Commit / PMIx_Fence (PMIX_COLLECT_DATA) / PMIx_Get, every wait bounded by PMIX_TIMEOUT.
// Built only when UNET_PMIX finds libpmix (no_pmix.cc otherwise).
#include <pmix.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <thread>

#include "unet/boot/job.h"

namespace unet::boot {

namespace {

using Clock = std::chrono::steady_clock;

std::string text(pmix_status_t rc) { return PMIx_Error_string(rc); }

[[noreturn]] void fail(const std::string& call, pmix_status_t rc, const std::string& what = {}) {
  throw Error(call + (what.empty() ? "" : " (" + what + ")") + ": " + text(rc));
}

// PMIx's numbers come in whichever integer type the server chose.
bool as_number(const pmix_value_t& v, std::uint64_t& out) {
  switch (v.type) {
    case PMIX_UINT8:
      out = v.data.uint8;
      return true;
    case PMIX_UINT16:
      out = v.data.uint16;
      return true;
    case PMIX_UINT32:
      out = v.data.uint32;
      return true;
    case PMIX_UINT64:
      out = v.data.uint64;
      return true;
    case PMIX_SIZE:
      out = v.data.size;
      return true;
    case PMIX_INT:
      out = static_cast<std::uint64_t>(v.data.integer);
      return v.data.integer >= 0;
    case PMIX_INT32:
      out = static_cast<std::uint64_t>(v.data.int32);
      return v.data.int32 >= 0;
    case PMIX_PROC_RANK:
      out = v.data.rank;
      return true;
    default:
      return false;
  }
}

// An info array of PMIX_TIMEOUT and, optionally, PMIX_COLLECT_DATA; kept whole while a
// non-blocking call may still read it.
struct Infos {
  Infos(std::chrono::milliseconds timeout, bool collect) {
    int secs = static_cast<int>(std::max<long long>(1, (timeout.count() + 999) / 1000));
    PMIX_INFO_LOAD(&info[0], PMIX_TIMEOUT, &secs, PMIX_INT);
    bool yes = true;
    if (collect) PMIX_INFO_LOAD(&info[n++], PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
  }
  ~Infos() {
    for (std::size_t i = 0; i < n; ++i) PMIX_INFO_DESTRUCT(&info[i]);
  }
  Infos(const Infos&) = delete;
  Infos& operator=(const Infos&) = delete;
  pmix_info_t info[2] = {};
  std::size_t n = 1;
};

// A PMIx_Fence_nb in flight: the callback runs on PMIx's progress thread.
struct PendingFence {
  explicit PendingFence(std::chrono::milliseconds timeout) : infos(timeout, false) {}
  Infos infos;
  std::atomic<bool> done{false};
  std::atomic<int> status{PMIX_SUCCESS};
  static void callback(pmix_status_t status, void* self) {
    auto* f = static_cast<PendingFence*>(self);
    f->status.store(status, std::memory_order_relaxed);
    f->done.store(true, std::memory_order_release);
  }
};

class PmixJob final : public Job {
 public:
  PmixJob(const pmix_proc_t& me, int size, int local_rank, int local_size, std::string node,
          std::chrono::milliseconds timeout)
      : Job(Launcher::kPmix, static_cast<int>(me.rank), size, local_rank, local_size,
            std::move(node), timeout),
        me_(me) {
    PMIX_LOAD_PROCID(&all_, me.nspace, PMIX_RANK_WILDCARD);
  }
  ~PmixJob() override {
    (void)PMIx_Finalize(nullptr, 0);
    // Fences that timed out may have called back until PMIx_Finalize; only now free them.
    abandoned_.clear();
  }

  void barrier(const Progress& progress) override {
    const std::string what = "barrier #" + std::to_string(++seq_);
    if (!progress) {
      Infos infos(timeout(), false);
      if (pmix_status_t rc = PMIx_Fence(&all_, 1, infos.info, infos.n); rc != PMIX_SUCCESS)
        fail("PMIx_Fence", rc, what);
      return;
    }
    auto f = std::make_unique<PendingFence>(timeout());
    if (pmix_status_t rc =
            PMIx_Fence_nb(&all_, 1, f->infos.info, f->infos.n, &PendingFence::callback, f.get());
        rc != PMIX_SUCCESS)
      fail("PMIx_Fence_nb", rc, what);
    const auto deadline = Clock::now() + timeout();
    while (!f->done.load(std::memory_order_acquire)) {
      if (Clock::now() > deadline) {
        abandoned_.push_back(std::move(f));
        fail("PMIx_Fence_nb", PMIX_ERR_TIMEOUT, what);
      }
      try {
        progress();
      } catch (...) {
        abandoned_.push_back(std::move(f));
        throw;
      }
      // Leave the CPUs to the ranks, daemons and PMIx threads this fence waits for.
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    if (f->status != PMIX_SUCCESS) fail("PMIx_Fence_nb", f->status, what);
  }

  std::vector<std::string> allgather(std::string_view mine) override {
    const std::string key = "unet.boot." + std::to_string(++seq_);
    const std::string what = "allgather #" + std::to_string(seq_);
    put(key, mine, what);
    fence(what);
    std::vector<std::string> out(static_cast<std::size_t>(size()));
    for (int r = 0; r < size(); ++r) out[r] = r == rank() ? std::string(mine) : get(r, key, what);
    return out;
  }

  std::vector<std::string> alltoall(const std::vector<std::string>& to_each) override {
    if (to_each.size() != static_cast<std::size_t>(size()))
      throw std::invalid_argument("alltoall: " + std::to_string(to_each.size()) +
                                  " entries for a job of " + std::to_string(size()));
    const std::string prefix = "unet.boot." + std::to_string(++seq_) + ".";
    const std::string what = "alltoall #" + std::to_string(seq_);
    for (int r = 0; r < size(); ++r)
      if (r != rank()) put(prefix + std::to_string(r), to_each[r], what);
    fence(what);
    std::vector<std::string> out(static_cast<std::size_t>(size()));
    const std::string mine = prefix + std::to_string(rank());
    for (int r = 0; r < size(); ++r) out[r] = r == rank() ? to_each[r] : get(r, mine, what);
    return out;
  }

  [[noreturn]] void abort(int status, std::string_view message) noexcept override {
    const std::string msg(message);
    (void)PMIx_Abort(status == 0 ? 1 : status, msg.c_str(), nullptr, 0);
    std::fflush(nullptr);  // PMIx_Abort returned: the launcher did not stop us
    ::_exit(status == 0 ? 1 : status);
  }

 private:
  void put(const std::string& key, std::string_view bytes, const std::string& what) {
    pmix_value_t v;
    PMIX_VALUE_CONSTRUCT(&v);
    pmix_byte_object_t bo;
    bo.bytes = const_cast<char*>(bytes.data());
    bo.size = bytes.size();
    PMIX_VALUE_LOAD(&v, &bo, PMIX_BYTE_OBJECT);  // copies the bytes
    const pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key.c_str(), &v);
    PMIX_VALUE_DESTRUCT(&v);
    if (rc != PMIX_SUCCESS) fail("PMIx_Put", rc, what);
  }

  // Commit what we put, then a fence that collects every rank's data to every node.
  void fence(const std::string& what) {
    if (pmix_status_t rc = PMIx_Commit(); rc != PMIX_SUCCESS) fail("PMIx_Commit", rc, what);
    Infos infos(timeout(), true);
    if (pmix_status_t rc = PMIx_Fence(&all_, 1, infos.info, infos.n); rc != PMIX_SUCCESS)
      fail("PMIx_Fence", rc, what);
  }

  std::string get(int from, const std::string& key, const std::string& what) {
    pmix_proc_t p;
    PMIX_LOAD_PROCID(&p, me_.nspace, static_cast<pmix_rank_t>(from));
    Infos infos(timeout(), false);
    pmix_value_t* v = nullptr;
    const pmix_status_t rc = PMIx_Get(&p, key.c_str(), infos.info, infos.n, &v);
    if (rc != PMIX_SUCCESS) fail("PMIx_Get", rc, what + ", rank " + std::to_string(from));
    std::string out;
    const bool bytes = v->type == PMIX_BYTE_OBJECT;
    if (bytes && v->data.bo.size > 0) out.assign(v->data.bo.bytes, v->data.bo.size);
    PMIX_VALUE_RELEASE(v);
    if (!bytes)
      throw Error("PMIx_Get (" + what + "): rank " + std::to_string(from) + "'s " + key +
                  " is not bytes");
    return out;
  }

  pmix_proc_t me_;
  pmix_proc_t all_;
  std::uint64_t seq_ = 0;
  std::vector<std::unique_ptr<PendingFence>> abandoned_;
};

// A number the launcher publishes about `proc` (or the job, with the wildcard rank).
std::uint64_t number(const pmix_proc_t& proc, const char* key, std::uint64_t fallback,
                     bool required) {
  pmix_value_t* v = nullptr;
  const pmix_status_t rc = PMIx_Get(&proc, key, nullptr, 0, &v);
  if (rc != PMIX_SUCCESS) {
    if (required) fail(std::string("PMIx_Get(") + key + ")", rc);
    return fallback;
  }
  std::uint64_t out = fallback;
  const bool ok = as_number(*v, out);
  PMIX_VALUE_RELEASE(v);
  if (!ok && required) throw Error(std::string("PMIx_Get(") + key + "): not a number");
  return ok ? out : fallback;
}

std::string host(const pmix_proc_t& me) {
  pmix_value_t* v = nullptr;
  if (PMIx_Get(&me, PMIX_HOSTNAME, nullptr, 0, &v) == PMIX_SUCCESS) {
    std::string out = v->type == PMIX_STRING && v->data.string ? v->data.string : "";
    PMIX_VALUE_RELEASE(v);
    if (!out.empty()) return out;
  }
  char name[256] = {};
  return ::gethostname(name, sizeof name - 1) == 0 ? name : "localhost";
}

}  // namespace

bool have_pmix() noexcept { return true; }

std::unique_ptr<Job> join_pmix(std::chrono::milliseconds timeout) {
  pmix_proc_t me;
  PMIX_PROC_CONSTRUCT(&me);
  if (pmix_status_t rc = PMIx_Init(&me, nullptr, 0); rc != PMIX_SUCCESS)
    throw Error("PMIx_Init: " + text(rc) +
                (started_by_pmix() ? std::string()
                                   : ": no PMIx launcher started this process; run it under "
                                     "mpirun or srun --mpi=pmix, or without --launcher pmix to "
                                     "fork its ranks here"));
  try {
    pmix_proc_t all;
    PMIX_LOAD_PROCID(&all, me.nspace, PMIX_RANK_WILDCARD);
    const auto size = number(all, PMIX_JOB_SIZE, 0, true);
    const auto local_rank = number(me, PMIX_LOCAL_RANK, me.rank, false);
    const auto local_size = number(all, PMIX_LOCAL_SIZE, size, false);
    if (size == 0 || me.rank >= size)
      throw Error("PMIx: rank " + std::to_string(me.rank) + " of a job of " + std::to_string(size));
    return std::make_unique<PmixJob>(me, static_cast<int>(size), static_cast<int>(local_rank),
                                     static_cast<int>(local_size), host(me), timeout);
  } catch (...) {
    (void)PMIx_Finalize(nullptr, 0);
    throw;
  }
}

}  // namespace unet::boot
