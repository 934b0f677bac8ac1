#include "bootstrap/layout.hpp"

#include <algorithm>
#include <climits>
#include <string>
#include <utility>
#include <vector>

namespace ruccl::bootstrap::detail {

std::string missing_list(std::span<const std::size_t> missing) {
  std::string out = missing.size() == 1 ? "process " : "processes ";
  for (std::size_t i = 0; i < missing.size(); ++i)
    out += (i ? ", " : "") + std::to_string(missing[i]);
  return out;
}

Result<Layout> layout_from_hostnames(std::span<const std::vector<std::byte>> names,
                                     std::size_t index, std::string hostname) {
  std::vector<int> leader_of_index(names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    std::size_t leader = 0;
    while (names[leader] != names[i]) ++leader;  // stops at i at the latest
    leader_of_index[i] = static_cast<int>(leader);
  }
  return layout_from_leaders(leader_of_index, index, std::move(hostname));
}

Result<Layout> layout_from_leaders(std::span<const int> leader_of_rank, std::size_t rank,
                                   std::string hostname) {
  const std::size_t n = leader_of_rank.size();
  if (rank >= n)
    return Status(ErrorCode::kInternal,
                  "bootstrap layout: rank " + std::to_string(rank) + " of " + std::to_string(n));

  // Node of each rank, numbered by first appearance (= by lowest rank).
  std::vector<std::size_t> node_of_rank(n);
  std::vector<std::size_t> node_size;
  for (std::size_t r = 0; r < n; ++r) {
    const int leader = leader_of_rank[r];
    if (leader < 0 || static_cast<std::size_t>(leader) > r ||
        leader_of_rank[static_cast<std::size_t>(leader)] != leader)
      return Status(ErrorCode::kInternal, "bootstrap layout: rank " + std::to_string(r) +
                                              " reports node leader " + std::to_string(leader));
    if (static_cast<std::size_t>(leader) == r) {
      node_of_rank[r] = node_size.size();
      node_size.push_back(0);
    } else {
      node_of_rank[r] = node_of_rank[static_cast<std::size_t>(leader)];
    }
    ++node_size[node_of_rank[r]];
  }

  // Counting sort by node; ranks ascend within a node.
  std::vector<std::size_t> node_start(node_size.size() + 1, 0);
  for (std::size_t node = 0; node < node_size.size(); ++node)
    node_start[node + 1] = node_start[node] + node_size[node];
  std::vector<std::size_t> next(node_start.begin(), node_start.end() - 1);

  Layout layout;
  layout.process_of_rank.resize(n);
  layout.rank_of_process.resize(n);
  Topology& topo = layout.topology;
  topo.node_of_process.resize(n);
  for (std::size_t r = 0; r < n; ++r) {
    const std::size_t process = next[node_of_rank[r]]++;
    layout.process_of_rank[r] = process;
    layout.rank_of_process[process] = r;
    topo.node_of_process[process] = node_of_rank[r];
  }

  topo.processes = n;
  topo.process = layout.process_of_rank[rank];
  topo.nodes = node_size.size();
  topo.node = node_of_rank[rank];
  topo.local_processes = node_size[topo.node];
  topo.local_process = topo.process - node_start[topo.node];
  topo.hostname = std::move(hostname);
  return layout;
}

std::size_t round_chunk_bytes(std::size_t max_round_bytes, std::size_t processes) {
  const std::size_t limit = std::clamp<std::size_t>(max_round_bytes, 1, INT_MAX);
  return std::max<std::size_t>(1, limit / std::max<std::size_t>(1, processes));
}

std::size_t round_count(std::span<const std::size_t> blob_bytes, std::size_t chunk) {
  std::size_t largest = 0;
  for (std::size_t bytes : blob_bytes) largest = std::max(largest, bytes);
  return largest / chunk + (largest % chunk != 0 ? 1 : 0);
}

void plan_round(std::span<const std::size_t> size_of_rank,
                std::span<const std::size_t> rank_of_process, std::size_t chunk,
                std::size_t round, Round& out) {
  const std::size_t n = size_of_rank.size();
  out.counts.assign(n, 0);
  out.displs.assign(n, 0);
  out.bytes = 0;
  // round * chunk cannot overflow: it is below the largest blob's size.
  const std::size_t begin = round * chunk;
  for (std::size_t process = 0; process < n; ++process) {
    const std::size_t r = rank_of_process[process];
    const std::size_t size = size_of_rank[r];
    const std::size_t piece = size > begin ? std::min(chunk, size - begin) : 0;
    // Both fit in an int: the round's total is at most max(n, INT_MAX / n * n).
    out.counts[r] = static_cast<int>(piece);
    out.displs[r] = static_cast<int>(out.bytes);
    out.bytes += piece;
  }
}

Blobs by_process(const Layout& layout, Blobs by_rank) {
  Blobs out(by_rank.size());
  for (std::size_t r = 0; r < by_rank.size(); ++r)
    out[layout.process_of_rank[r]] = std::move(by_rank[r]);
  return out;
}

}  // namespace ruccl::bootstrap::detail
