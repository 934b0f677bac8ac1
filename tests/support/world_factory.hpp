// The world communicator factories (see comm_factory.hpp): one per global
// strategy (hierarchical, flat_ring), each process passing host devices
// 0..per_process-1. Needs ruccl::multinode; built into the MPI test binary
// only (tests/mpi/world_matrix_main.cpp).
#pragma once

#include <memory>

#include "comm_factory.hpp"

namespace ruccl::test {

// `world` is the number of ranks the processes make (processes x per_process):
// the one world this factory makes.
std::unique_ptr<CommFactory> world_factory(GlobalStrategy strategy, std::size_t per_process,
                                           std::size_t world);

}  // namespace ruccl::test
