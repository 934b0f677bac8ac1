// create_world_communicator_from_directory (ruccl/world.hpp): the world
// communicator over the directory bootstrap (src/bootstrap/file_bootstrap.hpp)
// instead of MPI. Apart from how the processes meet, it is the MPI world's
// creation (create_communicator_from_bootstrap): the same agreements, UCX
// transports and strategies.
#include <utility>

#include "bootstrap/file_bootstrap.hpp"
#include "ruccl/world.hpp"
#include "world/from_bootstrap.hpp"

namespace ruccl {

Result<std::shared_ptr<Communicator>> create_world_communicator_from_directory(
    std::string directory, std::size_t process, std::size_t processes,
    std::vector<DeviceId> local_devices, Config config) {
  if (local_devices.empty())
    return Status(ErrorCode::kInvalidArgument, "a process needs at least one local device");
  RUCCL_TRY(config.validate());
  bootstrap::FileBootstrapOptions options;
  options.timeout = config.timeout();
  auto boot = bootstrap::file_bootstrap(std::move(directory), process, processes, options);
  RUCCL_TRY(boot);
  return world::create_communicator_from_bootstrap(std::move(boot).value(),
                                                   std::move(local_devices), std::move(config));
}

}  // namespace ruccl
