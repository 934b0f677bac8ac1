// A Route per MPI communicator: created collectively at the communicator's
// first routed call, cached as an MPI attribute (not copied by MPI_Comm_dup:
// a duplicate gets its own), freed by the attribute's delete callback at
// MPI_Comm_free and at MPI_Finalize.
//
// Creation runs over a duplicate of the communicator that ruccl's bootstrap
// makes (src/bootstrap, nonblocking MPI polled against a deadline: MPI calls
// this layer does not intercept, so there is no recursion), then ruccl's
// world creation (UCX transports, one device rank per process: host:0). A
// failure is agreed by every process of the communicator, so every process
// marks the Route failed and falls back for good. Then the ranks learn how
// ruccl numbered them (processes by node, then MPI rank) with one ruccl
// all_gather of each MPI rank.
#include <cstring>

#include "bootstrap/mpi_bootstrap.hpp"
#include "core/catch_to_status.hpp"
#include "mpi_layer/registry.hpp"
#include "world/from_bootstrap.hpp"

namespace ruccl::mpi_layer {
namespace {

int delete_route(MPI_Comm, int, void* attribute, void*) {
  Registry::get().drop(static_cast<Route*>(attribute));
  return MPI_SUCCESS;
}

Status connect(Route& r, MPI_Comm comm, const Config& config) {
  bootstrap::MpiBootstrapOptions options;
  options.timeout = config.timeout();
  auto boot = bootstrap::mpi_bootstrap(comm, options);
  RUCCL_TRY(boot);
  Config c = config;
  c.with_num_devices(1);
  auto created = world::create_communicator_from_bootstrap(std::move(boot).value(),
                                                           {host_device(0)}, std::move(c));
  RUCCL_TRY(created);
  r.comm = std::move(created).value();
  r.rank = r.comm->first_rank();
  r.size = r.comm->world_size();
  int mpi_rank = 0;
  PMPI_Comm_rank(comm, &mpi_rank);
  std::int32_t mine = mpi_rank;
  std::vector<std::int32_t> all(r.size);
  RUCCL_TRY(r.comm->all_gather_into(
      r.rank, TensorView::of(&mine, DataType::kBytes, sizeof mine, host_device(0)),
      TensorView::of(all.data(), DataType::kBytes, all.size() * sizeof mine, host_device(0))));
  r.ruccl_of_mpi.assign(r.size, 0);
  for (std::size_t k = 0; k < r.size; ++k) {
    const auto m = static_cast<std::size_t>(all[k]);
    if (m >= r.size) return Status(ErrorCode::kInternal, "MPI rank out of range in the rank map");
    r.ruccl_of_mpi[m] = k;
    r.identity = r.identity && m == k;
  }
  return Status::ok();
}

}  // namespace

Route* Registry::route(MPI_Comm comm) {
  if (comm == MPI_COMM_WORLD && world_ != nullptr) return world_;
  if (keyval_ == MPI_KEYVAL_INVALID)
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_route, &keyval_, nullptr);
  void* value = nullptr;
  int found = 0;
  PMPI_Comm_get_attr(comm, keyval_, &value, &found);
  Route* r = found != 0 ? static_cast<Route*>(value) : create(comm);
  if (comm == MPI_COMM_WORLD) world_ = r;
  return r;
}

Route* Registry::create(MPI_Comm comm) {
  auto owned = std::make_unique<Route>();
  Route* r = owned.get();
  r->mpi = comm;
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter != 0) {
    r->failed = Why::kIntercomm;
  } else {
    const Status s = core::catch_to_status(ErrorCode::kInternal, "mpi layer",
                                           [&] { return connect(*r, comm, config_); });
    if (!s.is_ok()) {
      r->failed = Why::kCreateFailed;
      r->comm.reset();
      if (config_.log_level() >= LogLevel::kWarn || mpi_rank_ == 0)
        std::fprintf(stderr,
                     "[ruccl mpi layer] MPI rank %d: falling back to MPI on a communicator: %s\n",
                     mpi_rank_, s.to_string().c_str());
    }
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    routes_.push_back(std::move(owned));
  }
  PMPI_Comm_set_attr(comm, keyval_, r);
  return r;
}

}  // namespace ruccl::mpi_layer
