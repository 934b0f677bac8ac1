// ruccl_comm_create_mpi_f: a C API communicator over a caller's MPI
// communicator. Part of ruccl_multinode (built with MPI and UCX): the handle
// becomes a bootstrap in src/bootstrap (the only place that sees <mpi.h>), and
// the bootstrap a world communicator in src/world.
//
// Creation is collective, and MPI waits have no deadline: a process that
// returned early on a bad argument would leave the others blocked in MPI. So
// every process first checks its own arguments, then all agree on whether
// everyone's were good, and only then go on (or all fail).
#include <utility>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap/fortran_handle.hpp"
#include "capi/handles.hpp"
#include "world/from_bootstrap.hpp"

extern "C" ruccl_result_t ruccl_comm_create_mpi_f(int64_t mpi_comm_fortran,
                                                  size_t num_local_devices,
                                                  ruccl_device_kind_t kind,
                                                  const size_t* device_indices,
                                                  ruccl_config_t* config, ruccl_comm_t** comm) {
  static constexpr const char* kFunction = "ruccl_comm_create_mpi_f";
  using ruccl::ErrorCode;
  using ruccl::Status;
  using ruccl::core::catch_to_status;
  if (comm) *comm = nullptr;
  const Status s = catch_to_status(ErrorCode::kInternal, "", [&]() -> Status {
    auto boot = ruccl::bootstrap::mpi_bootstrap_from_fortran(mpi_comm_fortran);
    RUCCL_TRY(boot);

    ruccl::Config c = config ? config->config : ruccl::Config{};
    c.with_num_devices(num_local_devices);
    auto devices = catch_to_status(ErrorCode::kInternal, "", [&] {
      return ruccl::capi::devices_of(num_local_devices, kind, device_indices);
    });
    Status local = devices.is_ok() ? c.validate() : devices.status();
    if (local.is_ok() && !comm)
      local = Status(ruccl::ErrorCode::kInvalidArgument, "comm (the output pointer) is NULL");
    const Status agreed = ruccl::bootstrap::agree_on(
        *boot.value(), local.is_ok() ? 1 : 0,
        "valid arguments to ruccl_comm_create_mpi_f (1 yes, 0 no)",
        ruccl::ErrorCode::kInvalidArgument);
    RUCCL_TRY(local);  // this process's own reason first
    RUCCL_TRY(agreed);

    auto created =
        ruccl::world::create_communicator_from_bootstrap(std::move(boot).value(),
                                                         std::move(devices).value(), std::move(c));
    RUCCL_TRY(created);
    ruccl::capi::wrap(std::move(created).value(), comm);
    return Status::ok();
  });
  return ruccl::capi::record(config, kFunction, s);
}
