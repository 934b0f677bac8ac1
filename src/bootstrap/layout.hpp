// The pure arithmetic of the bootstrap, apart from MPI so that it can be tested
// on its own. Internal to src/bootstrap.
//
// Layout: from "the lowest MPI rank on my node" of every rank (what the MPI
// side learns with MPI_Comm_split_type + one allgather), the (node, rank)
// process order of bootstrap.hpp:
//   - nodes are numbered in first-appearance order over ascending ranks, which
//     is the order of their lowest rank (a node first appears at its leader);
//   - processes are sorted by (node, rank): a counting sort over the nodes.
//
// Rounds: all_gather moves blobs with MPI_Allgatherv, whose counts and
// displacements are ints. To keep every round's total at most max_round_bytes
// (<= INT_MAX), each process's blob is cut into pieces of `chunk` bytes with
// chunk = max_round_bytes / processes: in round k every process sends bytes
// [k*chunk, (k+1)*chunk) of its blob (fewer, or none, near its end). Pieces are
// placed in process order, so a round's buffer reads as process 0's piece,
// process 1's piece, ... The number of rounds is that of the largest blob.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.hpp"

namespace ruccl::bootstrap::detail {

struct Layout {
  Topology topology;                         // of the process at MPI rank `rank`
  std::vector<std::size_t> process_of_rank;  // MPI rank -> process index
  std::vector<std::size_t> rank_of_process;  // process index -> MPI rank
};

// leader_of_rank[r] is the lowest MPI rank on rank r's node. kInternal if that
// is inconsistent (a leader above the rank, or a leader that is not its own).
Result<Layout> layout_from_leaders(std::span<const int> leader_of_rank, std::size_t rank,
                                   std::string hostname);
// The same from every index's hostname (the bootstraps without MPI, which
// exchange hostnames in their first generation): a node is the indices with
// equal names, its leader the lowest of them. `hostname` is names[index].
Result<Layout> layout_from_hostnames(std::span<const std::vector<std::byte>> names,
                                     std::size_t index, std::string hostname);

// Blobs indexed by rank (MPI rank, or a bootstrap's own index) put into
// process order: result[layout.process_of_rank[r]] = by_rank[r]. `by_rank` has
// one blob per rank of the layout.
Blobs by_process(const Layout& layout, Blobs by_rank);

// "process 1" or "processes 1, 4": the indices that never arrived.
std::string missing_list(std::span<const std::size_t> missing);

// Bytes each process sends per round (>= 1); `max_round_bytes` is clamped to
// [1, INT_MAX].
std::size_t round_chunk_bytes(std::size_t max_round_bytes, std::size_t processes);
// Rounds needed for blobs of these sizes (0 when all are empty).
std::size_t round_count(std::span<const std::size_t> blob_bytes, std::size_t chunk);

// One MPI_Allgatherv, indexed by MPI rank.
struct Round {
  std::vector<int> counts;  // bytes each rank sends this round
  std::vector<int> displs;  // where they land in the round buffer (process order)
  std::size_t bytes = 0;    // total, <= processes * chunk
};
// Round `round` for blobs of size_of_rank[r] bytes.
void plan_round(std::span<const std::size_t> size_of_rank,
                std::span<const std::size_t> rank_of_process, std::size_t chunk,
                std::size_t round, Round& out);

}  // namespace ruccl::bootstrap::detail
