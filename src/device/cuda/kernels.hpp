// The CUDA backend's local arithmetic: elementwise reduction and Mean's
// division, as vectorised kernels (kernels.cu).
//
// Plain C++ on purpose: no CUDA and no ruccl headers, so kernels.cu compiles
// on its own and the tests can include this file. Streams travel as void*
// (a cudaStream_t) and launch results as the raw cudaError_t value (0: success);
// cuda_adapter.cpp converts them into Status.
//
// Every kernel is elementwise over a Split of [0, count): a scalar head until
// dst reaches 16-byte alignment, 16-byte packs, then a scalar tail. Packs are
// used only when dst and the sources share the same offset modulo 16 (the
// usual case: the same element offset in buffers from cudaMalloc); otherwise
// the whole range is scalar. The same loop bodies also run on the host
// (emulate_*), which lets tests without a GPU check the arithmetic and the
// split bit for bit against the host adapter.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ruccl::cuda::kernels {

// Mirrors ruccl::DataType minus kBytes (cuda_adapter.cpp maps the values).
enum class Type : std::uint8_t { kF16, kBF16, kF32, kF64, kI8, kU8, kI32, kI64, kU64 };
// Mean combines as kSum; its division is divide(). The bitwise and logical ops
// (kBand .. kLxor) take the integer types only: launch_reduce returns
// cudaErrorInvalidValue for a floating type (the adapter checks first).
enum class Op : std::uint8_t { kSum, kProd, kMin, kMax, kBand, kBor, kBxor, kLand, kLor, kLxor };

inline constexpr std::size_t kPackBytes = 16;

// Which elements of [0, count) are scalar and which go in packs.
struct Split {
  std::size_t head = 0;        // [0, head) scalar
  std::size_t packs = 0;       // [head, head + packs * per_pack) in 16-byte packs
  std::size_t tail_begin = 0;  // [tail_begin, count) scalar
  std::size_t count = 0;
};

// The split for buffers at these addresses (b = 0 for one-source kernels).
inline Split split_for(std::uintptr_t dst, std::uintptr_t a, std::uintptr_t b, bool has_b,
                       std::size_t element, std::size_t count) {
  Split s;
  s.count = count;
  const std::uintptr_t mis = dst % kPackBytes;
  const bool same = a % kPackBytes == mis && (!has_b || b % kPackBytes == mis);
  if (!same || mis % element != 0) {
    s.head = count;
    s.tail_begin = count;
    return s;
  }
  const std::size_t per_pack = kPackBytes / element;
  const std::size_t head = ((kPackBytes - mis) % kPackBytes) / element;
  s.head = head < count ? head : count;
  s.packs = (count - s.head) / per_pack;
  s.tail_begin = s.head + s.packs * per_pack;
  return s;
}

// Queues dst[i] = op(a[i], b[i]) for i < count on `stream`. dst may equal a
// (or b); partial overlaps are the caller's to avoid. `sm_count` sizes the grid.
// Returns the launch's cudaError_t (0: queued).
int launch_reduce(Type type, Op op, void* dst, const void* a, const void* b, std::size_t count,
                  int sm_count, void* stream);
// Queues data[i] /= divisor (ruccl's Mean rounding: floats one correctly
// rounded division, f16/bf16 through f32, integers truncating in 64 bits).
int launch_divide(Type type, void* data, std::size_t count, std::uint64_t divisor, int sm_count,
                  void* stream);

// The same loop bodies on the host, as `threads` emulated threads of a
// grid-stride loop (a test hook: no GPU needed).
void emulate_reduce(Type type, Op op, void* dst, const void* a, const void* b, std::size_t count,
                    std::size_t threads);
void emulate_divide(Type type, void* data, std::size_t count, std::uint64_t divisor,
                    std::size_t threads);

}  // namespace ruccl::cuda::kernels
