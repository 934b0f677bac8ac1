// Local arithmetic of the host device: the reduction and scaling loops.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ruccl/status.hpp"
#include "ruccl/types.hpp"

namespace ruccl::host {

// dst[i] = op(a[i], b[i]) for `count` elements; Mean combines as Sum. dst may be
// `a` or `b` (reduce in place); else no two overlap. kInvalidArgument for kBytes.
Status reduce(DataType dtype, ReduceOp op, void* dst, const void* a, const void* b,
              std::size_t count);
// data[i] /= divisor (Mean's final scaling; see ReduceOp for the rounding rule).
Status divide(DataType dtype, void* data, std::size_t count, std::size_t divisor);

// The instruction sets the loops are built for (host_kernels_loops.inc): the
// baseline of the target, and on x86-64 AVX2 and AVX-512 (F and BW, 512-bit
// vectors). reduce and divide run the best one this CPU has, chosen once per
// process; every set gives the same bits.
enum class HostIsa : std::uint8_t { kGeneric, kAvx2, kAvx512 };
inline constexpr HostIsa kAllHostIsas[] = {HostIsa::kGeneric, HostIsa::kAvx2, HostIsa::kAvx512};
const char* isa_name(HostIsa isa) noexcept;  // "generic", "avx2", "avx512"
// Whether this build has the set's loops and this CPU (and its OS) runs them.
bool isa_runs(HostIsa isa) noexcept;
// The set reduce and divide use.
HostIsa host_isa() noexcept;
// Whether that set works on 512-bit vectors (AVX-512): the selection's
// Topology::wide_reductions, the same on every process of a node.
inline bool wide_reductions() noexcept { return host_isa() == HostIsa::kAvx512; }
// reduce and divide on the given set (tests compare the sets); kInvalidArgument
// where it does not run here.
Status reduce_on(HostIsa isa, DataType dtype, ReduceOp op, void* dst, const void* a, const void* b,
                 std::size_t count);
Status divide_on(HostIsa isa, DataType dtype, void* data, std::size_t count, std::size_t divisor);

}  // namespace ruccl::host
