// The MPI peer: the collectives of the MPI ruccl was built with, on the ruccl
// runner's buffers. Layouts follow ruccl's (and NCCL's) into forms:
//   all_reduce      MPI_Allreduce (in place: MPI_IN_PLACE)
//   broadcast       MPI_Bcast of the root's input; out of place the root then
//                   copies its input to its output (ruccl does that copy too)
//   reduce          MPI_Reduce (in place: MPI_IN_PLACE at the root)
//   all_gather      MPI_Allgather (in place: MPI_IN_PLACE; the rank's block is
//                   already at its offset of the output, as in ruccl)
//   reduce_scatter  MPI_Reduce_scatter_block. In place MPI leaves the shard at the
//                   start of the buffer, ruccl at the rank's offset: the timed call
//                   includes the memmove of one shard (1/n of the bytes) there
//   all_to_all_v    MPI_Alltoallv, equal blocks (out of place only, as ruccl)
// Data movement uses MPI_BYTE; reductions the MPI type of the dtype (f32, f64,
// i8, u8, i32, i64, u64; no f16/bf16) and MPI_SUM/PROD/MIN/MAX (no Mean).
#include "peer_mpi.hpp"

#include <climits>
#include <cstring>
#include <string>

#include "perf_peers.hpp"

namespace ruccl::perf {
namespace peer_mpi {

Status check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return Status::ok();
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(rc, text, &length);
  return Status(ErrorCode::kInternal, std::string(what) + " failed: " + std::string(text, length));
}

Result<OrderedComm> OrderedComm::create(std::size_t key) {
  OrderedComm out;
  if (key > static_cast<std::size_t>(INT_MAX))
    return Status(ErrorCode::kInvalidArgument, "rank too large for MPI");
  RUCCL_TRY(check(MPI_Comm_split(MPI_COMM_WORLD, 0, static_cast<int>(key), &out.comm_),
                  "MPI_Comm_split"));
  RUCCL_TRY(check(MPI_Comm_set_errhandler(out.comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler"));
  return out;
}

OrderedComm& OrderedComm::operator=(OrderedComm&& other) noexcept {
  if (this != &other) {
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
    comm_ = other.comm_;
    other.comm_ = MPI_COMM_NULL;
  }
  return *this;
}

OrderedComm::~OrderedComm() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
}

int OrderedComm::rank() const {
  int r = 0;
  MPI_Comm_rank(comm_, &r);
  return r;
}

int OrderedComm::size() const {
  int n = 0;
  MPI_Comm_size(comm_, &n);
  return n;
}

Status OrderedComm::barrier() const { return check(MPI_Barrier(comm_), "MPI_Barrier"); }

Status OrderedComm::max_over_ranks(std::vector<double>& values) const {
  if (values.empty()) return Status::ok();
  return check(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()),
                             MPI_DOUBLE, MPI_MAX, comm_),
               "MPI_Allreduce(max)");
}

Status OrderedComm::sum_over_ranks(std::uint64_t& value) const {
  return check(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_UINT64_T, MPI_SUM, comm_),
               "MPI_Allreduce(sum)");
}

}  // namespace peer_mpi

namespace {

MPI_Datatype mpi_type(DataType dtype) {
  switch (dtype) {
    case DataType::kF32: return MPI_FLOAT;
    case DataType::kF64: return MPI_DOUBLE;
    case DataType::kI8: return MPI_INT8_T;
    case DataType::kU8: return MPI_UINT8_T;
    case DataType::kI32: return MPI_INT32_T;
    case DataType::kI64: return MPI_INT64_T;
    case DataType::kU64: return MPI_UINT64_T;
    default: return MPI_DATATYPE_NULL;  // f16, bf16, bytes: no MPI reduction type
  }
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return MPI_SUM;
    case ReduceOp::kProd: return MPI_PROD;
    case ReduceOp::kMin: return MPI_MIN;
    case ReduceOp::kMax: return MPI_MAX;
    case ReduceOp::kBand: return MPI_BAND;
    case ReduceOp::kBor: return MPI_BOR;
    case ReduceOp::kBxor: return MPI_BXOR;
    case ReduceOp::kLand: return MPI_LAND;
    case ReduceOp::kLor: return MPI_LOR;
    case ReduceOp::kLxor: return MPI_LXOR;
    case ReduceOp::kMean: break;
  }
  return MPI_OP_NULL;
}

class MpiPeer final : public Peer {
 public:
  explicit MpiPeer(peer_mpi::OrderedComm comm) : comm_(std::move(comm)) {}

  const std::string& name() const override { return name_; }
  std::string description() const override {
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int length = 0;
    MPI_Get_library_version(version, &length);
    std::string text(version, static_cast<std::size_t>(length));
    if (const auto end = text.find_first_of(",\n"); end != std::string::npos) text.resize(end);
    return text + "; MPI_Allreduce, MPI_Bcast, MPI_Reduce, MPI_Allgather, "
                  "MPI_Reduce_scatter_block, MPI_Alltoallv";
  }

  std::string unsupported(const Case& c, bool in_place) const override {
    if (in_place && !kind_has_in_place(c.kind)) return "no in-place form";
    if (kind_reduces(c.kind)) {
      if (mpi_type(c.dtype) == MPI_DATATYPE_NULL)
        return "no MPI reduction type for " + std::string(dtype_name(c.dtype));
      if (!c.op || mpi_op(*c.op) == MPI_OP_NULL) return "no MPI op for mean";
      if (c.count > static_cast<std::size_t>(INT_MAX)) return "count exceeds MPI's int";
    } else if (c.count * dtype_size(c.dtype) > static_cast<std::size_t>(INT_MAX)) {
      return "bytes exceed MPI's int";
    }
    return "";
  }

  Status prepare(const Case& c, bool in_place, std::size_t rank, PeerBuffers buffers) override {
    if (const std::string why = unsupported(c, in_place); !why.empty())
      return Status(ErrorCode::kInvalidArgument, "mpi: " + why);
    c_ = c;
    in_place_ = in_place;
    rank_ = static_cast<int>(rank);
    root_ = static_cast<int>(c.root.value_or(0));
    b_ = buffers;
    const std::size_t elem = dtype_size(c.dtype);
    if (kind_reduces(c.kind)) {
      type_ = mpi_type(c.dtype);
      op_ = mpi_op(*c.op);
    }
    count_ = static_cast<int>(c.count);
    chunk_ = static_cast<int>(c.chunk);
    bytes_ = c.count * elem;
    chunk_bytes_ = static_cast<int>(c.chunk * elem);
    if (c.kind == CollectiveKind::kAllToAllV) {
      const std::size_t n = c.ranks;
      counts_.assign(n, chunk_bytes_);
      displs_.resize(n);
      for (std::size_t d = 0; d < n; ++d) displs_[d] = static_cast<int>(d * c.chunk * elem);
    }
    return Status::ok();
  }

  Status barrier() override { return comm_.barrier(); }

  Status call() override {
    MPI_Comm comm = comm_.get();
    switch (c_.kind) {
      case CollectiveKind::kAllReduce:
        return peer_mpi::check(
            MPI_Allreduce(in_place_ ? MPI_IN_PLACE : b_.in, b_.out, count_, type_, op_, comm),
            "MPI_Allreduce");
      case CollectiveKind::kBroadcast: {
        const bool root = rank_ == root_;
        RUCCL_TRY(peer_mpi::check(
            MPI_Bcast(root ? b_.in : b_.out, static_cast<int>(bytes_), MPI_BYTE, root_, comm),
            "MPI_Bcast"));
        if (root && b_.out != b_.in) std::memcpy(b_.out, b_.in, bytes_);
        return Status::ok();
      }
      case CollectiveKind::kReduce: {
        const bool root = rank_ == root_;
        return peer_mpi::check(MPI_Reduce(root && in_place_ ? MPI_IN_PLACE : b_.in,
                                          root ? b_.out : nullptr, count_, type_, op_, root_, comm),
                               "MPI_Reduce");
      }
      case CollectiveKind::kAllGather:
        return peer_mpi::check(MPI_Allgather(in_place_ ? MPI_IN_PLACE : b_.in, chunk_bytes_,
                                             MPI_BYTE, b_.out, chunk_bytes_, MPI_BYTE, comm),
                               "MPI_Allgather");
      case CollectiveKind::kReduceScatter:
        if (!in_place_)
          return peer_mpi::check(
              MPI_Reduce_scatter_block(b_.in, b_.out, chunk_, type_, op_, comm),
              "MPI_Reduce_scatter_block");
        RUCCL_TRY(peer_mpi::check(
            MPI_Reduce_scatter_block(MPI_IN_PLACE, b_.in, chunk_, type_, op_, comm),
            "MPI_Reduce_scatter_block"));
        // MPI leaves the shard at the start; ruccl's in-place layout has it at the
        // rank's offset (b_.out).
        if (b_.out != b_.in) std::memmove(b_.out, b_.in, static_cast<std::size_t>(chunk_bytes_));
        return Status::ok();
      case CollectiveKind::kAllToAllV:
        return peer_mpi::check(MPI_Alltoallv(b_.in, counts_.data(), displs_.data(), MPI_BYTE,
                                             b_.out, counts_.data(), displs_.data(), MPI_BYTE,
                                             comm),
                               "MPI_Alltoallv");
    }
    return Status(ErrorCode::kInternal, "mpi: unknown collective");
  }

  Status max_over_ranks(std::vector<double>& values) override { return comm_.max_over_ranks(values); }
  Status sum_over_ranks(std::uint64_t& value) override { return comm_.sum_over_ranks(value); }

 private:
  const std::string name_ = "mpi";
  peer_mpi::OrderedComm comm_;
  Case c_;
  bool in_place_ = false;
  int rank_ = 0;
  int root_ = 0;
  PeerBuffers b_;
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  MPI_Op op_ = MPI_OP_NULL;
  int count_ = 0;
  int chunk_ = 0;
  std::size_t bytes_ = 0;
  int chunk_bytes_ = 0;
  std::vector<int> counts_;
  std::vector<int> displs_;
};

}  // namespace

Result<std::unique_ptr<Peer>> make_mpi_peer(std::size_t rank) {
  auto comm = peer_mpi::OrderedComm::create(rank);
  RUCCL_TRY(comm);
  return std::unique_ptr<Peer>(new MpiPeer(std::move(comm).value()));
}

}  // namespace ruccl::perf
