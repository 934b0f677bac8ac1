// Local arithmetic of the host device: the reduction and scaling loops.
#pragma once

#include <cstddef>

#include "ruccl/status.hpp"
#include "ruccl/types.hpp"

namespace ruccl::host {

// dst[i] = op(a[i], b[i]) for `count` elements; Mean combines as Sum. dst may be
// `a` (reduce in place); b overlaps neither. kInvalidArgument for kBytes.
Status reduce(DataType dtype, ReduceOp op, void* dst, const void* a, const void* b,
              std::size_t count);
// data[i] /= divisor (Mean's final scaling; see ReduceOp for the rounding rule).
Status divide(DataType dtype, void* data, std::size_t count, std::size_t divisor);

}  // namespace ruccl::host
