// The intercepted collectives with per-rank counts: MPI_Alltoallv and
// MPI_Reduce_scatter. Same rules as collectives.cpp: the decision uses only the
// communicator, the predefined datatypes and the op (and, for
// Reduce_scatter, recvcounts, which MPI requires to be equal on every
// process); displacements only decide a local copy.
//
// Alltoallv: ruccl's all_to_all_v takes the blocks packed in destination
// order and returns them packed in source order, so blocks at other
// displacements (or MPI_IN_PLACE) go through a packed copy.
// Reduce_scatter: when recvcounts are ruccl's balanced split of their sum (the
// first sum % size ranks one more), one reduce_scatter; otherwise an
// all-reduce of the whole into scratch, of which each rank keeps its part.
#include <cstring>
#include <numeric>
#include <vector>

#include "mpi_layer/collectives.hpp"

#include "core/catch_to_status.hpp"
#include "mpi_layer/dispatch.hpp"
#include "mpi_layer/mapping.hpp"
#include "mpi_layer/registry.hpp"

namespace ruccl::mpi_layer {
namespace {

bool any_negative(const int* counts, int n) {
  for (int i = 0; i < n; ++i)
    if (counts[i] < 0) return true;
  return false;
}

// Whether blocks at `displs` (elements) of `counts` are packed in rank order.
bool packed(const int* counts, const int* displs, int n) {
  long long at = 0;
  for (int i = 0; i < n; ++i) {
    if (displs[i] != at) return false;
    at += counts[i];
  }
  return true;
}

Status all_to_all_v(Route& r, const void* sendbuf, const int* sendcounts, const int* sdispls,
                    std::size_t ses, void* recvbuf, const int* recvcounts, const int* rdispls,
                    std::size_t res) {
  const int n = static_cast<int>(r.size);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  if (in_place) {  // the data to send is in recvbuf, laid out as what is received
    sendbuf = recvbuf;
    sendcounts = recvcounts;
    sdispls = rdispls;
    ses = res;
  }
  std::vector<std::size_t> send_bytes(r.size);
  std::size_t send_total = 0, recv_total = 0;
  for (int d = 0; d < n; ++d) {
    send_bytes[d] = static_cast<std::size_t>(sendcounts[d]) * ses;
    send_total += send_bytes[d];
    recv_total += static_cast<std::size_t>(recvcounts[d]) * res;
  }
  const auto* src = static_cast<const std::byte*>(sendbuf);
  std::vector<std::byte> send_copy;
  if (in_place || !packed(sendcounts, sdispls, n)) {
    send_copy.resize(send_total);
    std::size_t at = 0;
    for (int d = 0; d < n; ++d) {
      std::memcpy(send_copy.data() + at, src + static_cast<std::size_t>(sdispls[d]) * ses,
                  send_bytes[d]);
      at += send_bytes[d];
    }
    src = send_copy.data();
  }
  auto* dst = static_cast<std::byte*>(recvbuf);
  std::vector<std::byte> recv_copy;
  const bool direct = !in_place && packed(recvcounts, rdispls, n);
  if (!direct) recv_copy.resize(recv_total);
  std::vector<std::size_t> got;
  RUCCL_TRY(r.comm->all_to_all_v_into(
      r.rank, host_view(src, DataType::kBytes, send_total), send_bytes,
      host_view(direct ? dst : recv_copy.data(), DataType::kBytes, recv_total), got));
  for (int s = 0; s < n; ++s) {
    const std::size_t want = static_cast<std::size_t>(recvcounts[s]) * res;
    if (got.size() != r.size || got[s] != want)
      return Status(ErrorCode::kShapeMismatch,
                    "MPI rank " + std::to_string(s) + " sent " +
                        std::to_string(got.size() == r.size ? got[s] : 0) +
                        " bytes, recvcounts expected " + std::to_string(want));
  }
  if (!direct) {
    std::size_t at = 0;
    for (int s = 0; s < n; ++s) {
      const std::size_t b = static_cast<std::size_t>(recvcounts[s]) * res;
      std::memcpy(dst + static_cast<std::size_t>(rdispls[s]) * res, recv_copy.data() + at, b);
      at += b;
    }
  }
  return Status::ok();
}

Status reduce_scatter_of(Route& r, const void* sendbuf, void* recvbuf, const int* recvcounts,
                         const Reduction& red) {
  const std::size_t es = dtype_size(red.dtype) * red.lanes;  // bytes per MPI element
  std::size_t total = 0, before = 0;
  for (std::size_t k = 0; k < r.size; ++k) {
    if (k == r.rank) before = total;
    total += static_cast<std::size_t>(recvcounts[k]);
  }
  bool balanced = true;
  for (std::size_t k = 0; k < r.size; ++k)
    balanced = balanced && static_cast<std::size_t>(recvcounts[k]) ==
                               total / r.size + (k < total % r.size ? 1 : 0);
  const std::size_t mine = static_cast<std::size_t>(recvcounts[r.rank]);
  const void* in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  auto view = [&](const void* p, std::size_t elements) {
    return host_view(p, red.dtype, elements * red.lanes);
  };
  auto* base = static_cast<std::byte*>(const_cast<void*>(in));
  if (balanced && sendbuf != MPI_IN_PLACE)
    return r.comm->reduce_scatter_into(r.rank, view(in, total), view(recvbuf, mine), red.op);
  if (balanced) {  // in place: the shard is left at its offset; MPI wants it first
    std::byte* shard = base + before * es;
    RUCCL_TRY(r.comm->reduce_scatter_into(r.rank, view(base, total), view(shard, mine), red.op));
    if (shard != base) std::memmove(base, shard, mine * es);
    return Status::ok();
  }
  std::vector<std::byte> all(total * es);
  RUCCL_TRY(r.comm->all_reduce_into(r.rank, view(in, total), view(all.data(), total), red.op));
  std::memcpy(recvbuf, all.data() + before * es, mine * es);
  return Status::ok();
}

}  // namespace

std::optional<int> alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                             MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                             const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  const int size = comm_size(comm);
  const auto rinfo = type_info(recvtype);
  const auto sinfo = sendbuf == MPI_IN_PLACE ? rinfo : type_info(sendtype);
  Why local = !rinfo || !sinfo ? Why::kDatatype : Why::kRouted;
  if (local == Why::kRouted && (any_negative(recvcounts, size) ||
                                (sendbuf != MPI_IN_PLACE && any_negative(sendcounts, size))))
    local = Why::kArgument;
  Route* r = routed(Coll::kAlltoallv, comm, local, true);
  if (r == nullptr) return std::nullopt;
  const Status s = core::catch_to_status(ErrorCode::kInternal, "ruccl mpi layer", [&] {
    return all_to_all_v(*r, sendbuf, sendcounts, sdispls, sinfo->bytes, recvbuf, recvcounts,
                        rdispls, rinfo->bytes);
  });
  return run_status(Coll::kAlltoallv, comm, s);
}

std::optional<int> reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                                  MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  const int size = comm_size(comm);
  std::optional<Reduction> red;
  Why local = reduction_check(type, op, red);
  if (local == Why::kRouted && any_negative(recvcounts, size)) local = Why::kArgument;
  Route* r = routed(Coll::kReduceScatter, comm, local, true);
  if (r == nullptr) return std::nullopt;
  const Status s = core::catch_to_status(ErrorCode::kInternal, "ruccl mpi layer", [&] {
    return reduce_scatter_of(*r, sendbuf, recvbuf, recvcounts, *red);
  });
  return run_status(Coll::kReduceScatter, comm, s);
}

}  // namespace ruccl::mpi_layer

namespace layer = ruccl::mpi_layer;

extern "C" {

int MPI_Alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                  MPI_Datatype sendtype, void* recvbuf, const int recvcounts[], const int rdispls[],
                  MPI_Datatype recvtype, MPI_Comm comm) {
  const auto rc = layer::alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                   rdispls, recvtype, comm);
  return rc ? *rc
            : PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                             recvtype, comm);
}

int MPI_Reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                       MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  const auto rc = layer::reduce_scatter(sendbuf, recvbuf, recvcounts, type, op, comm);
  return rc ? *rc : PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, type, op, comm);
}

}  // extern "C"
