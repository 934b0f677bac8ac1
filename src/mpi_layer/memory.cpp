// MPI_Alloc_mem and MPI_Free_mem. Memory an MPI program allocates for its
// buffers comes, from Config::mpi_alloc_mem_bytes up (RUCCL_MPI_ALLOC_MEM_BYTES;
// off by default), from MPI_COMM_WORLD's Communicator::allocate_host: where the
// processes share a node segment, the others read it in place, so that a
// collective on it skips the copy through the segment (two processes then
// move bytes as two threads do). Smaller requests (a process holds at most 16
// regions, node/regions.hpp), the 17th live one, and every request where no
// node segment is shared (Communicator::shares_host_memory), nothing is
// routed, or MPI is not initialised, go to PMPI_Alloc_mem. MPI_Free_mem frees what the layer
// gave and hands any other pointer to PMPI_Free_mem (so does Fortran's
// MPI_FREE_MEM, fortran.cpp, whose MPI_ALLOC_MEM reaches MPI directly).
#include <mpi.h>

#include <new>

#include "mpi_layer/registry.hpp"

namespace ruccl::mpi_layer {

void* Registry::allocate_memory(MPI_Aint size) {
  void* base = take_memory(size);
  alloc_counts_[base != nullptr ? 0 : 1].fetch_add(1, std::memory_order_relaxed);
  return base;
}

void* Registry::take_memory(MPI_Aint size) {
  const std::size_t threshold = config_.mpi_alloc_mem_bytes();
  Route* world = world_;  // (set at MPI_Init, null again at MPI_Finalize)
  if (blocked_ != Why::kRouted || threshold == 0 || size <= 0 ||
      static_cast<std::size_t>(size) < threshold || world == nullptr ||
      world->failed != Why::kRouted || !world->comm || !world->comm->shares_host_memory())
    return nullptr;
  auto memory = world->comm->allocate_host(static_cast<std::size_t>(size));
  if (!memory.is_ok()) return nullptr;
  void* base = memory.value().get();
  try {
    std::lock_guard<std::mutex> lock(memory_mutex_);
    memory_.emplace(base, std::move(memory).value());
  } catch (const std::bad_alloc&) {  // (the region goes with `memory`): MPI's
    return nullptr;
  }
  return base;
}

bool Registry::free_memory(void* base) {
  if (!mpi_initialised()) return false;  // (nothing of the layer's yet; no Registry)
  return get().release_memory(base);
}

bool Registry::release_memory(void* base) {
  std::shared_ptr<std::byte> owned;  // freed outside the lock
  std::lock_guard<std::mutex> lock(memory_mutex_);
  const auto it = memory_.find(base);
  if (it == memory_.end()) return false;
  owned = std::move(it->second);
  memory_.erase(it);
  return true;
}

bool mpi_initialised() {
  int flag = 0;
  return PMPI_Initialized(&flag) == MPI_SUCCESS && flag != 0;
}

}  // namespace ruccl::mpi_layer

namespace layer = ruccl::mpi_layer;

extern "C" {

// An info MPI would refuse goes to MPI, which reports it; the layer's
// memory takes no hints.
int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void* baseptr) {
  int keys = 0;
  if (baseptr != nullptr && layer::mpi_initialised() &&
      (info == MPI_INFO_NULL || PMPI_Info_get_nkeys(info, &keys) == MPI_SUCCESS)) {
    if (void* base = layer::Registry::get().allocate_memory(size)) {
      *static_cast<void**>(baseptr) = base;
      return MPI_SUCCESS;
    }
  }
  return PMPI_Alloc_mem(size, info, baseptr);
}

int MPI_Free_mem(void* base) {
  return layer::Registry::free_memory(base) ? MPI_SUCCESS : PMPI_Free_mem(base);
}

}  // extern "C"
