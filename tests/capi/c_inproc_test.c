/* The C API from C99: every collective, out-of-place and in-place, over 1 to 4
 * in-process host ranks (one pthread per rank); then abort and timeout.
 * Inputs come from (rank, index), so every expected value has a closed form.
 * Exit 0 and "c_inproc_test: PASSED" when every check held. */
#define _POSIX_C_SOURCE 200809L  /* nanosleep under -std=c99 */

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ruccl/ruccl.h"

#define COUNT 1003   /* elements of all_reduce, reduce, broadcast */
#define BLOCK 7      /* all_gather block, reduce_scatter shard */
#define MAX_WORLD 4

typedef struct {
  ruccl_comm_t* comm;
  size_t rank;
  size_t world;
  int failures;
} RankArgs;

static void check(RankArgs* a, int ok, const char* what, size_t index) {
  if (ok) return;
  if (a->failures++ < 5)
    fprintf(stderr, "world %zu rank %zu: %s wrong at index %zu\n", a->world, a->rank, what, index);
}

static int call_ok(RankArgs* a, ruccl_result_t r, const char* what) {
  if (r == RUCCL_SUCCESS) return 1;
  a->failures++;
  fprintf(stderr, "world %zu rank %zu: %s failed: %s (%s)\n", a->world, a->rank, what,
          ruccl_error_string(r), ruccl_comm_last_error(a->comm, a->rank));
  return 0;
}

static void test_all_reduce(RankArgs* a) {
  float* in = malloc(COUNT * sizeof(float));
  float* out = malloc(COUNT * sizeof(float));
  int32_t* x = malloc(COUNT * sizeof(int32_t));
  size_t i;
  const float n = (float)a->world;
  for (i = 0; i < COUNT; ++i) in[i] = (float)(a->rank + 1) + (float)(i % 7);
  if (call_ok(a, ruccl_all_reduce(a->comm, a->rank, in, out, COUNT, RUCCL_F32, RUCCL_SUM, NULL),
              "all_reduce"))
    for (i = 0; i < COUNT; ++i)
      check(a, out[i] == n * (n + 1) / 2 + n * (float)(i % 7) && in[i] == (float)(a->rank + 1) + (float)(i % 7),
            "all_reduce sum", i);
  /* In-place max over i32. */
  for (i = 0; i < COUNT; ++i) x[i] = (int32_t)((a->rank * 31 + i) % 11) - 5;
  if (call_ok(a, ruccl_all_reduce(a->comm, a->rank, x, x, COUNT, RUCCL_I32, RUCCL_MAX, NULL),
              "all_reduce in-place")) {
    for (i = 0; i < COUNT; ++i) {
      int32_t want = INT32_MIN;
      size_t r;
      for (r = 0; r < a->world; ++r) {
        const int32_t v = (int32_t)((r * 31 + i) % 11) - 5;
        if (v > want) want = v;
      }
      check(a, x[i] == want, "all_reduce in-place max", i);
    }
  }
  /* In-place bitwise or and logical and over i32: rank r sets bit r. A world of
   * one rank combines nothing: its input is the result (as in MPI). */
  for (i = 0; i < COUNT; ++i) x[i] = (int32_t)(i % 2 ? (1u << a->rank) : 0);
  if (call_ok(a, ruccl_all_reduce(a->comm, a->rank, x, x, COUNT, RUCCL_I32, RUCCL_BOR, NULL),
              "all_reduce bor"))
    for (i = 0; i < COUNT; ++i)
      check(a, x[i] == (int32_t)(i % 2 ? (1u << a->world) - 1u : 0u), "all_reduce bor", i);
  for (i = 0; i < COUNT; ++i) x[i] = (int32_t)(i % 3 == 0 || a->rank == 0 ? 7 : 0);
  if (call_ok(a, ruccl_all_reduce(a->comm, a->rank, x, x, COUNT, RUCCL_I32, RUCCL_LAND, NULL),
              "all_reduce land"))
    for (i = 0; i < COUNT; ++i)
      check(a, x[i] == (a->world == 1 ? 7 : i % 3 == 0 ? 1 : 0), "all_reduce land", i);
  /* A bitwise op on a floating dtype: invalid argument. */
  if (ruccl_all_reduce(a->comm, a->rank, in, out, COUNT, RUCCL_F32, RUCCL_BXOR, NULL) !=
      RUCCL_ERROR_INVALID_ARGUMENT)
    check(a, 0, "all_reduce f32 bxor is invalid", 0);
  free(in);
  free(out);
  free(x);
}

static void test_reduce(RankArgs* a) {
  double* in = malloc(COUNT * sizeof(double));
  double* out = malloc(COUNT * sizeof(double));
  const size_t root = a->world - 1;
  const double n = (double)a->world;
  size_t i;
  for (i = 0; i < COUNT; ++i) in[i] = (double)a->rank + 0.5 * (double)i;
  /* Out-of-place: only the root passes an output. */
  if (call_ok(a, ruccl_reduce(a->comm, a->rank, in, a->rank == root ? out : NULL, COUNT, RUCCL_F64,
                              RUCCL_SUM, root, NULL), "reduce") && a->rank == root)
    for (i = 0; i < COUNT; ++i)
      check(a, out[i] == n * (n - 1) / 2 + n * 0.5 * (double)i, "reduce sum", i);
  /* In-place at the root, mean. */
  if (call_ok(a, ruccl_reduce(a->comm, a->rank, in, in, COUNT, RUCCL_F64, RUCCL_MEAN, 0, NULL),
              "reduce in-place") && a->rank == 0)
    for (i = 0; i < COUNT; ++i)
      check(a, in[i] == ((n * (n - 1) / 2 + n * 0.5 * (double)i) / n), "reduce in-place mean", i);
  free(in);
  free(out);
}

static void test_broadcast(RankArgs* a) {
  int64_t* buf = malloc(COUNT * sizeof(int64_t));
  int64_t* out = malloc(COUNT * sizeof(int64_t));
  const size_t root = a->world / 2;
  size_t i;
  for (i = 0; i < COUNT; ++i) buf[i] = a->rank == root ? (int64_t)(i * 1000003) : -1;
  /* Out-of-place: sendbuf is read only at the root. */
  if (call_ok(a, ruccl_broadcast(a->comm, a->rank, a->rank == root ? buf : NULL, out, COUNT,
                                 RUCCL_I64, root, NULL), "broadcast"))
    for (i = 0; i < COUNT; ++i) check(a, out[i] == (int64_t)(i * 1000003), "broadcast", i);
  /* In-place. */
  if (call_ok(a, ruccl_broadcast(a->comm, a->rank, buf, buf, COUNT, RUCCL_I64, root, NULL),
              "broadcast in-place"))
    for (i = 0; i < COUNT; ++i) check(a, buf[i] == (int64_t)(i * 1000003), "broadcast in-place", i);
  free(buf);
  free(out);
}

static void test_all_gather(RankArgs* a) {
  uint8_t in[BLOCK];
  uint8_t out[MAX_WORLD * BLOCK];
  uint8_t inplace[MAX_WORLD * BLOCK];
  size_t i;
  for (i = 0; i < BLOCK; ++i) in[i] = (uint8_t)(a->rank * 16 + i);
  memset(inplace, 0xee, sizeof inplace);
  memcpy(inplace + a->rank * BLOCK, in, BLOCK);
  if (call_ok(a, ruccl_all_gather(a->comm, a->rank, in, out, BLOCK, RUCCL_U8, NULL), "all_gather"))
    for (i = 0; i < a->world * BLOCK; ++i)
      check(a, out[i] == (uint8_t)((i / BLOCK) * 16 + i % BLOCK), "all_gather", i);
  /* In-place: the rank's block inside the output. */
  if (call_ok(a, ruccl_all_gather(a->comm, a->rank, inplace + a->rank * BLOCK, inplace, BLOCK,
                                  RUCCL_U8, NULL), "all_gather in-place"))
    for (i = 0; i < a->world * BLOCK; ++i)
      check(a, inplace[i] == (uint8_t)((i / BLOCK) * 16 + i % BLOCK), "all_gather in-place", i);
}

static void test_reduce_scatter(RankArgs* a) {
  float in[MAX_WORLD * BLOCK];
  float out[BLOCK];
  const float n = (float)a->world;
  size_t i;
  for (i = 0; i < a->world * BLOCK; ++i) in[i] = (float)(a->rank + i);
  /* Element e of the reduction: sum over ranks of (r + e) = n(n-1)/2 + n e. */
  if (call_ok(a, ruccl_reduce_scatter(a->comm, a->rank, in, out, BLOCK, RUCCL_F32, RUCCL_SUM, NULL),
              "reduce_scatter"))
    for (i = 0; i < BLOCK; ++i)
      check(a, out[i] == n * (n - 1) / 2 + n * (float)(a->rank * BLOCK + i), "reduce_scatter", i);
  /* In-place: the shard inside the input. */
  if (call_ok(a, ruccl_reduce_scatter(a->comm, a->rank, in, in + a->rank * BLOCK, BLOCK, RUCCL_F32,
                                      RUCCL_SUM, NULL), "reduce_scatter in-place"))
    for (i = 0; i < BLOCK; ++i)
      check(a, in[a->rank * BLOCK + i] == n * (n - 1) / 2 + n * (float)(a->rank * BLOCK + i),
            "reduce_scatter in-place", i);
}

/* Rank s sends (s + d) % 3 elements to rank d, each s * 100 + d. */
static void test_all_to_all_v(RankArgs* a) {
  int32_t send[3 * MAX_WORLD];
  int32_t recv[3 * MAX_WORLD];
  size_t send_counts[MAX_WORLD];
  size_t recv_counts[MAX_WORLD];
  size_t d, s, k, at = 0;
  for (d = 0; d < a->world; ++d) {
    send_counts[d] = (a->rank + d) % 3;
    for (k = 0; k < send_counts[d]; ++k) send[at++] = (int32_t)(a->rank * 100 + d);
  }
  if (!call_ok(a, ruccl_all_to_all_v(a->comm, a->rank, send, send_counts, recv, 3 * MAX_WORLD,
                                     recv_counts, RUCCL_I32, NULL), "all_to_all_v"))
    return;
  at = 0;
  for (s = 0; s < a->world; ++s) {
    check(a, recv_counts[s] == (s + a->rank) % 3, "all_to_all_v recv_counts", s);
    for (k = 0; k < (s + a->rank) % 3; ++k, ++at)
      check(a, recv[at] == (int32_t)(s * 100 + a->rank), "all_to_all_v data", at);
  }
}

/* ruccl_comm_split by parity of the rank, keys reversed; a sum over the new
 * communicator and a barrier on both; the last rank passes no color. */
static void test_split_and_barrier(RankArgs* a) {
  ruccl_comm_t* half = NULL;
  size_t half_rank = 99, half_size = 0, s, members = 0, want_rank = 0;
  const int last = a->world > 1 && a->rank == a->world - 1;
  const int64_t color = last ? RUCCL_SPLIT_NO_COLOR : (int64_t)(a->rank % 2);
  int64_t x = (int64_t)a->rank, y = -1, want = 0;
  if (!call_ok(a, ruccl_comm_split(a->comm, a->rank, color, -(int64_t)a->rank, &half, &half_rank),
               "comm_split"))
    return;
  if (last) {
    check(a, half == NULL, "comm_split without a color", 0);
  } else {
    for (s = 0; s < a->world; ++s) {
      if (s % 2 != a->rank % 2 || (a->world > 1 && s == a->world - 1)) continue;
      ++members;
      want += (int64_t)s;
      if (s > a->rank) ++want_rank; /* keys reversed: higher ranks come first */
    }
    check(a,
          half != NULL && ruccl_comm_world_size(half, &half_size) == RUCCL_SUCCESS &&
              half_size == members,
          "comm_split size", members);
    check(a, half_rank == want_rank, "comm_split rank", half_rank);
    if (half &&
        ruccl_all_reduce(half, half_rank, &x, &y, 1, RUCCL_I64, RUCCL_SUM, NULL) != RUCCL_SUCCESS) {
      fprintf(stderr, "split all_reduce: %s\n", ruccl_comm_last_error(half, half_rank));
      a->failures++;
    }
    check(a, y == want, "split all_reduce", 0);
    if (half && ruccl_barrier(half, half_rank) != RUCCL_SUCCESS) a->failures++;
  }
  call_ok(a, ruccl_barrier(a->comm, a->rank), "barrier");
  check(a, ruccl_comm_split(a->comm, a->rank, 0, 0, NULL, &half_rank) != RUCCL_SUCCESS,
        "comm_split with a NULL new_comm", 0);
  ruccl_comm_destroy(half);
}

/* ruccl_mem_alloc's memory as a collective's buffers; its misuse (rank 0:
 * the message slot for ranks not served is shared). */
static void test_mem_alloc(RankArgs* a) {
  float *in = NULL, *out = NULL;
  size_t i;
  const float n = (float)a->world;
  if (!call_ok(a, ruccl_mem_alloc(a->comm, COUNT * sizeof(float), (void**)&in), "mem_alloc in") ||
      !call_ok(a, ruccl_mem_alloc(a->comm, COUNT * sizeof(float), (void**)&out), "mem_alloc out"))
    return;
  check(a, ((uintptr_t)in % 4096) == 0, "mem_alloc alignment", 0);
  for (i = 0; i < COUNT; ++i) {
    check(a, in[i] == 0.0f && out[i] == 0.0f, "mem_alloc zero fill", i);
    in[i] = (float)(a->rank + 1);
  }
  if (call_ok(a, ruccl_all_reduce(a->comm, a->rank, in, out, COUNT, RUCCL_F32, RUCCL_SUM, NULL),
              "all_reduce on mem_alloc buffers"))
    for (i = 0; i < COUNT; ++i) check(a, out[i] == n * (n + 1) / 2, "all_reduce on mem_alloc", i);
  call_ok(a, ruccl_mem_free(a->comm, in), "mem_free in");
  call_ok(a, ruccl_mem_free(a->comm, out), "mem_free out");
  if (a->rank != 0) return;
  {
    void* p = &i;
    check(a, ruccl_mem_free(a->comm, in) == RUCCL_ERROR_INVALID_ARGUMENT, "mem_free twice", 0);
    check(a, ruccl_mem_free(a->comm, p) == RUCCL_ERROR_INVALID_ARGUMENT,
          "mem_free of a stack pointer", 0);
    check(a, ruccl_mem_free(a->comm, NULL) == RUCCL_SUCCESS, "mem_free NULL", 0);
    check(a, ruccl_mem_alloc(a->comm, 0, &p) == RUCCL_ERROR_INVALID_ARGUMENT && p == NULL,
          "mem_alloc of 0 bytes", 0);
    check(a, strstr(ruccl_comm_last_error(a->comm, SIZE_MAX), "0 bytes") != NULL,
          "mem_alloc of 0 bytes: its message", 0);
    check(a, ruccl_mem_alloc(a->comm, 8, NULL) == RUCCL_ERROR_INVALID_ARGUMENT,
          "mem_alloc NULL ptr", 0);
    check(a, ruccl_mem_alloc(NULL, 8, &p) == RUCCL_ERROR_INVALID_ARGUMENT, "mem_alloc NULL comm",
          0);
    /* Not freed: it goes with ruccl_comm_destroy. */
    check(a, ruccl_mem_alloc(a->comm, 100, &p) == RUCCL_SUCCESS && p != NULL, "mem_alloc kept", 0);
  }
}

static void* rank_main(void* arg) {
  RankArgs* a = arg;
  test_mem_alloc(a);
  test_split_and_barrier(a);
  test_all_reduce(a);
  test_reduce(a);
  test_broadcast(a);
  test_all_gather(a);
  test_reduce_scatter(a);
  test_all_to_all_v(a);
  return NULL;
}

static int run_world(size_t world, ruccl_config_t* config) {
  ruccl_comm_t* comm = NULL;
  pthread_t threads[MAX_WORLD];
  RankArgs args[MAX_WORLD];
  size_t r, size = 0, first = 7, local = 0;
  int failures = 0;
  const ruccl_result_t created = ruccl_comm_create_local(world, RUCCL_DEVICE_HOST, NULL, config, &comm);
  if (created != RUCCL_SUCCESS) {
    fprintf(stderr, "create_local(%zu): %s: %s\n", world, ruccl_error_string(created),
            ruccl_config_last_error(config));
    return 1;
  }
  if (ruccl_comm_world_size(comm, &size) != RUCCL_SUCCESS || size != world ||
      ruccl_comm_first_rank(comm, &first) != RUCCL_SUCCESS || first != 0 ||
      ruccl_comm_local_count(comm, &local) != RUCCL_SUCCESS || local != world) {
    fprintf(stderr, "world %zu: queries gave size %zu, first %zu, local %zu\n", world, size, first, local);
    ++failures;
  }
  for (r = 0; r < world; ++r) {
    args[r].comm = comm;
    args[r].rank = r;
    args[r].world = world;
    args[r].failures = 0;
    pthread_create(&threads[r], NULL, rank_main, &args[r]);
  }
  for (r = 0; r < world; ++r) {
    pthread_join(threads[r], NULL);
    failures += args[r].failures;
  }
  ruccl_comm_destroy(comm);
  return failures;
}

typedef struct {
  ruccl_comm_t* comm;
  ruccl_result_t result;
} Blocked;

static void* blocked_all_reduce(void* arg) {
  Blocked* b = arg;
  float x = 1.0f;
  b->result = ruccl_all_reduce(b->comm, 0, &x, &x, 1, RUCCL_F32, RUCCL_SUM, NULL);
  return NULL;
}

/* Rank 0 calls alone: ruccl_comm_abort from another thread wakes it with
 * Aborted, and every later call fails the same way. */
static int test_abort(void) {
  ruccl_comm_t* comm = NULL;
  Blocked b;
  pthread_t t;
  float x = 1.0f;
  const struct timespec pause = {0, 100 * 1000 * 1000};
  int failures = 0;
  if (ruccl_comm_create_local(2, RUCCL_DEVICE_HOST, NULL, NULL, &comm) != RUCCL_SUCCESS) return 1;
  b.comm = comm;
  b.result = RUCCL_SUCCESS;
  pthread_create(&t, NULL, blocked_all_reduce, &b);
  nanosleep(&pause, NULL);
  if (ruccl_comm_abort(comm, "test abort") != RUCCL_SUCCESS) ++failures;
  pthread_join(t, NULL);
  if (b.result != RUCCL_ERROR_ABORTED || !strstr(ruccl_comm_last_error(comm, 0), "test abort")) {
    fprintf(stderr, "abort: got %s (%s)\n", ruccl_error_string(b.result), ruccl_comm_last_error(comm, 0));
    ++failures;
  }
  if (ruccl_all_reduce(comm, 1, &x, &x, 1, RUCCL_F32, RUCCL_SUM, NULL) != RUCCL_ERROR_ABORTED) {
    fprintf(stderr, "abort: a later call did not fail with Aborted\n");
    ++failures;
  }
  ruccl_comm_destroy(comm);
  return failures;
}

/* Rank 0 calls alone under a 200 ms deadline: Timeout, naming rank 1. */
static int test_timeout(void) {
  ruccl_config_t* config = NULL;
  ruccl_comm_t* comm = NULL;
  float x = 1.0f;
  ruccl_result_t r;
  int failures = 0;
  if (ruccl_config_create(&config) != RUCCL_SUCCESS) return 1;
  if (ruccl_config_set_timeout_ms(config, 200) != RUCCL_SUCCESS ||
      ruccl_comm_create_local(2, RUCCL_DEVICE_HOST, NULL, config, &comm) != RUCCL_SUCCESS) {
    ruccl_config_destroy(config);
    return 1;
  }
  r = ruccl_all_reduce(comm, 0, &x, &x, 1, RUCCL_F32, RUCCL_SUM, NULL);
  if (r != RUCCL_ERROR_TIMEOUT || !strstr(ruccl_comm_last_error(comm, 0), "rank 1 did not arrive")) {
    fprintf(stderr, "timeout: got %s (%s)\n", ruccl_error_string(r), ruccl_comm_last_error(comm, 0));
    ++failures;
  }
  ruccl_comm_destroy(comm);
  ruccl_config_destroy(config);
  return failures;
}

int main(void) {
  ruccl_config_t* config = NULL;
  size_t world;
  int failures = 0;
  if (ruccl_config_create(&config) != RUCCL_SUCCESS ||
      ruccl_config_set_timeout_ms(config, 60000) != RUCCL_SUCCESS ||
      ruccl_config_set_max_chunk_bytes(config, 64) != RUCCL_SUCCESS) {
    fprintf(stderr, "config: %s\n", ruccl_config_last_error(config));
    return 1;
  }
  for (world = 1; world <= MAX_WORLD; ++world) failures += run_world(world, config);
  ruccl_config_destroy(config);
  failures += test_abort();
  failures += test_timeout();
  if (failures) {
    printf("c_inproc_test: FAILED (%d failed checks)\n", failures);
    return 1;
  }
  printf("c_inproc_test: PASSED\n");
  return 0;
}
