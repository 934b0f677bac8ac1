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
// (communicator->first_rank() + local index). Today every inter-rank transfer
// is a UCX message, also between ranks of one process (the flat ring); the
// hierarchical strategy is not implemented yet.
#pragma once

#include <memory>
#include <vector>

#include "ruccl/communicator.hpp"

namespace ruccl {

// Collective over MPI_COMM_WORLD (initialises MPI if nobody has; finalises it
// when the communicator is destroyed only then). kDeviceCountMismatch when the
// processes pass different numbers of local devices.
Result<std::shared_ptr<Communicator>> create_world_communicator(std::vector<DeviceId> local_devices,
                                                                Config config);

}  // namespace ruccl
