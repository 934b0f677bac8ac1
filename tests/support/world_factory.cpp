#include "world_factory.hpp"

#include <stdexcept>

#include "ruccl/world.hpp"

namespace ruccl::test {
namespace {

class WorldFactory final : public CommFactory {
 public:
  WorldFactory(GlobalStrategy strategy, std::size_t per_process, std::size_t world)
      : strategy_(strategy), per_process_(per_process), world_(world) {}
  std::string name() const override {
    return "world " + std::string(global_strategy_name(strategy_));
  }
  bool in_process() const override { return false; }
  std::vector<std::size_t> worlds(std::vector<std::size_t>) const override { return {world_}; }
  bool can_make(std::size_t n) const override { return n == world_; }
  std::shared_ptr<Communicator> make_comm(std::size_t n, const Config& config) const override {
    if (n != world_)
      throw std::runtime_error(name() + ": asked for " + std::to_string(n) +
                               " ranks, the processes make " + std::to_string(world_));
    // The environment over the test's config: the same bodies run under each
    // RUCCL_INTRA_NODE_TRANSPORT, with RUCCL_DEBUG (tests/mpi/CMakeLists.txt).
    auto env = Config::from_env(config);
    if (!env.is_ok()) throw std::runtime_error("Config::from_env: " + env.status().to_string());
    Config c = env.value();
    auto comm =
        create_world_communicator(host_devices(per_process_),
                                  c.with_global_strategy(strategy_).with_num_devices(per_process_));
    if (!comm.is_ok())
      throw std::runtime_error("create_world_communicator: " + comm.status().to_string());
    if (comm.value()->world_size() != world_)
      throw std::runtime_error(name() + ": made " + std::to_string(comm.value()->world_size()) +
                               " ranks, expected " + std::to_string(world_));
    return std::move(comm).value();
  }

 private:
  GlobalStrategy strategy_;
  std::size_t per_process_, world_;
};

}  // namespace

std::unique_ptr<CommFactory> world_factory(GlobalStrategy strategy, std::size_t per_process,
                                           std::size_t world) {
  return std::make_unique<WorldFactory>(strategy, per_process, world);
}

}  // namespace ruccl::test
