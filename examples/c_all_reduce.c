/* c_all_reduce: ruccl's C API across MPI processes.
 *
 * Every process passes an MPI communicator (MPI_COMM_WORLD, or with --split
 * one of two halves of it: even and odd MPI ranks) and its number of local
 * host devices; ruccl then spans every device of every process of that
 * communicator. Each local device is driven by its own thread, which runs a
 * Sum all-reduce (out-of-place, f32) and a Mean all-reduce (in-place, f64)
 * and checks every element against a closed form of (rank, index).
 *
 *   mpirun -np 2 build/examples/c_all_reduce --devices-per-process 2
 *   # c_all_reduce: 4 ranks (2 per process), count 1003: PASSED
 *
 * RUCCL_* variables apply (ruccl_config_load_env), e.g. mpirun -x RUCCL_ALGO=flat_ring. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ruccl/ruccl.h"

#define MAX_DEVICES 8

typedef struct {
  ruccl_comm_t* comm;
  size_t rank;  /* global ruccl rank */
  size_t world; /* ruccl ranks in all */
  size_t count;
  int failures;
} Rank;

static int ok(Rank* r, ruccl_result_t code, const char* what) {
  if (code == RUCCL_SUCCESS) return 1;
  fprintf(stderr, "rank %zu: %s: %s\n", r->rank, what, ruccl_comm_last_error(r->comm, r->rank));
  ++r->failures;
  return 0;
}

static void* run_rank(void* arg) {
  Rank* r = arg;
  float* in = malloc(r->count * sizeof(float));
  float* out = malloc(r->count * sizeof(float));
  double* x = malloc(r->count * sizeof(double));
  const double n = (double)r->world;
  size_t i;
  if (!in || !out || !x) {
    ++r->failures;
  } else {
    /* Sum: rank r holds (r + 1) + i % 5, so the sum is n(n+1)/2 + n (i % 5). */
    for (i = 0; i < r->count; ++i) in[i] = (float)(r->rank + 1) + (float)(i % 5);
    if (ok(r, ruccl_all_reduce(r->comm, r->rank, in, out, r->count, RUCCL_F32, RUCCL_SUM, NULL),
           "all_reduce sum"))
      for (i = 0; i < r->count; ++i)
        if (out[i] != (float)(n * (n + 1) / 2 + n * (double)(i % 5))) ++r->failures;
    /* Mean, in place: rank r holds 2r + i % 3, so the mean is n - 1 + i % 3. */
    for (i = 0; i < r->count; ++i) x[i] = 2.0 * (double)r->rank + (double)(i % 3);
    if (ok(r, ruccl_all_reduce(r->comm, r->rank, x, x, r->count, RUCCL_F64, RUCCL_MEAN, NULL),
           "all_reduce mean"))
      for (i = 0; i < r->count; ++i)
        if (x[i] != n - 1 + (double)(i % 3)) ++r->failures;
  }
  free(in);
  free(out);
  free(x);
  return NULL;
}

int main(int argc, char** argv) {
  size_t devices = 1, count = 1003, i, world = 0, first = 0;
  int split = 0, me = 0, failures = 0, total = 0, a;
  MPI_Comm comm = MPI_COMM_WORLD;
  ruccl_config_t* config = NULL;
  ruccl_comm_t* rc = NULL;
  ruccl_result_t created;
  pthread_t threads[MAX_DEVICES];
  Rank ranks[MAX_DEVICES];

  for (a = 1; a < argc; ++a) {
    if (!strcmp(argv[a], "--devices-per-process") && a + 1 < argc) devices = strtoul(argv[++a], NULL, 10);
    else if (!strcmp(argv[a], "--count") && a + 1 < argc) count = strtoul(argv[++a], NULL, 10);
    else if (!strcmp(argv[a], "--split")) split = 1;
    else {
      fprintf(stderr, "usage: %s [--devices-per-process N] [--count N] [--split]\n", argv[0]);
      return 2;
    }
  }
  if (devices < 1 || devices > MAX_DEVICES) {
    fprintf(stderr, "--devices-per-process must be 1..%d\n", MAX_DEVICES);
    return 2;
  }

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  if (split) MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &comm);

  /* Creation and destruction make MPI calls: from this (the MPI) thread. */
  ruccl_config_create(&config);
  if (ruccl_config_load_env(config) != RUCCL_SUCCESS) {
    fprintf(stderr, "%s\n", ruccl_config_last_error(config));
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  created = ruccl_comm_create_mpi(comm, devices, RUCCL_DEVICE_HOST, NULL, config, &rc);
  if (split) MPI_Comm_free(&comm);  /* ruccl works on its own duplicate */
  if (created != RUCCL_SUCCESS) {
    fprintf(stderr, "process %d: %s\n", me, ruccl_config_last_error(config));
    ruccl_config_destroy(config);
    MPI_Finalize();
    return 1;
  }
  ruccl_comm_world_size(rc, &world);
  ruccl_comm_first_rank(rc, &first);

  for (i = 0; i < devices; ++i) {
    ranks[i].comm = rc;
    ranks[i].rank = first + i;
    ranks[i].world = world;
    ranks[i].count = count;
    ranks[i].failures = 0;
    pthread_create(&threads[i], NULL, run_rank, &ranks[i]);
  }
  for (i = 0; i < devices; ++i) {
    pthread_join(threads[i], NULL);
    failures += ranks[i].failures;
  }
  ruccl_comm_destroy(rc);  /* before MPI_Finalize */
  ruccl_config_destroy(config);

  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (me == 0)
    printf("c_all_reduce: %zu ranks (%zu per process)%s, count %zu: %s (%d failed checks)\n",
           world, devices, split ? " per half" : "", count, total ? "FAILED" : "PASSED", total);
  MPI_Finalize();
  return total ? 1 : 0;
}
