#include "comm_factory.hpp"

namespace ruccl::test {

namespace {
class InProcessFactory final : public CommFactory {
 public:
  std::string name() const override { return "in-process"; }
  bool in_process() const override { return true; }
  std::vector<std::size_t> worlds(std::vector<std::size_t> wanted) const override { return wanted; }
  bool can_make(std::size_t n) const override { return n >= 1; }
  std::shared_ptr<Communicator> make_comm(std::size_t n, const Config& config) const override {
    return tested_backend().make_comm(n, config);
  }
};
}  // namespace

const CommFactory& in_process_factory() {
  static const InProcessFactory factory;
  return factory;
}

std::vector<std::size_t> local_ranks(const Communicator& comm) {
  std::vector<std::size_t> out;
  for (std::size_t d = 0; d < comm.devices().size(); ++d) out.push_back(comm.first_rank() + d);
  return out;
}

void run_local_ranks(const Communicator& comm, Failures& failures,
                     const std::function<void(std::size_t rank)>& fn) {
  run_ranks(comm.devices().size(), failures, fn, comm.first_rank());
}

}  // namespace ruccl::test
