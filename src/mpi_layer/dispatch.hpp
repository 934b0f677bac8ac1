// The decision every intercepted collective makes (internal to src/mpi_layer).
#pragma once

#include <mpi.h>

#include <optional>

#include "mpi_layer/mapping.hpp"
#include "mpi_layer/registry.hpp"

namespace ruccl::mpi_layer {

// The Route serving this call (its calls lock held under
// MPI_THREAD_MULTIPLE), or none when it goes to PMPI; counted either way.
// `local` is the argument check's verdict (kRouted when the arguments map).
// (A Route whose ruccl rank order is not MPI's serves every collective: the
// callers put blocks and roots in ruccl order, Route::mpi_of_ruccl.)
Routed routed(Coll c, MPI_Comm comm, Why local);

// The argument check of a reduction: kRouted with `out` set when the datatype
// and op map, else kDatatype or kOp. One table lookup when the call maps; a
// second only to say why it does not.
Why reduction_check(MPI_Datatype type, MPI_Op op, std::optional<Reduction>& out);

// MPI_SUCCESS for ok, else `s` through the communicator's error handler
// (Registry::fail), whose code is returned. Lets go of `r` first: the
// handler may call MPI on the same communicator, or free it.
int run_status(Coll c, MPI_Comm comm, const Status& s, Routed& r);

}  // namespace ruccl::mpi_layer
