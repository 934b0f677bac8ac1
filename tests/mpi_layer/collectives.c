/* An ordinary MPI program (built against MPI only, not ruccl) that checks the
 * collectives the ruccl layer routes against values it computes itself:
 * Allreduce, Reduce, Bcast, Allgather(v), Reduce_scatter(_block), Alltoall(v),
 * Gather(v), Scatter(v), Scan, Exscan and Barrier, over several datatypes and ops, in place and
 * not, on MPI_COMM_WORLD, a duplicate and a split (odd/even ranks). It also runs a few calls the
 * layer must leave to MPI (MAXLOC, a derived datatype, a user op). Prints "collectives: OK" and
 * exits 0 on success. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 1000
static int failures = 0;

#define CHECK(cond, ...)                                          \
  do {                                                            \
    if (!(cond)) {                                                \
      if (failures++ < 10) {                                      \
        fprintf(stderr, "rank %d (%s): ", world_rank, comm_name); \
        fprintf(stderr, __VA_ARGS__);                             \
        fprintf(stderr, "\n");                                    \
      }                                                           \
    }                                                             \
  } while (0)

static int world_rank;
static const char* comm_name;

static int64_t value(int rank, int i) { return (int64_t)((rank * 7 + i * 3) % 23) - 11; }

static void user_sum(void* in, void* inout, int* len, MPI_Datatype* t) {
  (void)t;
  for (int i = 0; i < *len; ++i) ((int*)inout)[i] += ((int*)in)[i];
}

static void test_comm(MPI_Comm comm, const char* name) {
  int rank, size, i, r;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  comm_name = name;
  double* d = malloc(N * sizeof(double));
  double* dout = malloc(N * sizeof(double));
  float* f = malloc(N * sizeof(float));
  int32_t* x = malloc(N * size * sizeof(int32_t));
  int32_t* y = malloc(N * size * sizeof(int32_t));
  int64_t* l = malloc(N * sizeof(int64_t));
  uint64_t* u = malloc(N * sizeof(uint64_t));

  /* Allreduce SUM double, not in place; MAX float in place. */
  for (i = 0; i < N; ++i) d[i] = (double)value(rank, i);
  MPI_Allreduce(d, dout, N, MPI_DOUBLE, MPI_SUM, comm);
  for (i = 0; i < N; ++i) {
    double want = 0;
    for (r = 0; r < size; ++r) want += (double)value(r, i);
    CHECK(dout[i] == want, "allreduce sum double [%d] %g != %g", i, dout[i], want);
  }
  for (i = 0; i < N; ++i) f[i] = (float)value(rank, i);
  MPI_Allreduce(MPI_IN_PLACE, f, N, MPI_FLOAT, MPI_MAX, comm);
  for (i = 0; i < N; ++i) {
    float want = -1e30f;
    for (r = 0; r < size; ++r) want = (float)value(r, i) > want ? (float)value(r, i) : want;
    CHECK(f[i] == want, "allreduce max float in place [%d]", i);
  }
  /* Integer ops: PROD long long, MIN int, BAND/BOR/BXOR uint64, LAND/LOR/LXOR int. */
  for (i = 0; i < N; ++i) l[i] = value(rank, i) % 3 + 2;
  MPI_Allreduce(MPI_IN_PLACE, l, N, MPI_LONG_LONG, MPI_PROD, comm);
  for (i = 0; i < N; ++i) {
    int64_t want = 1;
    for (r = 0; r < size; ++r) want *= value(r, i) % 3 + 2;
    CHECK(l[i] == want, "allreduce prod long long [%d]", i);
  }
  for (i = 0; i < N; ++i) x[i] = (int32_t)value(rank, i);
  MPI_Allreduce(MPI_IN_PLACE, x, N, MPI_INT, MPI_MIN, comm);
  for (i = 0; i < N; ++i) {
    int32_t want = 1000;
    for (r = 0; r < size; ++r) want = value(r, i) < want ? (int32_t)value(r, i) : want;
    CHECK(x[i] == want, "allreduce min int [%d]", i);
  }
  {
    MPI_Op ops[3] = {MPI_BAND, MPI_BOR, MPI_BXOR};
    for (int k = 0; k < 3; ++k) {
      for (i = 0; i < N; ++i)
        u[i] = (uint64_t)(0x9E3779B97F4A7C15ull * (uint64_t)(rank * N + i + 1));
      MPI_Allreduce(MPI_IN_PLACE, u, N, MPI_UINT64_T, ops[k], comm);
      for (i = 0; i < N; ++i) {
        uint64_t want = k == 0 ? ~0ull : 0;
        for (r = 0; r < size; ++r) {
          uint64_t v = (uint64_t)(0x9E3779B97F4A7C15ull * (uint64_t)(r * N + i + 1));
          want = k == 0 ? (want & v) : k == 1 ? (want | v) : (want ^ v);
        }
        CHECK(u[i] == want, "allreduce bitwise op %d uint64 [%d]", k, i);
      }
    }
  }
  {
    MPI_Op ops[3] = {MPI_LAND, MPI_LOR, MPI_LXOR};
    for (int k = 0; k < 3; ++k) {
      for (i = 0; i < N; ++i) x[i] = (rank + i) % 3 == 0 ? 0 : 5;
      MPI_Allreduce(x, y, N, MPI_INT, ops[k], comm);
      for (i = 0; i < N; ++i) {
        int all = 1, any = 0, odd = 0;
        for (r = 0; r < size; ++r) {
          int t = (r + i) % 3 != 0;
          all = all && t;
          any = any || t;
          odd ^= t;
        }
        int want = k == 0 ? all : k == 1 ? any : odd;
        if (size == 1) want = x[i];
        CHECK(y[i] == want, "allreduce logical op %d int [%d] %d != %d", k, i, y[i], want);
      }
    }
  }
  /* Reduce SUM int to the last rank, not in place; in place at the root. */
  for (i = 0; i < N; ++i) x[i] = (int32_t)value(rank, i);
  for (i = 0; i < N; ++i) y[i] = -7;
  MPI_Reduce(x, y, N, MPI_INT, MPI_SUM, size - 1, comm);
  for (i = 0; i < N && rank == size - 1; ++i) {
    int32_t want = 0;
    for (r = 0; r < size; ++r) want += (int32_t)value(r, i);
    CHECK(y[i] == want, "reduce sum int [%d]", i);
  }
  for (i = 0; i < N; ++i) d[i] = (double)value(rank, i);
  MPI_Reduce(rank == 0 ? MPI_IN_PLACE : d, rank == 0 ? d : NULL, N, MPI_DOUBLE, MPI_MAX, 0, comm);
  for (i = 0; i < N && rank == 0; ++i) {
    double want = -1e30;
    for (r = 0; r < size; ++r) want = (double)value(r, i) > want ? (double)value(r, i) : want;
    CHECK(d[i] == want, "reduce max double in place [%d]", i);
  }
  /* Bcast from rank 1 % size: doubles and shorts (moved as bytes). */
  {
    const int root = 1 % size;
    short s[N];
    for (i = 0; i < N; ++i) d[i] = rank == root ? (double)value(99, i) : 0.0;
    for (i = 0; i < N; ++i) s[i] = (short)(rank == root ? i : -1);
    MPI_Bcast(d, N, MPI_DOUBLE, root, comm);
    MPI_Bcast(s, N, MPI_SHORT, root, comm);
    for (i = 0; i < N; ++i) {
      CHECK(d[i] == (double)value(99, i), "bcast double [%d]", i);
      CHECK(s[i] == (short)i, "bcast short [%d]", i);
    }
  }
  /* Allgather ints, not in place and in place. */
  for (i = 0; i < N; ++i) x[i] = (int32_t)value(rank, i);
  MPI_Allgather(x, N, MPI_INT, y, N, MPI_INT, comm);
  for (r = 0; r < size; ++r)
    for (i = 0; i < N; ++i) CHECK(y[r * N + i] == (int32_t)value(r, i), "allgather [%d][%d]", r, i);
  for (i = 0; i < N * size; ++i) y[i] = -1;
  for (i = 0; i < N; ++i) y[rank * N + i] = (int32_t)value(rank, i);
  MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, y, N, MPI_INT, comm);
  for (r = 0; r < size; ++r)
    for (i = 0; i < N; ++i)
      CHECK(y[r * N + i] == (int32_t)value(r, i), "allgather in place [%d][%d]", r, i);
  /* Reduce_scatter_block SUM int, not in place and in place. */
  for (i = 0; i < N * size; ++i) x[i] = (int32_t)value(rank, i);
  MPI_Reduce_scatter_block(x, y, N, MPI_INT, MPI_SUM, comm);
  for (i = 0; i < N; ++i) {
    int32_t want = 0;
    for (r = 0; r < size; ++r) want += (int32_t)value(r, rank * N + i);
    CHECK(y[i] == want, "reduce_scatter_block [%d]", i);
  }
  MPI_Reduce_scatter_block(MPI_IN_PLACE, x, N, MPI_INT, MPI_SUM, comm);
  for (i = 0; i < N; ++i) {
    int32_t want = 0;
    for (r = 0; r < size; ++r) want += (int32_t)value(r, rank * N + i);
    CHECK(x[i] == want, "reduce_scatter_block in place [%d]", i);
  }
  /* Alltoall: block d of rank s holds s * 1000 + d * 10 + i. */
  for (r = 0; r < size; ++r)
    for (i = 0; i < N; ++i) x[r * N + i] = rank * 100000 + r * 1000 + i;
  MPI_Alltoall(x, N, MPI_INT, y, N, MPI_INT, comm);
  for (r = 0; r < size; ++r)
    for (i = 0; i < N; ++i)
      CHECK(y[r * N + i] == r * 100000 + rank * 1000 + i, "alltoall [%d][%d]", r, i);
  MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, x, N, MPI_INT, comm);
  for (r = 0; r < size; ++r)
    for (i = 0; i < N; ++i)
      CHECK(x[r * N + i] == r * 100000 + rank * 1000 + i, "alltoall in place [%d][%d]", r, i);
  /* Alltoallv: rank s sends d + 1 ints to rank d, block d at displacement
   * 2 * d * size + d (not packed); received packed (and then not packed). */
  {
    int sc[64], sd[64], rc[64], rd[64];
    int at = 0;
    for (r = 0; r < size; ++r) {
      sc[r] = r + 1;
      sd[r] = 2 * r * size + r;
      rc[r] = rank + 1;
      rd[r] = at;
      at += rank + 1;
    }
    for (i = 0; i < N * size; ++i) x[i] = -1;
    for (r = 0; r < size; ++r)
      for (i = 0; i < sc[r]; ++i) x[sd[r] + i] = rank * 1000 + r * 10 + i;
    MPI_Alltoallv(x, sc, sd, MPI_INT, y, rc, rd, MPI_INT, comm);
    for (r = 0; r < size; ++r)
      for (i = 0; i < rc[r]; ++i)
        CHECK(y[rd[r] + i] == r * 1000 + rank * 10 + i, "alltoallv [%d][%d]", r, i);
    for (r = 0; r < size; ++r) rd[r] = 3 * r * (rank + 1) + 1;
    for (i = 0; i < N * size; ++i) y[i] = -1;
    MPI_Alltoallv(x, sc, sd, MPI_INT, y, rc, rd, MPI_INT, comm);
    for (r = 0; r < size; ++r)
      for (i = 0; i < rc[r]; ++i)
        CHECK(y[rd[r] + i] == r * 1000 + rank * 10 + i, "alltoallv spread [%d][%d]", r, i);
  }
  /* Reduce_scatter: balanced counts (ruccl's split of 3 * size + 1) and
   * unbalanced ones (rank r gets r + 2), not in place and in place. */
  for (int form = 0; form < 4; ++form) {
    int rc[64], total = 0, before = 0;
    for (r = 0; r < size; ++r) {
      rc[r] = form < 2 ? 3 + (r < 1 ? 1 : 0) : r + 2;
      if (r == rank) before = total;
      total += rc[r];
    }
    for (i = 0; i < total; ++i) l[i] = value(rank, i);
    int64_t* out = form % 2 ? l : (int64_t*)dout;
    MPI_Reduce_scatter(form % 2 ? MPI_IN_PLACE : l, out, rc, MPI_INT64_T, MPI_SUM, comm);
    for (i = 0; i < rc[rank]; ++i) {
      int64_t want = 0;
      for (r = 0; r < size; ++r) want += value(r, before + i);
      CHECK(out[i] == want, "reduce_scatter form %d [%d]", form, i);
    }
  }
  /* Reduce_scatter of complex doubles (two ruccl elements each) with counts
   * that are ruccl's split in MPI elements (rank 0 one more) but not in
   * ruccl's own: taken as ruccl's split they would not fit its shards. */
  {
    int rc[64], total = 0, before = 0;
    for (r = 0; r < size; ++r) {
      rc[r] = 3 + (r < 1 ? 1 : 0);
      if (r == rank) before = total;
      total += rc[r];
    }
    double* zin = malloc(2 * (size_t)total * sizeof(double));
    double* zout = malloc(2 * (size_t)rc[rank] * sizeof(double));
    for (i = 0; i < 2 * total; ++i) zin[i] = (double)value(rank, i);
    MPI_Reduce_scatter(zin, zout, rc, MPI_C_DOUBLE_COMPLEX, MPI_SUM, comm);
    for (i = 0; i < 2 * rc[rank]; ++i) {
      double want = 0;
      for (r = 0; r < size; ++r) want += (double)value(r, 2 * before + i);
      CHECK(zout[i] == want, "reduce_scatter complex [%d]", i);
    }
    free(zin);
    free(zout);
  }
  /* Gather / Gatherv / Scatter / Scatterv / Allgatherv, to and from the last
   * rank, not in place and in place. Rank r's block holds r + 2 ints (v) or
   * N ints, value(r, i); the v-blocks lie spread (displacement 3 * r + 1 +
   * the blocks before). */
  {
    /* The last rank, or COLLECTIVES_ROOT (run_round_robin.sh: a rank whose
     * ruccl rank is not its MPI rank). */
    const char* root_env = getenv("COLLECTIVES_ROOT");
    const int root = root_env != NULL ? atoi(root_env) % size : size - 1;
    int rc[64], rd[64], at = 0;
    for (r = 0; r < size; ++r) {
      rc[r] = r + 2;
      rd[r] = at + 3 * r + 1;
      at = rd[r] + rc[r];
    }
    for (i = 0; i < N; ++i) x[i] = (int32_t)value(rank, i);
    for (i = 0; i < N * size; ++i) y[i] = -1;
    MPI_Gather(x, N, MPI_INT, rank == root ? y : NULL, N, MPI_INT, root, comm);
    for (r = 0; r < size && rank == root; ++r)
      for (i = 0; i < N; ++i) CHECK(y[r * N + i] == (int32_t)value(r, i), "gather [%d][%d]", r, i);
    for (i = 0; i < N * size; ++i) y[i] = -1;
    if (rank == root)
      for (i = 0; i < N; ++i) y[rank * N + i] = (int32_t)value(rank, i);
    MPI_Gather(rank == root ? MPI_IN_PLACE : x, N, MPI_INT, y, N, MPI_INT, root, comm);
    for (r = 0; r < size && rank == root; ++r)
      for (i = 0; i < N; ++i)
        CHECK(y[r * N + i] == (int32_t)value(r, i), "gather in place [%d][%d]", r, i);
    for (i = 0; i < N * size; ++i) y[i] = -1;
    MPI_Gatherv(x, rank + 2, MPI_INT, y, rc, rd, MPI_INT, root, comm);
    for (r = 0; r < size && rank == root; ++r) {
      for (i = 0; i < rc[r]; ++i)
        CHECK(y[rd[r] + i] == (int32_t)value(r, i), "gatherv [%d][%d]", r, i);
      CHECK(y[rd[r] - 1] == -1, "gatherv wrote outside block %d", r);
    }
    if (rank == root)
      for (i = 0; i < rc[rank]; ++i) y[rd[rank] + i] = 4242 + i;
    MPI_Gatherv(rank == root ? MPI_IN_PLACE : x, rank + 2, MPI_INT, y, rc, rd, MPI_INT, root, comm);
    for (r = 0; r < size && rank == root; ++r)
      for (i = 0; i < rc[r]; ++i)
        CHECK(y[rd[r] + i] == (r == root ? 4242 + i : (int32_t)value(r, i)),
              "gatherv in place [%d][%d]", r, i);
    /* Scatter: block d of the root holds value(d, i); doubles. */
    {
      double* big = malloc((size_t)N * size * sizeof(double));
      for (r = 0; r < size; ++r)
        for (i = 0; i < N; ++i) big[r * N + i] = rank == root ? (double)value(r + 50, i) : -5.0;
      for (i = 0; i < N; ++i) dout[i] = -1;
      MPI_Scatter(big, N, MPI_DOUBLE, dout, N, MPI_DOUBLE, root, comm);
      for (i = 0; i < N; ++i) CHECK(dout[i] == (double)value(rank + 50, i), "scatter [%d]", i);
      for (i = 0; i < N; ++i) dout[i] = -1;
      MPI_Scatter(big, N, MPI_DOUBLE, rank == root ? MPI_IN_PLACE : dout, N, MPI_DOUBLE, root,
                  comm);
      for (i = 0; i < N && rank != root; ++i)
        CHECK(dout[i] == (double)value(rank + 50, i), "scatter in place [%d]", i);
      for (i = 0; i < N && rank == root; ++i)
        CHECK(dout[i] == -1, "scatter in place touched recvbuf");
      /* Scatterv of the spread blocks. */
      for (i = 0; i < N * size; ++i) big[i] = rank == root ? (double)(i * 3) : -5.0;
      for (i = 0; i < N; ++i) dout[i] = -1;
      MPI_Scatterv(big, rc, rd, MPI_DOUBLE, dout, rank + 2, MPI_DOUBLE, root, comm);
      for (i = 0; i < rank + 2; ++i)
        CHECK(dout[i] == (double)((rd[rank] + i) * 3), "scatterv [%d]", i);
      CHECK(dout[rank + 2] == -1, "scatterv wrote past its block");
      for (i = 0; i < N; ++i) dout[i] = -1;
      MPI_Scatterv(big, rc, rd, MPI_DOUBLE, rank == root ? MPI_IN_PLACE : dout, rank + 2,
                   MPI_DOUBLE, root, comm);
      for (i = 0; i < rank + 2 && rank != root; ++i)
        CHECK(dout[i] == (double)((rd[rank] + i) * 3), "scatterv in place [%d]", i);
      free(big);
    }
    /* Allgatherv: spread unequal blocks, packed unequal, equal spread; in place. */
    for (int form = 0; form < 4; ++form) {
      int c[64], dsp[64], end = 0;
      for (r = 0; r < size; ++r) {
        c[r] = form == 2 ? 5 : r + 2;
        dsp[r] = form == 1 ? end : end + 2 * r + 1;
        end = dsp[r] + c[r];
      }
      for (i = 0; i < N * size; ++i) y[i] = -1;
      if (form == 3)
        for (i = 0; i < c[rank]; ++i) y[dsp[rank] + i] = (int32_t)value(rank, i);
      MPI_Allgatherv(form == 3 ? MPI_IN_PLACE : x, c[rank], MPI_INT, y, c, dsp, MPI_INT, comm);
      for (r = 0; r < size; ++r) {
        for (i = 0; i < c[r]; ++i)
          CHECK(y[dsp[r] + i] == (int32_t)value(r, i), "allgatherv form %d [%d][%d]", form, r, i);
        CHECK(dsp[r] == 0 || y[dsp[r] - 1] == -1 || form == 1,
              "allgatherv form %d wrote before block %d", form, r);
      }
    }
  }
  /* Scan SUM int, MAX double in place; Exscan SUM int64 (rank 0's recvbuf
   * stays as it was), PROD int64 in place. */
  {
    for (i = 0; i < N; ++i) x[i] = (int32_t)value(rank, i);
    MPI_Scan(x, y, N, MPI_INT, MPI_SUM, comm);
    for (i = 0; i < N; ++i) {
      int32_t want = 0;
      for (r = 0; r <= rank; ++r) want += (int32_t)value(r, i);
      CHECK(y[i] == want, "scan sum int [%d]", i);
    }
    for (i = 0; i < N; ++i) d[i] = (double)value(rank, i);
    MPI_Scan(MPI_IN_PLACE, d, N, MPI_DOUBLE, MPI_MAX, comm);
    for (i = 0; i < N; ++i) {
      double want = -1e30;
      for (r = 0; r <= rank; ++r) want = (double)value(r, i) > want ? (double)value(r, i) : want;
      CHECK(d[i] == want, "scan max double in place [%d]", i);
    }
    for (i = 0; i < N; ++i) l[i] = value(rank, i);
    int64_t* ex = (int64_t*)dout;
    for (i = 0; i < N; ++i) ex[i] = -99;
    MPI_Exscan(l, ex, N, MPI_INT64_T, MPI_SUM, comm);
    for (i = 0; i < N; ++i) {
      int64_t want = rank == 0 ? -99 : 0;
      for (r = 0; r < rank; ++r) want += value(r, i);
      CHECK(ex[i] == want, "exscan sum int64 [%d]", i);
    }
    for (i = 0; i < N; ++i) l[i] = value(rank, i) % 3 + 2;
    MPI_Exscan(MPI_IN_PLACE, l, N, MPI_INT64_T, MPI_PROD, comm);
    for (i = 0; i < N && rank > 0; ++i) {
      int64_t want = 1;
      for (r = 0; r < rank; ++r) want *= value(r, i) % 3 + 2;
      CHECK(l[i] == want, "exscan prod int64 in place [%d]", i);
    }
  }
  MPI_Barrier(comm);

  /* Left to MPI: MAXLOC, a derived datatype, a user op. */
  {
    struct {
      double v;
      int i;
    } in = {(double)rank, rank}, out;
    MPI_Allreduce(&in, &out, 1, MPI_DOUBLE_INT, MPI_MAXLOC, comm);
    CHECK(out.i == size - 1, "maxloc");
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    int p[2] = {rank, 1}, q[2];
    MPI_Op op;
    MPI_Op_create(user_sum, 1, &op);
    MPI_Allreduce(p, q, 2, MPI_INT, op, comm);
    CHECK(q[1] == size, "user op");
    MPI_Bcast(p, 1, pair, 0, comm);
    CHECK(p[0] == 0, "derived bcast");
    MPI_Op_free(&op);
    MPI_Type_free(&pair);
  }
  free(d);
  free(dout);
  free(f);
  free(x);
  free(y);
  free(l);
  free(u);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  test_comm(MPI_COMM_WORLD, "MPI_COMM_WORLD");
  MPI_Comm dup, split;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  test_comm(dup, "dup");
  MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, -world_rank, &split);
  test_comm(split, "split");
  MPI_Comm_free(&split);
  test_comm(dup, "dup again");
  MPI_Comm_free(&dup);
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (world_rank == 0) printf(total == 0 ? "collectives: OK\n" : "collectives: %d FAILED\n", total);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
