// The host loops' entry points: argument checks, then the loops of the best
// instruction set this CPU runs (host_kernels_loops.inc, built once per set).
#include "device/host/host_kernels.hpp"

#include <string>

#include "core/request.hpp"

// Each set's loops (host_kernels_<set>.cpp); false: the dtype/op does not reduce.
#define RUCCL_HOST_ISA_DECLARE(ns)                                                          \
  namespace ruccl::host::ns {                                                               \
  bool reduce(DataType dtype, ReduceOp op, void* dst, const void* a, const void* b,         \
              std::size_t count) noexcept;                                                  \
  bool divide(DataType dtype, void* data, std::size_t count, std::size_t divisor) noexcept; \
  }
RUCCL_HOST_ISA_DECLARE(generic)
#if RUCCL_HOST_AVX2
RUCCL_HOST_ISA_DECLARE(avx2)
#endif
#if RUCCL_HOST_AVX512
RUCCL_HOST_ISA_DECLARE(avx512)
#endif
#undef RUCCL_HOST_ISA_DECLARE

namespace ruccl::host {
namespace {

bool cpu_runs(HostIsa isa) noexcept {
#if RUCCL_HOST_AVX2 || RUCCL_HOST_AVX512
  __builtin_cpu_init();  // also where called before constructors ran
#endif
  switch (isa) {
    case HostIsa::kGeneric: return true;
#if RUCCL_HOST_AVX2
    // __builtin_cpu_supports also asks the OS (XCR0) whether it saves the registers.
    case HostIsa::kAvx2: return __builtin_cpu_supports("avx2") != 0;
#endif
#if RUCCL_HOST_AVX512
    case HostIsa::kAvx512:
      return __builtin_cpu_supports("avx512f") != 0 && __builtin_cpu_supports("avx512bw") != 0;
#endif
    default: return false;
  }
}

HostIsa best_isa() noexcept {
  for (HostIsa isa : {HostIsa::kAvx512, HostIsa::kAvx2})
    if (cpu_runs(isa)) return isa;
  return HostIsa::kGeneric;
}

bool reduce_with(HostIsa isa, DataType dtype, ReduceOp op, void* dst, const void* a, const void* b,
                 std::size_t count) noexcept {
  switch (isa) {
#if RUCCL_HOST_AVX2
    case HostIsa::kAvx2: return avx2::reduce(dtype, op, dst, a, b, count);
#endif
#if RUCCL_HOST_AVX512
    case HostIsa::kAvx512: return avx512::reduce(dtype, op, dst, a, b, count);
#endif
    default: return generic::reduce(dtype, op, dst, a, b, count);
  }
}

bool divide_with(HostIsa isa, DataType dtype, void* data, std::size_t count,
                 std::size_t divisor) noexcept {
  switch (isa) {
#if RUCCL_HOST_AVX2
    case HostIsa::kAvx2: return avx2::divide(dtype, data, count, divisor);
#endif
#if RUCCL_HOST_AVX512
    case HostIsa::kAvx512: return avx512::divide(dtype, data, count, divisor);
#endif
    default: return generic::divide(dtype, data, count, divisor);
  }
}

Status not_here(HostIsa isa) {
  return Status(ErrorCode::kInvalidArgument,
                std::string("the host loops for ") + isa_name(isa) +
                    " are not in this build or this CPU lacks the instructions");
}

Status checked_reduce(HostIsa isa, DataType dtype, ReduceOp op, void* dst, const void* a,
                      const void* b, std::size_t count) {
  if (!core::reducible(dtype, op)) return core::check_reducible(dtype, op);
  if (!reduce_with(isa, dtype, op, dst, a, b, count))
    return Status(ErrorCode::kInvalidArgument, "unknown reduction op value");
  return Status::ok();
}

Status checked_divide(HostIsa isa, DataType dtype, void* data, std::size_t count,
                      std::size_t divisor) {
  if (!core::reducible(dtype, ReduceOp::kMean))
    return core::check_reducible(dtype, ReduceOp::kMean);
  if (divisor == 0) return Status(ErrorCode::kInternal, "Mean divisor is zero");
  if (!divide_with(isa, dtype, data, count, divisor))
    return Status(ErrorCode::kInternal, "no division loop for this dtype");
  return Status::ok();
}

}  // namespace

const char* isa_name(HostIsa isa) noexcept {
  switch (isa) {
    case HostIsa::kGeneric: return "generic";
    case HostIsa::kAvx2: return "avx2";
    case HostIsa::kAvx512: return "avx512";
  }
  return "unknown";
}

bool isa_runs(HostIsa isa) noexcept { return cpu_runs(isa); }

HostIsa host_isa() noexcept {
  static const HostIsa chosen = best_isa();  // the CPU's: fixed for the process
  return chosen;
}

Status reduce(DataType dtype, ReduceOp op, void* dst, const void* a, const void* b,
              std::size_t count) {
  return checked_reduce(host_isa(), dtype, op, dst, a, b, count);
}

Status divide(DataType dtype, void* data, std::size_t count, std::size_t divisor) {
  return checked_divide(host_isa(), dtype, data, count, divisor);
}

Status reduce_on(HostIsa isa, DataType dtype, ReduceOp op, void* dst, const void* a, const void* b,
                 std::size_t count) {
  if (!isa_runs(isa)) return not_here(isa);
  return checked_reduce(isa, dtype, op, dst, a, b, count);
}

Status divide_on(HostIsa isa, DataType dtype, void* data, std::size_t count, std::size_t divisor) {
  if (!isa_runs(isa)) return not_here(isa);
  return checked_divide(isa, dtype, data, count, divisor);
}

}  // namespace ruccl::host
