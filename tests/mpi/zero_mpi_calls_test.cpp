// zero_mpi_calls_test: after a world communicator is built, its collectives
// make no MPI call.
//
//   mpirun -np P zero_mpi_calls_test [--devices-per-process D] [--collectives N]
//
// The PMPI profiling interface: this executable defines MPI_* functions that
// count each call and forward to PMPI_*. ruccl's bootstrap is a static library
// linked into this executable, so its MPI calls bind to these wrappers (and
// libmpi's own calls through its exported MPI_* symbols are counted too). The
// test checks that:
//   1. creating the communicator makes MPI calls (> 0): the counters see
//      ruccl's MPI traffic, so the zero below means something;
//   2. N (default 100) collectives of every kind, driven by D threads (one per
//      local device), make exactly 0 MPI calls in this process, and give the
//      closed-form results;
// and prints the count of every wrapped function that was called when (2)
// fails. The processes then agree on the verdict with a ruccl all-reduce
// (outside the counted window). Exit 0 only if every rank passed everywhere.
#include <mpi.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "ruccl/ruccl.hpp"
#include "ruccl/world.hpp"

// ---- the wrappers -----------------------------------------------------------
// X(name, parameters, arguments): every function returns int and forwards to
// PMPI_<name>. Prototypes are Open MPI 4.1's (mpi.h), const-qualified buffers.
#define RUCCL_PMPI_WRAPPED(X)                                                                   \
  /* point-to-point */                                                                          \
  X(Send, (const void* b, int n, MPI_Datatype t, int d, int g, MPI_Comm c), (b, n, t, d, g, c)) \
  X(Ssend, (const void* b, int n, MPI_Datatype t, int d, int g, MPI_Comm c), (b, n, t, d, g, c)) \
  X(Bsend, (const void* b, int n, MPI_Datatype t, int d, int g, MPI_Comm c), (b, n, t, d, g, c)) \
  X(Rsend, (const void* b, int n, MPI_Datatype t, int d, int g, MPI_Comm c), (b, n, t, d, g, c)) \
  X(Recv, (void* b, int n, MPI_Datatype t, int s, int g, MPI_Comm c, MPI_Status* st),          \
    (b, n, t, s, g, c, st))                                                                     \
  X(Isend, (const void* b, int n, MPI_Datatype t, int d, int g, MPI_Comm c, MPI_Request* r),   \
    (b, n, t, d, g, c, r))                                                                      \
  X(Issend, (const void* b, int n, MPI_Datatype t, int d, int g, MPI_Comm c, MPI_Request* r),  \
    (b, n, t, d, g, c, r))                                                                      \
  X(Ibsend, (const void* b, int n, MPI_Datatype t, int d, int g, MPI_Comm c, MPI_Request* r),  \
    (b, n, t, d, g, c, r))                                                                      \
  X(Irsend, (const void* b, int n, MPI_Datatype t, int d, int g, MPI_Comm c, MPI_Request* r),  \
    (b, n, t, d, g, c, r))                                                                      \
  X(Irecv, (void* b, int n, MPI_Datatype t, int s, int g, MPI_Comm c, MPI_Request* r),         \
    (b, n, t, s, g, c, r))                                                                      \
  X(Send_init, (const void* b, int n, MPI_Datatype t, int d, int g, MPI_Comm c, MPI_Request* r), \
    (b, n, t, d, g, c, r))                                                                      \
  X(Recv_init, (void* b, int n, MPI_Datatype t, int s, int g, MPI_Comm c, MPI_Request* r),     \
    (b, n, t, s, g, c, r))                                                                      \
  X(Start, (MPI_Request* r), (r))                                                               \
  X(Startall, (int n, MPI_Request r[]), (n, r))                                                 \
  X(Sendrecv,                                                                                   \
    (const void* sb, int sn, MPI_Datatype st, int d, int sg, void* rb, int rn, MPI_Datatype rt, \
     int s, int rg, MPI_Comm c, MPI_Status* x),                                                 \
    (sb, sn, st, d, sg, rb, rn, rt, s, rg, c, x))                                               \
  X(Sendrecv_replace,                                                                           \
    (void* b, int n, MPI_Datatype t, int d, int sg, int s, int rg, MPI_Comm c, MPI_Status* x),  \
    (b, n, t, d, sg, s, rg, c, x))                                                              \
  X(Probe, (int s, int g, MPI_Comm c, MPI_Status* st), (s, g, c, st))                           \
  X(Iprobe, (int s, int g, MPI_Comm c, int* f, MPI_Status* st), (s, g, c, f, st))               \
  X(Mprobe, (int s, int g, MPI_Comm c, MPI_Message* m, MPI_Status* st), (s, g, c, m, st))       \
  X(Improbe, (int s, int g, MPI_Comm c, int* f, MPI_Message* m, MPI_Status* st),                \
    (s, g, c, f, m, st))                                                                        \
  X(Mrecv, (void* b, int n, MPI_Datatype t, MPI_Message* m, MPI_Status* st), (b, n, t, m, st))  \
  X(Imrecv, (void* b, int n, MPI_Datatype t, MPI_Message* m, MPI_Request* r), (b, n, t, m, r))  \
  /* completion */                                                                              \
  X(Wait, (MPI_Request* r, MPI_Status* st), (r, st))                                            \
  X(Waitall, (int n, MPI_Request r[], MPI_Status* st), (n, r, st))                              \
  X(Waitany, (int n, MPI_Request r[], int* i, MPI_Status* st), (n, r, i, st))                   \
  X(Waitsome, (int n, MPI_Request r[], int* o, int i[], MPI_Status st[]), (n, r, o, i, st))     \
  X(Test, (MPI_Request* r, int* f, MPI_Status* st), (r, f, st))                                 \
  X(Testall, (int n, MPI_Request r[], int* f, MPI_Status st[]), (n, r, f, st))                  \
  X(Testany, (int n, MPI_Request r[], int* i, int* f, MPI_Status* st), (n, r, i, f, st))        \
  X(Testsome, (int n, MPI_Request r[], int* o, int i[], MPI_Status st[]), (n, r, o, i, st))     \
  X(Request_free, (MPI_Request* r), (r))                                                        \
  X(Cancel, (MPI_Request* r), (r))                                                              \
  X(Get_count, (const MPI_Status* st, MPI_Datatype t, int* n), (st, t, n))                      \
  /* collectives */                                                                             \
  X(Barrier, (MPI_Comm c), (c))                                                                 \
  X(Ibarrier, (MPI_Comm c, MPI_Request* r), (c, r))                                             \
  X(Bcast, (void* b, int n, MPI_Datatype t, int root, MPI_Comm c), (b, n, t, root, c))          \
  X(Ibcast, (void* b, int n, MPI_Datatype t, int root, MPI_Comm c, MPI_Request* r),             \
    (b, n, t, root, c, r))                                                                      \
  X(Allgather,                                                                                  \
    (const void* sb, int sn, MPI_Datatype st, void* rb, int rn, MPI_Datatype rt, MPI_Comm c),   \
    (sb, sn, st, rb, rn, rt, c))                                                                \
  X(Iallgather,                                                                                 \
    (const void* sb, int sn, MPI_Datatype st, void* rb, int rn, MPI_Datatype rt, MPI_Comm c,    \
     MPI_Request* r),                                                                           \
    (sb, sn, st, rb, rn, rt, c, r))                                                             \
  X(Allgatherv,                                                                                 \
    (const void* sb, int sn, MPI_Datatype st, void* rb, const int rn[], const int dp[],         \
     MPI_Datatype rt, MPI_Comm c),                                                              \
    (sb, sn, st, rb, rn, dp, rt, c))                                                            \
  X(Iallgatherv,                                                                                \
    (const void* sb, int sn, MPI_Datatype st, void* rb, const int rn[], const int dp[],         \
     MPI_Datatype rt, MPI_Comm c, MPI_Request* r),                                              \
    (sb, sn, st, rb, rn, dp, rt, c, r))                                                         \
  X(Gather,                                                                                     \
    (const void* sb, int sn, MPI_Datatype st, void* rb, int rn, MPI_Datatype rt, int root,      \
     MPI_Comm c),                                                                               \
    (sb, sn, st, rb, rn, rt, root, c))                                                          \
  X(Igather,                                                                                    \
    (const void* sb, int sn, MPI_Datatype st, void* rb, int rn, MPI_Datatype rt, int root,      \
     MPI_Comm c, MPI_Request* r),                                                               \
    (sb, sn, st, rb, rn, rt, root, c, r))                                                       \
  X(Gatherv,                                                                                    \
    (const void* sb, int sn, MPI_Datatype st, void* rb, const int rn[], const int dp[],         \
     MPI_Datatype rt, int root, MPI_Comm c),                                                    \
    (sb, sn, st, rb, rn, dp, rt, root, c))                                                      \
  X(Scatter,                                                                                    \
    (const void* sb, int sn, MPI_Datatype st, void* rb, int rn, MPI_Datatype rt, int root,      \
     MPI_Comm c),                                                                               \
    (sb, sn, st, rb, rn, rt, root, c))                                                          \
  X(Scatterv,                                                                                   \
    (const void* sb, const int sn[], const int dp[], MPI_Datatype st, void* rb, int rn,         \
     MPI_Datatype rt, int root, MPI_Comm c),                                                    \
    (sb, sn, dp, st, rb, rn, rt, root, c))                                                      \
  X(Allreduce, (const void* sb, void* rb, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c),         \
    (sb, rb, n, t, o, c))                                                                       \
  X(Iallreduce,                                                                                 \
    (const void* sb, void* rb, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c, MPI_Request* r),    \
    (sb, rb, n, t, o, c, r))                                                                    \
  X(Reduce, (const void* sb, void* rb, int n, MPI_Datatype t, MPI_Op o, int root, MPI_Comm c),  \
    (sb, rb, n, t, o, root, c))                                                                 \
  X(Ireduce,                                                                                    \
    (const void* sb, void* rb, int n, MPI_Datatype t, MPI_Op o, int root, MPI_Comm c,           \
     MPI_Request* r),                                                                           \
    (sb, rb, n, t, o, root, c, r))                                                              \
  X(Alltoall,                                                                                   \
    (const void* sb, int sn, MPI_Datatype st, void* rb, int rn, MPI_Datatype rt, MPI_Comm c),   \
    (sb, sn, st, rb, rn, rt, c))                                                                \
  X(Ialltoall,                                                                                  \
    (const void* sb, int sn, MPI_Datatype st, void* rb, int rn, MPI_Datatype rt, MPI_Comm c,    \
     MPI_Request* r),                                                                           \
    (sb, sn, st, rb, rn, rt, c, r))                                                             \
  X(Alltoallv,                                                                                  \
    (const void* sb, const int sn[], const int sd[], MPI_Datatype st, void* rb, const int rn[], \
     const int rd[], MPI_Datatype rt, MPI_Comm c),                                              \
    (sb, sn, sd, st, rb, rn, rd, rt, c))                                                        \
  X(Ialltoallv,                                                                                 \
    (const void* sb, const int sn[], const int sd[], MPI_Datatype st, void* rb, const int rn[], \
     const int rd[], MPI_Datatype rt, MPI_Comm c, MPI_Request* r),                              \
    (sb, sn, sd, st, rb, rn, rd, rt, c, r))                                                     \
  X(Reduce_scatter,                                                                             \
    (const void* sb, void* rb, const int rn[], MPI_Datatype t, MPI_Op o, MPI_Comm c),           \
    (sb, rb, rn, t, o, c))                                                                      \
  X(Reduce_scatter_block,                                                                       \
    (const void* sb, void* rb, int rn, MPI_Datatype t, MPI_Op o, MPI_Comm c),                   \
    (sb, rb, rn, t, o, c))                                                                      \
  X(Scan, (const void* sb, void* rb, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c),              \
    (sb, rb, n, t, o, c))                                                                       \
  X(Exscan, (const void* sb, void* rb, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c),            \
    (sb, rb, n, t, o, c))                                                                       \
  /* one-sided */                                                                               \
  X(Win_create, (void* b, MPI_Aint s, int u, MPI_Info i, MPI_Comm c, MPI_Win* w),               \
    (b, s, u, i, c, w))                                                                         \
  X(Win_allocate, (MPI_Aint s, int u, MPI_Info i, MPI_Comm c, void* b, MPI_Win* w),             \
    (s, u, i, c, b, w))                                                                         \
  X(Win_free, (MPI_Win* w), (w))                                                                \
  X(Put,                                                                                        \
    (const void* o, int on, MPI_Datatype ot, int r, MPI_Aint d, int tn, MPI_Datatype tt,        \
     MPI_Win w),                                                                                \
    (o, on, ot, r, d, tn, tt, w))                                                               \
  X(Get,                                                                                        \
    (void* o, int on, MPI_Datatype ot, int r, MPI_Aint d, int tn, MPI_Datatype tt, MPI_Win w),  \
    (o, on, ot, r, d, tn, tt, w))                                                               \
  X(Accumulate,                                                                                 \
    (const void* o, int on, MPI_Datatype ot, int r, MPI_Aint d, int tn, MPI_Datatype tt,        \
     MPI_Op op, MPI_Win w),                                                                     \
    (o, on, ot, r, d, tn, tt, op, w))                                                           \
  X(Win_fence, (int a, MPI_Win w), (a, w))                                                      \
  X(Win_lock, (int l, int r, int a, MPI_Win w), (l, r, a, w))                                   \
  X(Win_unlock, (int r, MPI_Win w), (r, w))                                                     \
  X(Win_lock_all, (int a, MPI_Win w), (a, w))                                                   \
  X(Win_unlock_all, (MPI_Win w), (w))                                                           \
  X(Win_flush, (int r, MPI_Win w), (r, w))                                                      \
  X(Win_flush_all, (MPI_Win w), (w))                                                            \
  X(Win_flush_local, (int r, MPI_Win w), (r, w))                                                \
  X(Win_sync, (MPI_Win w), (w))                                                                 \
  /* communicators, queries, life cycle */                                                      \
  X(Comm_rank, (MPI_Comm c, int* r), (c, r))                                                    \
  X(Comm_size, (MPI_Comm c, int* s), (c, s))                                                    \
  X(Comm_dup, (MPI_Comm c, MPI_Comm* n), (c, n))                                                \
  X(Comm_split, (MPI_Comm c, int color, int key, MPI_Comm* n), (c, color, key, n))              \
  X(Comm_split_type, (MPI_Comm c, int t, int key, MPI_Info i, MPI_Comm* n), (c, t, key, i, n))  \
  X(Comm_create, (MPI_Comm c, MPI_Group g, MPI_Comm* n), (c, g, n))                             \
  X(Comm_group, (MPI_Comm c, MPI_Group* g), (c, g))                                             \
  X(Group_free, (MPI_Group* g), (g))                                                            \
  X(Comm_free, (MPI_Comm* c), (c))                                                              \
  X(Comm_test_inter, (MPI_Comm c, int* f), (c, f))                                              \
  X(Comm_set_errhandler, (MPI_Comm c, MPI_Errhandler e), (c, e))                                \
  X(Type_size, (MPI_Datatype t, int* s), (t, s))                                                \
  X(Get_processor_name, (char* n, int* l), (n, l))                                              \
  X(Error_string, (int e, char* s, int* l), (e, s, l))                                          \
  X(Error_class, (int e, int* c), (e, c))                                                       \
  X(Query_thread, (int* p), (p))                                                                \
  X(Initialized, (int* f), (f))                                                                 \
  X(Finalized, (int* f), (f))                                                                   \
  X(Init, (int* argc, char*** argv), (argc, argv))                                              \
  X(Init_thread, (int* argc, char*** argv, int req, int* p), (argc, argv, req, p))              \
  X(Finalize, (void), ())                                                                       \
  X(Abort, (MPI_Comm c, int e), (c, e))

namespace {

enum Wrapped : std::size_t {
#define RUCCL_ENUM(name, params, args) k##name,
  RUCCL_PMPI_WRAPPED(RUCCL_ENUM)
#undef RUCCL_ENUM
  kWtime,
  kWrapped
};

const char* const kWrappedNames[kWrapped] = {
#define RUCCL_NAME(name, params, args) "MPI_" #name,
    RUCCL_PMPI_WRAPPED(RUCCL_NAME)
#undef RUCCL_NAME
    "MPI_Wtime"};

std::atomic<std::uint64_t> g_calls[kWrapped] = {};

inline void count_call(Wrapped fn) { g_calls[fn].fetch_add(1, std::memory_order_relaxed); }

}  // namespace

extern "C" {
#define RUCCL_WRAP(name, params, args) \
  int MPI_##name params {              \
    count_call(k##name);               \
    return PMPI_##name args;           \
  }
RUCCL_PMPI_WRAPPED(RUCCL_WRAP)
#undef RUCCL_WRAP

double MPI_Wtime(void) {
  count_call(kWtime);
  return PMPI_Wtime();
}
}  // extern "C"

namespace {

using namespace ruccl;
using Counts = std::array<std::uint64_t, kWrapped>;

Counts snapshot() {
  Counts c{};
  for (std::size_t i = 0; i < kWrapped; ++i) c[i] = g_calls[i].load(std::memory_order_relaxed);
  return c;
}

std::uint64_t total(const Counts& c) {
  std::uint64_t t = 0;
  for (std::uint64_t v : c) t += v;
  return t;
}

// "MPI_Comm_dup 1, MPI_Allgather 3, ..." for the functions called between a and b.
std::string describe_delta(const Counts& a, const Counts& b) {
  std::string out;
  for (std::size_t i = 0; i < kWrapped; ++i) {
    if (b[i] == a[i]) continue;
    if (!out.empty()) out += ", ";
    out += std::string(kWrappedNames[i]) + " " + std::to_string(b[i] - a[i]);
  }
  return out.empty() ? "none" : out;
}

// ---- the collectives of the counted window ----------------------------------
// Every rank runs the same sequence; int32 values make every result exact.
struct Checker {
  Communicator& comm;
  std::size_t rank;
  DeviceId dev;
  int failed = 0;

  void fail(std::size_t i, const std::string& what) {
    if (failed < 10) std::fprintf(stderr, "rank %zu: collective %zu: %s\n", rank, i, what.c_str());
    ++failed;
  }
  TensorView view(std::vector<std::int32_t>& v, Shape shape) const {
    return TensorView{v.empty() ? nullptr : v.data(), DataType::kI32, std::move(shape), dev, nullptr};
  }

  void run(std::size_t i) {
    const std::size_t w = comm.world_size();
    const std::int32_t iw = static_cast<std::int32_t>(w);
    const std::int32_t ir = static_cast<std::int32_t>(rank);
    const std::int32_t ii = static_cast<std::int32_t>(i);
    // Every third call forces many tiny messages (8 bytes = 2 elements).
    CallOptions opts;
    if (i % 3 == 2) opts.max_chunk_bytes = 8;
    // Rows of 2 for the row-wise collectives (one row = 8 bytes fits the budget).
    switch (i % 6) {
      case 0: {  // all_reduce sum: x = 1000 r + j + i
        const std::size_t n = 1 + (i * 7) % 41;
        std::vector<std::int32_t> in(n), out(n, -1);
        for (std::size_t j = 0; j < n; ++j) in[j] = 1000 * ir + static_cast<std::int32_t>(j) + ii;
        const auto orig = in;
        auto want = [&](std::size_t j) {
          return 1000 * iw * (iw - 1) / 2 + iw * (static_cast<std::int32_t>(j) + ii);
        };
        if (i % 12 == 0) {
          auto r = comm.all_reduce(rank, view(in, {n}), ReduceOp::kSum, opts);
          if (!r) return fail(i, "all_reduce: " + r.status().to_string());
          for (std::size_t j = 0; j < n; ++j)
            if (r->as<std::int32_t>()[j] != want(j)) return fail(i, "all_reduce element " + std::to_string(j));
        } else {
          Status s = comm.all_reduce_into(rank, view(in, {n}), view(out, {n}), ReduceOp::kSum, opts);
          if (!s.is_ok()) return fail(i, "all_reduce_into: " + s.to_string());
          for (std::size_t j = 0; j < n; ++j)
            if (out[j] != want(j)) return fail(i, "all_reduce_into element " + std::to_string(j));
        }
        if (in != orig) fail(i, "all_reduce changed its input");
        return;
      }
      case 1: {  // broadcast from root i % w: x = 100 root + j
        const std::size_t root = (i / 6) % w, n = 3 + i % 17;
        std::vector<std::int32_t> in(n);
        for (std::size_t j = 0; j < n; ++j) in[j] = 100 * static_cast<std::int32_t>(root) + static_cast<std::int32_t>(j);
        const TensorView v = view(in, {n});
        auto r = comm.broadcast(rank, rank == root ? &v : nullptr, opts);
        if (!r) return fail(i, "broadcast: " + r.status().to_string());
        for (std::size_t j = 0; j < n; ++j)
          if (r->as<std::int32_t>()[j] != in[j]) return fail(i, "broadcast element " + std::to_string(j));
        return;
      }
      case 2: {  // reduce max to root: x = r + j
        const std::size_t root = (i / 6 + 1) % w, n = 2 + i % 13;
        std::vector<std::int32_t> in(n);
        for (std::size_t j = 0; j < n; ++j) in[j] = ir + static_cast<std::int32_t>(j);
        auto r = comm.reduce(rank, view(in, {n}), ReduceOp::kMax, root, opts);
        if (!r) return fail(i, "reduce: " + r.status().to_string());
        if (r->has_value() != (rank == root)) return fail(i, "reduce: result on the wrong rank");
        if (rank == root)
          for (std::size_t j = 0; j < n; ++j)
            if ((*r)->as<std::int32_t>()[j] != iw - 1 + static_cast<std::int32_t>(j))
              return fail(i, "reduce element " + std::to_string(j));
        return;
      }
      case 3: {  // all_gather of [rows, 2]: x = 100 r + j
        const std::size_t rows = 1 + i % 3;
        std::vector<std::int32_t> in(rows * 2);
        for (std::size_t j = 0; j < in.size(); ++j) in[j] = 100 * ir + static_cast<std::int32_t>(j);
        auto r = comm.all_gather(rank, view(in, {rows, 2}), opts);
        if (!r) return fail(i, "all_gather: " + r.status().to_string());
        if (r->shape() != Shape{w * rows, 2}) return fail(i, "all_gather shape");
        for (std::size_t s = 0; s < w; ++s)
          for (std::size_t j = 0; j < rows * 2; ++j)
            if (r->as<std::int32_t>()[s * rows * 2 + j] != 100 * static_cast<std::int32_t>(s) + static_cast<std::int32_t>(j))
              return fail(i, "all_gather block " + std::to_string(s));
        return;
      }
      case 4: {  // reduce_scatter sum of [w + 1, 2]: x = r + j
        const std::size_t rows = w + 1 + i % 2;
        std::vector<std::int32_t> in(rows * 2);
        for (std::size_t j = 0; j < in.size(); ++j) in[j] = ir + static_cast<std::int32_t>(j);
        auto r = comm.reduce_scatter(rank, view(in, {rows, 2}), ReduceOp::kSum, opts);
        if (!r) return fail(i, "reduce_scatter: " + r.status().to_string());
        const std::size_t base = rows / w, extra = rows % w;
        const std::size_t mine = base + (rank < extra ? 1 : 0);
        const std::size_t first = rank * base + std::min(rank, extra);
        if (r->shape() != Shape{mine, 2}) return fail(i, "reduce_scatter shape");
        for (std::size_t j = 0; j < mine * 2; ++j) {
          const auto g = static_cast<std::int32_t>(first * 2 + j);
          if (r->as<std::int32_t>()[j] != iw * (iw - 1) / 2 + iw * g)
            return fail(i, "reduce_scatter element " + std::to_string(j));
        }
        return;
      }
      default: {  // all_to_all_v: (r + d + i) % 3 rows of 2 to d; x = 1000 src + 10 dst + k
        std::vector<std::size_t> counts(w);
        std::vector<std::int32_t> in;
        for (std::size_t d = 0; d < w; ++d) {
          counts[d] = (rank + d + i) % 3;
          for (std::size_t k = 0; k < counts[d] * 2; ++k)
            in.push_back(1000 * ir + 10 * static_cast<std::int32_t>(d) + static_cast<std::int32_t>(k));
        }
        auto r = comm.all_to_all_v(rank, view(in, {in.size() / 2, 2}), counts, opts);
        if (!r) return fail(i, "all_to_all_v: " + r.status().to_string());
        std::size_t at = 0;
        for (std::size_t s = 0; s < w; ++s) {
          if (r->recv_counts.size() != w || r->recv_counts[s] != (s + rank + i) % 3)
            return fail(i, "all_to_all_v count from " + std::to_string(s));
          for (std::size_t k = 0; k < r->recv_counts[s] * 2; ++k, ++at)
            if (r->data.as<std::int32_t>()[at] !=
                1000 * static_cast<std::int32_t>(s) + 10 * ir + static_cast<std::int32_t>(k))
              return fail(i, "all_to_all_v value from " + std::to_string(s));
        }
        return;
      }
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::size_t per_process = 1, collectives = 100;
  for (int i = 1; i < argc; i += 2) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) { std::fprintf(stderr, "%s needs a value\n", arg.c_str()); return 2; }
    if (arg == "--devices-per-process") per_process = std::strtoul(argv[i + 1], nullptr, 10);
    else if (arg == "--collectives") collectives = std::strtoul(argv[i + 1], nullptr, 10);
    else {
      std::fprintf(stderr, "usage: zero_mpi_calls_test [--devices-per-process D] [--collectives N]\n");
      return 2;
    }
  }
  if (per_process == 0) { std::fprintf(stderr, "--devices-per-process must be >= 1\n"); return 2; }
  // RUCCL_ALGO etc. may choose the strategy; a hang becomes a timeout error.
  auto config = Config::from_env(Config().with_timeout(std::chrono::seconds(30)));
  if (!config) { std::fprintf(stderr, "%s\n", config.status().to_string().c_str()); return 2; }
  std::vector<DeviceId> devices;
  for (std::size_t d = 0; d < per_process; ++d) devices.push_back(host_device(d));

  const Counts before_create = snapshot();
  auto created = create_world_communicator(devices, config.value());
  const Counts after_create = snapshot();
  if (!created) {
    std::fprintf(stderr, "create_world_communicator: %s\n", created.status().to_string().c_str());
    return 1;
  }
  std::shared_ptr<Communicator> comm = std::move(created).value();
  const bool lead = comm->first_rank() == 0;
  int local_failures = 0;

  // 1. The wrappers see ruccl's MPI calls (else a zero below proves nothing).
  const std::uint64_t creation_calls = total(after_create) - total(before_create);
  if (creation_calls == 0) {
    std::fprintf(stderr,
                 "process of rank %zu: creating the communicator made no counted MPI call: the "
                 "PMPI wrappers are not interposed, so this test cannot see MPI calls\n",
                 comm->first_rank());
    ++local_failures;
  } else if (lead) {
    std::printf("zero_mpi_calls: creation made %llu MPI calls: %s\n",
                static_cast<unsigned long long>(creation_calls),
                describe_delta(before_create, after_create).c_str());
  }

  // 2. The counted window: `collectives` collectives on every rank.
  std::vector<int> failed(per_process, 0);
  const Counts before = snapshot();
  {
    std::vector<std::thread> threads;
    for (std::size_t d = 0; d < per_process; ++d)
      threads.emplace_back([&, d] {
        Checker c{*comm, comm->first_rank() + d, comm->devices()[d]};
        for (std::size_t i = 0; i < collectives && c.failed < 10; ++i) c.run(i);
        failed[d] = c.failed;
      });
    for (auto& t : threads) t.join();
  }
  const Counts after = snapshot();
  const std::uint64_t window_calls = total(after) - total(before);
  for (int f : failed) local_failures += f;
  if (window_calls != 0) {
    std::fprintf(stderr, "process of rank %zu: %llu MPI calls during %zu collectives x %zu ranks: %s\n",
                 comm->first_rank(), static_cast<unsigned long long>(window_calls), collectives,
                 per_process, describe_delta(before, after).c_str());
    ++local_failures;
  }

  // Every process learns the verdict (a ruccl all-reduce, outside the window).
  std::vector<std::int32_t> verdict(per_process, -1);
  {
    std::vector<std::thread> threads;
    for (std::size_t d = 0; d < per_process; ++d)
      threads.emplace_back([&, d] {
        std::int32_t mine = d == 0 ? local_failures : 0;
        const TensorView mv = TensorView::of(&mine, DataType::kI32, 1, comm->devices()[d]);
        const TensorView tv = TensorView::of(&verdict[d], DataType::kI32, 1, comm->devices()[d]);
        Status s = comm->all_reduce_into(comm->first_rank() + d, mv, tv, ReduceOp::kSum);
        if (!s.is_ok()) {
          std::fprintf(stderr, "rank %zu: verdict: %s\n", comm->first_rank() + d, s.to_string().c_str());
          verdict[d] = -1;
        }
      });
    for (auto& t : threads) t.join();
  }
  const bool passed = local_failures == 0 && verdict[0] == 0;
  if (lead)
    std::printf("zero_mpi_calls: %zu ranks (%zu per process), %zu collectives, %llu MPI calls in "
                "the window here: %s (%d failures in all)\n",
                comm->world_size(), per_process, collectives,
                static_cast<unsigned long long>(window_calls), passed ? "PASSED" : "FAILED",
                verdict[0]);
  const Counts before_destroy = snapshot();
  comm.reset();  // finalises MPI when ruccl initialised it
  if (lead)
    std::printf("zero_mpi_calls: destruction made: %s\n",
                describe_delta(before_destroy, snapshot()).c_str());
  return passed ? 0 : 1;
}
