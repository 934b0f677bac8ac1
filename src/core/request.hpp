// Request: one rank's description of one collective call, as submitted to the
// rendezvous. Its fingerprint fields (kind, dtype, shape, op, root, sender flag,
// send counts, budget) are what ranks must agree on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "ruccl/communicator.hpp"

namespace ruccl::core {

struct Request {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  DataType dtype = DataType::kF32;
  ReduceOp op = ReduceOp::kSum;
  std::size_t root = 0;            // reduce; broadcast's root is the sender
  bool has_input = true;           // false for broadcast receivers
  Shape shape;                     // of the input (a receiver's output); set before the agreement
  std::vector<std::size_t> send_counts;  // all_to_all_v, rows per destination
  std::size_t max_chunk_bytes = 0;

  TensorView in;                   // data may be null when has_input is false
  std::optional<TensorView> out;   // nullopt: allocate the output (value form)
};

// `to` becomes `from`, in the storage `to` has: a shape or the send counts
// are copied only where they differ (a rank calling with the same shape again
// copies a few words and allocates nothing).
void assign_view(TensorView& to, const TensorView& from);
// An output view becomes `from` (null: none, the value form), the same way.
void assign_output(std::optional<TensorView>& to, const TensorView* from);
void assign_request(Request& to, const Request& from);

// Whether two requests are alike in every field check_local reads (all of
// them: kind, dtype, op, root, has_input, shape, send counts, budget, and both
// views with their addresses): check_local, a pure function of the request
// and its rank, gives both the same answer.
bool same_request(const Request& a, const Request& b);
// Vectors of sizes compared element by element (per call, and mostly one or
// two elements: no library call).
inline bool same_sizes(const std::vector<std::size_t>& a, const std::vector<std::size_t>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return false;
  return true;
}
// Whether two views are the same buffer, dtype, shape, device and stream
// (inline: every repeated call compares its two views).
inline bool same_view(const TensorView& a, const TensorView& b) {
  return a.data == b.data && a.dtype == b.dtype && a.device == b.device && a.stream == b.stream &&
         same_sizes(a.shape, b.shape);
}

// Facts derived from a request, valid once check_local passed.
struct Geometry {
  std::size_t count = 0;  // input elements (output elements for broadcast receivers)
  std::size_t unit = 1;   // elements per row for row-split kinds (may be 0), else 1
  std::size_t rows = 0;   // shape[0] for row-split kinds, else count
};

bool is_reducing(CollectiveKind kind);
// Row unit of a shape: product of all dims but the first (1 for 0-D and 1-D).
std::size_t row_unit(const Shape& shape);
// kInvalidArgument / kBudgetTooSmall for what this rank alone can tell is wrong.
// It is check_record, the views (geometry_of what they hold), check_record_geometry,
// then the kind's checks of the buffers and the output's size.
Result<Geometry> check_local(const Request& req, std::size_t rank, std::size_t world,
                             DeviceId device);
// The parts of check_local that read no buffer: what a request's record says.
// A fingerprint from another process is held to the same rules
// (world/fingerprint_codec.cpp). check_record: dtype, op, the kind's own
// arguments (a reduce's root), the budget.
Status check_record(const Request& req, std::size_t rank, std::size_t world);
// Count, row unit and rows of a tensor of `shape` holding `count` elements.
Geometry geometry_of(CollectiveKind kind, const Shape& shape, std::size_t count);
// The byte size within size_t, then the kind's rules on the geometry (an
// all_gather's gathered size, all_to_all_v's send counts).
Status check_record_geometry(const Request& req, const Geometry& g, std::size_t rank,
                             std::size_t world);
// Count of a view checked against the collective's dtype and the rank's device
// (overflow, null data, device, dtype), or the error naming `name`.
Result<std::size_t> check_view(const TensorView& v, DataType dtype, const char* name,
                               std::size_t rank, DeviceId device);
// Elements of the output a rank gets (its expected `out` count, if it gets one).
std::size_t expected_output_count(const Request& req, const Geometry& g, std::size_t rank,
                                  std::size_t world);
// Whether `dtype` reduces with `op` (check_reducible's common case, inline:
// no Status per call).
constexpr bool reducible(DataType dtype, ReduceOp op) noexcept {
  return is_valid(op) && dtype != DataType::kBytes && is_valid(dtype) &&
         !(is_floating(dtype) && is_integer_only(op));
}
// kInvalidArgument naming the dtype when it cannot be reduced (kBytes), or
// when dtype/op hold values outside their enums.
Status check_reducible(DataType dtype, ReduceOp op);

}  // namespace ruccl::core
