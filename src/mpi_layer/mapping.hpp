// Which MPI datatypes and ops the layer routes, and as what (internal to
// src/mpi_layer). Only predefined handles are recognised: a derived datatype,
// a user op, MAXLOC/MINLOC or anything unknown maps to nothing, and the call
// falls back to PMPI.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <optional>

#include "ruccl/tensor.hpp"
#include "ruccl/types.hpp"

namespace ruccl::mpi_layer {

// A predefined contiguous datatype: its size, and what it reduces as.
// `reduce_as` is empty for types ruccl cannot reduce (i16, u32, long double,
// MPI_CHAR, Fortran LOGICAL...), which still move as bytes. Complex types
// reduce as pairs of reals (`lanes` = 2), for Sum only.
struct TypeInfo {
  std::size_t bytes = 0;
  std::optional<DataType> reduce_as;
  std::size_t lanes = 1;
  bool integer = false;  // C/Fortran integer (and MPI_BYTE for bitwise ops)
};

// Nullopt for anything but a predefined contiguous datatype of this table.
std::optional<TypeInfo> type_info(MPI_Datatype type);
// The ruccl op of a predefined MPI op, if the layer routes it for this type
// (bitwise/logical: integers only; complex: Sum only). The dtype may change:
// MPI_BYTE with a bitwise op reduces as u8.
struct Reduction {
  DataType dtype;
  ReduceOp op;
  std::size_t lanes;  // elements of `dtype` per MPI element
};
std::optional<Reduction> reduction_of(MPI_Datatype type, MPI_Op op);

// A 1-D view of `count` elements of host memory: every routed call has one
// device rank per process (host:0).
inline TensorView host_view(const void* data, DataType dtype, std::size_t count) {
  return TensorView::of(const_cast<void*>(data), dtype, count, host_device(0));
}

// The size of `comm` (0 for MPI_COMM_NULL), for the checks of roots and
// per-rank counts.
inline int comm_size(MPI_Comm comm) {
  int size = 0;
  if (comm != MPI_COMM_NULL) PMPI_Comm_size(comm, &size);
  return size;
}

}  // namespace ruccl::mpi_layer
