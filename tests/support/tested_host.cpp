// The backend and communicator factory of the in-process test binaries that
// compile the shared test bodies (see backend.hpp, comm_factory.hpp): host
// devices, the host adapter, every rank a thread of this process.
#include "comm_factory.hpp"

namespace ruccl::test {
const Backend& tested_backend() { return host_backend(); }
const CommFactory& tested_factory() { return in_process_factory(); }
}  // namespace ruccl::test
