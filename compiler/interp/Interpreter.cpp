// The interpreter's entry point and rounding to element types; Machine.h
// says how the files that run a kernel divide the work.
#include "interp/Interpreter.h"
#include "interp/Machine.h"
#include "support/Numeric.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace tkc::interp {

using namespace ir;

namespace {

/// Rounds an f32 to an 8-bit float of `mantissaBits` explicit mantissa bits
/// whose normal exponents start at `minExponent`: to nearest, ties to even,
/// with subnormals below 2^minExponent, and saturated to +-`maxNormal` as
/// PTX `cvt.rn.satfinite` does (infinities included); NaN stays NaN.
double roundToF8(float f, int mantissaBits, int minExponent, double maxNormal) {
  if (std::isnan(f) || f == 0)
    return f;
  if (std::isinf(f))
    return std::copysign(maxNormal, f);
  int scale = std::max(std::ilogb(f), minExponent);
  double rounded =
      std::ldexp(std::nearbyint(std::ldexp(static_cast<double>(f), mantissaBits - scale)), scale - mantissaBits);
  return std::fabs(rounded) > maxNormal ? std::copysign(maxNormal, rounded) : rounded;
}

} // namespace

double roundTo(DType dtype, double value) {
  switch (dtype) {
  // E4M3 has no infinities and gives its top mantissa code to NaN, so its
  // largest finite value is 1.75 * 2^8; E5M2 keeps IEEE's layout.
  case DType::F8E4M3: return roundToF8(static_cast<float>(value), 3, -6, 448.0);
  case DType::F8E5M2: return roundToF8(static_cast<float>(value), 2, -14, 57344.0);
  case DType::I1: return value != 0 ? 1 : 0;
  case DType::I32:
    // Integer arithmetic wraps as on the GPU; a value beyond 64 bits (or NaN)
    // can only come from a float, and converts as `cvt.rzi.s32` does.
    if (!(std::fabs(value) < 9.2e18))
      return saturatingToI32(value);
    return static_cast<double>(static_cast<int32_t>(static_cast<int64_t>(value)));
  case DType::F32: return static_cast<double>(static_cast<float>(value));
  case DType::BF16:
  case DType::F16: {
    float f = static_cast<float>(value);
    if (std::isnan(f) || std::isinf(f))
      return f;
    if (f == 0)
      return f;
    if (dtype == DType::F16) {
      // 10 explicit mantissa bits at the value's scale, which stops at
      // 2^-14 (below it, subnormals keep a fixed step of 2^-24); past
      // 65504 the value rounds to infinity.
      int scale = std::max(std::ilogb(f), -14);
      double rounded = std::ldexp(std::nearbyint(std::ldexp(static_cast<double>(f), 10 - scale)), scale - 10);
      return std::fabs(rounded) > 65504 ? std::copysign(INFINITY, rounded) : rounded;
    }
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    bits += 0x7fff + ((bits >> 16) & 1); // round to nearest even on the upper 16 bits
    bits &= 0xffff0000u;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  }
  return value;
}

std::optional<bool> Interpreter::picks(const Kernel &kernel, std::vector<Tensor> &tensors) {
  detail::Machine machine(kernel, tensors, diags_, options_);
  return machine.runGuards();
}

bool Interpreter::run(const Kernel &kernel, std::vector<Tensor> &tensors) {
  detail::Machine machine(kernel, tensors, diags_, options_);
  return machine.run();
}

} // namespace tkc::interp
