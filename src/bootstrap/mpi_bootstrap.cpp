// The MPI implementation of Bootstrap.
//
// Creation (collective over the caller's communicator):
//   1. MPI_Comm_dup the communicator and set MPI_ERRORS_RETURN on the duplicate:
//      every later call works on the duplicate, so ruccl's traffic never
//      matches the caller's, and MPI errors come back as codes (mpi_status).
//   2. MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) groups the processes of one
//      node; an MPI_Allreduce(MIN) of the rank over that group gives each
//      process its node's lowest rank (the node "leader"). The node
//      communicator is freed right after.
//   3. MPI_Allgather of the leaders: every process then computes the same
//      layout (layout.hpp): node numbers, the (node, rank) process order, and
//      its own Topology.
//
// all_gather (collective):
//   1. MPI_Allgather of the blob sizes (uint64 per process).
//   2. MPI_Allgatherv of the blobs, in as many rounds as the int counts need
//      (layout.hpp, "Rounds"); displacements put the pieces in process order.
#include "bootstrap/mpi_bootstrap.hpp"

#include <cstdint>
#include <cstring>
#include <utility>

#include "bootstrap/layout.hpp"
#include "bootstrap/mpi_call.hpp"
#include "bootstrap/mpi_handles.hpp"

namespace ruccl::bootstrap {
namespace {

using detail::guarded;
using detail::Layout;
using detail::mpi_status;
using detail::MpiScope;
using detail::OwnedComm;

Result<std::string> processor_name() {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  RUCCL_TRY(mpi_status(MPI_Get_processor_name(name, &length), "MPI_Get_processor_name"));
  return std::string(name, static_cast<std::size_t>(length));
}

// Steps 2 and 3 of creation, over the duplicate.
Result<Layout> discover_layout(MPI_Comm comm) {
  int rank = 0, size = 0;
  RUCCL_TRY(mpi_status(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank"));
  RUCCL_TRY(mpi_status(MPI_Comm_size(comm, &size), "MPI_Comm_size"));

  int leader = rank, node_size = 0;
  {
    auto node = OwnedComm::split_shared(comm, rank);
    RUCCL_TRY(node);
    RUCCL_TRY(mpi_status(MPI_Allreduce(&rank, &leader, 1, MPI_INT, MPI_MIN, node->get()),
                         "MPI_Allreduce(node leader)"));
    RUCCL_TRY(mpi_status(MPI_Comm_size(node->get(), &node_size), "MPI_Comm_size(node)"));
  }  // the node communicator is freed here

  std::vector<int> leader_of_rank(static_cast<std::size_t>(size));
  RUCCL_TRY(mpi_status(MPI_Allgather(&leader, 1, MPI_INT, leader_of_rank.data(), 1, MPI_INT, comm),
                       "MPI_Allgather(node leaders)"));
  auto hostname = processor_name();
  RUCCL_TRY(hostname);
  auto layout = detail::layout_from_leaders(leader_of_rank, static_cast<std::size_t>(rank),
                                            std::move(hostname).value());
  RUCCL_TRY(layout);
  if (layout->topology.local_processes != static_cast<std::size_t>(node_size))
    return Status(ErrorCode::kInternal,
                  "bootstrap: node of " + std::to_string(node_size) + " processes, layout says " +
                      std::to_string(layout->topology.local_processes));
  return layout;
}

class MpiBootstrap final : public Bootstrap {
 public:
  MpiBootstrap(MpiScope scope, OwnedComm comm, Layout layout, std::size_t chunk)
      : scope_(std::move(scope)), comm_(std::move(comm)), layout_(std::move(layout)), chunk_(chunk) {}

  const Topology& topology() const override { return layout_.topology; }

  Result<std::vector<std::vector<std::byte>>> all_gather(std::span<const std::byte> blob) override {
    return guarded([&] { return gather(blob); });
  }

  Status barrier() override {
    RUCCL_TRY(check_usable());
    return mpi_status(MPI_Barrier(comm_.get()), "MPI_Barrier");
  }

 private:
  // Calls on a finalised MPI would abort the process; answer an error instead.
  static Status check_usable() {
    if (!detail::mpi_finalized()) return Status::ok();
    return Status(ErrorCode::kAborted,
                  "bootstrap used after MPI_Finalize (the bootstrap that initialised MPI must be "
                  "destroyed last)");
  }

  Result<std::vector<std::vector<std::byte>>> gather(std::span<const std::byte> blob) {
    RUCCL_TRY(check_usable());
    const std::size_t n = layout_.topology.processes;
    const std::size_t my_rank = layout_.rank_of_process[layout_.topology.process];

    // 1. Sizes, by MPI rank.
    static_assert(sizeof(std::size_t) <= sizeof(std::uint64_t));
    const std::uint64_t my_size = blob.size();
    std::vector<std::uint64_t> sizes(n);
    RUCCL_TRY(mpi_status(MPI_Allgather(&my_size, 1, MPI_UINT64_T, sizes.data(), 1, MPI_UINT64_T,
                                       comm_.get()),
                         "MPI_Allgather(blob sizes)"));
    std::vector<std::size_t> size_of_rank(n);
    for (std::size_t r = 0; r < n; ++r) {
      if (sizes[r] > SIZE_MAX)
        return Status(ErrorCode::kInvalidArgument, "all_gather: a blob of " +
                                                       std::to_string(sizes[r]) + " bytes");
      size_of_rank[r] = static_cast<std::size_t>(sizes[r]);
    }
    std::vector<std::vector<std::byte>> blobs(n);
    for (std::size_t r = 0; r < n; ++r) blobs[layout_.process_of_rank[r]].resize(size_of_rank[r]);

    // 2. Blobs, in rounds of at most n * chunk_ bytes.
    const std::size_t rounds = detail::round_count(size_of_rank, chunk_);
    detail::Round plan;
    std::vector<std::byte> buffer;
    const std::byte nothing{};  // a valid address for an empty send
    for (std::size_t round = 0; round < rounds; ++round) {
      detail::plan_round(size_of_rank, layout_.rank_of_process, chunk_, round, plan);
      buffer.resize(plan.bytes);
      const std::size_t begin = round * chunk_;
      const int my_count = plan.counts[my_rank];
      const std::byte* send = my_count > 0 ? blob.data() + begin : &nothing;
      RUCCL_TRY(mpi_status(MPI_Allgatherv(send, my_count, MPI_BYTE, buffer.data(),
                                          plan.counts.data(), plan.displs.data(), MPI_BYTE,
                                          comm_.get()),
                           "MPI_Allgatherv(blobs)"));
      for (std::size_t r = 0; r < n; ++r) {
        if (plan.counts[r] == 0) continue;
        std::memcpy(blobs[layout_.process_of_rank[r]].data() + begin,
                    buffer.data() + plan.displs[r], static_cast<std::size_t>(plan.counts[r]));
      }
    }
    return blobs;
  }

  // Declared in dependency order: the communicator is freed before MPI is
  // finalised (when this bootstrap initialised it).
  MpiScope scope_;
  OwnedComm comm_;
  Layout layout_;
  std::size_t chunk_;
};

// Step 1 of creation, then discovery.
Result<std::unique_ptr<Bootstrap>> make_bootstrap(MpiScope scope, MPI_Comm parent,
                                                  const MpiBootstrapOptions& options) {
  if (parent == MPI_COMM_NULL)
    return Status(ErrorCode::kInvalidArgument, "mpi_bootstrap: MPI_COMM_NULL");
  int inter = 0;
  RUCCL_TRY(mpi_status(MPI_Comm_test_inter(parent, &inter), "MPI_Comm_test_inter"));
  if (inter != 0)
    return Status(ErrorCode::kInvalidArgument, "mpi_bootstrap: an intercommunicator");
  auto comm = OwnedComm::duplicate(parent);
  RUCCL_TRY(comm);
  auto layout = discover_layout(comm->get());
  RUCCL_TRY(layout);
  const std::size_t chunk = detail::round_chunk_bytes(options.max_round_bytes, layout->topology.processes);
  return std::unique_ptr<Bootstrap>(std::make_unique<MpiBootstrap>(
      std::move(scope), std::move(comm).value(), std::move(layout).value(), chunk));
}

}  // namespace

Result<std::unique_ptr<Bootstrap>> mpi_world_bootstrap() {
  return guarded([]() -> Result<std::unique_ptr<Bootstrap>> {
    auto scope = MpiScope::acquire();
    RUCCL_TRY(scope);
    return make_bootstrap(std::move(scope).value(), MPI_COMM_WORLD, {});
  });
}

Result<std::unique_ptr<Bootstrap>> mpi_bootstrap(MPI_Comm comm, const MpiBootstrapOptions& options) {
  return guarded([&]() -> Result<std::unique_ptr<Bootstrap>> {
    auto scope = MpiScope::borrow();
    RUCCL_TRY(scope);
    return make_bootstrap(std::move(scope).value(), comm, options);
  });
}

}  // namespace ruccl::bootstrap
