// The layer's one piece of process-global state (internal to src/mpi_layer).
//
// A PMPI layer has no object to hang state on: MPI_Allreduce is a C function
// the application calls. So the layer keeps exactly one Registry, created at
// its first use (after MPI_Init) and emptied at MPI_Finalize, holding:
//   - the settings, read once from the environment (RUCCL_MPI, RUCCL_MPI_COLLS,
//     and ruccl's own Config::from_env for the communicators it creates);
//   - per collective, how many calls were routed and why the others fell back;
//   - the attribute key under which each MPI communicator caches its ruccl
//     communicator (a Route), and the list of live Routes, so MPI_Finalize can
//     free every one of them;
//   - one MPI error class per ruccl ErrorCode (MPI_Add_error_class), whose
//     string is set to ruccl's message before the error handler is called;
//   - the memory MPI_Alloc_mem returned from ruccl (memory.cpp), until
//     MPI_Free_mem (it may outlive MPI_Finalize, as MPI's own may not).
//
// Threads. Under SINGLE, FUNNELED and SERIALIZED, MPI calls never overlap.
// Under MPI_THREAD_MULTIPLE collectives on different communicators may run at
// once (their ruccl communicators share the world's transports, which take
// turns: src/transport/transport.hpp), and the calls on one communicator are
// serialised by its Route's mutex: MPI leaves their order to the program
// (which must order them alike on every process), so taking them one at a
// time changes nothing a correct program sees. Counters are relaxed
// atomics; the Route list, the lookup of a Route and the error classes have
// the registry's mutex (a Route's collective creation runs outside it).
#pragma once

#include <mpi.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ruccl/communicator.hpp"
#include "ruccl/config.hpp"

namespace ruccl::mpi_layer {

enum class Coll : std::uint8_t {
  kAllreduce,
  kReduce,
  kBcast,
  kAllgather,
  kReduceScatterBlock,
  kReduceScatter,
  kAlltoall,
  kAlltoallv,
  kBarrier,
  kAllgatherv,
  kGather,
  kGatherv,
  kScatter,
  kScatterv,
  kScan,
  kExscan
};
inline constexpr std::size_t kColls = 16;
// Routed unless RUCCL_MPI_COLLS says otherwise: Allreduce .. Barrier. The
// others (Allgatherv, Gather(v), Scatter(v), Scan, Exscan) measured slower
// than Open MPI's at most sizes on one node (README), so they are routed only
// when chosen ("all", or by name).
constexpr bool routed_by_default(Coll c) noexcept { return c <= Coll::kBarrier; }
std::string_view coll_name(Coll c) noexcept;  // "MPI_Allreduce", ...

// Why a call went where it went.
enum class Why : std::uint8_t {
  kRouted,        // through ruccl
  kDisabled,      // RUCCL_MPI=0 (or an unusable RUCCL_* setting)
  kNotChosen,     // not in RUCCL_MPI_COLLS
  kDatatype,      // not a predefined contiguous datatype the layer maps
  kOp,            // user op, MAXLOC/MINLOC, or an op this datatype cannot take here
  kIntercomm,     // an intercommunicator
  kCreateFailed,  // creating the ruccl communicator failed (every process of it)
  kArgument,      // a negative count or a bad root: MPI reports it
  kTooLarge,      // a scan whose gathered inputs would pass the layer's bound
};
inline constexpr std::size_t kWhys = 9;
std::string_view why_name(Why w) noexcept;

// A ruccl communicator serving one MPI communicator (or the reason it cannot).
struct Route {
  MPI_Comm mpi = MPI_COMM_NULL;           // the MPI communicator it serves
  std::shared_ptr<Communicator> comm;     // null when `failed`
  std::size_t rank = 0, size = 0;         // this process's ruccl rank; world size
  std::vector<std::size_t> ruccl_of_mpi;  // ruccl rank of each MPI rank
  std::vector<std::size_t> mpi_of_ruccl;  // MPI rank of each ruccl rank
  bool identity = true;                   // ruccl_of_mpi[r] == r for every r
  Why failed = Why::kRouted;              // kRouted: usable
  // 1-D views of host memory for the call in progress, views[i] rewritten
  // per call (a communicator's collectives run one at a time: `calls`), so
  // that a call allocates no shape: host_view's, without its allocation.
  const TensorView& view(std::size_t i, const void* data, DataType dtype, std::size_t count) {
    TensorView& v = views[i];
    v.data = const_cast<void*>(data);
    v.dtype = dtype;
    if (v.shape.size() == 1) v.shape[0] = count;
    else v.shape.assign(1, count);
    v.device = host_device(0);
    return v;
  }
  TensorView views[2];
  std::mutex calls;  // held by a routed call under MPI_THREAD_MULTIPLE (Routed)
};

// A routed call's Route (null: fall back), with its `calls` lock held under
// MPI_THREAD_MULTIPLE until the call returns.
class Routed {
 public:
  Routed() = default;
  Routed(Route* r, bool lock) : route_(r) {
    if (r != nullptr && lock) lock_ = std::unique_lock<std::mutex>(r->calls);
  }
  explicit operator bool() const noexcept { return route_ != nullptr; }
  Route* operator->() const noexcept { return route_; }
  Route& operator*() const noexcept { return *route_; }
  // Lets go of the lock (before the error handler runs, which may call MPI
  // on the same communicator, even free it) and of the Route.
  void release() noexcept {
    if (lock_.owns_lock()) lock_.unlock();
    route_ = nullptr;
  }

 private:
  Route* route_ = nullptr;
  std::unique_lock<std::mutex> lock_;
};

// Whether MPI was initialised (still true after MPI_Finalize): the Registry
// asks MPI for the rank and thread level when it is made (memory.cpp).
bool mpi_initialised();

class Registry {
 public:
  // The one registry (created at first use; see the header comment).
  static Registry& get();

  bool enabled(Coll c) const noexcept { return enabled_[static_cast<std::size_t>(c)]; }
  Why blocked() const noexcept { return blocked_; }  // kRouted when the layer may route
  bool thread_multiple() const noexcept { return multiple_; }
  void count(Coll c, Why w) noexcept {
    counts_[static_cast<std::size_t>(c)][static_cast<std::size_t>(w)].fetch_add(
        1, std::memory_order_relaxed);
  }

  // The Route of `comm`, created (collectively over `comm`) at the first call.
  // Never null; a Route that cannot serve says why in `failed`.
  Route* route(MPI_Comm comm);

  // Reports `s` through `comm`'s error handler and returns the MPI error code
  // to return (ruccl's code for s.code(); its string is ruccl's message).
  int fail(MPI_Comm comm, Coll c, const Status& s);

  // MPI_Init / MPI_Init_thread: makes MPI_COMM_WORLD's Route (collectively)
  // unless nothing may be routed (RUCCL_MPI=0).
  void at_init();

  // MPI_Finalize: prints the counts (RUCCL_DEBUG=INFO or more), frees every
  // Route and the attribute key. MPI calls still work.
  void finalize();

  // The attribute's delete callback (MPI_Comm_free, and finalize()).
  void drop(Route* route) noexcept;

  // MPI_Alloc_mem (memory.cpp): `size` bytes from MPI_COMM_WORLD's
  // Communicator::allocate_host, which the node's other processes read in
  // place, or null (the caller then asks PMPI_Alloc_mem): below
  // Config::mpi_alloc_mem_bytes, nothing routed (RUCCL_MPI=0, after
  // MPI_Finalize), no usable world communicator, or allocate_host's error
  // (16 regions live in this process).
  void* allocate_memory(MPI_Aint size);
  // MPI_Free_mem (C and Fortran): whether `base` is memory allocate_memory
  // returned (then freed); false for any other pointer (PMPI_Free_mem's),
  // and before MPI_Init (the Registry is made only once MPI is).
  static bool free_memory(void* base);

 private:
  Registry();
  Route* create(MPI_Comm comm);
  void* take_memory(MPI_Aint size);  // allocate_memory but the count
  bool release_memory(void* base);   // free_memory of the one Registry
  int error_code(ErrorCode code);

  Config config_;
  Why blocked_ = Why::kRouted;
  bool multiple_ = false;  // MPI_THREAD_MULTIPLE
  std::array<bool, kColls> enabled_{};
  std::array<std::array<std::atomic<std::uint64_t>, kWhys>, kColls> counts_{};
  int keyval_ = MPI_KEYVAL_INVALID;
  Route* world_ = nullptr;  // MPI_COMM_WORLD's, looked up without an attribute
  // Routes made (RUCCL_DEBUG=INFO prints them at MPI_Finalize): split from
  // the world's transports, or over transports of their own.
  std::atomic<std::uint64_t> shared_routes_{0}, own_routes_{0};
  std::mutex memory_mutex_;  // guards memory_
  std::unordered_map<void*, std::shared_ptr<std::byte>> memory_;
  std::array<std::atomic<std::uint64_t>, 2> alloc_counts_{};  // MPI_Alloc_mem: ruccl's, MPI's
  std::mutex mutex_;  // guards routes_, the Route lookup and errors_
  std::list<std::unique_ptr<Route>> routes_;
  struct ErrorSlot {
    int error_class = 0, code = 0;  // 0: not created yet
  };
  std::array<ErrorSlot, static_cast<std::size_t>(kLastErrorCode) + 1> errors_{};
  int mpi_rank_ = 0;
};

}  // namespace ruccl::mpi_layer
