// tkc-emu's 16- and 8-bit float types: the storage and the conversions of
// CUDA's __nv_bfloat16, __half, __nv_fp8_e4m3 and __nv_fp8_e5m2 that tkc's
// kernels use. Conversions from float round to nearest even; to the 8-bit
// types they saturate to the largest finite value (as tkc's runtime does);
// NaN becomes the type's canonical NaN.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace tkc_emu {

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline uint16_t bf16_from_float(float f) {
  uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return 0x7fff;
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}
inline float bf16_to_float(uint16_t b) { return bits_float(uint32_t(b) << 16); }

inline uint16_t f16_from_float(float f) {
  if (std::isnan(f))
    return 0x7fff;
  _Float16 h = static_cast<_Float16>(f);
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
inline float f16_to_float(uint16_t b) {
  _Float16 h;
  std::memcpy(&h, &b, 2);
  return static_cast<float>(h);
}

/// A small float format: exponent bias, mantissa bits, the largest finite
/// value and its code, the NaN code, and whether it has infinities.
struct SmallFloat {
  int bias, mantissa_bits;
  double largest;
  uint8_t largest_code, nan_code;
  bool has_infinity;
};
constexpr SmallFloat kE4M3{7, 3, 448.0, 0x7e, 0x7f, false};
constexpr SmallFloat kE5M2{15, 2, 57344.0, 0x7b, 0x7f, true};

inline uint8_t small_from_float(float f, const SmallFloat &t) {
  if (std::isnan(f))
    return t.nan_code;
  const uint8_t sign = std::signbit(f) ? 0x80 : 0;
  double a = std::fabs(double(f));
  if (a >= t.largest) // infinities too
    return sign | t.largest_code;
  const int min_exponent = 1 - t.bias; // of the normal numbers
  int e = a > 0 ? std::ilogb(a) : min_exponent;
  if (e < min_exponent)
    e = min_exponent;
  const double quantum = std::ldexp(1.0, e - t.mantissa_bits);
  a = std::nearbyint(a / quantum) * quantum; // to nearest even
  if (a >= t.largest)
    return sign | t.largest_code;
  if (a == 0)
    return sign;
  e = std::ilogb(a);
  if (e < min_exponent) // subnormal
    return sign | uint8_t(a / std::ldexp(1.0, min_exponent - t.mantissa_bits));
  const int mantissa = int(a / std::ldexp(1.0, e - t.mantissa_bits)) - (1 << t.mantissa_bits);
  return sign | uint8_t((e + t.bias) << t.mantissa_bits) | uint8_t(mantissa);
}

inline float small_to_float(uint8_t b, const SmallFloat &t) {
  const float sign = b & 0x80 ? -1.0f : 1.0f;
  const int exponent = (b & 0x7f) >> t.mantissa_bits, mantissa = b & ((1 << t.mantissa_bits) - 1);
  if ((b & 0x7f) == t.nan_code || (t.has_infinity && exponent == (0x7f >> t.mantissa_bits) && mantissa != 0))
    return NAN;
  if (t.has_infinity && exponent == (0x7f >> t.mantissa_bits))
    return sign * INFINITY;
  if (exponent == 0)
    return sign * float(std::ldexp(double(mantissa), 1 - t.bias - t.mantissa_bits));
  return sign * float(std::ldexp(double(mantissa + (1 << t.mantissa_bits)), exponent - t.bias - t.mantissa_bits));
}

} // namespace tkc_emu

struct __nv_bfloat16 {
  uint16_t __x;
  __nv_bfloat16() = default;
  __nv_bfloat16(float f) : __x(tkc_emu::bf16_from_float(f)) {}
  operator float() const { return tkc_emu::bf16_to_float(__x); }
};

struct __half {
  uint16_t __x;
  __half() = default;
  __half(float f) : __x(tkc_emu::f16_from_float(f)) {}
  operator float() const { return tkc_emu::f16_to_float(__x); }
};

struct __nv_fp8_e4m3 {
  uint8_t __x;
  __nv_fp8_e4m3() = default;
  explicit __nv_fp8_e4m3(float f) : __x(tkc_emu::small_from_float(f, tkc_emu::kE4M3)) {}
  operator float() const { return tkc_emu::small_to_float(__x, tkc_emu::kE4M3); }
};

struct __nv_fp8_e5m2 {
  uint8_t __x;
  __nv_fp8_e5m2() = default;
  explicit __nv_fp8_e5m2(float f) : __x(tkc_emu::small_from_float(f, tkc_emu::kE5M2)) {}
  operator float() const { return tkc_emu::small_to_float(__x, tkc_emu::kE5M2); }
};

inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
inline float __bfloat162float(__nv_bfloat16 b) { return float(b); }
inline __half __float2half(float f) { return __half(f); }
inline float __half2float(__half h) { return float(h); }
