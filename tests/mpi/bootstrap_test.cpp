// The bootstrap under mpirun. Every test is collective: each process makes the
// same bootstrap calls in the same order whatever it finds, and checks only
// afterwards (an early ASSERT on one process would leave the others waiting).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "bootstrap/mpi_bootstrap.hpp"
#include "bootstrap_world.hpp"

namespace ruccl::bootstrap::testing {
namespace {

using Blobs = std::vector<std::vector<std::byte>>;

std::vector<std::byte> encode(std::size_t value) {
  std::vector<std::byte> out(sizeof value);
  std::memcpy(out.data(), &value, sizeof value);
  return out;
}

std::size_t decode(const std::vector<std::byte>& blob) {
  std::size_t value = 0;
  if (blob.size() == sizeof value) std::memcpy(&value, blob.data(), sizeof value);
  return blob.size() == sizeof value ? value : SIZE_MAX;
}

// Each process's MPI_COMM_WORLD rank, gathered in process order.
std::vector<std::size_t> world_ranks_in_process_order(Bootstrap& b) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  auto blobs = b.all_gather(encode(static_cast<std::size_t>(rank)));
  EXPECT_TRUE(blobs) << blobs.status().to_string();
  std::vector<std::size_t> ranks;
  if (blobs)
    for (const auto& blob : *blobs) ranks.push_back(decode(blob));
  return ranks;
}

TEST(BootstrapTopology, IsSane) {
  const Topology& t = world().topology();
  int world_size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  EXPECT_EQ(t.processes, static_cast<std::size_t>(world_size));
  EXPECT_LT(t.process, t.processes);
  EXPECT_LT(t.node, t.nodes);
  EXPECT_LT(t.local_process, t.local_processes);
  EXPECT_FALSE(t.hostname.empty());
  ASSERT_EQ(t.node_of_process.size(), t.processes);
  EXPECT_EQ(t.node_of_process[t.process], t.node);
  // Nodes are contiguous runs numbered 0, 1, ... in process order.
  EXPECT_EQ(t.node_of_process.front(), 0u);
  for (std::size_t p = 1; p < t.processes; ++p)
    EXPECT_TRUE(t.node_of_process[p] == t.node_of_process[p - 1] ||
                t.node_of_process[p] == t.node_of_process[p - 1] + 1) << "process " << p;
  EXPECT_EQ(t.node_of_process.back() + 1, t.nodes);
  const auto first_of_node = static_cast<std::size_t>(
      std::find(t.node_of_process.begin(), t.node_of_process.end(), t.node) - t.node_of_process.begin());
  EXPECT_EQ(t.local_process, t.process - first_of_node);
  EXPECT_EQ(t.local_processes,
            static_cast<std::size_t>(std::count(t.node_of_process.begin(), t.node_of_process.end(), t.node)));

  // Process indices are a permutation, in order: process p's blob says p.
  auto indices = world().all_gather(encode(t.process));
  ASSERT_TRUE(indices) << indices.status().to_string();
  ASSERT_EQ(indices->size(), t.processes);
  for (std::size_t p = 0; p < t.processes; ++p) EXPECT_EQ(decode((*indices)[p]), p);

  // (node, rank) order: world ranks ascend within a node, nodes by lowest rank.
  const auto ranks = world_ranks_in_process_order(world());
  ASSERT_EQ(ranks.size(), t.processes);
  std::vector<std::size_t> sorted = ranks;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::size_t> identity(t.processes);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_EQ(sorted, identity);
  for (std::size_t p = 1; p < t.processes; ++p)
    if (t.node_of_process[p] == t.node_of_process[p - 1]) {
      EXPECT_LT(ranks[p - 1], ranks[p]) << "process " << p;
    }

  // Processes of one node share a host name; and on one host, one node.
  auto hosts = world().all_gather(std::as_bytes(std::span(t.hostname)));
  ASSERT_TRUE(hosts) << hosts.status().to_string();
  for (std::size_t p = 0; p < t.processes; ++p) {
    const bool same_node = t.node_of_process[p] == t.node;
    const bool same_host = (*hosts)[p] == std::vector<std::byte>(std::as_bytes(std::span(t.hostname)).begin(),
                                                                 std::as_bytes(std::span(t.hostname)).end());
    EXPECT_EQ(same_node, same_host) << "process " << p;
  }
}

// Blob sizes cycle through empty, > 64 KiB, one byte and an odd size, so that
// every process sends each size once over the four shapes.
constexpr std::size_t kSizes[] = {0, 70000, 1, 4097};

std::size_t blob_bytes(std::size_t process, std::size_t shape) { return kSizes[(process + shape) % 4]; }

// All gathers of the four shapes on `b`; checks contents in process order.
void check_variable_blobs(Bootstrap& b) {
  const std::size_t me = b.topology().process;
  for (std::size_t shape = 0; shape < 4; ++shape) {
    auto blobs = b.all_gather(make_blob(me, blob_bytes(me, shape)));
    ASSERT_TRUE(blobs) << blobs.status().to_string();
    ASSERT_EQ(blobs->size(), b.topology().processes);
    for (std::size_t p = 0; p < blobs->size(); ++p)
      EXPECT_EQ((*blobs)[p], make_blob(p, blob_bytes(p, shape))) << "shape " << shape << " process " << p;
  }
}

TEST(BootstrapAllGather, VariableSizesInProcessOrder) { check_variable_blobs(world()); }

TEST(BootstrapAllGather, AllEmpty) {
  auto blobs = world().all_gather({});
  ASSERT_TRUE(blobs) << blobs.status().to_string();
  ASSERT_EQ(blobs->size(), world().topology().processes);
  for (const auto& blob : *blobs) EXPECT_TRUE(blob.empty());
}

TEST(BootstrapAllGather, InManyRounds) {
  // 1000 bytes per round: the 70000-byte blob takes 70 to 280 rounds.
  auto b = mpi_bootstrap(MPI_COMM_WORLD, MpiBootstrapOptions{.max_round_bytes = 1000});
  ASSERT_TRUE(b) << b.status().to_string();
  check_variable_blobs(**b);
}

TEST(BootstrapBarrier, Completes) {
  EXPECT_TRUE(world().barrier());
  EXPECT_TRUE(world().barrier());
}

TEST(BootstrapAgreeOn, EqualValues) {
  const Status s = agree_on(world(), 2, "devices per process");
  EXPECT_TRUE(s) << s.to_string();
}

TEST(BootstrapAgreeOn, DifferingValueFailsEverywhere) {
  const Topology& t = world().topology();
  if (t.processes < 2) GTEST_SKIP() << "needs two processes";
  // Process 1 differs; with four processes process 3 too, and process 1 is named first.
  const std::size_t value = (t.process % 2 == 1) ? 3 : 2;
  const Status s = agree_on(world(), value, "devices per process");
  EXPECT_EQ(s.code(), ErrorCode::kDeviceCountMismatch) << s.to_string();
  const std::string host0 = t.hostname;  // one node under mpirun on one machine
  EXPECT_EQ(s.message(), "process 1 (host " + host0 + ") has 3 devices per process, process 0 (host " +
                             host0 + ") has 2")
      << "(on several nodes the hosts may differ)";
  // The group is still usable afterwards.
  EXPECT_TRUE(agree_on(world(), 4, "devices per process"));
}

TEST(BootstrapSideBySide, WorldAndDupDoNotInterfere) {
  auto dup = mpi_bootstrap(MPI_COMM_WORLD);
  ASSERT_TRUE(dup) << dup.status().to_string();
  Bootstrap& other = **dup;
  const Topology& t = world().topology();
  EXPECT_EQ(other.topology().process, t.process);
  EXPECT_EQ(other.topology().node_of_process, t.node_of_process);
  // Interleaved gathers with different contents on the two groups.
  for (std::size_t i = 0; i < 3; ++i) {
    auto a = world().all_gather(make_blob(t.process, 100 + i));
    auto b = other.all_gather(make_blob(t.process + 1000, 70000 - i));
    EXPECT_TRUE(other.barrier());
    ASSERT_TRUE(a && b);
    for (std::size_t p = 0; p < t.processes; ++p) {
      EXPECT_EQ((*a)[p], make_blob(p, 100 + i));
      EXPECT_EQ((*b)[p], make_blob(p + 1000, 70000 - i));
    }
  }
}

TEST(BootstrapSideBySide, SubgroupHasItsOwnTopology) {
  // Even and odd world ranks form two groups; each gets its own process order.
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm half = MPI_COMM_NULL;
  ASSERT_EQ(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half), MPI_SUCCESS);
  int half_size = 0;
  MPI_Comm_size(half, &half_size);
  {
    auto group = mpi_bootstrap(half);
    MPI_Comm_free(&half);  // the bootstrap holds its own duplicate
    ASSERT_TRUE(group) << group.status().to_string();
    EXPECT_EQ((*group)->topology().processes, static_cast<std::size_t>(half_size));
    auto in_group = (*group)->all_gather(encode(static_cast<std::size_t>(rank)));
    auto in_world = world().all_gather(encode(static_cast<std::size_t>(rank)));
    ASSERT_TRUE(in_group && in_world);
    for (const auto& blob : *in_group) EXPECT_EQ(decode(blob) % 2, static_cast<std::size_t>(rank % 2));
    EXPECT_EQ(in_world->size(), world().topology().processes);
  }
}

// Counts live copies of an attribute: MPI_Comm_dup copies it (copy callback),
// MPI_Comm_free deletes it (delete callback). The bootstrap's duplicate of a
// communicator carrying the attribute is thus counted while it lives.
int count_copy(MPI_Comm, int, void* extra, void* in, void* out, int* flag) {
  ++*static_cast<int*>(extra);
  *static_cast<void**>(out) = in;
  *flag = 1;
  return MPI_SUCCESS;
}
int count_delete(MPI_Comm, int, void*, void* extra) {
  --*static_cast<int*>(extra);
  return MPI_SUCCESS;
}

TEST(BootstrapLifetime, DestructorFreesTheDuplicate) {
  int live = 0;
  int keyval = MPI_KEYVAL_INVALID;
  ASSERT_EQ(MPI_Comm_create_keyval(count_copy, count_delete, &keyval, &live), MPI_SUCCESS);
  MPI_Comm parent = MPI_COMM_NULL;
  ASSERT_EQ(MPI_Comm_dup(MPI_COMM_WORLD, &parent), MPI_SUCCESS);
  ASSERT_EQ(MPI_Comm_set_attr(parent, keyval, nullptr), MPI_SUCCESS);
  live = 1;  // the attribute on `parent`
  for (int i = 0; i < 5; ++i) {
    auto b = mpi_bootstrap(parent);
    ASSERT_TRUE(b) << b.status().to_string();
    EXPECT_EQ(live, 2) << "the bootstrap holds exactly one duplicate";
    EXPECT_TRUE((*b)->barrier());
  }
  EXPECT_EQ(live, 1) << "every bootstrap freed its duplicate";
  MPI_Comm_free(&parent);
  EXPECT_EQ(live, 0);
  MPI_Comm_free_keyval(&keyval);
}

TEST(BootstrapLifetime, SecondWorldBootstrapBorrowsMpi) {
  {
    auto second = mpi_world_bootstrap();  // MPI is up: borrowed, never finalised
    ASSERT_TRUE(second) << second.status().to_string();
    EXPECT_TRUE((*second)->barrier());
  }
  int finalized = 1;
  MPI_Finalized(&finalized);
  EXPECT_EQ(finalized, 0);
  EXPECT_TRUE(world().barrier());
}

TEST(BootstrapErrors, NullCommunicatorIsInvalid) {
  auto b = mpi_bootstrap(MPI_COMM_NULL);  // local check, no collective
  ASSERT_FALSE(b);
  EXPECT_EQ(b.status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace

// This binary takes no arguments of its own.
bool prepare_tests(int&, char**, Bootstrap&) { return true; }

}  // namespace ruccl::bootstrap::testing
