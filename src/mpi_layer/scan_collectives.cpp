// The intercepted scans: MPI_Scan (rank i gets x_0 op ... op x_i) and
// MPI_Exscan (x_0 op ... op x_{i-1}; rank 0's recvbuf is left as it is).
//
// One ruccl all_gather of every rank's input, then each rank folds the
// inputs before it in MPI rank order with the host's reduction loop
// (src/device/host): one round of communication, whatever the number of
// ranks, and every rank's result combined in the same order as MPI's
// definition. The gathered inputs are held for the call, so a scan is routed
// only while size x count x element stays within kScanBound (count and
// datatype match on every process for a scan, so every process decides
// alike); a larger one falls back ("too large").
#include <cstring>
#include <vector>

#include "core/catch_to_status.hpp"
#include "device/host/host_kernels.hpp"
#include "mpi_layer/collectives.hpp"
#include "mpi_layer/dispatch.hpp"
#include "mpi_layer/mapping.hpp"
#include "mpi_layer/registry.hpp"

namespace ruccl::mpi_layer {
namespace {

constexpr std::size_t kScanBound = std::size_t{64} << 20;  // gathered bytes

std::optional<int> scan_of(Coll c, bool exclusive, const void* sendbuf, void* recvbuf, int count,
                           MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  std::optional<Reduction> red;
  Why local = count < 0 ? Why::kArgument : reduction_check(type, op, red);
  if (local == Why::kRouted) {
    const auto size = static_cast<std::size_t>(comm_size(comm));
    const std::size_t bytes = static_cast<std::size_t>(count) * red->lanes * dtype_size(red->dtype);
    if (size != 0 && bytes > kScanBound / size) local = Why::kTooLarge;
  }
  Routed r = routed(c, comm, local);
  if (!r) return std::nullopt;
  const Status s = core::catch_to_status(ErrorCode::kInternal, "ruccl mpi layer", [&]() -> Status {
    const std::size_t n = static_cast<std::size_t>(count) * red->lanes;
    const std::size_t bytes = n * dtype_size(red->dtype);
    const void* in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    std::vector<std::byte> all(bytes * r->size);
    RUCCL_TRY(r->comm->all_gather_into(r->rank, host_view(in, red->dtype, n),
                                       host_view(all.data(), red->dtype, n * r->size)));
    // By MPI rank: the inputs of MPI ranks [0, last), each where ruccl's
    // order put it (block ruccl_of_mpi[j]).
    const std::size_t me = r->mpi_of_ruccl[r->rank];
    const std::size_t last = exclusive ? me : me + 1;
    if (last == 0) return Status::ok();  // Exscan at MPI rank 0
    auto* out = static_cast<std::byte*>(recvbuf);
    std::memcpy(out, all.data() + r->ruccl_of_mpi[0] * bytes, bytes);
    for (std::size_t j = 1; j < last; ++j)
      RUCCL_TRY(
          host::reduce(red->dtype, red->op, out, out, all.data() + r->ruccl_of_mpi[j] * bytes, n));
    return Status::ok();
  });
  return run_status(c, comm, s, r);
}

}  // namespace

std::optional<int> scan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
                        MPI_Comm comm) {
  return scan_of(Coll::kScan, false, sendbuf, recvbuf, count, type, op, comm);
}

std::optional<int> exscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type,
                          MPI_Op op, MPI_Comm comm) {
  return scan_of(Coll::kExscan, true, sendbuf, recvbuf, count, type, op, comm);
}

}  // namespace ruccl::mpi_layer

namespace layer = ruccl::mpi_layer;

extern "C" {

int MPI_Scan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
             MPI_Comm comm) {
  const auto rc = layer::scan(sendbuf, recvbuf, count, type, op, comm);
  return rc ? *rc : PMPI_Scan(sendbuf, recvbuf, count, type, op, comm);
}

int MPI_Exscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
               MPI_Comm comm) {
  const auto rc = layer::exscan(sendbuf, recvbuf, count, type, op, comm);
  return rc ? *rc : PMPI_Exscan(sendbuf, recvbuf, count, type, op, comm);
}

}  // extern "C"
