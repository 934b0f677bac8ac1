// A world communicator over any bootstrap (internal to ruccl). The public
// create_world_communicator (ruccl/world.hpp) passes the MPI_COMM_WORLD
// bootstrap; the C API (src/capi) passes one over a caller's communicator.
#pragma once

#include <memory>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "ruccl/communicator.hpp"

namespace ruccl::world {

// Collective over the processes of `boot`, which the communicator then owns
// (it is destroyed with the communicator). Same contract as
// create_world_communicator otherwise.
Result<std::shared_ptr<Communicator>> create_communicator_from_bootstrap(
    std::unique_ptr<bootstrap::Bootstrap> boot, std::vector<DeviceId> local_devices, Config config);

}  // namespace ruccl::world
