// A bootstrap over an MPI communicator named by its Fortran handle (MPI_Fint),
// for the C API (include/ruccl/ruccl.h): Fortran programs hold communicators
// as integers, and C programs pass MPI_Comm_c2f(comm). Unlike
// mpi_bootstrap.hpp this header does not include <mpi.h>, so code outside
// src/bootstrap may call it.
#pragma once

#include <cstdint>
#include <memory>

#include "bootstrap/bootstrap.hpp"

namespace ruccl::bootstrap {

// mpi_bootstrap(MPI_Comm_f2c(handle)): collective over that communicator, same
// contract (MPI initialised by the caller, never finalised here; the
// communicator is duplicated). kInvalidArgument when MPI is not initialised,
// or when `handle` does not fit an MPI_Fint or names no communicator.
Result<std::unique_ptr<Bootstrap>> mpi_bootstrap_from_fortran(std::int64_t handle);

}  // namespace ruccl::bootstrap
