// The decision every intercepted collective makes (internal to src/mpi_layer).
#pragma once

#include <mpi.h>

#include "mpi_layer/registry.hpp"

namespace ruccl::mpi_layer {

// The Route serving this call, or null when it goes to PMPI; counted either
// way. `local` is the argument check's verdict (kRouted when the arguments
// map); `needs_mpi_order`: the call places blocks by rank (Allgather,
// Alltoall(v), Reduce_scatter(_block)), so ruccl's rank order must be MPI's.
Route* routed(Coll c, MPI_Comm comm, Why local, bool needs_mpi_order = false);

// MPI_SUCCESS for ok, else `s` through the communicator's error handler
// (Registry::fail), whose code is returned.
int run_status(Coll c, MPI_Comm comm, const Status& s);

}  // namespace ruccl::mpi_layer
