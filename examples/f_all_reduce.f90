! f_all_reduce: ruccl's C API from Fortran (iso_c_binding) across MPI processes.
!
! The program holds MPI_COMM_WORLD as Fortran does, an integer handle, and
! passes it to ruccl_comm_create_mpi_f with one local host device per process.
! It runs a Sum all-reduce (out-of-place) and a Mean all-reduce (in-place) of
! real(c_double) arrays and checks every element against a closed form.
!
!   mpirun -np 2 build/examples/f_all_reduce
!   ! f_all_reduce: 2 ranks, count 1003: PASSED
!
! The interface block below is the part of include/ruccl/ruccl.h this program
! uses: enums are integer(c_int), size_t is integer(c_size_t), handles and
! buffers are type(c_ptr), and strings come back as C pointers.
program f_all_reduce
  use, intrinsic :: iso_c_binding
  use mpi
  implicit none

  integer(c_int), parameter :: RUCCL_SUCCESS = 0
  integer(c_int), parameter :: RUCCL_DEVICE_HOST = 0
  integer(c_int), parameter :: RUCCL_F64 = 3
  integer(c_int), parameter :: RUCCL_SUM = 0, RUCCL_MEAN = 1

  interface
    integer(c_int) function ruccl_config_create(config) bind(C, name="ruccl_config_create")
      import :: c_int, c_ptr
      type(c_ptr), intent(out) :: config
    end function
    integer(c_int) function ruccl_config_set_timeout_ms(config, ms) &
        bind(C, name="ruccl_config_set_timeout_ms")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: config
      integer(c_int64_t), value :: ms
    end function
    type(c_ptr) function ruccl_config_last_error(config) bind(C, name="ruccl_config_last_error")
      import :: c_ptr
      type(c_ptr), value :: config
    end function
    integer(c_int) function ruccl_config_destroy(config) bind(C, name="ruccl_config_destroy")
      import :: c_int, c_ptr
      type(c_ptr), value :: config
    end function
    integer(c_int) function ruccl_comm_create_mpi_f(mpi_comm, num_local_devices, kind, &
        device_indices, config, comm) bind(C, name="ruccl_comm_create_mpi_f")
      import :: c_int, c_ptr, c_int64_t, c_size_t
      integer(c_int64_t), value :: mpi_comm
      integer(c_size_t), value :: num_local_devices
      integer(c_int), value :: kind
      type(c_ptr), value :: device_indices
      type(c_ptr), value :: config
      type(c_ptr), intent(out) :: comm
    end function
    integer(c_int) function ruccl_comm_world_size(comm, world_size) &
        bind(C, name="ruccl_comm_world_size")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: comm
      integer(c_size_t), intent(out) :: world_size
    end function
    integer(c_int) function ruccl_comm_first_rank(comm, first_rank) &
        bind(C, name="ruccl_comm_first_rank")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: comm
      integer(c_size_t), intent(out) :: first_rank
    end function
    integer(c_int) function ruccl_all_reduce(comm, rank, sendbuf, recvbuf, count, dtype, op, &
        stream) bind(C, name="ruccl_all_reduce")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: comm
      integer(c_size_t), value :: rank
      type(c_ptr), value :: sendbuf, recvbuf
      integer(c_size_t), value :: count
      integer(c_int), value :: dtype, op
      type(c_ptr), value :: stream
    end function
    type(c_ptr) function ruccl_comm_last_error(comm, rank) bind(C, name="ruccl_comm_last_error")
      import :: c_ptr, c_size_t
      type(c_ptr), value :: comm
      integer(c_size_t), value :: rank
    end function
    integer(c_int) function ruccl_comm_destroy(comm) bind(C, name="ruccl_comm_destroy")
      import :: c_int, c_ptr
      type(c_ptr), value :: comm
    end function
  end interface

  integer, parameter :: count = 1003
  integer :: ierr, me, i, failures, total
  integer(c_int) :: rc
  integer(c_size_t) :: world, rank
  type(c_ptr) :: config, comm
  real(c_double), allocatable, target :: x(:), y(:)
  real(c_double) :: n, want

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, me, ierr)

  rc = ruccl_config_create(config)
  rc = ruccl_config_set_timeout_ms(config, 60000_c_int64_t)
  ! MPI_COMM_WORLD is a Fortran integer handle: exactly what ruccl_comm_create_mpi_f takes.
  rc = ruccl_comm_create_mpi_f(int(MPI_COMM_WORLD, c_int64_t), 1_c_size_t, RUCCL_DEVICE_HOST, &
                               c_null_ptr, config, comm)
  if (rc /= RUCCL_SUCCESS) then
    print '(a, i0, a, a)', 'process ', me, ': ', c_string(ruccl_config_last_error(config))
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  rc = ruccl_comm_world_size(comm, world)
  rc = ruccl_comm_first_rank(comm, rank)  ! one device per process: its only rank
  n = real(world, c_double)

  allocate(x(count), y(count))
  failures = 0
  ! Sum: rank r holds (r + 1) + mod(i, 7), so the sum is n(n+1)/2 + n mod(i, 7).
  do i = 1, count
    x(i) = real(rank + 1, c_double) + real(mod(i, 7), c_double)
  end do
  rc = ruccl_all_reduce(comm, rank, c_loc(x), c_loc(y), int(count, c_size_t), RUCCL_F64, &
                        RUCCL_SUM, c_null_ptr)
  call check(rc, 'all_reduce sum')
  do i = 1, count
    want = n * (n + 1) / 2 + n * real(mod(i, 7), c_double)
    if (y(i) /= want) failures = failures + 1
  end do
  ! Mean, in place: rank r holds 2r + mod(i, 3), so the mean is n - 1 + mod(i, 3).
  do i = 1, count
    x(i) = 2 * real(rank, c_double) + real(mod(i, 3), c_double)
  end do
  rc = ruccl_all_reduce(comm, rank, c_loc(x), c_loc(x), int(count, c_size_t), RUCCL_F64, &
                        RUCCL_MEAN, c_null_ptr)
  call check(rc, 'all_reduce mean')
  do i = 1, count
    if (x(i) /= n - 1 + real(mod(i, 3), c_double)) failures = failures + 1
  end do

  rc = ruccl_comm_destroy(comm)  ! before MPI_Finalize
  rc = ruccl_config_destroy(config)
  call MPI_Allreduce(failures, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (me == 0) then
    if (total == 0) then
      print '(a, i0, a, i0, a)', 'f_all_reduce: ', world, ' ranks, count ', count, ': PASSED'
    else
      print '(a, i0, a)', 'f_all_reduce: FAILED (', total, ' failed checks)'
    end if
  end if
  call MPI_Finalize(ierr)
  if (total /= 0) stop 1

contains

  subroutine check(code, what)
    integer(c_int), intent(in) :: code
    character(*), intent(in) :: what
    if (code /= RUCCL_SUCCESS) then
      print '(a, i0, a, a, a, a)', 'rank ', rank, ': ', what, ': ', &
            c_string(ruccl_comm_last_error(comm, rank))
      failures = failures + 1
    end if
  end subroutine

  ! A NUL-terminated C string as a Fortran string.
  function c_string(p) result(s)
    type(c_ptr), intent(in) :: p
    character(:), allocatable :: s
    character(kind=c_char), pointer :: chars(:)
    integer :: length
    call c_f_pointer(p, chars, [huge(0)])
    length = 0
    do while (chars(length + 1) /= c_null_char)
      length = length + 1
    end do
    allocate(character(length) :: s)
    s = transfer(chars(1:length), s)
  end function

end program f_all_reduce
