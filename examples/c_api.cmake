# The C API examples (include/ruccl/ruccl.h) under mpirun, label mpi. Included
# from examples/CMakeLists.txt; needs the multinode layer (MPI + UCX).
#   c_all_reduce  C99 + pthreads: MPI_COMM_WORLD, or --split halves of it
#   f_all_reduce  Fortran through iso_c_binding, MPI_COMM_WORLD's integer
#                 handle; built when a Fortran compiler and MPI's Fortran
#                 bindings are found (Debian: gfortran, libopenmpi-dev)
if(NOT TARGET ruccl::multinode)
  return()
endif()
find_package(Threads REQUIRED)

add_executable(c_all_reduce c_all_reduce.c)
target_link_libraries(c_all_reduce PRIVATE ruccl::multinode MPI::MPI_C Threads::Threads)
set_target_properties(c_all_reduce PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
target_compile_options(c_all_reduce PRIVATE -Wall -Wextra -Wpedantic)

include(CheckLanguage)
check_language(Fortran)
set(ruccl_fortran_example FALSE)
if(CMAKE_Fortran_COMPILER)
  enable_language(Fortran)
  find_package(MPI COMPONENTS Fortran QUIET)
  if(MPI_Fortran_FOUND)
    add_executable(f_all_reduce f_all_reduce.f90)
    # Linked by the C++ compiler (ruccl is C++), with the Fortran runtime.
    target_link_libraries(f_all_reduce PRIVATE ruccl::multinode MPI::MPI_Fortran)
    set(ruccl_fortran_example TRUE)
  else()
    message(STATUS "ruccl: MPI has no Fortran bindings here: f_all_reduce not built")
  endif()
else()
  message(STATUS "ruccl: no Fortran compiler (Debian: apt-get install gfortran): f_all_reduce not built")
endif()

if(RUCCL_BUILD_TESTS AND MPIEXEC_EXECUTABLE)
  set(ruccl_c_api_mpiexec ${MPIEXEC_EXECUTABLE} ${MPIEXEC_PREFLAGS} --oversubscribe
      --allow-run-as-root --timeout 50 ${MPIEXEC_NUMPROC_FLAG})
  add_test(NAME mpi_c_all_reduce_p1_d1 COMMAND ${ruccl_c_api_mpiexec} 1 $<TARGET_FILE:c_all_reduce>)
  add_test(NAME mpi_c_all_reduce_p2_d2
    COMMAND ${ruccl_c_api_mpiexec} 2 $<TARGET_FILE:c_all_reduce> --devices-per-process 2)
  # Two ruccl communicators over two halves of MPI_COMM_WORLD (arbitrary MPI_Comm).
  add_test(NAME mpi_c_all_reduce_p4_split
    COMMAND ${ruccl_c_api_mpiexec} 4 $<TARGET_FILE:c_all_reduce> --split --count 100003)
  set_tests_properties(mpi_c_all_reduce_p1_d1 mpi_c_all_reduce_p2_d2 mpi_c_all_reduce_p4_split
    PROPERTIES LABELS mpi TIMEOUT 60 PASS_REGULAR_EXPRESSION "c_all_reduce: .*: PASSED")
  if(ruccl_fortran_example)
    add_test(NAME mpi_f_all_reduce_p2 COMMAND ${ruccl_c_api_mpiexec} 2 $<TARGET_FILE:f_all_reduce>)
    set_tests_properties(mpi_f_all_reduce_p2 PROPERTIES LABELS mpi TIMEOUT 60
                         PASS_REGULAR_EXPRESSION "f_all_reduce: 2 ranks, count 1003: PASSED")
  endif()
endif()
