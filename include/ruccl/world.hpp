// Communicators spanning processes and nodes (MPI bootstrap + UCX transport).
//
// Built when CMake finds MPI and UCX (target ruccl::multinode). MPI is used only
// here, at creation: to learn the processes and exchange UCX addresses. After
// that every byte of every collective moves over UCX.
//
// Ranks: every process passes its local devices (the same number everywhere);
// global rank = process index (processes ordered by node, then MPI rank) x
// devices per process + local index. Each local device is driven by its own
// thread, which passes its global rank to the collectives
// (communicator->first_rank() + local index).
//
// Strategy (Config::global_strategy, RUCCL_ALGO): hierarchical, the default,
// lets the ranks of one process read each other's memory wherever the
// algorithm allows (the whole collective when the world is one process; the
// local reduce-scatter and all-gather around one inter-process ring per local
// index in an all-reduce); every other transfer is a UCX message. flat_ring
// sends every transfer as a UCX message, also between ranks of one process.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "ruccl/communicator.hpp"

namespace ruccl {

// Collective over MPI_COMM_WORLD (initialises MPI if nobody has; finalises it
// when the communicator is destroyed only then). kDeviceCountMismatch when the
// processes pass different numbers of local devices.
Result<std::shared_ptr<Communicator>> create_world_communicator(std::vector<DeviceId> local_devices,
                                                                Config config);

// Collective over `processes` processes that meet in `directory` instead of
// MPI: no MPI call, no mpirun. For processes started by other means, and for
// the survivors of a failed job (Open MPI 4.1 cannot shrink an MPI
// communicator that holds a dead process): each survivor passes a new, empty
// directory they all can reach (a shared file system across nodes), its own
// index `process` (0 <= process < processes, distinct) and the survivor count.
// Ranks: processes ordered by (node = hostname, index) x devices per process +
// local index, as under MPI. Every wait of creation ends by config.timeout():
// a process that never arrives gives every present process kTimeout naming
// its index. The directory must be fresh: one that an earlier communicator
// used is kInvalidArgument. Same contract as create_world_communicator otherwise.
Result<std::shared_ptr<Communicator>> create_world_communicator_from_directory(
    std::string directory, std::size_t process, std::size_t processes,
    std::vector<DeviceId> local_devices, Config config);

}  // namespace ruccl
