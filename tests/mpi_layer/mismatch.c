/* An MPI program whose ranks pass different counts to MPI_Allreduce (an
 * erroneous program: under plain MPI it may hang or corrupt memory, so run it
 * only under the ruccl layer). With MPI_ERRORS_RETURN every rank must get an
 * error back whose MPI_Error_string is ruccl's typed message naming both
 * ranks ("rank 0 ... rank 1"); then a correct call still works.
 * Prints "mismatch: OK" on success. With the argument "fatal" it keeps
 * MPI_ERRORS_ARE_FATAL: the job must abort with ruccl's message. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char** argv) {
  int rank, size, ok = 1;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 2 || strcmp(argv[1], "fatal") != 0)
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  double x[16] = {0}, y[16];
  const int count = rank == 0 ? 8 : 9; /* rank 0 passes 8, the others 9 */
  const int rc = MPI_Allreduce(x, y, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0, cls = -1;
  if (rc != MPI_SUCCESS) {
    MPI_Error_string(rc, text, &len);
    MPI_Error_class(rc, &cls);
  }
  char class_text[MPI_MAX_ERROR_STRING] = "";
  if (rc != MPI_SUCCESS) MPI_Error_string(cls, class_text, &len);
  printf("rank %d: rc %d class %d (%s): %s\n", rank, rc, cls, class_text, text);
  if (strstr(class_text, "ruccl ShapeMismatch") == NULL) ok = 0;
  if (rc == MPI_SUCCESS || strstr(text, "ruccl") == NULL || strstr(text, "rank 0") == NULL ||
      strstr(text, "rank 1") == NULL || strstr(text, "ShapeMismatch") == NULL)
    ok = 0;
  /* The communicator still works for a correct call. */
  double one = 1, sum = 0;
  if (MPI_Allreduce(&one, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS ||
      sum != (double)size)
    ok = 0;
  int all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (rank == 0) printf(all ? "mismatch: OK\n" : "mismatch: FAILED\n");
  MPI_Finalize();
  return all ? 0 : 1;
}
