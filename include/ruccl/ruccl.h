/* ruccl.h: the C API of ruccl, for C, Fortran (iso_c_binding) and any language
 * with a C foreign-function interface. C99; also valid C++ (extern "C").
 *
 * It wraps the C++ communicators (ruccl/communicator.hpp, ruccl/world.hpp):
 *   - ruccl_comm_create_local: N local devices in this process, no MPI;
 *   - ruccl_comm_create_mpi_f / ruccl_comm_create_mpi: every process of an MPI
 *     communicator, each with the same number of local devices (MPI only at
 *     creation; every byte then moves over UCX). Needs a build with MPI and
 *     UCX; otherwise it returns RUCCL_ERROR_UNSUPPORTED.
 *
 * Ranks. A communicator has ruccl_comm_world_size() ranks; this process serves
 * ruccl_comm_local_count() of them, ruccl_comm_first_rank() + 0, 1, ... Each
 * local rank is driven by its own thread, which passes its global rank to every
 * collective (exactly as in the C++ API). Every collective blocks its thread
 * until the collective completes on every rank, and every rank gets the same
 * outcome: all succeed, or all get the same error code (a disagreement or a
 * bad argument on one rank is reported to all of them, naming that rank).
 *
 * Buffers are host pointers on host devices, CUDA device pointers on CUDA
 * devices. `stream` is the cudaStream_t the buffers are produced and consumed
 * on (NULL: the default stream); host devices ignore it (pass NULL). Counts are
 * in elements. A buffer must stay valid until the call returns on its rank.
 *
 * Errors. Every function returns a ruccl_result_t; no C++ exception ever
 * leaves this API. ruccl_error_string(code) names the code;
 * ruccl_comm_last_error(comm, rank) gives the message of the most recent call
 * made on `comm` with that rank ("" after a success), e.g.
 *   "ruccl_all_reduce(rank 1): OpMismatch: collective #18 (all_reduce): rank 2
 *    passed op max, rank 0 passed sum".
 * There is no process-wide error state: creation errors are recorded in the
 * config passed to the creation call (ruccl_config_last_error), and a call with
 * a NULL communicator only returns RUCCL_ERROR_INVALID_ARGUMENT.
 *
 * Thread safety. Different ranks' calls run concurrently (that is the point);
 * one rank's calls must not overlap. ruccl_comm_abort may be called from any
 * thread at any time. Create and destroy a communicator from one thread while
 * no collective of it is running. A config must not be used by two threads at
 * once.
 */
#ifndef RUCCL_RUCCL_H
#define RUCCL_RUCCL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The enumerated types are plain ints (the named enums below only list the
 * values): every int may be passed through them, and an unknown value is an
 * error code, never undefined behaviour (as an out-of-range C++ enum would
 * be). From Fortran they are integer(c_int).
 *
 * Result codes. The values match ruccl::ErrorCode (ruccl/status.hpp) and never
 * change meaning. */
typedef int ruccl_result_t;
enum ruccl_result {
  RUCCL_SUCCESS = 0,
  RUCCL_ERROR_INVALID_ARGUMENT = 1,       /* null pointer, overflowing count, unknown enum value, bad rank */
  RUCCL_ERROR_DUPLICATE_REGISTRATION = 2,
  RUCCL_ERROR_MISSING_REGISTRATION = 3,
  RUCCL_ERROR_DEVICE_COUNT_MISMATCH = 4,  /* processes passed different numbers of local devices */
  RUCCL_ERROR_SHAPE_MISMATCH = 5,         /* counts differ between ranks, or a buffer has the wrong size */
  RUCCL_ERROR_DTYPE_MISMATCH = 6,
  RUCCL_ERROR_OP_MISMATCH = 7,
  RUCCL_ERROR_ROOT_MISMATCH = 8,
  RUCCL_ERROR_BROADCAST_SENDER_COUNT = 9, /* a broadcast without exactly one root */
  RUCCL_ERROR_COLLECTIVE_MISMATCH = 10,   /* ranks called different collectives */
  RUCCL_ERROR_BUDGET_TOO_SMALL = 11,      /* max_chunk_bytes cannot hold one element */
  RUCCL_ERROR_TIMEOUT = 12,               /* a deadline passed; the message names the missing ranks */
  RUCCL_ERROR_ABORTED = 13,               /* ruccl_comm_abort, or the communicator is unusable */
  RUCCL_ERROR_DEVICE = 14,                /* a device (CUDA) failed */
  RUCCL_ERROR_UNSUPPORTED = 15,           /* a valid request this build cannot serve (no CUDA, no MPI) */
  RUCCL_ERROR_FINISHED = 16,
  RUCCL_ERROR_PEER_FAILURE = 17,          /* a remote process died */
  RUCCL_ERROR_INTERNAL = 18,              /* a broken invariant inside ruccl */
  RUCCL_ERROR_PROTOCOL = 19,              /* a message failed validation (header, checksum, job token) */
  RUCCL_ERROR_OUT_OF_MEMORY = 20          /* an allocation failed (host or device memory) */
};

/* Element types. RUCCL_BYTES is opaque (packed formats): it moves (broadcast,
 * all_gather, all_to_all_v) but never reduces. */
typedef int ruccl_dtype_t;
enum ruccl_dtype {
  RUCCL_F16 = 0,
  RUCCL_BF16 = 1,
  RUCCL_F32 = 2,
  RUCCL_F64 = 3,
  RUCCL_I8 = 4,
  RUCCL_U8 = 5,
  RUCCL_I32 = 6,
  RUCCL_I64 = 7,
  RUCCL_U64 = 8,
  RUCCL_BYTES = 9
};

/* Reduction ops (see the README's semantics: f16/bf16 computed in f32, integer
 * Sum/Prod wrap, Mean = Sum / world size, Min/Max propagate NaN). The bitwise
 * (BAND, BOR, BXOR) and logical (LAND, LOR, LXOR: nonzero is true, results 1
 * or 0) ops take integer dtypes only; with a floating dtype they are
 * RUCCL_ERROR_INVALID_ARGUMENT. */
typedef int ruccl_op_t;
enum ruccl_op {
  RUCCL_SUM = 0,
  RUCCL_MEAN = 1,
  RUCCL_MIN = 2,
  RUCCL_MAX = 3,
  RUCCL_PROD = 4,
  RUCCL_BAND = 5,
  RUCCL_BOR = 6,
  RUCCL_BXOR = 7,
  RUCCL_LAND = 8,
  RUCCL_LOR = 9,
  RUCCL_LXOR = 10
};

typedef int ruccl_device_kind_t;
enum ruccl_device_kind {
  RUCCL_DEVICE_HOST = 0,
  RUCCL_DEVICE_CUDA = 1
};

/* Strategy across processes (RUCCL_ALGO). Every process must use the same. */
typedef int ruccl_strategy_t;
enum ruccl_strategy {
  RUCCL_STRATEGY_HIERARCHICAL = 0,
  RUCCL_STRATEGY_FLAT_RING = 1
};

typedef struct ruccl_config ruccl_config_t; /* opaque: tunables */
typedef struct ruccl_comm ruccl_comm_t;     /* opaque: a communicator */

/* ---- Errors and types --------------------------------------------------- */

/* "Success", "InvalidArgument", "Timeout", ...; "Unknown" for other values.
 * Never NULL; a static string. */
const char* ruccl_error_string(ruccl_result_t code);
/* Bytes per element; 0 for an unknown value. */
size_t ruccl_dtype_size(ruccl_dtype_t dtype);

/* ---- Config -------------------------------------------------------------- */

/* A config with the defaults (budget 4 MiB, segment 1 MiB, timeout 300 s,
 * hierarchical). Free it with ruccl_config_destroy. */
ruccl_result_t ruccl_config_create(ruccl_config_t** config);
/* Reads the RUCCL_* environment variables over the config's current values
 * (RUCCL_TIMEOUT, RUCCL_MAX_CHUNK_BYTES, RUCCL_ALGO, ...). On an unparsable
 * value the config is unchanged and its last error names the variable. */
ruccl_result_t ruccl_config_load_env(ruccl_config_t* config);
/* Byte budget of the payload of one message (>= 1; a budget smaller than one
 * element fails the collective with RUCCL_ERROR_BUDGET_TOO_SMALL). */
ruccl_result_t ruccl_config_set_max_chunk_bytes(ruccl_config_t* config, size_t bytes);
/* Pipelining unit of broadcast and reduce (>= 1). */
ruccl_result_t ruccl_config_set_segment_bytes(ruccl_config_t* config, size_t bytes);
/* Deadline of every wait, milliseconds (1 .. 10^10). */
ruccl_result_t ruccl_config_set_timeout_ms(ruccl_config_t* config, uint64_t milliseconds);
ruccl_result_t ruccl_config_set_strategy(ruccl_config_t* config, ruccl_strategy_t strategy);
/* The message of the config's most recent failed call (a setter, load_env, or
 * a creation that was passed this config); "" if none. Valid until the next
 * call with this config. Never NULL. */
const char* ruccl_config_last_error(const ruccl_config_t* config);
/* NULL is a no-op. */
ruccl_result_t ruccl_config_destroy(ruccl_config_t* config);

/* ---- Communicators ------------------------------------------------------- */

/* For both creation functions: `device_indices` (NULL: 0, 1, ..., n-1) names
 * the n local devices of `kind`, in rank order; they must be distinct.
 * `config` may be NULL (the defaults); the communicator copies it, and a
 * failed creation records its message there. On success *comm is a new
 * communicator (free it with ruccl_comm_destroy); on failure, NULL. */

/* In-process: ranks 0 .. num_devices-1 are this process's devices. */
ruccl_result_t ruccl_comm_create_local(size_t num_devices, ruccl_device_kind_t kind,
                                       const size_t* device_indices, ruccl_config_t* config,
                                       ruccl_comm_t** comm);

/* Collective over an MPI communicator, given by its Fortran handle (what a
 * Fortran program holds, or MPI_Comm_c2f(comm) in C: see ruccl_comm_create_mpi
 * below). Every process of it calls this with the same num_local_devices.
 * Ranks: process index (processes ordered by node, then MPI rank) x
 * num_local_devices + local index. MPI must be initialised by the caller and
 * stay so until ruccl_comm_destroy (which must precede MPI_Finalize); creation
 * and destruction make MPI calls, so make them from a thread allowed to (the
 * thread that initialised MPI, or any with MPI_THREAD_SERIALIZED). The MPI
 * communicator is duplicated: the caller may free it after this returns.
 * RUCCL_ERROR_UNSUPPORTED in a build without MPI and UCX. */
ruccl_result_t ruccl_comm_create_mpi_f(int64_t mpi_comm_fortran, size_t num_local_devices,
                                       ruccl_device_kind_t kind, const size_t* device_indices,
                                       ruccl_config_t* config, ruccl_comm_t** comm);
/* For C programs that include <mpi.h> themselves (ruccl.h never does):
 *   ruccl_comm_create_mpi(MPI_COMM_WORLD, 2, RUCCL_DEVICE_HOST, NULL, config, &comm); */
#define ruccl_comm_create_mpi(mpi_comm, ...) \
  ruccl_comm_create_mpi_f((int64_t)MPI_Comm_c2f(mpi_comm), __VA_ARGS__)

/* Frees the communicator. No collective of it may be running. NULL is a no-op. */
ruccl_result_t ruccl_comm_destroy(ruccl_comm_t* comm);
/* Wakes every blocked rank with RUCCL_ERROR_ABORTED and makes every later call
 * fail with it. Returns at once; any thread. `reason` may be NULL. */
ruccl_result_t ruccl_comm_abort(ruccl_comm_t* comm, const char* reason);

/* Collective over every rank of `comm` (MPI_Comm_split, ncclCommSplit): the
 * ranks passing one color >= 0 form a new communicator, ranked by (key, rank
 * in `comm`); *new_rank is this rank's rank there. RUCCL_SPLIT_NO_COLOR: no
 * communicator for this rank (*new_comm = NULL). Every rank gets a handle of
 * its own (the ranks of one color in one process share the communicator
 * behind them); free each with ruccl_comm_destroy. The new communicator
 * shares `comm`'s transports (see Communicator::split in communicator.hpp:
 * one failure domain; across processes the same number of ranks in each
 * process, consecutive in the new order). */
#define RUCCL_SPLIT_NO_COLOR (-1)
ruccl_result_t ruccl_comm_split(ruccl_comm_t* comm, size_t rank, int64_t color, int64_t key,
                                ruccl_comm_t** new_comm, size_t* new_rank);
/* Returns once every rank of `comm` has called it. */
ruccl_result_t ruccl_barrier(ruccl_comm_t* comm, size_t rank);

/* Host memory for collectives' buffers (Communicator::allocate_host, as
 * ncclMemAlloc): *ptr = `bytes` of zero-filled, page-aligned memory. Where the
 * communicator's processes share a node segment the node's other processes
 * read it in place (collectives on it skip the copy through the segment; at
 * most 16 live per process, RUCCL_ERROR_OUT_OF_MEMORY beyond); elsewhere plain
 * memory. Free it with ruccl_mem_free on the same handle; what is not freed
 * goes with ruccl_comm_destroy. 0 bytes or a NULL ptr: INVALID_ARGUMENT. The
 * message of the last failure of either call (a success leaves it):
 * ruccl_comm_last_error(comm, SIZE_MAX). */
ruccl_result_t ruccl_mem_alloc(ruccl_comm_t* comm, size_t bytes, void** ptr);
/* Frees memory from ruccl_mem_alloc on `comm`; NULL is a no-op, any other
 * pointer it did not allocate is INVALID_ARGUMENT (nothing freed). */
ruccl_result_t ruccl_mem_free(ruccl_comm_t* comm, void* ptr);

ruccl_result_t ruccl_comm_world_size(const ruccl_comm_t* comm, size_t* world_size);
ruccl_result_t ruccl_comm_first_rank(const ruccl_comm_t* comm, size_t* first_rank);
ruccl_result_t ruccl_comm_local_count(const ruccl_comm_t* comm, size_t* local_count);

/* The message of the most recent call on `comm` that passed `rank` ("" if it
 * succeeded or there was none). Calls that passed a rank this process does not
 * serve share one extra slot, read with any such rank. Valid until the next
 * call with that rank. Never NULL ("comm is NULL" for a NULL comm). */
const char* ruccl_comm_last_error(const ruccl_comm_t* comm, size_t rank);

/* ---- Collectives --------------------------------------------------------- */
/* `rank` is the caller's global rank. In-place: pass the same pointer as noted
 * per call. */

/* recvbuf[i] = op over ranks of sendbuf[i], count elements on every rank.
 * In-place: recvbuf == sendbuf. */
ruccl_result_t ruccl_all_reduce(ruccl_comm_t* comm, size_t rank, const void* sendbuf,
                                void* recvbuf, size_t count, ruccl_dtype_t dtype, ruccl_op_t op,
                                void* stream);
/* The root's recvbuf gets the reduction; other ranks' recvbuf is not touched
 * (may be NULL). In-place at the root: recvbuf == sendbuf. */
ruccl_result_t ruccl_reduce(ruccl_comm_t* comm, size_t rank, const void* sendbuf, void* recvbuf,
                            size_t count, ruccl_dtype_t dtype, ruccl_op_t op, size_t root,
                            void* stream);
/* The root's sendbuf is copied into every rank's recvbuf (the root's too,
 * unless in-place: recvbuf == sendbuf). sendbuf is read only at the root. A
 * root outside the world is RUCCL_ERROR_INVALID_ARGUMENT on the ranks that
 * passed it (checked locally: every rank must pass the same root). */
ruccl_result_t ruccl_broadcast(ruccl_comm_t* comm, size_t rank, const void* sendbuf,
                               void* recvbuf, size_t count, ruccl_dtype_t dtype, size_t root,
                               void* stream);
/* recvbuf (world_size * send_count elements) gets every rank's sendbuf in rank
 * order. In-place: sendbuf == recvbuf + rank * send_count elements. */
ruccl_result_t ruccl_all_gather(ruccl_comm_t* comm, size_t rank, const void* sendbuf,
                                void* recvbuf, size_t send_count, ruccl_dtype_t dtype,
                                void* stream);
/* sendbuf holds world_size * recv_count elements; rank r's recvbuf gets
 * elements [r * recv_count, (r+1) * recv_count) of the reduction. In-place:
 * recvbuf == sendbuf + rank * recv_count elements (sendbuf then holds partial
 * results elsewhere). */
ruccl_result_t ruccl_reduce_scatter(ruccl_comm_t* comm, size_t rank, const void* sendbuf,
                                    void* recvbuf, size_t recv_count, ruccl_dtype_t dtype,
                                    ruccl_op_t op, void* stream);
/* sendbuf holds sum(send_counts) elements in destination order: send_counts[d]
 * (world_size entries) go to rank d. recvbuf (room for recv_capacity elements)
 * gets the elements received, in source order; recv_counts (world_size entries,
 * may be NULL) gets how many came from each source. Out-of-place only: the
 * buffers must not overlap. */
ruccl_result_t ruccl_all_to_all_v(ruccl_comm_t* comm, size_t rank, const void* sendbuf,
                                  const size_t* send_counts, void* recvbuf, size_t recv_capacity,
                                  size_t* recv_counts, ruccl_dtype_t dtype, void* stream);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RUCCL_RUCCL_H */
