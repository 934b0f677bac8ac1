! An ordinary Fortran MPI program (built against MPI only) that checks the
! collectives the ruccl layer routes against values it computes itself:
! Allreduce (out of place and MPI_IN_PLACE), Reduce (MPI_IN_PLACE at the
! root), Bcast, Allgather (and in place), Reduce_scatter_block,
! Reduce_scatter, Alltoall, Alltoallv, Gather(v), Scatter(v), Allgatherv,
! Scan, Exscan and Barrier, on MPI_COMM_WORLD and a
! duplicate; and one call the layer leaves to MPI (MAXLOC on MPI_2INTEGER).
! Built twice: with `use mpi` and, with RUCCL_F08 defined, `use mpi_f08`
! (whose communicators are type(MPI_Comm)). Prints "f_collectives: OK" and
! stops with 0 on success.
#ifdef RUCCL_F08
#define COMM_T type(MPI_Comm)
#else
#define COMM_T integer
#endif
program f_collectives
#ifdef RUCCL_F08
  use mpi_f08
#else
  use mpi
#endif
  implicit none
  integer :: ierr, world_rank, failures, total
  COMM_T :: dup

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, world_rank, ierr)
  failures = 0
  ! The duplicate first: its ruccl communicator shares the world's transports
  ! only when the layer made the world's at MPI_Init (run_layer.sh checks).
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  call test_comm(dup)
  call test_comm(MPI_COMM_WORLD)
  call MPI_Comm_free(dup, ierr)
  call MPI_Allreduce(failures, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (world_rank == 0 .and. total == 0) print '(a)', 'f_collectives: OK'
  if (world_rank == 0 .and. total /= 0) print '(a, i0, a)', 'f_collectives: ', total, ' FAILED'
  call MPI_Finalize(ierr)
  if (total /= 0) stop 1

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    if (.not. ok) then
      failures = failures + 1
      if (failures <= 10) print '(a, i0, a, a)', 'rank ', world_rank, ': wrong ', what
    end if
  end subroutine

  subroutine test_comm(comm)
    COMM_T, intent(in) :: comm
    integer, parameter :: n = 1000
    integer :: rank, size, i, r, root, err
    double precision :: x(n), y(n)
    integer :: a(n), b(n)
    integer, allocatable :: gathered(:), sendv(:), recvv(:), counts(:), displs(:), block(:)
    integer :: pair(2), best(2)

    call MPI_Comm_rank(comm, rank, err)
    call MPI_Comm_size(comm, size, err)
    call check(err == MPI_SUCCESS, 'ierror')

    ! Allreduce, Sum of doubles: rank r holds r + i.
    do i = 1, n
      x(i) = dble(rank + i)
    end do
    call MPI_Allreduce(x, y, n, MPI_DOUBLE_PRECISION, MPI_SUM, comm, err)
    call check(err == MPI_SUCCESS, 'allreduce ierror')
    call check(all(y == [(dble(size * i + size * (size - 1) / 2), i = 1, n)]), 'allreduce sum')
    ! In place, Max of integers.
    a = [(mod(rank * 7 + i, 23), i = 1, n)]
    call MPI_Allreduce(MPI_IN_PLACE, a, n, MPI_INTEGER, MPI_MAX, comm, err)
    do i = 1, n
      call check(a(i) == maxval([(mod(r * 7 + i, 23), r = 0, size - 1)]), 'allreduce max in place')
    end do

    ! Reduce to the last rank, in place there.
    root = size - 1
    a = [(rank + i, i = 1, n)]
    if (rank == root) then
      call MPI_Reduce(MPI_IN_PLACE, a, n, MPI_INTEGER, MPI_SUM, root, comm, err)
      call check(all(a == [(size * i + size * (size - 1) / 2, i = 1, n)]), 'reduce in place')
    else
      call MPI_Reduce(a, b, n, MPI_INTEGER, MPI_SUM, root, comm, err)
    end if

    ! Bcast from rank 0.
    a = 0
    if (rank == 0) a = [(3 * i, i = 1, n)]
    call MPI_Bcast(a, n, MPI_INTEGER, 0, comm, err)
    call check(all(a == [(3 * i, i = 1, n)]), 'bcast')

    ! Allgather of 3 integers per rank, then the same in place.
    allocate(gathered(3 * size))
    call MPI_Allgather([rank, 2 * rank, 3 * rank], 3, MPI_INTEGER, gathered, 3, MPI_INTEGER, &
                       comm, err)
    call check(all(gathered == [((r * i, i = 1, 3), r = 0, size - 1)]), 'allgather')
    gathered = -1
    gathered(3 * rank + 1:3 * rank + 3) = [rank, 2 * rank, 3 * rank]
    call MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, gathered, 3, MPI_INTEGER, comm, err)
    call check(all(gathered == [((r * i, i = 1, 3), r = 0, size - 1)]), 'allgather in place')

    ! Reduce_scatter_block: 2 per rank, element j of rank r is r + j.
    allocate(block(2 * size))
    block = [(rank + i, i = 1, 2 * size)]
    call MPI_Reduce_scatter_block(block, b, 2, MPI_INTEGER, MPI_SUM, comm, err)
    call check(b(1) == size * (2 * rank + 1) + size * (size - 1) / 2 .and. &
               b(2) == size * (2 * rank + 2) + size * (size - 1) / 2, 'reduce_scatter_block')

    ! Reduce_scatter with counts 1, 2, 1, 2, ...
    allocate(counts(size), displs(size))
    counts = [(1 + mod(r, 2), r = 0, size - 1)]
    displs = [(sum(counts(1:r)), r = 0, size - 1)]
    x(1:sum(counts)) = [(dble(rank * i), i = 1, sum(counts))]
    call MPI_Reduce_scatter(x, y, counts, MPI_DOUBLE_PRECISION, MPI_SUM, comm, err)
    do i = 1, counts(rank + 1)
      call check(y(i) == dble((displs(rank + 1) + i) * size * (size - 1) / 2), 'reduce_scatter')
    end do

    ! Alltoall: rank r sends 100 r + d to rank d.
    allocate(sendv(size), recvv(size))
    sendv = [(100 * rank + r, r = 0, size - 1)]
    call MPI_Alltoall(sendv, 1, MPI_INTEGER, recvv, 1, MPI_INTEGER, comm, err)
    call check(all(recvv == [(100 * r + rank, r = 0, size - 1)]), 'alltoall')

    ! Alltoallv: one element to every rank, received in reverse order.
    counts = 1
    displs = [(r, r = 0, size - 1)]
    block(1:size) = [(size - 1 - r, r = 0, size - 1)]
    call MPI_Alltoallv(sendv, counts, displs, MPI_INTEGER, recvv, counts, block(1:size), &
                       MPI_INTEGER, comm, err)
    call check(all(recvv == [(100 * (size - 1 - r) + rank, r = 0, size - 1)]), 'alltoallv')

    ! Gather to the last rank (3 integers each), then in place there.
    root = size - 1
    gathered = -1
    call MPI_Gather([rank, 2 * rank, 3 * rank], 3, MPI_INTEGER, gathered, 3, MPI_INTEGER, &
                    root, comm, err)
    if (rank == root) call check(all(gathered == [((r * i, i = 1, 3), r = 0, size - 1)]), 'gather')
    gathered = -1
    if (rank == root) then
      gathered(3 * rank + 1:3 * rank + 3) = [rank, 2 * rank, 3 * rank]
      call MPI_Gather(MPI_IN_PLACE, 3, MPI_INTEGER, gathered, 3, MPI_INTEGER, root, comm, err)
      call check(all(gathered == [((r * i, i = 1, 3), r = 0, size - 1)]), 'gather in place')
    else
      call MPI_Gather([rank, 2 * rank, 3 * rank], 3, MPI_INTEGER, gathered, 3, MPI_INTEGER, &
                      root, comm, err)
    end if
    ! Scatter from the last rank: block d is [d, 2 d, 3 d]; in place at the root.
    if (rank == root) gathered = [((r * i, i = 1, 3), r = 0, size - 1)]
    b(1:3) = -1
    call MPI_Scatter(gathered, 3, MPI_INTEGER, b, 3, MPI_INTEGER, root, comm, err)
    call check(all(b(1:3) == [rank, 2 * rank, 3 * rank]), 'scatter')
    if (rank == root) then
      call MPI_Scatter(gathered, 3, MPI_INTEGER, MPI_IN_PLACE, 3, MPI_INTEGER, root, comm, err)
    else
      b(1:3) = -1
      call MPI_Scatter(gathered, 3, MPI_INTEGER, b, 3, MPI_INTEGER, root, comm, err)
      call check(all(b(1:3) == [rank, 2 * rank, 3 * rank]), 'scatter in place')
    end if
    ! Gatherv / Scatterv / Allgatherv with counts 1, 2, 1, 2, ... at displacements
    ! 2 apart more than packed.
    counts = [(1 + mod(r, 2), r = 0, size - 1)]
    displs = [(sum(counts(1:r)) + 2 * r, r = 0, size - 1)]
    deallocate(gathered)
    allocate(gathered(sum(counts) + 2 * size))
    gathered = -1
    call MPI_Gatherv([(10 * rank + i, i = 1, counts(rank + 1))], counts(rank + 1), MPI_INTEGER, &
                     gathered, counts, displs, MPI_INTEGER, root, comm, err)
    if (rank == root) then
      do r = 0, size - 1
        call check(all(gathered(displs(r + 1) + 1:displs(r + 1) + counts(r + 1)) == &
                       [(10 * r + i, i = 1, counts(r + 1))]), 'gatherv')
      end do
    end if
    b(1:2) = -1
    call MPI_Scatterv(gathered, counts, displs, MPI_INTEGER, b, counts(rank + 1), MPI_INTEGER, &
                      root, comm, err)
    call check(all(b(1:counts(rank + 1)) == [(10 * rank + i, i = 1, counts(rank + 1))]), 'scatterv')
    gathered = -1
    call MPI_Allgatherv([(10 * rank + i, i = 1, counts(rank + 1))], counts(rank + 1), &
                        MPI_INTEGER, gathered, counts, displs, MPI_INTEGER, comm, err)
    do r = 0, size - 1
      call check(all(gathered(displs(r + 1) + 1:displs(r + 1) + counts(r + 1)) == &
                     [(10 * r + i, i = 1, counts(r + 1))]), 'allgatherv')
    end do

    ! Scan and Exscan, Sum of integers: rank r holds r + i.
    a = [(rank + i, i = 1, n)]
    call MPI_Scan(a, b, n, MPI_INTEGER, MPI_SUM, comm, err)
    call check(all(b == [((rank + 1) * i + rank * (rank + 1) / 2, i = 1, n)]), 'scan')
    b = -1
    call MPI_Exscan(a, b, n, MPI_INTEGER, MPI_SUM, comm, err)
    if (rank > 0) call check(all(b == [(rank * i + rank * (rank - 1) / 2, i = 1, n)]), 'exscan')
    if (rank == 0) call check(all(b == -1), 'exscan left rank 0 alone')

    call MPI_Barrier(comm, err)
    call check(err == MPI_SUCCESS, 'barrier')

    ! MAXLOC on MPI_2INTEGER: left to MPI.
    pair = [mod(rank * 5, size), rank]
    call MPI_Allreduce(pair, best, 1, MPI_2INTEGER, MPI_MAXLOC, comm, err)
    call check(best(1) == maxval([(mod(r * 5, size), r = 0, size - 1)]), 'maxloc')
  end subroutine

end program f_collectives
