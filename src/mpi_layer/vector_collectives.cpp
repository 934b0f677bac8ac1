// The intercepted collectives with per-rank counts: MPI_Alltoallv,
// MPI_Allgatherv and MPI_Reduce_scatter. Same rules as collectives.cpp: the decision uses only the
// communicator, the predefined datatypes and the op (and, for
// Reduce_scatter, recvcounts, which MPI requires to be equal on every
// process); displacements only decide a local copy.
//
// Alltoallv: one exchange of blocks (blocks.hpp): ruccl's all_to_all_v takes
// the blocks packed in destination order and returns them packed in source
// order, so blocks at other displacements (or MPI_IN_PLACE) go through a
// packed copy.
// Allgatherv: equal counts are one all_gather; others one exchange in which
// every rank sends its block to every rank.
// Reduce_scatter (and Reduce_scatter_block): when recvcounts, taken by ruccl
// rank, are ruccl's balanced split of their sum (the first sum % size ranks
// one more), one reduce_scatter (over the parts put in ruccl rank order
// first when that order is not MPI's); otherwise an all-reduce of the whole
// into scratch, of which each rank keeps its part.
#include <cstring>
#include <numeric>
#include <vector>

#include "mpi_layer/collectives.hpp"

#include "core/catch_to_status.hpp"
#include "mpi_layer/blocks.hpp"
#include "mpi_layer/dispatch.hpp"
#include "mpi_layer/mapping.hpp"
#include "mpi_layer/registry.hpp"
#include "ring/schedule.hpp"

namespace ruccl::mpi_layer {
Status reduce_scatter_parts(Route& r, const void* sendbuf, void* recvbuf, const int* counts,
                            int each, const Reduction& red) {
  const std::size_t ds = dtype_size(red.dtype), es = ds * red.lanes;  // bytes per MPI element
  const std::size_t n = r.size, me = r.mpi_of_ruccl[r.rank];
  auto* in =
      static_cast<std::byte*>(const_cast<void*>(sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf));
  const auto count = [&](std::size_t j) {
    return static_cast<std::size_t>(counts ? counts[j] : each);
  };
  std::size_t total = 0, before = 0;  // MPI elements: all, and the parts before this rank's
  for (std::size_t j = 0; j < n; ++j) {
    if (j == me) before = total;
    total += count(j);
  }
  // ruccl's balanced split (ring::balanced_range, as its reduce_scatter
  // cuts a 1-D view) by ruccl rank, in its own elements (a complex MPI
  // element is two).
  const std::size_t elements = total * red.lanes;
  bool balanced = true;
  for (std::size_t k = 0; k < n; ++k)
    balanced = balanced &&
               count(r.mpi_of_ruccl[k]) * red.lanes == ring::balanced_range(elements, n, k).count;
  const std::size_t mine = count(me) * es;  // bytes
  const TensorView& out = r.view(1, recvbuf, red.dtype, mine / ds);
  if (balanced && r.identity && sendbuf != MPI_IN_PLACE)
    return r.comm->reduce_scatter_into(r.rank, r.view(0, in, red.dtype, elements), out, red.op);
  if (balanced && r.identity) {  // in place: the shard is left at its offset; MPI wants it first
    std::byte* shard = in + before * es;
    RUCCL_TRY(r.comm->reduce_scatter_into(r.rank, r.view(0, in, red.dtype, elements),
                                          r.view(1, shard, red.dtype, mine / ds), red.op));
    if (shard != in && mine > 0) std::memmove(in, shard, mine);
    return Status::ok();
  }
  std::vector<std::byte> scratch(total * es);
  if (balanced) {  // the parts put in ruccl rank order (blocks.hpp), then one reduce-scatter
    Blocks parts(n);
    parts.base = in;
    for (std::size_t j = 0, at = 0; j < n; at += parts.bytes[j], ++j) {
      parts.offset[j] = at;
      parts.bytes[j] = count(j) * es;
    }
    const Blocks ordered = in_ruccl_order(r, std::move(parts));
    for (std::size_t k = 0, to = 0; k < n; to += ordered.bytes[k], ++k)
      if (ordered.bytes[k] > 0)
        std::memcpy(scratch.data() + to, in + ordered.offset[k], ordered.bytes[k]);
    return r.comm->reduce_scatter_into(r.rank, r.view(0, scratch.data(), red.dtype, elements), out,
                                       red.op);
  }
  // Not ruccl's split: the all-reduce of the whole, of which this rank keeps its part.
  RUCCL_TRY(r.comm->all_reduce_into(r.rank, r.view(0, in, red.dtype, elements),
                                    host_view(scratch.data(), red.dtype, elements), red.op));
  if (mine > 0) std::memcpy(recvbuf, scratch.data() + before * es, mine);
  return Status::ok();
}

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
  Routed r = routed(Coll::kAlltoallv, comm, local);
  if (!r) return std::nullopt;
  const Status s = core::catch_to_status(ErrorCode::kInternal, "ruccl mpi layer", [&] {
    const Blocks recv =
        in_ruccl_order(*r, Blocks::of(recvbuf, recvcounts, rdispls, rinfo->bytes, r->size));
    if (sendbuf == MPI_IN_PLACE)  // what is sent is in recvbuf, laid out as what is received
      return exchange(*r, recv, recv, true);
    return exchange(*r,
                    in_ruccl_order(*r,
                                   Blocks::of(sendbuf, sendcounts, sdispls, sinfo->bytes, r->size)),
                    recv);
  });
  return run_status(Coll::kAlltoallv, comm, s, r);
}

std::optional<int> allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                              void* recvbuf, const int recvcounts[], const int displs[],
                              MPI_Datatype recvtype, MPI_Comm comm) {
  const int size = comm_size(comm);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const auto rinfo = type_info(recvtype);
  const auto sinfo = in_place ? rinfo : type_info(sendtype);
  Why local = !rinfo || !sinfo ? Why::kDatatype : Why::kRouted;
  if (local == Why::kRouted && (any_negative(recvcounts, size) || (!in_place && sendcount < 0)))
    local = Why::kArgument;
  Routed r = routed(Coll::kAllgatherv, comm, local);
  if (!r) return std::nullopt;
  const Status s = core::catch_to_status(ErrorCode::kInternal, "ruccl mpi layer", [&] {
    const std::size_t n = r->size, me = r->rank;  // (by ruccl rank from here)
    Blocks recv = in_ruccl_order(*r, Blocks::of(recvbuf, recvcounts, displs, rinfo->bytes, n));
    const std::size_t block = recv.bytes[me];
    const std::size_t sent = in_place ? block : static_cast<std::size_t>(sendcount) * sinfo->bytes;
    auto* out = static_cast<std::byte*>(recvbuf);
    const void* mine = in_place ? out + recv.offset[me] : sendbuf;
    // Equal blocks: one all_gather. (Only the counts decide, as they match on
    // every process; displacements are this process's own.)
    bool equal = true;
    for (std::size_t k = 0; k < n; ++k) equal = equal && recv.bytes[k] == block;
    if (equal)
      return gather_equal_blocks(*r, host_view(mine, DataType::kBytes, sent), recv, in_place);
    // Otherwise one exchange: this rank's block to every rank. In place, its
    // own block is already where it belongs (sent to itself: nothing).
    Blocks send(n);
    send.base = mine;
    for (std::size_t d = 0; d < n; ++d) send.bytes[d] = sent;
    if (in_place) send.bytes[me] = recv.bytes[me] = 0;
    return exchange(*r, send, recv);
  });
  return run_status(Coll::kAllgatherv, comm, s, r);
}

std::optional<int> reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                                  MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  const int size = comm_size(comm);
  std::optional<Reduction> red;
  Why local = reduction_check(type, op, red);
  if (local == Why::kRouted && any_negative(recvcounts, size)) local = Why::kArgument;
  Routed r = routed(Coll::kReduceScatter, comm, local);
  if (!r) return std::nullopt;
  const Status s = core::catch_to_status(ErrorCode::kInternal, "ruccl mpi layer", [&] {
    return reduce_scatter_parts(*r, sendbuf, recvbuf, recvcounts, 0, *red);
  });
  return run_status(Coll::kReduceScatter, comm, s, r);
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

int MPI_Allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                   const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                   MPI_Comm comm) {
  const auto rc =
      layer::allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
  return rc ? *rc
            : PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                              comm);
}

int MPI_Reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                       MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  const auto rc = layer::reduce_scatter(sendbuf, recvbuf, recvcounts, type, op, comm);
  return rc ? *rc : PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, type, op, comm);
}

}  // extern "C"
