// The pure parts of the bootstrap (src/bootstrap/layout.hpp) and the MPI error
// conversion. No collectives: every process runs these on its own.
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <numeric>
#include <vector>

#include "bootstrap/layout.hpp"
#include "bootstrap/mpi_call.hpp"

namespace ruccl::bootstrap::detail {
namespace {

TEST(BootstrapLayout, OneNode) {
  const std::vector<int> leaders = {0, 0, 0};
  for (std::size_t rank = 0; rank < leaders.size(); ++rank) {
    auto layout = layout_from_leaders(leaders, rank, "h0");
    ASSERT_TRUE(layout) << layout.status().to_string();
    const Topology& t = layout->topology;
    EXPECT_EQ(t.process, rank);
    EXPECT_EQ(t.processes, 3u);
    EXPECT_EQ(t.node, 0u);
    EXPECT_EQ(t.nodes, 1u);
    EXPECT_EQ(t.local_process, rank);
    EXPECT_EQ(t.local_processes, 3u);
    EXPECT_EQ(t.node_of_process, (std::vector<std::size_t>{0, 0, 0}));
    EXPECT_EQ(t.hostname, "h0");
  }
}

// Ranks placed round-robin over two nodes, plus a third node of one rank:
// rank: 0 1 2 3 4 5
// node: a b a b c a   (leaders 0 1 0 1 4 0)
// Nodes by lowest rank: a=0, b=1, c=2. Process order (node, rank): 0 2 5 | 1 3 | 4.
TEST(BootstrapLayout, InterleavedNodes) {
  const std::vector<int> leaders = {0, 1, 0, 1, 4, 0};
  const std::vector<std::size_t> process = {0, 3, 1, 4, 5, 2};
  const std::vector<std::size_t> node = {0, 1, 0, 1, 2, 0};
  const std::vector<std::size_t> local = {0, 0, 1, 1, 0, 2};
  const std::vector<std::size_t> local_size = {3, 2, 3, 2, 1, 3};
  for (std::size_t rank = 0; rank < leaders.size(); ++rank) {
    auto layout = layout_from_leaders(leaders, rank, "h");
    ASSERT_TRUE(layout) << layout.status().to_string();
    const Topology& t = layout->topology;
    EXPECT_EQ(t.process, process[rank]) << "rank " << rank;
    EXPECT_EQ(t.processes, 6u);
    EXPECT_EQ(t.node, node[rank]) << "rank " << rank;
    EXPECT_EQ(t.nodes, 3u);
    EXPECT_EQ(t.local_process, local[rank]) << "rank " << rank;
    EXPECT_EQ(t.local_processes, local_size[rank]) << "rank " << rank;
    EXPECT_EQ(t.node_of_process, (std::vector<std::size_t>{0, 0, 0, 1, 1, 2}));
    EXPECT_EQ(layout->process_of_rank, process);
    EXPECT_EQ(layout->rank_of_process, (std::vector<std::size_t>{0, 2, 5, 1, 3, 4}));
  }
}

TEST(BootstrapLayout, InconsistentLeadersAreInternalErrors) {
  // A leader above the rank, a leader that is not its own leader, a negative one.
  for (const std::vector<int>& leaders :
       {std::vector<int>{1, 1}, std::vector<int>{0, 0, 1}, std::vector<int>{0, -1}}) {
    auto layout = layout_from_leaders(leaders, 0, "h");
    ASSERT_FALSE(layout);
    EXPECT_EQ(layout.status().code(), ErrorCode::kInternal);
  }
  EXPECT_FALSE(layout_from_leaders(std::vector<int>{0}, 1, "h"));  // rank out of range
}

TEST(BootstrapRounds, ChunkKeepsEveryRoundWithinIntCounts) {
  for (std::size_t processes : {1u, 2u, 3u, 7u, 1000u}) {
    const std::size_t chunk = round_chunk_bytes(INT_MAX, processes);
    EXPECT_GE(chunk, 1u);
    EXPECT_LE(chunk * processes, static_cast<std::size_t>(INT_MAX));
    EXPECT_EQ(round_chunk_bytes(SIZE_MAX, processes), chunk);  // clamped to INT_MAX
  }
  EXPECT_EQ(round_chunk_bytes(0, 4), 1u);  // never zero
  EXPECT_EQ(round_chunk_bytes(3, 4), 1u);
  EXPECT_EQ(round_chunk_bytes(1000, 4), 250u);
}

TEST(BootstrapRounds, RoundCount) {
  EXPECT_EQ(round_count(std::vector<std::size_t>{}, 10), 0u);
  EXPECT_EQ(round_count(std::vector<std::size_t>{0, 0}, 10), 0u);
  EXPECT_EQ(round_count(std::vector<std::size_t>{0, 1}, 10), 1u);
  EXPECT_EQ(round_count(std::vector<std::size_t>{10, 3}, 10), 1u);
  EXPECT_EQ(round_count(std::vector<std::size_t>{11, 3}, 10), 2u);
  const std::size_t five_gib = std::size_t{5} << 30;
  const std::size_t chunk = round_chunk_bytes(INT_MAX, 2);
  // chunk = 1 GiB - 1: five chunks leave 5 bytes for a sixth round.
  EXPECT_EQ(round_count(std::vector<std::size_t>{five_gib, 0}, chunk), 6u);
}

// Replays the rounds of blobs of the given sizes without MPI and checks that
// every byte lands once, in process order, within int counts.
void check_rounds(const std::vector<std::size_t>& size_of_rank,
                  const std::vector<std::size_t>& rank_of_process, std::size_t max_round_bytes) {
  const std::size_t n = size_of_rank.size();
  const std::size_t chunk = round_chunk_bytes(max_round_bytes, n);
  std::vector<std::size_t> received(n, 0);  // per rank
  Round plan;
  const std::size_t rounds = round_count(size_of_rank, chunk);
  for (std::size_t round = 0; round < rounds; ++round) {
    plan_round(size_of_rank, rank_of_process, chunk, round, plan);
    EXPECT_LE(plan.bytes, std::max<std::size_t>(n, std::min<std::size_t>(max_round_bytes, INT_MAX)));
    std::size_t expected_displ = 0;
    for (std::size_t process = 0; process < n; ++process) {
      const std::size_t r = rank_of_process[process];
      ASSERT_GE(plan.counts[r], 0);
      EXPECT_EQ(static_cast<std::size_t>(plan.displs[r]), expected_displ);
      // A rank's piece continues where its previous one ended.
      EXPECT_EQ(received[r], std::min(size_of_rank[r], round * chunk));
      received[r] += static_cast<std::size_t>(plan.counts[r]);
      expected_displ += static_cast<std::size_t>(plan.counts[r]);
    }
    EXPECT_EQ(plan.bytes, expected_displ);
  }
  EXPECT_EQ(received, size_of_rank);
}

TEST(BootstrapRounds, EveryByteOnceInProcessOrder) {
  check_rounds({0}, {0}, INT_MAX);
  check_rounds({5}, {0}, 1);
  check_rounds({0, 70000, 1, 4097}, {0, 1, 2, 3}, INT_MAX);
  check_rounds({0, 70000, 1, 4097}, {2, 0, 3, 1}, 1000);
  check_rounds({3, 0, 0}, {1, 2, 0}, 2);  // fewer round bytes than processes
  check_rounds({7, 7, 7}, {0, 1, 2}, 21);
}

TEST(BootstrapRounds, HugeBlobsStayWithinInts) {
  // 5 GiB and 3 GiB blobs (sizes only; nothing is allocated).
  const std::vector<std::size_t> sizes = {std::size_t{5} << 30, 0, std::size_t{3} << 30};
  const std::vector<std::size_t> order = {1, 0, 2};
  const std::size_t chunk = round_chunk_bytes(INT_MAX, sizes.size());
  const std::size_t rounds = round_count(sizes, chunk);
  std::vector<std::size_t> received(sizes.size(), 0);
  Round plan;
  for (std::size_t round = 0; round < rounds; ++round) {
    plan_round(sizes, order, chunk, round, plan);
    EXPECT_LE(plan.bytes, static_cast<std::size_t>(INT_MAX));
    for (std::size_t r = 0; r < sizes.size(); ++r) received[r] += static_cast<std::size_t>(plan.counts[r]);
  }
  EXPECT_EQ(received, sizes);
}

TEST(BootstrapMpiStatus, ConvertsCodes) {
  EXPECT_TRUE(mpi_status(MPI_SUCCESS, "MPI_Barrier"));
  const Status argument = mpi_status(MPI_ERR_COUNT, "MPI_Allgatherv");
  EXPECT_EQ(argument.code(), ErrorCode::kInternal);
  EXPECT_EQ(argument.message().rfind("MPI_Allgatherv failed: ", 0), 0u) << argument.message();
  EXPECT_GT(argument.message().size(), std::string("MPI_Allgatherv failed: ").size());
  const Status other = mpi_status(MPI_ERR_OTHER, "MPI_Barrier");
  EXPECT_EQ(other.code(), ErrorCode::kPeerFailure) << other.to_string();
}

}  // namespace
}  // namespace ruccl::bootstrap::detail
