// The directory bootstrap (src/bootstrap/file_bootstrap.hpp) and the world
// communicator over it (create_world_communicator_from_directory), without
// MPI and without mpirun.
//
//  - FileBootstrap.*: several bootstraps in one process (one thread each, as
//    if each were a process), hostnames overridden to simulate nodes: the
//    (node, index) order, all_gather in process order, barrier, the deadline
//    naming the missing index, bad arguments and a reused directory.
//  - StoreBootstrap.*: the key-value store bootstrap (store_bootstrap.hpp)
//    over the in-memory store, threads as processes: the same order, blobs,
//    barrier and deadline, the abort flag, the index-order requirement (the
//    same error on every process) and a reused prefix.
//  - FileWorld.* (when the multinode layer is built): processes forked from
//    this test meet in a temporary directory, build a communicator and run a
//    checked all-reduce and broadcast; the survivors of a killed process build
//    a new one among themselves; a missing process is kTimeout on every
//    present one, naming its index, within the deadline. With hostnames
//    overridden, forked processes form simulated nodes (all on this host, so
//    they share memory per simulated node): nodes of different sizes create
//    a communicator (every process takes part in every agreement, whether
//    its node shares memory or not), and 2 nodes x 2 processes x 1-2 devices
//    run the hierarchical all-reduce with its node level (the node's shared
//    memory, then a ring across nodes over UCX), checked, in place and not.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/file_bootstrap.hpp"
#include "bootstrap/store_bootstrap.hpp"
#ifdef RUCCL_TEST_FILE_WORLD
#include <fstream>
#include <sstream>

#include "ruccl/world.hpp"
#include "world/from_bootstrap.hpp"
#endif

namespace ruccl::bootstrap {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// A fresh directory under the system temp dir, removed at the end.
struct TempDir {
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "ruccl-file-bootstrap-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string sub(const std::string& name) const { return (path / name).string(); }
  fs::path path;
};

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::vector<std::byte> bytes_of(const std::string& s) {
  std::vector<std::byte> out(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) out[i] = static_cast<std::byte>(s[i]);
  return out;
}
std::string string_of(const std::vector<std::byte>& b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

// Runs fn(index) for each of `indices` on its own thread, returns the outcomes.
std::vector<std::string> on_threads(const std::vector<std::size_t>& indices,
                                    const std::function<std::string(std::size_t)>& fn) {
  std::vector<std::string> out(indices.size());
  std::vector<std::thread> threads;
  for (std::size_t k = 0; k < indices.size(); ++k)
    threads.emplace_back([&, k] { out[k] = fn(indices[k]); });
  for (auto& t : threads) t.join();
  return out;
}

// Index i of 4: several rounds of all_gather with blobs of different sizes
// (index 3's is empty), each checked in process order, then a barrier. "" or
// what went wrong.
std::string rounds_then_barrier(Bootstrap& boot, std::size_t i,
                                const std::vector<std::size_t>& process_of_index) {
  for (int round = 0; round < 3; ++round) {
    const std::string mine = i == 3 ? "" : std::string(i + 1 + round, char('a' + i));
    auto all = boot.all_gather(bytes_of(mine));
    if (!all.is_ok()) return all.status().to_string();
    for (std::size_t j = 0; j < 4; ++j) {
      const std::string want = j == 3 ? "" : std::string(j + 1 + round, char('a' + j));
      if (string_of(all.value()[process_of_index[j]]) != want)
        return "round " + std::to_string(round) + ": process " +
               std::to_string(process_of_index[j]) + "'s blob is '" +
               string_of(all.value()[process_of_index[j]]) + "', want '" + want + "'";
    }
  }
  const Status s = boot.barrier();
  return s.is_ok() ? "" : s.to_string();
}

TEST(FileBootstrap, NodesByHostnameProcessesByNodeThenIndex) {
  TempDir dir;
  // Indices 0 and 2 on node "a", 1 and 3 on node "b": process order 0, 2, 1, 3.
  const std::vector<std::size_t> process_of_index = {0, 2, 1, 3};
  const auto got = on_threads({0, 1, 2, 3}, [&](std::size_t i) -> std::string {
    FileBootstrapOptions o;
    o.timeout = 20s;
    o.hostname = i % 2 == 0 ? "a" : "b";
    auto boot = file_bootstrap(dir.path.string(), i, 4, o);
    if (!boot.is_ok()) return boot.status().to_string();
    const Topology& t = (*boot)->topology();
    const std::size_t node = i % 2;
    if (t.processes != 4 || t.nodes != 2 || t.process != process_of_index[i] || t.node != node ||
        t.local_processes != 2 || t.local_process != i / 2 || t.hostname != o.hostname ||
        t.node_of_process != std::vector<std::size_t>{0, 0, 1, 1})
      return "index " + std::to_string(i) + ": wrong topology (process " + std::to_string(t.process) +
             ", node " + std::to_string(t.node) + ")";
    return rounds_then_barrier(**boot, i, process_of_index);
  });
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], "") << "index " << i;
  // Finished generations are cleaned up: only the last one (the barrier's) stays.
  std::size_t generations = 0;
  for (const auto& entry : fs::directory_iterator(dir.path)) {
    ++generations;
    EXPECT_EQ(entry.path().filename(), "4") << "a finished generation was left behind";
  }
  EXPECT_EQ(generations, 1u);
}

TEST(FileBootstrap, MissingProcessIsATimeoutNamingItsIndex) {
  TempDir dir;
  const auto t0 = Clock::now();
  const auto got = on_threads({0, 2}, [&](std::size_t i) -> std::string {
    auto boot = file_bootstrap(dir.path.string(), i, 3, {.timeout = 400ms, .hostname = "h"});
    if (boot.is_ok()) return "created without process 1";
    return boot.status().to_string();
  });
  EXPECT_LT(seconds_since(t0), 0.4 + 5.0);
  for (const std::string& s : got) {
    EXPECT_NE(s.find("Timeout:"), std::string::npos) << s;
    EXPECT_NE(s.find("process 1 did not arrive"), std::string::npos) << s;
    // The time it waited: at least the timeout (the text gives the measured ms).
    std::smatch m;
    ASSERT_TRUE(std::regex_search(s, m, std::regex("timed out after ([0-9]+) ms"))) << s;
    EXPECT_GE(std::stoul(m[1].str()), 400u) << s;
  }

  // Later calls have the same deadline: process 1 never calls all_gather.
  TempDir later;
  const auto second = on_threads({0, 1}, [&](std::size_t i) -> std::string {
    auto boot = file_bootstrap(later.path.string(), i, 2, {.timeout = 400ms, .hostname = "h"});
    if (!boot.is_ok()) return "creation: " + boot.status().to_string();
    if (i == 1) return "Timeout: (process 1 stays away)";
    const auto t1 = Clock::now();
    auto all = (*boot)->all_gather(bytes_of("x"));
    if (all.is_ok()) return "all_gather without process 1";
    if (seconds_since(t1) > 0.4 + 5.0) return "waited past the deadline";
    return all.status().to_string();
  });
  EXPECT_NE(second[0].find("Timeout: file bootstrap"), std::string::npos) << second[0];
  EXPECT_NE(second[0].find("all_gather (generation 1)"), std::string::npos) << second[0];
  EXPECT_NE(second[0].find("process 1 did not arrive"), std::string::npos) << second[0];
}

TEST(FileBootstrap, BadArgumentsAndAReusedDirectory) {
  TempDir dir;
  struct Row {
    std::string directory;
    std::size_t process, processes;
    const char* says;
  };
  const Row rows[] = {
      {"", 0, 1, "the directory is empty"},
      {dir.path.string(), 3, 3, "process 3 is outside a job of 3 processes"},
      {dir.path.string(), 0, 0, "0 processes"},
      {"/proc/ruccl-cannot-be-here", 0, 1, "cannot create the directory"},
  };
  for (const Row& row : rows) {
    auto boot = file_bootstrap(row.directory, row.process, row.processes, {.timeout = 1s, .hostname = ""});
    ASSERT_FALSE(boot.is_ok()) << row.says;
    EXPECT_EQ(boot.status().code(), ErrorCode::kInvalidArgument) << boot.status().to_string();
    EXPECT_NE(boot.status().message().find(row.says), std::string::npos) << boot.status().to_string();
  }
  // A one-process job completes alone; the directory then refuses a second job.
  {
    auto first = file_bootstrap(dir.path.string(), 0, 1, {.timeout = 1s, .hostname = ""});
    ASSERT_TRUE(first.is_ok()) << first.status().to_string();
    EXPECT_EQ((*first)->topology().processes, 1u);
    ASSERT_TRUE((*first)->barrier().is_ok());
  }
  auto again = file_bootstrap(dir.path.string(), 0, 1, {.timeout = 1s, .hostname = ""});
  ASSERT_FALSE(again.is_ok());
  EXPECT_EQ(again.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(again.status().message().find("fresh directory"), std::string::npos)
      << again.status().to_string();
}

unsigned mode_of(const fs::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return 0xFFFF;
  return st.st_mode & 07777;
}

// The blobs carry the job token: files 0600 and directories 0700 whatever the
// umask (0 here: the most permissive), and a directory others could write, a
// symbolic link or another user's directory refused.
TEST(FileBootstrap, FilesArePrivateAndUnsafeDirectoriesAreRefused) {
  TempDir dir;
  const mode_t old_umask = ::umask(0);
  const fs::path job = dir.path / "parent" / "job";
  {
    auto boot = file_bootstrap(job.string() + "/", 0, 1, {.timeout = 1s, .hostname = ""});
    ASSERT_TRUE(boot.is_ok()) << boot.status().to_string();
    ASSERT_TRUE((*boot)->all_gather(bytes_of("secret")).is_ok());
  }
  ::umask(old_umask);
  EXPECT_EQ(mode_of(job), 0700u);
  std::size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(job)) {
    if (entry.is_directory()) {
      EXPECT_EQ(mode_of(entry.path()), 0700u) << entry.path();
    } else {
      EXPECT_EQ(mode_of(entry.path()), 0600u) << entry.path();
      ++files;
    }
  }
  EXPECT_GE(files, 1u);

  auto refused = [](const fs::path& path, const std::string& says) {
    auto boot = file_bootstrap(path.string(), 0, 1, {.timeout = 1s, .hostname = ""});
    ASSERT_FALSE(boot.is_ok()) << path << " was accepted";
    EXPECT_EQ(boot.status().code(), ErrorCode::kInvalidArgument) << boot.status().to_string();
    EXPECT_NE(boot.status().message().find(says), std::string::npos) << boot.status().to_string();
    EXPECT_FALSE(fs::exists(path / "0" / "0.blob")) << "a blob was written into " << path;
  };
  const fs::path shared = dir.path / "shared";
  fs::create_directory(shared);
  fs::permissions(shared, fs::perms::all);  // 0777, as a shared /tmp-like directory
  refused(shared, "group- or world-writable (mode 0777)");
  const fs::path group = dir.path / "group";
  fs::create_directory(group);
  fs::permissions(group, fs::perms::owner_all | fs::perms::group_all);  // 0770
  refused(group, "group- or world-writable (mode 0770)");
  const fs::path link = dir.path / "link";
  fs::create_directory(dir.path / "target");
  fs::permissions(dir.path / "target", fs::perms::owner_all);
  fs::create_directory_symlink(dir.path / "target", link);
  refused(link, "symbolic link");
  if (::geteuid() == 0) {  // root can hand a directory to another uid
    const fs::path other = dir.path / "other";
    fs::create_directory(other);
    fs::permissions(other, fs::perms::owner_all);
    ASSERT_EQ(::chown(other.c_str(), 4321, static_cast<gid_t>(-1)), 0);
    refused(other, "owned by uid 4321");
  }
}

TEST(StoreBootstrap, NodesByHostnameBlobsInProcessOrderAndCleanup) {
  auto store = in_memory_store();
  // Indices 0 and 2 on node "a", 1 and 3 on node "b": process order 0, 2, 1, 3.
  const std::vector<std::size_t> process_of_index = {0, 2, 1, 3};
  const auto got = on_threads({0, 1, 2, 3}, [&](std::size_t i) -> std::string {
    StoreBootstrapOptions o;
    o.timeout = 20s;
    o.hostname = i % 2 == 0 ? "a" : "b";
    o.prefix = "job";
    auto boot = store_bootstrap(store, i, 4, o);
    if (!boot.is_ok()) return boot.status().to_string();
    const Topology& t = (*boot)->topology();
    if (t.processes != 4 || t.nodes != 2 || t.process != process_of_index[i] || t.node != i % 2 ||
        t.local_process != i / 2 || t.node_of_process != std::vector<std::size_t>{0, 0, 1, 1})
      return "index " + std::to_string(i) + ": wrong topology (process " +
             std::to_string(t.process) + ")";
    return rounds_then_barrier(**boot, i, process_of_index);
  });
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], "") << "index " << i;
  // Generations 0..3 were erased by their owners; the last one (4) stays.
  for (std::size_t i = 0; i < 4; ++i) {
    for (std::size_t g = 0; g < 4; ++g)
      EXPECT_FALSE(
          store->try_get("job/" + std::to_string(g) + "/" + std::to_string(i))->has_value())
          << "generation " << g << " of index " << i << " was left behind";
    EXPECT_TRUE(store->try_get("job/4/" + std::to_string(i))->has_value());
  }
}

TEST(StoreBootstrap, MissingProcessTimeoutAbortAndAReusedPrefix) {
  auto store = in_memory_store();
  const auto t0 = Clock::now();
  const auto got = on_threads({0, 2}, [&](std::size_t i) -> std::string {
    auto boot = store_bootstrap(store, i, 3, {.timeout = 400ms, .hostname = "h"});
    return boot.is_ok() ? "created without process 1" : boot.status().to_string();
  });
  EXPECT_LT(seconds_since(t0), 0.4 + 5.0);
  for (const std::string& s : got) {
    EXPECT_NE(s.find("Timeout: store bootstrap"), std::string::npos) << s;
    EXPECT_NE(s.find("process 1 did not arrive (no key ruccl/0/1)"), std::string::npos) << s;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(s, m, std::regex("timed out after ([0-9]+) ms"))) << s;
    EXPECT_GE(std::stoul(m[1].str()), 400u) << s;
  }
  // The prefix now holds indices 0 and 2: a second job under it is refused.
  auto again = store_bootstrap(store, 0, 1, {.timeout = 1s, .hostname = "h"});
  ASSERT_FALSE(again.is_ok());
  EXPECT_EQ(again.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(again.status().message().find("fresh prefix"), std::string::npos)
      << again.status().to_string();

  // A one-process job completes alone; a set abort flag ends a later wait.
  auto alone = store_bootstrap(store, 0, 1, {.timeout = 1s, .hostname = "h", .prefix = "one"});
  ASSERT_TRUE(alone.is_ok()) << alone.status().to_string();
  EXPECT_TRUE((*alone)->barrier().is_ok());
  auto pair = on_threads({0, 1}, [&](std::size_t i) -> std::string {
    auto boot = store_bootstrap(store, i, 2, {.timeout = 20s, .hostname = "h", .prefix = "two"});
    if (!boot.is_ok()) return boot.status().to_string();
    if (i == 1) return "Aborted: (index 1 stays away)";
    const std::atomic<bool> abort{true};
    const auto t1 = Clock::now();
    const Status s = (*boot)->barrier(Wait::within(20s, &abort));
    if (seconds_since(t1) > 5.0) return "the abort flag was not seen";
    return s.to_string();
  });
  EXPECT_NE(pair[0].find("Aborted: store bootstrap (prefix two): barrier (generation 1)"),
            std::string::npos)
      << pair[0];
}

TEST(StoreBootstrap, IndexOrderRequiredFailsAlikeOnEveryProcess) {
  auto store = in_memory_store();
  // Hosts a, b, a: index 2 would be process 1, index 1 process 2.
  const auto got = on_threads({0, 1, 2}, [&](std::size_t i) -> std::string {
    StoreBootstrapOptions o{.timeout = 20s, .hostname = i == 1 ? "b" : "a"};
    o.require_index_order = true;
    auto boot = store_bootstrap(store, i, 3, o);
    return boot.is_ok() ? "created" : boot.status().to_string();
  });
  for (const std::string& s : got) {
    EXPECT_EQ(s, got[0]);
    EXPECT_NE(s.find("Unsupported: store bootstrap: index 1 (host b) would be process 2"),
              std::string::npos)
        << s;
  }
}

#ifdef RUCCL_TEST_FILE_WORLD

// ---- world communicators across forked processes ------------------------------

// Forks one child per index; each runs fn(index) and exits 0 on "" (else
// prints the message and exits 1). Returns each child's outcome, "" for
// success; a child still running at `limit` is killed.
std::vector<std::string> fork_processes(const std::vector<std::size_t>& indices,
                                        const std::function<std::string(std::size_t)>& fn,
                                        std::chrono::seconds limit) {
  std::fflush(nullptr);
  std::vector<pid_t> pids;
  for (std::size_t index : indices) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      std::string err;
      try {
        err = fn(index);
      } catch (const std::exception& e) {
        err = std::string("exception: ") + e.what();
      }
      if (!err.empty()) std::fprintf(stderr, "index %zu: %s\n", index, err.c_str());
      std::fflush(nullptr);
      ::_exit(err.empty() ? 0 : 1);
    }
    pids.push_back(pid);
  }
  std::vector<std::string> out(indices.size(), "still running");
  const auto deadline = Clock::now() + limit;
  for (std::size_t k = 0; k < pids.size(); ++k) {
    if (pids[k] < 0) {
      out[k] = "fork failed";
      continue;
    }
    int status = 0;
    while (::waitpid(pids[k], &status, WNOHANG) == 0) {
      if (Clock::now() > deadline) {
        ::kill(pids[k], SIGKILL);
        ::waitpid(pids[k], &status, 0);
        status = -1;
        break;
      }
      std::this_thread::sleep_for(10ms);
    }
    if (status == -1) out[k] = "killed after the limit";
    else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) out[k] = "";
    else out[k] = "failed (exit status " + std::to_string(status) + "; its message is above)";
  }
  return out;
}

Config world_config(std::chrono::milliseconds timeout) {
  return Config().with_timeout(timeout);
}

// A checked all-reduce (i32 sum) and broadcast (f32 from `root`) on one rank.
std::string run_collectives(Communicator& comm, std::size_t root) {
  const std::size_t rank = comm.first_rank();
  const std::size_t world = comm.world_size();
  const std::size_t count = 1003;
  std::vector<std::int32_t> in(count);
  for (std::size_t j = 0; j < count; ++j) in[j] = static_cast<std::int32_t>(rank * 1000 + j);
  auto sum = comm.all_reduce(rank, TensorView::of(in.data(), DataType::kI32, count, host_device(0)),
                             ReduceOp::kSum);
  if (!sum.is_ok()) return "all_reduce: " + sum.status().to_string();
  for (std::size_t j = 0; j < count; ++j) {
    const auto want = static_cast<std::int32_t>(1000 * world * (world - 1) / 2 + world * j);
    if (sum->as<std::int32_t>()[j] != want)
      return "all_reduce element " + std::to_string(j) + " is " +
             std::to_string(sum->as<std::int32_t>()[j]) + ", want " + std::to_string(want);
  }
  std::vector<float> data(count, rank == root ? 0.0f : -1.0f);
  if (rank == root)
    for (std::size_t j = 0; j < count; ++j) data[j] = 0.5f * static_cast<float>(j);
  const TensorView v = TensorView::of(data.data(), DataType::kF32, count, host_device(0));
  auto got = comm.broadcast(rank, rank == root ? &v : nullptr);
  if (!got.is_ok()) return "broadcast: " + got.status().to_string();
  for (std::size_t j = 0; j < count; ++j)
    if (got->as<float>()[j] != 0.5f * static_cast<float>(j))
      return "broadcast element " + std::to_string(j) + " is wrong";
  return "";
}

TEST(FileWorld, ThreeProcessesWithoutMpirunThenTheSurvivorsOfOne) {
  TempDir dir;
  const auto got = fork_processes({0, 1, 2}, [&](std::size_t i) -> std::string {
    auto comm = create_world_communicator_from_directory(dir.sub("job"), i, 3, {host_device(0)},
                                                         world_config(20s));
    if (!comm.is_ok()) return "create: " + comm.status().to_string();
    if ((*comm)->world_size() != 3) return "world of " + std::to_string((*comm)->world_size());
    if (std::string err = run_collectives(**comm, 1); !err.empty()) return err;
    // Process 2 dies once 0 and 1 are done with the old communicator (so no
    // message of theirs depends on it); they meet again in a new directory,
    // as 0 and 1 of 2.
    const fs::path done = dir.path / ("done." + std::to_string(i));
    if (i == 2) {
      const auto until = Clock::now() + 20s;
      while (!(fs::exists(dir.path / "done.0") && fs::exists(dir.path / "done.1")) && Clock::now() < until)
        std::this_thread::sleep_for(5ms);
      ::raise(SIGKILL);
    }
    if (std::FILE* f = std::fopen(done.c_str(), "w")) std::fclose(f);
    auto survivors = create_world_communicator_from_directory(dir.sub("survivors"), i, 2,
                                                              {host_device(0)}, world_config(20s));
    if (!survivors.is_ok()) return "survivors: " + survivors.status().to_string();
    if ((*survivors)->world_size() != 2) return "survivors' world of " + std::to_string((*survivors)->world_size());
    return run_collectives(**survivors, 0);
  }, 25s);
  EXPECT_EQ(got[0], "");
  EXPECT_EQ(got[1], "");
  EXPECT_NE(got[2], "") << "process 2 was to be killed";
}

TEST(FileWorld, AMissingProcessIsATimeoutOnEveryPresentOne) {
  TempDir dir;
  const auto got = fork_processes({0, 2}, [&](std::size_t i) -> std::string {
    const auto t0 = Clock::now();
    auto comm = create_world_communicator_from_directory(dir.path.string(), i, 3, {host_device(0)},
                                                         world_config(1500ms));
    const double took = seconds_since(t0);
    if (comm.is_ok()) return "created without process 1";
    const std::string s = comm.status().to_string();
    if (comm.status().code() != ErrorCode::kTimeout) return "not a timeout: " + s;
    if (s.find("process 1 did not arrive") == std::string::npos) return "does not name process 1: " + s;
    if (took > 1.5 + 5.0) return "took " + std::to_string(took) + " s";
    return "";
  }, 20s);
  EXPECT_EQ(got[0], "");
  EXPECT_EQ(got[1], "");
}

// A communicator of `devices` host devices per process over the directory
// bootstrap, this process on simulated node `host`.
Result<std::shared_ptr<Communicator>> simulated_node_world(const std::string& dir, std::size_t i,
                                                           std::size_t processes,
                                                           const std::string& host,
                                                           std::size_t devices, Config config) {
  FileBootstrapOptions o;
  o.timeout = config.timeout();
  o.hostname = host;
  auto boot = file_bootstrap(dir, i, processes, o);
  RUCCL_TRY(boot);
  std::vector<DeviceId> local;
  for (std::size_t d = 0; d < devices; ++d) local.push_back(host_device(d));
  return world::create_communicator_from_bootstrap(std::move(boot).value(), std::move(local),
                                                   std::move(config));
}

// Every one of the `local` ranks of `comm` in this process all-reduces (i32 sum) `count` elements,
// in place or into a separate output, checked; "" or what went wrong.
std::string checked_all_reduce(Communicator& comm, std::size_t local, std::size_t count,
                               bool in_place) {
  const std::size_t world = comm.world_size();
  std::vector<std::string> errors(local);
  std::vector<std::thread> threads;
  for (std::size_t d = 0; d < local; ++d)
    threads.emplace_back([&, d] {
      const std::size_t rank = comm.first_rank() + d;
      std::vector<std::int32_t> in(count), out(count, -1);
      for (std::size_t j = 0; j < count; ++j)
        in[j] = static_cast<std::int32_t>(rank * 7 + j % 1000);
      const TensorView vin = TensorView::of(in.data(), DataType::kI32, count, host_device(d));
      const TensorView vout = TensorView::of(out.data(), DataType::kI32, count, host_device(d));
      const Status s = in_place ? comm.all_reduce_into(rank, vin, vin, ReduceOp::kSum)
                                : comm.all_reduce_into(rank, vin, vout, ReduceOp::kSum);
      if (!s.is_ok()) {
        errors[d] = "rank " + std::to_string(rank) + ": " + s.to_string();
        return;
      }
      const std::vector<std::int32_t>& got = in_place ? in : out;
      for (std::size_t j = 0; j < count; ++j) {
        const auto want =
            static_cast<std::int32_t>(7 * world * (world - 1) / 2 + world * (j % 1000));
        if (got[j] != want) {
          errors[d] = "rank " + std::to_string(rank) + " count " + std::to_string(count) +
                      ": element " + std::to_string(j) + " is " + std::to_string(got[j]) +
                      ", want " + std::to_string(want);
          return;
        }
      }
    });
  for (auto& t : threads) t.join();
  for (const std::string& e : errors)
    if (!e.empty()) return e;
  return "";
}

std::string file_text(const fs::path& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(FileWorld, NodesOfDifferentSizesCreateACommunicator) {
  // Two processes on node "a", one on "b" (which shares memory with no one),
  // and the other way round: before, the lone node's process skipped an
  // agreement the others waited in.
  for (const std::vector<std::string>& hosts :
       {std::vector<std::string>{"a", "a", "b"}, std::vector<std::string>{"a", "b", "b"}}) {
    TempDir dir;
    const auto got = fork_processes(
        {0, 1, 2},
        [&](std::size_t i) -> std::string {
          auto comm = simulated_node_world(dir.sub("job"), i, 3, hosts[i], 1, world_config(20s));
          if (!comm.is_ok()) return "create: " + comm.status().to_string();
          if (std::string err = run_collectives(**comm, 2); !err.empty()) return err;
          return checked_all_reduce(**comm, 1, 100003, false);
        },
        40s);
    for (std::size_t i = 0; i < got.size(); ++i)
      EXPECT_EQ(got[i], "") << "process " << i << " of hosts " << hosts[0] << hosts[1] << hosts[2];
  }
}

TEST(FileWorld, TwoNodesOfTwoProcessesRunTheNodeLevel) {
  for (std::size_t devices : {1, 2}) {
    TempDir dir;
    const auto got = fork_processes(
        {0, 1, 2, 3},
        [&](std::size_t i) -> std::string {
          const std::string host = i < 2 ? "a" : "b";
          const fs::path log = dir.path / ("log." + std::to_string(i));
          Config config =
              world_config(20s).with_log_level(LogLevel::kTrace).with_log_file(log.string());
          auto comm = simulated_node_world(dir.sub("job"), i, 4, host, devices, config);
          if (!comm.is_ok()) return "create: " + comm.status().to_string();
          // Odd counts above the one-shot's sizes, in place and not; and zero.
          for (std::size_t count : {std::size_t{0}, std::size_t{4099}, std::size_t{100003}})
            for (bool in_place : {false, true})
              if (std::string err = checked_all_reduce(**comm, devices, count, in_place);
                  !err.empty())
                return err;
          comm.value().reset();  // the log is complete
          // Each rank ran the node level (its executors' TRACE line) at least once.
          const std::string text = file_text(log);
          if (text.find("node level through the node's shared memory (2 processes), then a ring "
                        "across 2 nodes") == std::string::npos)
            return "no node level in the log:\n" + text.substr(0, 4000);
          return "";
        },
        60s);
    for (std::size_t i = 0; i < got.size(); ++i)
      EXPECT_EQ(got[i], "") << "process " << i << ", " << devices << " devices per process";
  }
}

#endif  // RUCCL_TEST_FILE_WORLD

}  // namespace
}  // namespace ruccl::bootstrap
