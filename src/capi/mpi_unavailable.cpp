// ruccl_comm_create_mpi_f in a build without the multinode layer (no MPI or
// no UCX): the entry point exists, and says so.
#include "capi/handles.hpp"

extern "C" ruccl_result_t ruccl_comm_create_mpi_f(int64_t, size_t, ruccl_device_kind_t,
                                                  const size_t*, ruccl_config_t* config,
                                                  ruccl_comm_t** comm) {
  static constexpr const char* kFunction = "ruccl_comm_create_mpi_f";
  using ruccl::core::catch_to_status;
  if (comm) *comm = nullptr;
  const ruccl::Status s = catch_to_status(ruccl::ErrorCode::kInternal, "", [] {
    return ruccl::Status(ruccl::ErrorCode::kUnsupported,
                         "this ruccl was built without MPI and UCX (the multinode layer); "
                         "use ruccl_comm_create_local");
  });
  return ruccl::capi::record(config, kFunction, s);
}
