// The backend of the in-process test binaries that compile the shared test
// bodies (see backend.hpp): host devices and the host adapter.
#include "backend.hpp"

namespace ruccl::test {
const Backend& tested_backend() { return host_backend(); }
}  // namespace ruccl::test
