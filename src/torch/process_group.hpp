// ruccl as a torch.distributed backend: a c10d::ProcessGroup over a ruccl world
// communicator (src/world) that meets through the group's c10d::Store (the
// store bootstrap, src/bootstrap/store_bootstrap.hpp).
//
// One process = one rank = one host device. Every op checks its arguments on
// the caller's thread (a c10::Error there, as Gloo does), then returns a
// c10d::Work at once; the group's worker thread (worker.hpp) runs the ruccl
// call and completes the Work and its future: a ruccl error becomes the
// Work's exception, a RuntimeError "ruccl <op>: <Code>: <message>" in Python.
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ruccl::torch_backend {

struct BackendOptions {
  // A subgroup (new_group) of `parent`, the default group when it is ruccl's:
  // global_ranks[i] is the group's rank i. The group then shares the parent's
  // transports and worker thread (core's split_members); null: a world of
  // its own through the store.
  c10::intrusive_ptr<c10d::ProcessGroup> parent;
  std::vector<std::int64_t> global_ranks;
  // Of creation and of every wait of every collective (ruccl's Config::timeout).
  std::chrono::milliseconds timeout{300'000};
  // The byte budget of all_to_all (alltoall_base); 0: ruccl's max_chunk_bytes
  // (RUCCL_MAX_CHUNK_BYTES, else 4 MiB).
  std::size_t max_chunk_bytes = 0;
};

// Collective over the `size` processes of the group that share `store`
// (torch's PrefixStore of the group). Blocks until every process arrived or
// the timeout passed; throws std::runtime_error with ruccl's message on a
// failure (every process fails alike). The other RUCCL_* settings come from
// the environment (ruccl::Config::from_env).
c10::intrusive_ptr<c10d::ProcessGroup> create_process_group(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
    const BackendOptions& options);

// Whether `group` (a ruccl process group) shares another group's transports.
bool shares_transports(const c10::intrusive_ptr<c10d::ProcessGroup>& group);

}  // namespace ruccl::torch_backend
