// The intercepted MPI collectives. Each one decides, from arguments MPI
// requires to match on every process of the communicator (the communicator,
// the predefined datatype and op, the collective itself), whether ruccl serves
// it; so every process takes the same path. Counts are not part of the
// decision: a count that differs between processes reaches ruccl, whose
// agreement turns it into a typed error naming both ranks. Anything else goes
// to PMPI_* unchanged.
//
// One device rank per process (host:0); views are 1-D. Moves (Bcast,
// Allgather, Alltoall) travel as bytes, so any predefined datatype moves.
#include <cstring>
#include <vector>

#include "core/catch_to_status.hpp"
#include "mpi_layer/dispatch.hpp"
#include "mpi_layer/mapping.hpp"
#include "mpi_layer/registry.hpp"

namespace {

using ruccl::DataType;
using ruccl::ErrorCode;
using ruccl::Status;
using ruccl::TensorView;
using ruccl::mpi_layer::Coll;
using ruccl::mpi_layer::Reduction;
using ruccl::mpi_layer::Registry;
using ruccl::mpi_layer::Route;
using ruccl::mpi_layer::routed;
using ruccl::mpi_layer::run_status;
using ruccl::mpi_layer::Why;

TensorView view(const void* data, DataType dtype, std::size_t count) {
  return TensorView::of(const_cast<void*>(data), dtype, count, ruccl::host_device(0));
}

Why reduction_check(MPI_Datatype type, MPI_Op op, std::optional<Reduction>& out) {
  if (!ruccl::mpi_layer::type_info(type)) return Why::kDatatype;
  out = ruccl::mpi_layer::reduction_of(type, op);
  return out ? Why::kRouted : Why::kOp;
}

Why move_check(MPI_Datatype type, std::size_t& bytes) {
  const auto info = ruccl::mpi_layer::type_info(type);
  if (!info) return Why::kDatatype;
  bytes = info->bytes;
  return Why::kRouted;
}

// Runs a routed call; a ruccl error goes through the communicator's handler.
template <typename F>
int run(Coll c, MPI_Comm comm, F&& body) {
  return run_status(c, comm,
                    ruccl::core::catch_to_status(ErrorCode::kInternal, "ruccl mpi layer", body));
}

}  // namespace

extern "C" {

int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm) {
  std::optional<Reduction> red;
  Why local = count < 0 ? Why::kArgument : reduction_check(type, op, red);
  Route* r = routed(Coll::kAllreduce, comm, local);
  if (r == nullptr) return PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
  return run(Coll::kAllreduce, comm, [&]() -> Status {
    const std::size_t n = static_cast<std::size_t>(count) * red->lanes;
    const void* in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    return r->comm->all_reduce_into(r->rank, view(in, red->dtype, n), view(recvbuf, red->dtype, n),
                                    red->op);
  });
}

int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
               int root, MPI_Comm comm) {
  std::optional<Reduction> red;
  int size = 0;
  if (comm != MPI_COMM_NULL) PMPI_Comm_size(comm, &size);
  Why local =
      count < 0 || root < 0 || root >= size ? Why::kArgument : reduction_check(type, op, red);
  Route* r = routed(Coll::kReduce, comm, local);
  if (r == nullptr) return PMPI_Reduce(sendbuf, recvbuf, count, type, op, root, comm);
  return run(Coll::kReduce, comm, [&]() -> Status {
    const std::size_t n = static_cast<std::size_t>(count) * red->lanes;
    const std::size_t ruccl_root = r->ruccl_of_mpi[static_cast<std::size_t>(root)];
    const bool is_root = r->rank == ruccl_root;
    const void* in = is_root && sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    const TensorView out = is_root ? view(recvbuf, red->dtype, n) : view(nullptr, red->dtype, 0);
    return r->comm->reduce_into(r->rank, view(in, red->dtype, n), out, red->op, ruccl_root);
  });
}

int MPI_Bcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  std::size_t es = 0;
  int size = 0;
  if (comm != MPI_COMM_NULL) PMPI_Comm_size(comm, &size);
  Why local = count < 0 || root < 0 || root >= size ? Why::kArgument : move_check(type, es);
  Route* r = routed(Coll::kBcast, comm, local);
  if (r == nullptr) return PMPI_Bcast(buffer, count, type, root, comm);
  return run(Coll::kBcast, comm, [&]() -> Status {
    const TensorView v = view(buffer, DataType::kBytes, static_cast<std::size_t>(count) * es);
    const bool is_root = r->rank == r->ruccl_of_mpi[static_cast<std::size_t>(root)];
    return r->comm->broadcast_into(r->rank, is_root ? &v : nullptr, v);
  });
}

int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  std::size_t ses = 0, res = 0;
  Why local = recvcount < 0 || (sendbuf != MPI_IN_PLACE && sendcount < 0)
                  ? Why::kArgument
                  : move_check(recvtype, res);
  if (local == Why::kRouted && sendbuf != MPI_IN_PLACE) local = move_check(sendtype, ses);
  Route* r = routed(Coll::kAllgather, comm, local, true);
  if (r == nullptr)
    return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  return run(Coll::kAllgather, comm, [&]() -> Status {
    const std::size_t block = static_cast<std::size_t>(recvcount) * res;
    auto* out = static_cast<std::byte*>(recvbuf);
    const TensorView all = view(out, DataType::kBytes, block * r->size);
    if (sendbuf == MPI_IN_PLACE)
      return r->comm->all_gather_into(r->rank, view(out + r->rank * block, DataType::kBytes, block),
                                      all);
    const std::size_t sent = static_cast<std::size_t>(sendcount) * ses;
    return r->comm->all_gather_into(r->rank, view(sendbuf, DataType::kBytes, sent), all);
  });
}

int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype type,
                             MPI_Op op, MPI_Comm comm) {
  std::optional<Reduction> red;
  Why local = recvcount < 0 ? Why::kArgument : reduction_check(type, op, red);
  Route* r = routed(Coll::kReduceScatterBlock, comm, local, true);
  if (r == nullptr) return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, type, op, comm);
  return run(Coll::kReduceScatterBlock, comm, [&]() -> Status {
    const std::size_t n = static_cast<std::size_t>(recvcount) * red->lanes;
    const std::size_t bytes = n * ruccl::dtype_size(red->dtype);
    if (sendbuf != MPI_IN_PLACE)
      return r->comm->reduce_scatter_into(r->rank, view(sendbuf, red->dtype, n * r->size),
                                          view(recvbuf, red->dtype, n), red->op);
    // In place: ruccl leaves shard r at its place in the input; MPI wants it first.
    auto* base = static_cast<std::byte*>(recvbuf);
    std::byte* shard = base + r->rank * bytes;
    RUCCL_TRY(r->comm->reduce_scatter_into(r->rank, view(base, red->dtype, n * r->size),
                                           view(shard, red->dtype, n), red->op));
    if (shard != base) std::memmove(base, shard, bytes);
    return Status::ok();
  });
}

int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  std::size_t ses = 0, res = 0;
  Why local = recvcount < 0 || (sendbuf != MPI_IN_PLACE && sendcount < 0)
                  ? Why::kArgument
                  : move_check(recvtype, res);
  if (local == Why::kRouted && sendbuf != MPI_IN_PLACE) local = move_check(sendtype, ses);
  Route* r = routed(Coll::kAlltoall, comm, local, true);
  if (r == nullptr)
    return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  return run(Coll::kAlltoall, comm, [&]() -> Status {
    const std::size_t block = static_cast<std::size_t>(recvcount) * res;
    const std::size_t sent =
        sendbuf == MPI_IN_PLACE ? block : static_cast<std::size_t>(sendcount) * ses;
    std::vector<std::byte> copy;  // in place: the input must not be the output
    const void* in = sendbuf;
    if (sendbuf == MPI_IN_PLACE) {
      copy.assign(static_cast<const std::byte*>(recvbuf),
                  static_cast<const std::byte*>(recvbuf) + block * r->size);
      in = copy.data();
    }
    const std::vector<std::size_t> send_counts(r->size, sent);
    std::vector<std::size_t> recv_counts;
    return r->comm->all_to_all_v_into(r->rank, view(in, DataType::kBytes, sent * r->size),
                                      send_counts, view(recvbuf, DataType::kBytes, block * r->size),
                                      recv_counts);
  });
}

int MPI_Barrier(MPI_Comm comm) {
  Route* r = routed(Coll::kBarrier, comm, Why::kRouted);
  if (r == nullptr) return PMPI_Barrier(comm);
  // An all-reduce of one byte: no rank returns before every rank has entered.
  return run(Coll::kBarrier, comm, [&]() -> Status {
    std::uint8_t token = 0;
    return r->comm->all_reduce_into(r->rank, view(&token, DataType::kU8, 1),
                                    view(&token, DataType::kU8, 1), ruccl::ReduceOp::kMax);
  });
}

int MPI_Finalize(void) {
  Registry::get().finalize();
  return PMPI_Finalize();
}

}  // extern "C"
