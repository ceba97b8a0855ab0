//===- HalfFloats.h - f32 <-> bf16 and IEEE half conversions ----*- C++ -*-===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR. The 16-bit float
// conversions the runtime does in software (initializers, the cpu GEMMs'
// widened paths, the reference kernel): round to nearest even, subnormals
// kept, NaN stays a (quiet) NaN, as the compiler's kernels and the
// interpreter convert.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_HALFFLOATS_H
#define KILN_HALFFLOATS_H

#include <cstdint>
#include <cstring>

namespace kiln {

inline uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

inline float floatFromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

/// bfloat16 bits of `value`, rounded to nearest even.
inline uint16_t floatToBf16(float value) {
  uint32_t bits = floatBits(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u)
    return static_cast<uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

/// A bfloat16 widened to f32 (exact: it is f32's top half).
inline float bf16ToFloat(uint16_t value) {
  return floatFromBits(static_cast<uint32_t>(value) << 16);
}

/// IEEE half bits of `value`, rounded to nearest even (with subnormals).
inline uint16_t floatToHalf(float value) {
  uint32_t bits = floatBits(value);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) // NaN: keep it quiet.
    return sign | 0x7E00u;
  if (magnitude >= 0x477FF000u) // >= 65520 rounds to infinity.
    return sign | 0x7C00u;
  auto roundShift = [](uint32_t mantissa, int shift) {
    uint32_t kept = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (kept & 1u)))
      ++kept; // A carry into the exponent is the right encoding.
    return kept;
  };
  if (magnitude < 0x38800000u) { // Below 2^-14: a subnormal half, or zero.
    int exponent = static_cast<int>(magnitude >> 23);
    if (exponent < 102) // Below 2^-25: rounds to zero.
      return sign;
    uint32_t mantissa = (magnitude & 0x7FFFFFu) | 0x800000u;
    return sign | static_cast<uint16_t>(roundShift(mantissa, 126 - exponent));
  }
  uint32_t rebiased = magnitude - (112u << 23);
  return sign | static_cast<uint16_t>(roundShift(rebiased, 13));
}

/// An IEEE half widened to f32 (exact).
inline float halfToFloat(uint16_t value) {
  uint32_t sign = static_cast<uint32_t>(value & 0x8000u) << 16;
  uint32_t exponent = (value >> 10) & 0x1Fu;
  uint32_t mantissa = value & 0x3FFu;
  if (exponent == 0x1Fu) // Infinity or NaN.
    return floatFromBits(sign | 0x7F800000u | (mantissa << 13));
  if (exponent != 0)
    return floatFromBits(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  // Zero or a subnormal: mantissa * 2^-24, exact in f32.
  float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
  return sign ? -magnitude : magnitude;
}

} // namespace kiln

#endif // KILN_HALFFLOATS_H
