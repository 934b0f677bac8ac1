/* An installed ruccl from C: an in-process all-reduce of 2 host ranks through
 * ruccl/ruccl.h, and the MPI creation entry point (present in every build). */
#include <pthread.h>
#include <stdio.h>

#include <ruccl/ruccl.h>

#define COUNT 1001

typedef struct {
  ruccl_comm_t* comm;
  size_t rank;
  int failures;
} Rank;

static void* run(void* arg) {
  Rank* r = arg;
  static double data[2][COUNT];
  size_t i;
  for (i = 0; i < COUNT; ++i) data[r->rank][i] = (double)(r->rank + 1) * (double)(i % 13);
  if (ruccl_all_reduce(r->comm, r->rank, data[r->rank], data[r->rank], COUNT, RUCCL_F64, RUCCL_SUM,
                       NULL) != RUCCL_SUCCESS) {
    fprintf(stderr, "rank %zu: %s\n", r->rank, ruccl_comm_last_error(r->comm, r->rank));
    r->failures = 1;
    return NULL;
  }
  for (i = 0; i < COUNT; ++i)
    if (data[r->rank][i] != 3.0 * (double)(i % 13)) ++r->failures;
  return NULL;
}

int main(void) {
  ruccl_comm_t* comm = NULL;
  ruccl_comm_t* world = NULL;
  pthread_t t;
  Rank ranks[2] = {{NULL, 0, 0}, {NULL, 1, 0}};
  ruccl_result_t mpi;
  if (ruccl_comm_create_local(2, RUCCL_DEVICE_HOST, NULL, NULL, &comm) != RUCCL_SUCCESS) return 1;
  ranks[0].comm = ranks[1].comm = comm;
  pthread_create(&t, NULL, run, &ranks[1]);
  run(&ranks[0]);
  pthread_join(t, NULL);
  ruccl_comm_destroy(comm);
  /* MPI is not initialised here: a clean error, never a crash. */
  mpi = ruccl_comm_create_mpi_f(0, 1, RUCCL_DEVICE_HOST, NULL, NULL, &world);
  if (mpi == RUCCL_SUCCESS || world != NULL) return 1;
  if (ranks[0].failures + ranks[1].failures) {
    printf("consumer_c: FAILED\n");
    return 1;
  }
  printf("consumer_c: PASSED (MPI creation without MPI: %s)\n", ruccl_error_string(mpi));
  return 0;
}
