// The registry's settings, counters and the report at MPI_Finalize.
#include "mpi_layer/registry.hpp"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/catch_to_status.hpp"

namespace ruccl::mpi_layer {

std::string_view coll_name(Coll c) noexcept {
  switch (c) {
    case Coll::kAllreduce: return "MPI_Allreduce";
    case Coll::kReduce: return "MPI_Reduce";
    case Coll::kBcast: return "MPI_Bcast";
    case Coll::kAllgather: return "MPI_Allgather";
    case Coll::kReduceScatterBlock: return "MPI_Reduce_scatter_block";
    case Coll::kReduceScatter: return "MPI_Reduce_scatter";
    case Coll::kAlltoall: return "MPI_Alltoall";
    case Coll::kAlltoallv: return "MPI_Alltoallv";
    case Coll::kBarrier: return "MPI_Barrier";
    case Coll::kAllgatherv: return "MPI_Allgatherv";
    case Coll::kGather: return "MPI_Gather";
    case Coll::kGatherv: return "MPI_Gatherv";
    case Coll::kScatter: return "MPI_Scatter";
    case Coll::kScatterv: return "MPI_Scatterv";
    case Coll::kScan: return "MPI_Scan";
    case Coll::kExscan: return "MPI_Exscan";
  }
  return "?";
}

std::string_view why_name(Why w) noexcept {
  switch (w) {
    case Why::kRouted: return "routed";
    case Why::kDisabled: return "RUCCL_MPI=0";
    case Why::kNotChosen: return "not in RUCCL_MPI_COLLS";
    case Why::kDatatype: return "datatype";
    case Why::kOp: return "op";
    case Why::kIntercomm: return "intercommunicator";
    case Why::kCreateFailed: return "ruccl communicator creation failed";
    case Why::kArgument: return "bad argument";
    case Why::kTooLarge: return "too large";
  }
  return "?";
}

namespace {

// RUCCL_MPI_COLLS: a comma-separated list of allreduce, reduce, bcast,
// allgather, reduce_scatter_block, reduce_scatter, alltoall, alltoallv,
// barrier, allgatherv, gather, gatherv, scatter, scatterv, scan, exscan,
// "default" (the first nine, routed when the variable is unset) and "all";
// case-insensitive.
std::array<bool, kColls> parse_colls(const char* text, int mpi_rank) {
  std::array<bool, kColls> on{};
  std::string list(text);
  for (char& ch : list) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  std::size_t begin = 0;
  while (begin <= list.size()) {
    std::size_t end = list.find(',', begin);
    if (end == std::string::npos) end = list.size();
    const std::string name = list.substr(begin, end - begin);
    bool known = name.empty();
    if (name == "all") {
      on.fill(true);
      known = true;
    }
    if (name == "default") {
      for (std::size_t c = 0; c < kColls; ++c)
        on[c] = on[c] || routed_by_default(static_cast<Coll>(c));
      known = true;
    }
    for (std::size_t c = 0; c < kColls; ++c) {
      std::string full(coll_name(static_cast<Coll>(c)).substr(4));  // after "MPI_"
      for (char& ch : full) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      if (name == full) on[c] = known = true;
    }
    if (!known && mpi_rank == 0)
      std::fprintf(stderr, "[ruccl mpi layer] RUCCL_MPI_COLLS: unknown collective '%s' ignored\n",
                   name.c_str());
    begin = end + 1;
  }
  return on;
}

}  // namespace

Registry& Registry::get() {
  static Registry registry;  // the one instance (thread-safe initialisation)
  return registry;
}

Registry::Registry() {
  PMPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank_);
  const char* off = std::getenv("RUCCL_MPI");
  if (off != nullptr && std::string(off) == "0") blocked_ = Why::kDisabled;
  const char* colls = std::getenv("RUCCL_MPI_COLLS");
  if (colls != nullptr && *colls != '\0') {
    enabled_ = parse_colls(colls, mpi_rank_);
  } else {
    for (std::size_t c = 0; c < kColls; ++c) enabled_[c] = routed_by_default(static_cast<Coll>(c));
  }
  auto config = Config::from_env();
  if (config.is_ok()) {
    config_ = std::move(config).value();
  } else {
    if (mpi_rank_ == 0)
      std::fprintf(stderr, "[ruccl mpi layer] disabled: %s\n", config.status().to_string().c_str());
    blocked_ = Why::kDisabled;
  }
  int level = MPI_THREAD_SINGLE;
  PMPI_Query_thread(&level);
  multiple_ = level == MPI_THREAD_MULTIPLE;
}

void Registry::at_init() {
  if (blocked_ == Why::kRouted) (void)route(MPI_COMM_WORLD);
}

void Registry::finalize() {
  if (config_.log_level() >= LogLevel::kInfo) {
    for (std::size_t c = 0; c < kColls; ++c) {
      std::uint64_t routed = counts_[c][0].load(std::memory_order_relaxed), fell = 0;
      std::string why;
      for (std::size_t w = 1; w < kWhys; ++w) {
        const std::uint64_t n = counts_[c][w].load(std::memory_order_relaxed);
        if (n == 0) continue;
        fell += n;
        why += std::string(why.empty() ? " (" : ", ") + std::string(why_name(static_cast<Why>(w))) +
               " " + std::to_string(n);
      }
      if (!why.empty()) why += ")";
      std::fprintf(stderr, "[ruccl mpi layer] MPI rank %d: %s routed %llu, fell back %llu%s\n",
                   mpi_rank_, std::string(coll_name(static_cast<Coll>(c))).c_str(),
                   static_cast<unsigned long long>(routed), static_cast<unsigned long long>(fell),
                   why.c_str());
    }
  }
  if (config_.log_level() >= LogLevel::kInfo)
    std::fprintf(stderr,
                 "[ruccl mpi layer] MPI rank %d: communicators: %llu shared the world's "
                 "transports, %llu opened their own\n",
                 mpi_rank_, static_cast<unsigned long long>(shared_routes_.load()),
                 static_cast<unsigned long long>(own_routes_.load()));
  if (config_.log_level() >= LogLevel::kInfo)
    std::fprintf(stderr,
                 "[ruccl mpi layer] MPI rank %d: MPI_Alloc_mem %llu from ruccl, %llu from MPI\n",
                 mpi_rank_, static_cast<unsigned long long>(alloc_counts_[0].load()),
                 static_cast<unsigned long long>(alloc_counts_[1].load()));
  // Deleting the attribute runs drop() for each Route still alive.
  std::vector<MPI_Comm> comms;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& r : routes_) comms.push_back(r->mpi);
  }
  for (MPI_Comm comm : comms) PMPI_Comm_delete_attr(comm, keyval_);
  if (keyval_ != MPI_KEYVAL_INVALID) PMPI_Comm_free_keyval(&keyval_);
  world_ = nullptr;
  blocked_ = Why::kDisabled;  // nothing is routed after MPI_Finalize
}

void Registry::drop(Route* route) noexcept {
  (void)core::catch_to_status(ErrorCode::kInternal, "", [&]() -> Status {
    if (route == world_) world_ = nullptr;
    std::unique_ptr<Route> owned;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto it = routes_.begin(); it != routes_.end(); ++it) {
        if (it->get() != route) continue;
        owned = std::move(*it);
        routes_.erase(it);
        break;
      }
    }
    owned.reset();  // destroys the ruccl communicator outside the lock
    return Status::ok();
  });
}

}  // namespace ruccl::mpi_layer
