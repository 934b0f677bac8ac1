// The C API's collectives: each builds the views of its rank and calls the
// into form of the C++ communicator (ruccl/communicator.hpp).
//
// Bad arguments travel to the communicator rather than returning early, so that
// every rank gets the same error (one rank's null pointer, unknown dtype or
// overflowing count fails the collective on all ranks, naming that rank): an
// unknown C dtype/op becomes an invalid C++ value, and a count whose byte size
// overflows becomes a view whose shape overflows. Only what has no C++
// counterpart is checked here: a NULL comm, and broadcast's root.
#include <optional>
#include <span>
#include <string>

#include "capi/handles.hpp"
#include "ruccl/tensor.hpp"

using ruccl::CallOptions;
using ruccl::DataType;
using ruccl::ErrorCode;
using ruccl::ReduceOp;
using ruccl::Shape;
using ruccl::Status;
using ruccl::TensorView;
using ruccl::core::catch_to_status;

namespace {

// Values no C++ enumerator has: the communicator reports them as unknown.
constexpr auto kUnknownDtype = static_cast<DataType>(0xff);
constexpr auto kUnknownOp = static_cast<ReduceOp>(0xff);

DataType dtype_of(ruccl_dtype_t dtype) {
  switch (dtype) {
    case RUCCL_F16: return DataType::kF16;
    case RUCCL_BF16: return DataType::kBF16;
    case RUCCL_F32: return DataType::kF32;
    case RUCCL_F64: return DataType::kF64;
    case RUCCL_I8: return DataType::kI8;
    case RUCCL_U8: return DataType::kU8;
    case RUCCL_I32: return DataType::kI32;
    case RUCCL_I64: return DataType::kI64;
    case RUCCL_U64: return DataType::kU64;
    case RUCCL_BYTES: return DataType::kBytes;
  }
  return kUnknownDtype;
}

ReduceOp op_of(ruccl_op_t op) {
  switch (op) {
    case RUCCL_SUM: return ReduceOp::kSum;
    case RUCCL_MEAN: return ReduceOp::kMean;
    case RUCCL_MIN: return ReduceOp::kMin;
    case RUCCL_MAX: return ReduceOp::kMax;
    case RUCCL_PROD: return ReduceOp::kProd;
    case RUCCL_BAND: return ReduceOp::kBand;
    case RUCCL_BOR: return ReduceOp::kBor;
    case RUCCL_BXOR: return ReduceOp::kBxor;
    case RUCCL_LAND: return ReduceOp::kLand;
    case RUCCL_LOR: return ReduceOp::kLor;
    case RUCCL_LXOR: return ReduceOp::kLxor;
  }
  return kUnknownOp;
}

// One rank's call: its device and stream, and view construction.
struct Call {
  const ruccl_comm& handle;
  std::size_t rank;
  DataType dtype;
  void* stream;

  ruccl::DeviceId device() const {
    const auto& devices = handle.comm->devices();
    const std::size_t first = handle.comm->first_rank();
    // A rank this process does not serve: any device; the communicator rejects the rank.
    return rank >= first && rank - first < devices.size() ? devices[rank - first] : devices[0];
  }
  std::size_t world() const { return handle.comm->world_size(); }
  // A 1-D view of `count` elements.
  TensorView view(const void* data, std::size_t count) const {
    return TensorView{const_cast<void*>(data), dtype, Shape{count}, device(), stream};
  }
  // A 1-D view of a * b elements; if that overflows, a 2-D [a, b] view whose
  // size overflows, which the communicator reports to every rank.
  TensorView view(const void* data, std::size_t a, std::size_t b) const {
    if (auto n = ruccl::checked_mul(a, b)) return view(data, *n);
    return TensorView{const_cast<void*>(data), dtype, Shape{a, b}, device(), stream};
  }
};

// Runs one collective's body for (comm, rank) and records its outcome.
template <typename F>
ruccl_result_t collective(ruccl_comm_t* comm, std::size_t rank, ruccl_dtype_t dtype, void* stream,
                          const char* function, F&& body) noexcept {
  if (!comm) return RUCCL_ERROR_INVALID_ARGUMENT;
  const Status s = catch_to_status(ErrorCode::kInternal, "", [&] {
    return body(*comm->comm, Call{*comm, rank, dtype_of(dtype), stream});
  });
  return ruccl::capi::record(*comm, rank, function, s);
}

}  // namespace

extern "C" {

ruccl_result_t ruccl_all_reduce(ruccl_comm_t* comm, size_t rank, const void* sendbuf,
                                void* recvbuf, size_t count, ruccl_dtype_t dtype, ruccl_op_t op,
                                void* stream) {
  return collective(comm, rank, dtype, stream, "ruccl_all_reduce",
                    [&](ruccl::Communicator& c, const Call& call) {
                      return c.all_reduce_into(rank, call.view(sendbuf, count),
                                               call.view(recvbuf, count), op_of(op));
                    });
}

ruccl_result_t ruccl_reduce(ruccl_comm_t* comm, size_t rank, const void* sendbuf, void* recvbuf,
                            size_t count, ruccl_dtype_t dtype, ruccl_op_t op, size_t root,
                            void* stream) {
  return collective(comm, rank, dtype, stream, "ruccl_reduce",
                    [&](ruccl::Communicator& c, const Call& call) {
                      // Non-roots' output is never touched: an empty view.
                      const TensorView out =
                          rank == root ? call.view(recvbuf, count) : call.view(nullptr, 0);
                      return c.reduce_into(rank, call.view(sendbuf, count), out, op_of(op), root);
                    });
}

ruccl_result_t ruccl_broadcast(ruccl_comm_t* comm, size_t rank, const void* sendbuf,
                               void* recvbuf, size_t count, ruccl_dtype_t dtype, size_t root,
                               void* stream) {
  return collective(comm, rank, dtype, stream, "ruccl_broadcast",
                    [&](ruccl::Communicator& c, const Call& call) -> Status {
                      if (root >= call.world())
                        return Status(ErrorCode::kInvalidArgument,
                                      "root " + std::to_string(root) + " is outside a world of " +
                                          std::to_string(call.world()));
                      const TensorView in = call.view(sendbuf, count);
                      return c.broadcast_into(rank, rank == root ? &in : nullptr,
                                              call.view(recvbuf, count));
                    });
}

ruccl_result_t ruccl_all_gather(ruccl_comm_t* comm, size_t rank, const void* sendbuf,
                                void* recvbuf, size_t send_count, ruccl_dtype_t dtype,
                                void* stream) {
  return collective(comm, rank, dtype, stream, "ruccl_all_gather",
                    [&](ruccl::Communicator& c, const Call& call) {
                      return c.all_gather_into(rank, call.view(sendbuf, send_count),
                                               call.view(recvbuf, call.world(), send_count));
                    });
}

ruccl_result_t ruccl_reduce_scatter(ruccl_comm_t* comm, size_t rank, const void* sendbuf,
                                    void* recvbuf, size_t recv_count, ruccl_dtype_t dtype,
                                    ruccl_op_t op, void* stream) {
  return collective(comm, rank, dtype, stream, "ruccl_reduce_scatter",
                    [&](ruccl::Communicator& c, const Call& call) {
                      // world * recv_count elements split evenly: shard r is
                      // [r * recv_count, (r + 1) * recv_count).
                      return c.reduce_scatter_into(rank,
                                                   call.view(sendbuf, call.world(), recv_count),
                                                   call.view(recvbuf, recv_count), op_of(op));
                    });
}

ruccl_result_t ruccl_all_to_all_v(ruccl_comm_t* comm, size_t rank, const void* sendbuf,
                                  const size_t* send_counts, void* recvbuf, size_t recv_capacity,
                                  size_t* recv_counts, ruccl_dtype_t dtype, void* stream) {
  return collective(comm, rank, dtype, stream, "ruccl_all_to_all_v",
                    [&](ruccl::Communicator& c, const Call& call) -> Status {
                      // NULL send_counts: no counts, which the communicator
                      // reports to every rank ("0 send counts for a world of n").
                      std::span<const std::size_t> counts;
                      std::size_t total = 0;
                      if (send_counts) {
                        counts = std::span(send_counts, call.world());
                        for (std::size_t n : counts) total += n;  // overflow: checked by the communicator
                      }
                      std::vector<std::size_t> received;
                      RUCCL_TRY(c.all_to_all_v_into(rank, call.view(sendbuf, total), counts,
                                                    call.view(recvbuf, recv_capacity), received));
                      if (recv_counts)
                        for (std::size_t i = 0; i < received.size(); ++i) recv_counts[i] = received[i];
                      return Status::ok();
                    });
}

}  // extern "C"
