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
// Reduce_scatter: when recvcounts are ruccl's balanced split of their sum (the
// first sum % size ranks one more), one reduce_scatter; otherwise an
// all-reduce of the whole into scratch, of which each rank keeps its part.
#include <cstring>
#include <numeric>
#include <vector>

#include "mpi_layer/collectives.hpp"

#include "core/catch_to_status.hpp"
#include "mpi_layer/blocks.hpp"
#include "mpi_layer/dispatch.hpp"
#include "mpi_layer/mapping.hpp"
#include "mpi_layer/registry.hpp"

namespace ruccl::mpi_layer {
namespace {

// On a Route whose ruccl rank order is not MPI's: the input's parts put in
// ruccl order for a balanced split (by ruccl rank), else the all-reduce of the
// whole, from which this process takes its MPI rank's part.
Status reordered_reduce_scatter(Route& r, const void* sendbuf, void* recvbuf, const int* recvcounts,
                                const Reduction& red) {
  const std::size_t es = dtype_size(red.dtype) * red.lanes;  // bytes per MPI element
  const std::size_t n = r.size, me = r.mpi_of_ruccl[r.rank];
  std::vector<std::size_t> at(n);  // element offset of each MPI rank's part
  std::size_t total = 0;
  for (std::size_t j = 0; j < n; ++j) {
    at[j] = total;
    total += static_cast<std::size_t>(recvcounts[j]);
  }
  bool balanced = true;
  for (std::size_t k = 0; k < n; ++k)
    balanced = balanced && static_cast<std::size_t>(recvcounts[r.mpi_of_ruccl[k]]) ==
                               total / n + (k < total % n ? 1 : 0);
  const std::size_t mine = static_cast<std::size_t>(recvcounts[me]);
  const auto* in = static_cast<const std::byte*>(sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf);
  auto view = [&](const void* p, std::size_t elements) {
    return host_view(p, red.dtype, elements * red.lanes);
  };
  std::vector<std::byte> scratch(total * es);
  if (balanced) {
    std::size_t to = 0;
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t j = r.mpi_of_ruccl[k], bytes = static_cast<std::size_t>(recvcounts[j]) * es;
      if (bytes > 0) std::memcpy(scratch.data() + to, in + at[j] * es, bytes);
      to += bytes;
    }
    return r.comm->reduce_scatter_into(r.rank, view(scratch.data(), total), view(recvbuf, mine),
                                       red.op);
  }
  RUCCL_TRY(r.comm->all_reduce_into(r.rank, view(in, total), view(scratch.data(), total), red.op));
  if (mine > 0) std::memcpy(recvbuf, scratch.data() + at[me] * es, mine * es);
  return Status::ok();
}

Status reduce_scatter_of(Route& r, const void* sendbuf, void* recvbuf, const int* recvcounts,
                         const Reduction& red) {
  if (!r.identity) return reordered_reduce_scatter(r, sendbuf, recvbuf, recvcounts, red);
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
    // Equal blocks: one all_gather, into place when the blocks lie packed.
    // (Only the counts decide, as they match on every process; displacements
    // are this process's own.)
    bool equal = true, packed = true;
    for (std::size_t k = 0; k < n; ++k) {
      equal = equal && recv.bytes[k] == block;
      packed = packed && recv.offset[k] == recv.offset[0] + k * block;
    }
    if (equal) {
      const TensorView in = host_view(mine, DataType::kBytes, sent);
      if (packed)
        return r->comm->all_gather_into(me, in,
                                        host_view(out + recv.offset[0], DataType::kBytes,
                                                  block * n));
      std::vector<std::byte> all(block * n);
      RUCCL_TRY(
          r->comm->all_gather_into(me, in, host_view(all.data(), DataType::kBytes, all.size())));
      for (std::size_t k = 0; k < n; ++k)
        if (!in_place || k != me) std::memcpy(out + recv.offset[k], all.data() + k * block, block);
      return Status::ok();
    }
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
    return reduce_scatter_of(*r, sendbuf, recvbuf, recvcounts, *red);
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
