/* An OSU-style latency loop of MPI_Allreduce (float, SUM), plain MPI: built
 * against MPI only, so the same binary measures MPI alone and MPI under the
 * ruccl layer (LD_PRELOAD=libruccl_mpi.so). For each size from 8 B to
 * --max bytes (powers of 2, default 1 MiB): --warmup calls, then --iters
 * timed calls between barriers; prints "<bytes> <average us per call>" on
 * rank 0, the largest average over the ranks. Checks the first result.
 * --comm dup: on a duplicate of MPI_COMM_WORLD (under the layer, a
 * communicator split from the world's); default world. --coll gather,
 * scatter, allgatherv or scan times that collective instead (bytes: each
 * rank's block; gather and scatter to and from rank 0). --alloc mpi: the
 * buffers come from MPI_Alloc_mem (under the layer with
 * RUCCL_MPI_ALLOC_MEM_BYTES set, memory the node's other processes read in
 * place); default malloc. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void call(const char* coll, const float* in, float* out, int count, const int* counts,
                 const int* displs, MPI_Comm comm) {
  if (!strcmp(coll, "gather")) MPI_Gather(in, count, MPI_FLOAT, out, count, MPI_FLOAT, 0, comm);
  else if (!strcmp(coll, "scatter"))
    MPI_Scatter(in, count, MPI_FLOAT, out, count, MPI_FLOAT, 0, comm);
  else if (!strcmp(coll, "allgatherv"))
    MPI_Allgatherv(in, count, MPI_FLOAT, out, counts, displs, MPI_FLOAT, comm);
  else if (!strcmp(coll, "scan")) MPI_Scan(in, out, count, MPI_FLOAT, MPI_SUM, comm);
  else MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, comm);
}

int main(int argc, char** argv) {
  long max_bytes = 1 << 20, iters = 1000, warmup = 100;
  int dup = 0, alloc_mem = 0;
  const char* coll = "allreduce";
  for (int a = 1; a + 1 < argc; a += 2) {
    if (!strcmp(argv[a], "--max")) max_bytes = atol(argv[a + 1]);
    else if (!strcmp(argv[a], "--comm")) dup = !strcmp(argv[a + 1], "dup");
    else if (!strcmp(argv[a], "--alloc")) alloc_mem = !strcmp(argv[a + 1], "mpi");
    else if (!strcmp(argv[a], "--coll")) coll = argv[a + 1];
    else if (!strcmp(argv[a], "--iters")) iters = atol(argv[a + 1]);
    else if (!strcmp(argv[a], "--warmup")) warmup = atol(argv[a + 1]);
  }
  MPI_Init(&argc, &argv);
  MPI_Comm comm = MPI_COMM_WORLD;
  if (dup) MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const long max_count = max_bytes / (long)sizeof(float);
  const size_t buffer_bytes =
      (size_t)max_count * sizeof(float) * (size_t)size; /* scatter: size blocks */
  float *in = NULL, *out = NULL;
  if (alloc_mem) {
    MPI_Alloc_mem((MPI_Aint)buffer_bytes, MPI_INFO_NULL, &in);
    MPI_Alloc_mem((MPI_Aint)buffer_bytes, MPI_INFO_NULL, &out);
  } else {
    in = malloc(buffer_bytes);
    out = malloc(buffer_bytes);
  }
  int* counts = malloc((size_t)size * sizeof(int));
  int* displs = malloc((size_t)size * sizeof(int));
  for (long i = 0; i < max_count * size; ++i) in[i] = (float)(rank + 1);
  int bad = 0;
  if (rank == 0)
    printf("# bytes avg_us (MPI_%s float, %d ranks, %s)\n", coll, size,
           dup ? "a duplicate of MPI_COMM_WORLD" : "MPI_COMM_WORLD");
  for (long bytes = 8; bytes <= max_bytes; bytes *= 2) {
    const int count = (int)(bytes / (long)sizeof(float));
    /* Fewer iterations for large sizes, as OSU does. */
    const long n = bytes > 65536 ? iters / 10 + 1 : iters;
    for (int r = 0; r < size; ++r) {
      counts[r] = count;
      displs[r] = r * count;
    }
    for (long k = 0; k < warmup; ++k) call(coll, in, out, count, counts, displs, comm);
    if (!strcmp(coll, "allreduce") && out[0] != (float)size * (float)(size + 1) / 2) bad = 1;
    if (!strcmp(coll, "allgatherv") && out[(size - 1) * count] != (float)size) bad = 1;
    MPI_Barrier(comm);
    const double t0 = MPI_Wtime();
    for (long k = 0; k < n; ++k) call(coll, in, out, count, counts, displs, comm);
    const double us = (MPI_Wtime() - t0) * 1e6 / (double)n;
    double worst = 0;
    MPI_Reduce(&us, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("%ld %.2f\n", bytes, worst);
  }
  if (bad) fprintf(stderr, "rank %d: wrong %s result\n", rank, coll);
  if (alloc_mem) {
    MPI_Free_mem(in);
    MPI_Free_mem(out);
  } else {
    free(in);
    free(out);
  }
  free(counts);
  free(displs);
  if (dup) MPI_Comm_free(&comm);
  MPI_Finalize();
  return bad;
}
