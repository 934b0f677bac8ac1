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
//
// Once MPI_COMM_WORLD has its Route, every other communicator's is split
// from it by member list (connect_shared): no new UCX context, worker,
// endpoint or segment, only a communicator slot on the world's transports,
// and ruccl's ranks are the communicator's MPI ranks. Where that is refused
// (no slot left, which every process sees alike) the communicator opens its
// own world as above.
#include <cstring>
#include <numeric>

#include "bootstrap/mpi_bootstrap.hpp"
#include "core/catch_to_status.hpp"
#include "core/remote_ranks.hpp"  // split_members
#include "mpi_layer/registry.hpp"
#include "world/from_bootstrap.hpp"

namespace ruccl::mpi_layer {
namespace {

int delete_route(MPI_Comm, int, void* attribute, void*) {
  Registry::get().drop(static_cast<Route*>(attribute));
  return MPI_SUCCESS;
}

// r.ruccl_of_mpi, r.mpi_of_ruccl and r.identity from the MPI rank of each ruccl rank.
Status map_ranks(Route& r, const std::vector<std::int32_t>& mpi_of_ruccl) {
  r.ruccl_of_mpi.assign(r.size, 0);
  r.mpi_of_ruccl.assign(r.size, 0);
  r.identity = true;
  for (std::size_t k = 0; k < r.size; ++k) {
    const auto m = static_cast<std::size_t>(mpi_of_ruccl[k]);
    if (mpi_of_ruccl[k] < 0 || m >= r.size)
      return Status(ErrorCode::kInternal, "MPI rank out of range in the rank map");
    r.ruccl_of_mpi[m] = k;
    r.mpi_of_ruccl[k] = m;
    r.identity = r.identity && m == k;
  }
  return Status::ok();
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
  return map_ranks(r, all);
}

// A communicator split from the world's: its processes, in the order of a
// bootstrap over `comm` (by node, then MPI rank, as every world), over the
// world's transports; the slot and the node segment are agreed through that
// bootstrap (split_members), so every process of `comm` gets the
// communicator or the same error.
Status connect_shared(Route& r, MPI_Comm comm, const Route& world, const Config& config) {
  bootstrap::MpiBootstrapOptions options;
  options.timeout = config.timeout();
  auto boot = bootstrap::mpi_bootstrap(comm, options);
  RUCCL_TRY(boot);
  int size = 0, me = 0;
  PMPI_Comm_size(comm, &size);
  PMPI_Comm_rank(comm, &me);
  // comm's MPI rank of each process of the bootstrap
  const std::int32_t mine = me;
  auto ranks =
      boot.value()->all_gather(std::span(reinterpret_cast<const std::byte*>(&mine), sizeof mine),
                               bootstrap::Wait::within(config.timeout()));
  RUCCL_TRY(ranks);
  const auto n = static_cast<std::size_t>(size);
  if (ranks.value().size() != n)
    return Status(ErrorCode::kInternal, "mpi layer: the bootstrap has another size");
  std::vector<std::int32_t> rank_of_process(n);
  std::vector<int> in_world(n);
  for (std::size_t p = 0; p < n; ++p) {
    std::int32_t v = -1;
    if (ranks.value()[p].size() == sizeof v) std::memcpy(&v, ranks.value()[p].data(), sizeof v);
    if (v < 0 || v >= size)
      return Status(ErrorCode::kProtocolError,
                    "mpi layer: process " + std::to_string(p) + " sent a bad rank record");
    rank_of_process[p] = v;
  }
  MPI_Group group = MPI_GROUP_NULL, world_group = MPI_GROUP_NULL;
  PMPI_Comm_group(comm, &group);
  PMPI_Comm_group(MPI_COMM_WORLD, &world_group);
  PMPI_Group_translate_ranks(group, size, rank_of_process.data(), world_group, in_world.data());
  PMPI_Group_free(&group);
  PMPI_Group_free(&world_group);
  std::vector<std::size_t> members(n);
  for (std::size_t p = 0; p < n; ++p) {
    const int w = in_world[p];
    if (w < 0 || static_cast<std::size_t>(w) >= world.ruccl_of_mpi.size())
      return Status(ErrorCode::kInternal,
                    "mpi layer: a process of a communicator is not in MPI_COMM_WORLD");
    members[p] = world.ruccl_of_mpi[static_cast<std::size_t>(w)];
  }
  auto made = split_members(*world.comm, world.rank, members, *boot.value());
  RUCCL_TRY(made);
  r.comm = std::move(made).value();
  r.rank = r.comm->first_rank();
  r.size = n;
  return map_ranks(r, rank_of_process);  // the child's ranks are the bootstrap's processes
}

}  // namespace

Route* Registry::route(MPI_Comm comm) {
  // (world_ and keyval_ are set at MPI_Init, by at_init, before any other
  // thread calls.)
  if (comm == MPI_COMM_WORLD && world_ != nullptr) return world_;
  void* value = nullptr;
  int found = 0;
  {
    std::unique_lock<std::mutex> lock(mutex_, std::defer_lock);
    if (multiple_) lock.lock();
    if (keyval_ == MPI_KEYVAL_INVALID)
      PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_route, &keyval_, nullptr);
    PMPI_Comm_get_attr(comm, keyval_, &value, &found);
  }
  // Created collectively over `comm`, outside the lock: other threads create
  // the Routes of other communicators meanwhile (one communicator's calls are
  // ordered by the program, so no two threads create the same Route).
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
    Status s(ErrorCode::kUnsupported, "MPI_COMM_WORLD has no Route");
    if (comm != MPI_COMM_WORLD && world_ != nullptr && world_->comm) {
      s = core::catch_to_status(ErrorCode::kInternal, "mpi layer",
                                [&] { return connect_shared(*r, comm, *world_, config_); });
      if (!s && config_.log_level() >= LogLevel::kInfo)
        std::fprintf(stderr,
                     "[ruccl mpi layer] MPI rank %d: a communicator opens its own transports: %s\n",
                     mpi_rank_, s.to_string().c_str());
    }
    if (s) {
      ++shared_routes_;
    } else {
      r->comm.reset();
      s = core::catch_to_status(ErrorCode::kInternal, "mpi layer",
                                [&] { return connect(*r, comm, config_); });
      if (s) ++own_routes_;
    }
    if (!s.is_ok()) {
      r->failed = Why::kCreateFailed;
      r->comm.reset();
      if (config_.log_level() >= LogLevel::kWarn || mpi_rank_ == 0)
        std::fprintf(stderr,
                     "[ruccl mpi layer] MPI rank %d: falling back to MPI on a communicator: %s\n",
                     mpi_rank_, s.to_string().c_str());
    }
  }
  if (r->comm && !r->identity && config_.log_level() >= LogLevel::kInfo) {
    std::string map;
    for (std::size_t k : r->ruccl_of_mpi) map += " " + std::to_string(k);
    std::fprintf(stderr, "[ruccl mpi layer] MPI rank %d: %s's ruccl ranks by MPI rank:%s\n",
                 mpi_rank_, comm == MPI_COMM_WORLD ? "MPI_COMM_WORLD" : "a communicator",
                 map.c_str());
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    routes_.push_back(std::move(owned));
    PMPI_Comm_set_attr(comm, keyval_, r);
  }
  return r;
}

}  // namespace ruccl::mpi_layer
