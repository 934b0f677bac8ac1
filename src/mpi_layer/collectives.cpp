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
// The C entry points are at the end; fortran.cpp calls the same functions.
#include "mpi_layer/collectives.hpp"

#include <cstring>
#include <vector>

#include "core/catch_to_status.hpp"
#include "mpi_layer/blocks.hpp"
#include "mpi_layer/dispatch.hpp"
#include "mpi_layer/mapping.hpp"
#include "mpi_layer/registry.hpp"

namespace ruccl::mpi_layer {
namespace {

Why move_check(MPI_Datatype type, std::size_t& bytes) {
  const auto info = type_info(type);
  if (!info) return Why::kDatatype;
  bytes = info->bytes;
  return Why::kRouted;
}

// The check of a move with a send and a receive side (Allgather, Alltoall):
// the send side does not count in place. `ses`, `res`: bytes per element.
Why send_recv_check(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int recvcount,
                    MPI_Datatype recvtype, std::size_t& ses, std::size_t& res) {
  const bool in_place = sendbuf == MPI_IN_PLACE;
  if (recvcount < 0 || (!in_place && sendcount < 0)) return Why::kArgument;
  const Why why = move_check(recvtype, res);
  return why != Why::kRouted || in_place ? why : move_check(sendtype, ses);
}

bool bad_root(int root, MPI_Comm comm) { return root < 0 || root >= comm_size(comm); }

// Runs a routed call; a ruccl error goes through the communicator's handler.
template <typename F>
int run(Coll c, MPI_Comm comm, Routed& r, F&& body) {
  const Status s = core::catch_to_status(ErrorCode::kInternal, "ruccl mpi layer", body);
  return run_status(c, comm, s, r);
}

}  // namespace

std::optional<int> allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type,
                             MPI_Op op, MPI_Comm comm) {
  std::optional<Reduction> red;
  Why local = count < 0 ? Why::kArgument : reduction_check(type, op, red);
  Routed r = routed(Coll::kAllreduce, comm, local);
  if (!r) return std::nullopt;
  return run(Coll::kAllreduce, comm, r, [&]() -> Status {
    const std::size_t n = static_cast<std::size_t>(count) * red->lanes;
    const void* in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    return r->comm->all_reduce_into(r->rank, r->view(0, in, red->dtype, n),
                                    r->view(1, recvbuf, red->dtype, n), red->op);
  });
}

std::optional<int> reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type,
                          MPI_Op op, int root, MPI_Comm comm) {
  std::optional<Reduction> red;
  Why local = count < 0 || bad_root(root, comm) ? Why::kArgument : reduction_check(type, op, red);
  Routed r = routed(Coll::kReduce, comm, local);
  if (!r) return std::nullopt;
  return run(Coll::kReduce, comm, r, [&]() -> Status {
    const std::size_t n = static_cast<std::size_t>(count) * red->lanes;
    const std::size_t ruccl_root = r->ruccl_of_mpi[static_cast<std::size_t>(root)];
    const bool is_root = r->rank == ruccl_root;
    const void* in = is_root && sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    const TensorView& out =
        is_root ? r->view(1, recvbuf, red->dtype, n) : r->view(1, nullptr, red->dtype, 0);
    return r->comm->reduce_into(r->rank, r->view(0, in, red->dtype, n), out, red->op, ruccl_root);
  });
}

std::optional<int> bcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  std::size_t es = 0;
  Why local = count < 0 || bad_root(root, comm) ? Why::kArgument : move_check(type, es);
  Routed r = routed(Coll::kBcast, comm, local);
  if (!r) return std::nullopt;
  return run(Coll::kBcast, comm, r, [&]() -> Status {
    const TensorView& v =
        r->view(0, buffer, DataType::kBytes, static_cast<std::size_t>(count) * es);
    const bool is_root = r->rank == r->ruccl_of_mpi[static_cast<std::size_t>(root)];
    return r->comm->broadcast_into(r->rank, is_root ? &v : nullptr, v);
  });
}

std::optional<int> allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                             void* recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  std::size_t ses = 0, res = 0;
  Why local = send_recv_check(sendbuf, sendcount, sendtype, recvcount, recvtype, ses, res);
  Routed r = routed(Coll::kAllgather, comm, local);
  if (!r) return std::nullopt;
  return run(Coll::kAllgather, comm, r, [&]() -> Status {
    const std::size_t block = static_cast<std::size_t>(recvcount) * res;
    auto* out = static_cast<std::byte*>(recvbuf);
    const std::size_t me = r->mpi_of_ruccl[r->rank];  // this process's MPI rank
    const std::size_t sent =
        sendbuf == MPI_IN_PLACE ? block : static_cast<std::size_t>(sendcount) * ses;
    const TensorView& in =
        r->view(0, sendbuf == MPI_IN_PLACE ? out + me * block : sendbuf, DataType::kBytes, sent);
    if (r->identity)  // (the common case, without the blocks' vectors)
      return r->comm->all_gather_into(r->rank, in,
                                      r->view(1, out, DataType::kBytes, block * r->size));
    return gather_equal_blocks(*r, in, in_ruccl_order(*r, Blocks::packed(out, block, r->size)),
                               sendbuf == MPI_IN_PLACE);
  });
}

std::optional<int> reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                                        MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  std::optional<Reduction> red;
  Why local = recvcount < 0 ? Why::kArgument : reduction_check(type, op, red);
  Routed r = routed(Coll::kReduceScatterBlock, comm, local);
  if (!r) return std::nullopt;
  return run(Coll::kReduceScatterBlock, comm, r, [&]() -> Status {
    return reduce_scatter_parts(*r, sendbuf, recvbuf, nullptr, recvcount, *red);
  });
}

std::optional<int> alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                            void* recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  std::size_t ses = 0, res = 0;
  Why local = send_recv_check(sendbuf, sendcount, sendtype, recvcount, recvtype, ses, res);
  Routed r = routed(Coll::kAlltoall, comm, local);
  if (!r) return std::nullopt;
  return run(Coll::kAlltoall, comm, r, [&]() -> Status {
    const std::size_t block = static_cast<std::size_t>(recvcount) * res;
    const std::size_t sent =
        sendbuf == MPI_IN_PLACE ? block : static_cast<std::size_t>(sendcount) * ses;
    if (!r->identity) {  // the blocks by ruccl rank (blocks.hpp), in place copied out first
      const Blocks recv = in_ruccl_order(*r, Blocks::packed(recvbuf, block, r->size));
      if (sendbuf == MPI_IN_PLACE) return exchange(*r, recv, recv, true);
      return exchange(*r, in_ruccl_order(*r, Blocks::packed(sendbuf, sent, r->size)), recv);
    }
    std::vector<std::byte> copy;  // in place: the input must not be the output
    const void* in = sendbuf;
    if (sendbuf == MPI_IN_PLACE) {
      copy.assign(static_cast<const std::byte*>(recvbuf),
                  static_cast<const std::byte*>(recvbuf) + block * r->size);
      in = copy.data();
    }
    const std::vector<std::size_t> send_counts(r->size, sent);
    std::vector<std::size_t> recv_counts;
    return r->comm->all_to_all_v_into(r->rank, host_view(in, DataType::kBytes, sent * r->size),
                                      send_counts,
                                      host_view(recvbuf, DataType::kBytes, block * r->size),
                                      recv_counts);
  });
}

std::optional<int> barrier(MPI_Comm comm) {
  Routed r = routed(Coll::kBarrier, comm, Why::kRouted);
  if (!r) return std::nullopt;
  return run(Coll::kBarrier, comm, r, [&]() -> Status { return r->comm->barrier(r->rank); });
}

}  // namespace ruccl::mpi_layer

namespace layer = ruccl::mpi_layer;

extern "C" {

int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm) {
  const auto rc = layer::allreduce(sendbuf, recvbuf, count, type, op, comm);
  return rc ? *rc : PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
}

int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
               int root, MPI_Comm comm) {
  const auto rc = layer::reduce(sendbuf, recvbuf, count, type, op, root, comm);
  return rc ? *rc : PMPI_Reduce(sendbuf, recvbuf, count, type, op, root, comm);
}

int MPI_Bcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  const auto rc = layer::bcast(buffer, count, type, root, comm);
  return rc ? *rc : PMPI_Bcast(buffer, count, type, root, comm);
}

int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  const auto rc =
      layer::allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  return rc ? *rc
            : PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype type,
                             MPI_Op op, MPI_Comm comm) {
  const auto rc = layer::reduce_scatter_block(sendbuf, recvbuf, recvcount, type, op, comm);
  return rc ? *rc : PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, type, op, comm);
}

int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  const auto rc = layer::alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  return rc ? *rc : PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

int MPI_Barrier(MPI_Comm comm) {
  const auto rc = layer::barrier(comm);
  return rc ? *rc : PMPI_Barrier(comm);
}

// MPI_COMM_WORLD's ruccl communicator is made here, while every process is
// here anyway, so that every later communicator can be split from it (one
// set of transports per process; route.cpp). Fortran's mpi_init calls
// PMPI_Init itself: fortran.cpp intercepts it too.
int MPI_Init(int* argc, char*** argv) {
  const int rc = PMPI_Init(argc, argv);
  if (rc == MPI_SUCCESS) layer::Registry::get().at_init();
  return rc;
}

int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  const int rc = PMPI_Init_thread(argc, argv, required, provided);
  if (rc == MPI_SUCCESS) layer::Registry::get().at_init();
  return rc;
}

int MPI_Finalize(void) {
  layer::Registry::get().finalize();
  return PMPI_Finalize();
}

}  // extern "C"
