// f16 and bf16 <-> f32 conversions, round-to-nearest-even, no hardware needed.
// f16/bf16 arithmetic in ruccl is done in f32 and rounded once per combine.
// Included only by host_kernels_loops.inc, once per instruction set: the
// functions have internal linkage (an unnamed namespace), so that each set's
// file keeps its own copy and the linker never hands one set's code to another.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace ruccl::host {
namespace {  // NOLINT(cert-dcl59-cpp): one copy per instruction set's file, above

inline std::uint32_t f32_bits(float f) { std::uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float bits_f32(std::uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

inline float f16_to_f32(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t mant = h & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24
    const float f = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return sign ? -f : f;
  }
  if (exp == 31) return bits_f32(sign | 0x7f800000u | (mant << 13));
  return bits_f32(sign | ((exp + 112) << 23) | (mant << 13));
}

inline std::uint16_t f32_to_f16(float f) {
  std::uint32_t x = f32_bits(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) return sign | (x > 0x7f800000u ? 0x7e00u : 0x7c00u);  // NaN, inf
  if (x >= 0x477ff000u) return sign | 0x7c00u;  // rounds past 65504: inf
  if (x < 0x38800000u) {  // below the smallest normal half (2^-14): subnormal
    const float scaled = bits_f32(x) * 16777216.0f;  // exact: a power-of-two scaling
    return sign | static_cast<std::uint16_t>(std::nearbyint(scaled));
  }
  const std::uint32_t rounded = x + 0xfffu + ((x >> 13) & 1u) - 0x38000000u;
  return sign | static_cast<std::uint16_t>(rounded >> 13);
}

inline float bf16_to_f32(std::uint16_t h) { return bits_f32(static_cast<std::uint32_t>(h) << 16); }

inline std::uint16_t f32_to_bf16(float f) {
  const std::uint32_t x = f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  return static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace
}  // namespace ruccl::host
