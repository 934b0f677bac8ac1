// The intercepted rooted collectives with blocks per rank: MPI_Gather,
// MPI_Gatherv, MPI_Scatter and MPI_Scatterv, each one exchange of blocks
// (blocks.hpp) in which only the root's blocks are not empty: a gather sends
// one block from every rank to the root, a scatter one block from the root to
// every rank. In place (MPI_IN_PLACE at the root) the root's own block stays
// where it is: it sends itself nothing. Small fixed-count ones are one
// all_gather or one broadcast instead (small_rooted).
//
// The decision follows collectives.cpp's rules, with MPI's rule of which
// arguments are significant where: the root checks the receive side of a
// gather (and its send side unless in place), every other rank its send side
// only; a scatter the other way round. Every process checks the root.
#include "mpi_layer/collectives.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/catch_to_status.hpp"
#include "mpi_layer/blocks.hpp"
#include "mpi_layer/dispatch.hpp"
#include "mpi_layer/mapping.hpp"
#include "mpi_layer/registry.hpp"

namespace ruccl::mpi_layer {
namespace {

int rank_in(MPI_Comm comm) {
  int rank = -1;
  if (comm != MPI_COMM_NULL) PMPI_Comm_rank(comm, &rank);
  return rank;
}

// The two sides of a rooted exchange: the root's, with a block per rank
// (a gather's receive side, a scatter's send side; not `vector`: `count` for
// every rank), significant only at the root; and every rank's own block,
// significant everywhere but at a root in place.
struct ManySide {
  bool vector;  // Gatherv/Scatterv: counts and displs (significant at the root only)
  const void* base;
  const int* counts;
  const int* displs;
  int count;  // Gather/Scatter
  MPI_Datatype type;
};
struct OneSide {
  const void* base;
  int count;
  MPI_Datatype type;
};

// The argument check: the sides' datatypes, counts (not negative) and the root.
Why rooted_check(int root, MPI_Comm comm, bool in_place, const ManySide& many, const OneSide& one,
                 std::size_t& many_bytes, std::size_t& one_bytes) {
  const int size = comm_size(comm);
  if (root < 0 || root >= size) return Why::kArgument;
  const bool is_root = rank_in(comm) == root;
  if (is_root) {
    const auto info = type_info(many.type);
    if (!info) return Why::kDatatype;
    many_bytes = info->bytes;
    if (many.vector ? any_negative(many.counts, size) : many.count < 0) return Why::kArgument;
  }
  if (is_root && in_place) return Why::kRouted;
  const auto info = type_info(one.type);
  if (!info) return Why::kDatatype;
  one_bytes = info->bytes;
  return one.count < 0 ? Why::kArgument : Why::kRouted;
}

// Gather and Scatter whose blocks of all ranks together are at most
// kSmallRooted bytes (and the communicator's lean threshold): one all_gather
// (gather) or one broadcast of the root's blocks (scatter), which ruccl runs in
// one round through the node's mailboxes, in place of an all-to-all-v's
// pairwise rounds. Every rank then holds all blocks; it keeps what MPI gives it.
constexpr std::size_t kSmallRooted = std::size_t{16} << 10;

Status small_rooted(Route& r, bool gathering, const ManySide& many, const OneSide& one,
                    std::size_t block, bool in_place, std::size_t at) {
  const std::size_t n = r.size;
  const bool is_root = r.rank == at;
  auto* blocks = static_cast<std::byte*>(const_cast<void*>(many.base));  // the root's
  std::vector<std::byte> all(is_root ? 0 : block * n);
  std::byte* out = is_root ? blocks : all.data();
  if (gathering) {
    // At the root straight into recvbuf (in place: its block is there already).
    const void* in = is_root && in_place ? blocks + at * block : one.base;
    return r.comm->all_gather_into(r.rank, host_view(in, DataType::kBytes, block),
                                   host_view(out, DataType::kBytes, block * n));
  }
  const TensorView v = host_view(out, DataType::kBytes, block * n);
  RUCCL_TRY(r.comm->broadcast_into(r.rank, is_root ? &v : nullptr, v));
  if (!(is_root && in_place)) std::memcpy(const_cast<void*>(one.base), out + r.rank * block, block);
  return Status::ok();
}

// One exchange (in place, the root leaves its own block where it is).
std::optional<int> rooted_of(Coll c, bool gathering, const ManySide& many, const OneSide& one,
                             bool in_place, int root, MPI_Comm comm) {
  std::size_t many_bytes = 0, one_bytes = 0;
  const Why local = rooted_check(root, comm, in_place, many, one, many_bytes, one_bytes);
  Routed r = routed(c, comm, local);
  if (!r) return std::nullopt;
  const Status s = core::catch_to_status(ErrorCode::kInternal, "ruccl mpi layer", [&] {
    // The root's ruccl rank; the root's blocks are put in ruccl order below
    // (the one-round form gathers by ruccl rank: identity Routes only).
    const std::size_t at = r->ruccl_of_mpi[static_cast<std::size_t>(root)];
    if (!many.vector && r->identity) {  // every rank knows the block: the same choice everywhere
      const bool root_in_place = r->rank == at && in_place;
      const std::size_t block = root_in_place ? static_cast<std::size_t>(many.count) * many_bytes
                                              : static_cast<std::size_t>(one.count) * one_bytes;
      const std::size_t small = std::min(kSmallRooted, r->comm->config().lean_bytes());
      if (block * r->size <= small)
        return small_rooted(*r, gathering, many, one, block, in_place, at);
    }
    Blocks blocks(r->size), mine(r->size);
    if (r->rank == at)
      blocks =
          in_ruccl_order(*r,
                         many.vector
                             ? Blocks::of(many.base, many.counts, many.displs, many_bytes, r->size)
                             : Blocks::packed(many.base,
                                              static_cast<std::size_t>(many.count) * many_bytes,
                                              r->size));
    if (r->rank == at && in_place) {
      blocks.bytes[at] = 0;  // the root's own block stays where it is
    } else {
      mine.base = one.base;
      mine.bytes[at] = static_cast<std::size_t>(one.count) * one_bytes;
    }
    return gathering ? exchange(*r, mine, blocks) : exchange(*r, blocks, mine);
  });
  return run_status(c, comm, s, r);
}

}  // namespace

std::optional<int> gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                          int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return rooted_of(Coll::kGather, true, {false, recvbuf, nullptr, nullptr, recvcount, recvtype},
                   {sendbuf, sendcount, sendtype}, sendbuf == MPI_IN_PLACE, root, comm);
}

std::optional<int> gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                           const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                           int root, MPI_Comm comm) {
  return rooted_of(Coll::kGatherv, true, {true, recvbuf, recvcounts, displs, 0, recvtype},
                   {sendbuf, sendcount, sendtype}, sendbuf == MPI_IN_PLACE, root, comm);
}

std::optional<int> scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                           int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return rooted_of(Coll::kScatter, false, {false, sendbuf, nullptr, nullptr, sendcount, sendtype},
                   {recvbuf, recvcount, recvtype}, recvbuf == MPI_IN_PLACE, root, comm);
}

std::optional<int> scatterv(const void* sendbuf, const int sendcounts[], const int displs[],
                            MPI_Datatype sendtype, void* recvbuf, int recvcount,
                            MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return rooted_of(Coll::kScatterv, false, {true, sendbuf, sendcounts, displs, 0, sendtype},
                   {recvbuf, recvcount, recvtype}, recvbuf == MPI_IN_PLACE, root, comm);
}

}  // namespace ruccl::mpi_layer

namespace layer = ruccl::mpi_layer;

extern "C" {

int MPI_Gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
               int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  const auto rc =
      layer::gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
  return rc ? *rc
            : PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

int MPI_Gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                MPI_Comm comm) {
  const auto rc = layer::gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                 recvtype, root, comm);
  return rc ? *rc
            : PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                           root, comm);
}

int MPI_Scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  const auto rc =
      layer::scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
  return rc ? *rc
            : PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

int MPI_Scatterv(const void* sendbuf, const int sendcounts[], const int displs[],
                 MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                 int root, MPI_Comm comm) {
  const auto rc = layer::scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount,
                                  recvtype, root, comm);
  return rc ? *rc
            : PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype,
                            root, comm);
}

}  // extern "C"
