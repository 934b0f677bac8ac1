// The peer factory. Which peers exist is decided by CMake (bench/CMakeLists.txt):
// RUCCL_PERF_PEER_MPI when MPI was found (and world mode exists), and
// RUCCL_PERF_PEER_GLOO when Gloo was found as well.
#include "perf_peers.hpp"

#ifndef RUCCL_PERF_PEER_MPI
#define RUCCL_PERF_PEER_MPI 0
#endif
#ifndef RUCCL_PERF_PEER_GLOO
#define RUCCL_PERF_PEER_GLOO 0
#endif

namespace ruccl::perf {

#if RUCCL_PERF_PEER_MPI
Result<std::unique_ptr<Peer>> make_mpi_peer(std::size_t rank);  // peer_mpi.cpp
#endif
#if RUCCL_PERF_PEER_GLOO
Result<std::unique_ptr<Peer>> make_gloo_peer(bool chunked, std::size_t rank, std::size_t max_bytes);  // peer_gloo.cpp
#endif

std::vector<std::string> available_peers() {
  std::vector<std::string> names;
  if (RUCCL_PERF_PEER_MPI) names.push_back("mpi");
  if (RUCCL_PERF_PEER_GLOO) {
    names.push_back("gloo");
    names.push_back("gloo_chunked");
  }
  return names;
}

std::string peer_unavailable(const std::string& name) {
  if (name == "mpi") {
    if (RUCCL_PERF_PEER_MPI) return "";
    return "peer 'mpi' needs a ruccl-perf built with MPI and world mode (ruccl::multinode)";
  }
  if (name == "gloo" || name == "gloo_chunked") {
    if (RUCCL_PERF_PEER_GLOO) return "";
    return "peer '" + name +
           "' needs a ruccl-perf built with Gloo (Debian package libgloo-dev) and MPI; "
           "CMake did not find them (see its 'ruccl-perf: peers' line)";
  }
  return "unknown peer '" + name + "' (known: mpi, gloo, gloo_chunked)";
}

Result<std::unique_ptr<Peer>> make_peer(const std::string& name, std::size_t rank,
                                        std::size_t max_bytes) {
  if (const std::string why = peer_unavailable(name); !why.empty())
    return Status(ErrorCode::kInvalidArgument, why);
#if RUCCL_PERF_PEER_MPI
  if (name == "mpi") return make_mpi_peer(rank);
#endif
#if RUCCL_PERF_PEER_GLOO
  if (name == "gloo") return make_gloo_peer(false, rank, max_bytes);
  if (name == "gloo_chunked") return make_gloo_peer(true, rank, max_bytes);
#endif
  return Status(ErrorCode::kInvalidArgument, "unknown peer '" + name + "'");
}

}  // namespace ruccl::perf
