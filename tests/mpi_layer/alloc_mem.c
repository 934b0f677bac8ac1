/* An ordinary MPI program (built against MPI only, not ruccl) that allocates
 * its buffers with MPI_Alloc_mem, as MPI programs that want fast memory do,
 * runs collectives on them and frees them with MPI_Free_mem. Two rounds, each
 * holding 20 large allocations at once (two of 4 MiB + 12 bytes, an odd
 * count, for MPI_Allreduce out of place and in place and MPI_Bcast, and 18 of
 * 1 MiB written at both ends) and one of 64 bytes. Under the ruccl layer the
 * large ones come from ruccl until a process holds 16 of them, the rest and
 * the small one from MPI (run_layer.sh's alloc_mem mode counts them); the
 * second round gets ruccl's again only if MPI_Free_mem gave them back.
 * Prints "alloc_mem: OK" and exits 0 on success. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#define EXTRA 18
static int failures = 0;
static int world_rank;

#define CHECK(cond, ...)                          \
  do {                                            \
    if (!(cond)) {                                \
      if (failures++ < 10) {                      \
        fprintf(stderr, "rank %d: ", world_rank); \
        fprintf(stderr, __VA_ARGS__);             \
        fprintf(stderr, "\n");                    \
      }                                           \
    }                                             \
  } while (0)

static void* alloc(MPI_Aint bytes) {
  void* p = NULL;
  const int rc = MPI_Alloc_mem(bytes, MPI_INFO_NULL, &p);
  CHECK(rc == MPI_SUCCESS && p != NULL, "MPI_Alloc_mem(%ld) failed (%d)", (long)bytes, rc);
  return p;
}

static void release(void* p) {
  const int rc = MPI_Free_mem(p);
  CHECK(rc == MPI_SUCCESS, "MPI_Free_mem failed (%d)", rc);
}

int main(int argc, char** argv) {
  int size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int n = (4 << 20) / (int)sizeof(float) + 3;
  for (int round = 0; round < 2; ++round) {
    float* in = alloc((MPI_Aint)n * (MPI_Aint)sizeof(float));
    float* out = alloc((MPI_Aint)n * (MPI_Aint)sizeof(float));
    char* extra[EXTRA];
    for (int e = 0; e < EXTRA; ++e) {
      extra[e] = alloc(1 << 20);
      if (extra[e] == NULL) continue;
      extra[e][0] = (char)(e + 1);
      extra[e][(1 << 20) - 1] = (char)(e + 2);
    }
    char* small = alloc(64);
    if (small != NULL) memset(small, 7, 64);
    if (in == NULL || out == NULL) break;
    /* Sums of small integers: exact in float. */
    for (int i = 0; i < n; ++i) in[i] = (float)(world_rank + 1 + i % 7);
    const float base = (float)size * (float)(size + 1) / 2.0f;
    MPI_Allreduce(in, out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < n; ++i)
      CHECK(out[i] == base + (float)(size * (i % 7)), "round %d allreduce [%d] = %g", round, i,
            (double)out[i]);
    MPI_Allreduce(MPI_IN_PLACE, in, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < n; ++i)
      CHECK(in[i] == base + (float)(size * (i % 7)), "round %d in place [%d] = %g", round, i,
            (double)in[i]);
    const int root = size - 1;
    for (int i = 0; i < n; ++i) out[i] = world_rank == root ? (float)(i % 1000) : -1.0f;
    MPI_Bcast(out, n, MPI_FLOAT, root, MPI_COMM_WORLD);
    for (int i = 0; i < n; ++i)
      CHECK(out[i] == (float)(i % 1000), "round %d bcast [%d] = %g", round, i, (double)out[i]);
    for (int e = 0; e < EXTRA; ++e) {
      if (extra[e] == NULL) continue;
      CHECK(extra[e][0] == (char)(e + 1) && extra[e][(1 << 20) - 1] == (char)(e + 2),
            "round %d extra %d lost its bytes", round, e);
      release(extra[e]);
    }
    for (int i = 0; small != NULL && i < 64; ++i) CHECK(small[i] == 7, "small [%d]", i);
    if (small != NULL) release(small);
    release(in);
    release(out);
  }
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (world_rank == 0 && all == 0) printf("alloc_mem: OK\n");
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
