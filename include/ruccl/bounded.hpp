// BoundedCommunicator: one explicit byte budget applied to an existing group.
//
// Wraps an already connected communicator (same devices, same tuning) and passes
// max_chunk_bytes to every call. The budget covers the tensor payload of each
// message; it excludes metadata, the complete result tensors and scratch. A
// non-empty message must fit one complete element (one row for all_to_all_v and
// for row-split tensors); otherwise the call fails with kBudgetTooSmall, naming
// the budget and the row size. All ranks use the same budget. The algorithms cut
// every transfer to the executor's message size: executors that stage or send
// bytes (the transport) use the budget; the in-process executor reads peers'
// memory directly, stages nothing, and so moves each range whole.
// last_staging(rank) reports what a call really staged against the budget
// (Communicator::last_staging, StagingStats).
// Chunked arithmetic may order floating reductions differently from unchunked.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "ruccl/communicator.hpp"

namespace ruccl {

class BoundedCommunicator {
 public:
  BoundedCommunicator(std::shared_ptr<Communicator> inner, std::size_t max_chunk_bytes)
      : inner_(std::move(inner)), max_chunk_bytes_(max_chunk_bytes) {}

  std::size_t max_chunk_bytes() const { return max_chunk_bytes_; }
  const std::shared_ptr<Communicator>& inner() const { return inner_; }
  std::size_t world_size() const { return inner_->world_size(); }

  Result<Tensor> all_reduce(std::size_t rank, const TensorView& in, ReduceOp op) {
    return inner_->all_reduce(rank, in, op, options());
  }
  Result<std::optional<Tensor>> reduce(std::size_t rank, const TensorView& in, ReduceOp op,
                                       std::size_t root) {
    return inner_->reduce(rank, in, op, root, options());
  }
  Result<Tensor> broadcast(std::size_t rank, const TensorView* in) {
    return inner_->broadcast(rank, in, options());
  }
  Result<Tensor> all_gather(std::size_t rank, const TensorView& in) {
    return inner_->all_gather(rank, in, options());
  }
  Result<Tensor> reduce_scatter(std::size_t rank, const TensorView& in, ReduceOp op) {
    return inner_->reduce_scatter(rank, in, op, options());
  }
  Result<AllToAllV> all_to_all_v(std::size_t rank, const TensorView& in,
                                 std::span<const std::size_t> send_counts) {
    return inner_->all_to_all_v(rank, in, send_counts, options());
  }

  // The into forms (Communicator's, with the budget).
  Status all_reduce_into(std::size_t rank, const TensorView& in, const TensorView& out,
                         ReduceOp op) {
    return inner_->all_reduce_into(rank, in, out, op, options());
  }
  Status reduce_into(std::size_t rank, const TensorView& in, const TensorView& out, ReduceOp op,
                     std::size_t root) {
    return inner_->reduce_into(rank, in, out, op, root, options());
  }
  Status broadcast_into(std::size_t rank, const TensorView* in, const TensorView& out) {
    return inner_->broadcast_into(rank, in, out, options());
  }
  Status all_gather_into(std::size_t rank, const TensorView& in, const TensorView& out) {
    return inner_->all_gather_into(rank, in, out, options());
  }
  Status reduce_scatter_into(std::size_t rank, const TensorView& in, const TensorView& out,
                             ReduceOp op) {
    return inner_->reduce_scatter_into(rank, in, out, op, options());
  }
  Status all_to_all_v_into(std::size_t rank, const TensorView& in,
                           std::span<const std::size_t> send_counts, const TensorView& out,
                           std::vector<std::size_t>& recv_counts) {
    return inner_->all_to_all_v_into(rank, in, send_counts, out, recv_counts, options());
  }

  Status barrier(std::size_t rank) { return inner_->barrier(rank); }
  // The staging of `rank`'s last collective on the inner communicator.
  Result<StagingStats> last_staging(std::size_t rank) const { return inner_->last_staging(rank); }

 private:
  CallOptions options() const { return CallOptions{max_chunk_bytes_}; }
  std::shared_ptr<Communicator> inner_;
  std::size_t max_chunk_bytes_;
};

}  // namespace ruccl
