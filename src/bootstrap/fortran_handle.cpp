#include "bootstrap/fortran_handle.hpp"

#include <limits>
#include <string>

#include "bootstrap/mpi_bootstrap.hpp"
#include "bootstrap/mpi_call.hpp"
#include "bootstrap/mpi_handles.hpp"
#include "core/catch_to_status.hpp"

namespace ruccl::bootstrap {

Result<std::unique_ptr<Bootstrap>> mpi_bootstrap_from_fortran(std::int64_t handle) {
  auto body = [&]() -> Result<std::unique_ptr<Bootstrap>> {
    // MPI_Comm_f2c is only defined on an initialised MPI.
    RUCCL_TRY(detail::MpiScope::borrow());
    if (handle < std::numeric_limits<MPI_Fint>::min() ||
        handle > std::numeric_limits<MPI_Fint>::max())
      return Status(ErrorCode::kInvalidArgument,
                    "MPI Fortran handle " + std::to_string(handle) + " does not fit an MPI_Fint");
    const MPI_Comm comm = MPI_Comm_f2c(static_cast<MPI_Fint>(handle));
    // Open MPI answers an unknown handle with a null pointer, not MPI_COMM_NULL.
    if (comm == MPI_Comm{})
      return Status(ErrorCode::kInvalidArgument,
                    "MPI Fortran handle " + std::to_string(handle) + " names no communicator");
    return mpi_bootstrap(comm);
  };
  return core::catch_to_status(ErrorCode::kInternal, "bootstrap", body);
}

}  // namespace ruccl::bootstrap
