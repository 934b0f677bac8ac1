// UCX transports across processes, bootstrapped by MPI: MPI only allgathers
// the worker addresses (and runs barriers); every message goes through UCX.
//
// Modes of this binary:
//   (no flag)        gtest: ring and all-to-all exchanges over all ranks.
//   --peer-failure   2 ranks. Rank 1 does not hold a transport itself: it
//                    starts a helper process (this binary, --peer-child) that
//                    does, passing addresses over pipes. The helper runs a few
//                    ring steps with rank 0 and then _exit()s mid-way. Rank 0
//                    must get kPeerFailure or kTimeout within its short
//                    deadline. Why a helper: when an MPI rank itself dies,
//                    mpirun kills the whole job at once, racing rank 0's
//                    report; the helper dies just as abruptly (same endpoint
//                    teardown by the kernel), while the MPI job stays healthy,
//                    so the exit code is deterministic.
//   --peer-child R W (internal) the helper, talking over pipe fds R and W.
#include <fcntl.h>
#include <mpi.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "transport/transport.hpp"
#include "transport_test_util.hpp"

namespace ruccl::transport::test {
namespace {

using namespace std::chrono_literals;
using Addresses = std::vector<std::vector<std::byte>>;

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int world_size() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

// Every rank's blob, in rank order (MPI_Allgather of lengths, then Allgatherv).
Addresses allgather(const std::vector<std::byte>& mine) {
  const int n = world_size();
  const int length = static_cast<int>(mine.size());
  std::vector<int> lengths(n), displs(n);
  MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD);
  int total = 0;
  for (int i = 0; i < n; ++i) {
    displs[i] = total;
    total += lengths[i];
  }
  std::vector<std::byte> all(static_cast<std::size_t>(total));
  MPI_Allgatherv(mine.data(), length, MPI_BYTE, all.data(), lengths.data(), displs.data(),
                 MPI_BYTE, MPI_COMM_WORLD);
  Addresses out(n);
  for (int i = 0; i < n; ++i) out[i].assign(all.begin() + displs[i], all.begin() + displs[i] + lengths[i]);
  return out;
}

// All ranks agree whether every rank passed (so no rank waits for a failed one).
bool all_ok(bool mine) {
  int ok = mine ? 1 : 0;
  int all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

// A connected transport of this rank; null (and a message) on error.
std::unique_ptr<Transport> connected_transport(std::string& error) {
  auto made = make_ucx_transport();
  if (!made) {
    error = describe(made.status());
    (void)allgather({});  // keep the collective calls matched
    return nullptr;
  }
  const Addresses addresses = allgather((*made)->address());
  if (Status s = (*made)->connect(addresses, after(10s)); !s) {
    error = describe(s);
    return nullptr;
  }
  return std::move(made).value();
}

// Every rank closes at about the same time, progressing until its closes are
// done; the barrier afterwards keeps a finished rank's exit from racing the others.
std::string close_all(Transport& t) {
  const Status s = t.close(after(10s));
  MPI_Barrier(MPI_COMM_WORLD);
  return s ? std::string() : "close: " + describe(s);
}

TEST(TransportMpi, RingHundredIterations) {
  const std::size_t rank = world_rank(), world = world_size();
  std::string error;
  auto t = connected_transport(error);
  ASSERT_TRUE(all_ok(t != nullptr)) << error;
  if (rank == 0) {
    std::printf("[rank 0] lanes to rank %zu: %s\n", 1 % world,
                t->describe_lanes(1 % world).c_str());
  }
  const auto start = Clock::now();
  const std::string ring = ring_rounds(*t, rank, world, 1, 0, 100, 21, 20000ms);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  std::printf("[rank %zu] 100 ring iterations over %zu processes: %lld ms %s\n", rank, world,
              static_cast<long long>(ms.count()), ring.empty() ? "ok" : ring.c_str());
  EXPECT_EQ(ring, "");
  EXPECT_TRUE(all_ok(ring.empty()));
  EXPECT_EQ(close_all(*t), "");
}

TEST(TransportMpi, AllToAllIncludingSelf) {
  const std::size_t rank = world_rank(), world = world_size();
  std::string error;
  auto t = connected_transport(error);
  ASSERT_TRUE(all_ok(t != nullptr)) << error;
  std::string failure;
  for (std::uint64_t seq = 0; seq < 10 && failure.empty(); ++seq) {
    Step step = all_to_all_step(rank, world, 2, seq, 9, {0, 1, 4097, 300000});
    if (Status s = t->exchange(step.sends, step.recvs, after(20s)); !s) {
      failure = "seq " + std::to_string(seq) + ": " + describe(s);
    } else {
      failure = step.check();
    }
  }
  EXPECT_EQ(failure, "");
  EXPECT_TRUE(all_ok(failure.empty()));
  EXPECT_EQ(close_all(*t), "");
}

// ---- peer failure ----------------------------------------------------------

constexpr std::size_t kStepsBeforeDeath = 5;
constexpr auto kFailureDeadline = 3000ms;  // rank 0's short deadline per step

bool write_all(int fd, const void* data, std::size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd, p, bytes);
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<std::size_t>(n);
  }
  return true;
}

bool read_all(int fd, void* data, std::size_t bytes) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::read(fd, p, bytes);
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<std::size_t>(n);
  }
  return true;
}

bool write_blob(int fd, const std::vector<std::byte>& blob) {
  const std::uint64_t n = blob.size();
  return write_all(fd, &n, sizeof n) && write_all(fd, blob.data(), blob.size());
}

bool read_blob(int fd, std::vector<std::byte>& blob) {
  std::uint64_t n = 0;
  if (!read_all(fd, &n, sizeof n) || n > (1u << 20)) return false;
  blob.resize(n);
  return read_all(fd, blob.data(), blob.size());
}

// The helper: rank 1's transport, in a process of its own that dies mid-way.
int peer_child_main(int in_fd, int out_fd) {
  auto t = make_ucx_transport();
  if (!t || !write_blob(out_fd, (*t)->address())) return 3;
  Addresses addresses(2);
  if (!read_blob(in_fd, addresses[0]) || !read_blob(in_fd, addresses[1])) return 4;
  if (!(*t)->connect(addresses, after(10s))) return 5;
  if (std::string e = ring_rounds(**t, 1, 2, 1, 0, kStepsBeforeDeath, 31, 20000ms); !e.empty()) {
    std::fprintf(stderr, "[peer child] ring failed: %s\n", e.c_str());
    return 6;
  }
  // Receive (only) rank 0's next step: then rank 0 has completed every step
  // before it, and is now blocked waiting for this process's messages.
  Step last = ring_step(1, 2, 1, kStepsBeforeDeath, 31, {0, 1, 4097});
  if (Status s = (*t)->exchange({}, last.recvs, after(20s)); !s) return 7;
  std::fprintf(stderr, "[peer child] %zu steps done, exiting abruptly\n", kStepsBeforeDeath);
  _exit(0);  // no close, no destructors: like a crash
}

// Rank 1: starts the helper, relays the addresses, waits for it to die.
int peer_failure_rank1(const char* self) {
  int to_child[2], from_child[2];
  if (pipe(to_child) != 0 || pipe(from_child) != 0) return 10;
  const pid_t child = fork();
  if (child == 0) {
    ::close(to_child[1]);
    ::close(from_child[0]);
    const std::string r = std::to_string(to_child[0]), w = std::to_string(from_child[1]);
    execl(self, self, "--peer-child", r.c_str(), w.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  ::close(to_child[0]);
  ::close(from_child[1]);
  std::vector<std::byte> child_address;
  const bool got = child > 0 && read_blob(from_child[0], child_address);
  const Addresses addresses = allgather(got ? child_address : std::vector<std::byte>{});
  bool ok = got && write_blob(to_child[1], addresses[0]) && write_blob(to_child[1], addresses[1]);
  // Wait (bounded) for the helper to exit on its own.
  int status = 0;
  const auto give_up = after(30s);
  pid_t done = 0;
  while (child > 0 && (done = waitpid(child, &status, WNOHANG)) == 0 && Clock::now() < give_up) {
    std::this_thread::sleep_for(10ms);
  }
  if (child > 0 && done == 0) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    ok = false;
  }
  const bool exited_zero = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  std::printf("[rank 1] helper process exited (status %d)\n",
              WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return ok && exited_zero ? 0 : 11;
}

// Rank 0: ring steps with the helper until it dies; must get a typed error.
int peer_failure_rank0() {
  auto t = make_ucx_transport();
  const Addresses addresses = allgather(t ? (*t)->address() : std::vector<std::byte>{});
  if (!t) return 20;
  if (Status s = (*t)->connect(addresses, after(10s)); !s) return 21;
  int rc = 22;  // no error seen
  for (std::size_t i = 0; i < 2 * kStepsBeforeDeath; ++i) {
    std::vector<std::size_t> sizes = {0, 1, 4097};
    if (i % 10 == 0) sizes.push_back(std::size_t{8} << 20);  // as in ring_rounds
    // Step kStepsBeforeDeath: the helper receives our messages, then dies
    // without sending its own.
    Step step = ring_step(0, 2, 1, i, 31, sizes);
    const auto start = Clock::now();
    const Status s = (*t)->exchange(step.sends, step.recvs, after(kFailureDeadline));
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    if (s) {
      if (!step.check().empty()) return 23;
      continue;
    }
    const bool typed = s.code() == ErrorCode::kPeerFailure || s.code() == ErrorCode::kTimeout;
    const bool names_peer = s.message().find("rank 1") != std::string::npos;
    std::printf("[rank 0] step %zu: %s after %lld ms\n", i, describe(s).c_str(),
                static_cast<long long>(ms.count()));
    rc = typed && names_peer && i == kStepsBeforeDeath ? 0 : 24;
    break;
  }
  const auto start = Clock::now();
  const Status closed = (*t)->close(after(1s));
  std::printf("[rank 0] close after the failure: %s (%lld ms)\n", describe(closed).c_str(),
              static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                         Clock::now() - start)
                                         .count()));
  std::printf("[rank 0] PEER FAILURE TEST %s\n", rc == 0 ? "PASSED" : "FAILED");
  return rc;
}

int peer_failure_main(const char* self) {
  if (world_size() != 2) {
    if (world_rank() == 0) std::fprintf(stderr, "--peer-failure needs exactly 2 ranks\n");
    return 2;
  }
  const int rc = world_rank() == 0 ? peer_failure_rank0() : peer_failure_rank1(self);
  int worst = 0;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}

}  // namespace
}  // namespace ruccl::transport::test

int main(int argc, char** argv) {
  using namespace ruccl::transport::test;
  if (argc == 4 && std::strcmp(argv[1], "--peer-child") == 0) {
    return peer_child_main(std::atoi(argv[2]), std::atoi(argv[3]));
  }
  MPI_Init(&argc, &argv);
  int rc = 0;
  if (argc >= 2 && std::strcmp(argv[1], "--peer-failure") == 0) {
    rc = peer_failure_main("/proc/self/exe");
  } else {
    testing::InitGoogleTest(&argc, argv);
    rc = RUN_ALL_TESTS();
    int worst = 0;
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    rc = worst;
  }
  MPI_Finalize();
  return rc;
}
