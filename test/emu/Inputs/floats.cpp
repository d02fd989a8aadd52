// tkc-emu's 8- and 16-bit float conversions against a brute-force
// reference: the nearest representable value (ties to an even code),
// saturating to the largest finite one, NaN to the canonical NaN.
#include "tkc_emu_floats.h"

#include <cstdio>
#include <random>

namespace {

/// The code a correct conversion gives, found by trying every code.
uint8_t nearest_code(float x, const tkc_emu::SmallFloat &t) {
  if (std::isnan(x))
    return t.nan_code;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  const double a = std::fabs(double(x));
  if (a >= t.largest)
    return sign | t.largest_code;
  int best = -1;
  double best_distance = INFINITY;
  for (int code = 0; code <= t.largest_code; ++code) {
    const double d = std::fabs(double(tkc_emu::small_to_float(uint8_t(code), t)) - a);
    // Ties go to the even code (an even mantissa: the last bit clear).
    if (d < best_distance || (d == best_distance && (code & 1) == 0)) {
      best = code;
      best_distance = d;
    }
  }
  // Past the largest finite value's half-way point, saturation keeps the largest.
  return uint8_t(sign | best);
}

int check(const char *name, const tkc_emu::SmallFloat &t, std::mt19937 &rng) {
  int failures = 0;
  std::uniform_real_distribution<double> exponent(-12, 17);
  for (int i = 0; i < 200000; ++i) {
    float x = float((i % 2 ? -1 : 1) * std::exp2(exponent(rng)));
    if (i % 1000 == 0)
      x = i % 3000 == 0 ? NAN : i % 3000 == 1000 ? INFINITY : 0.0f;
    const uint8_t got = tkc_emu::small_from_float(x, t), want = nearest_code(x, t);
    if (got != want && failures++ < 5)
      std::printf("%s(%.9g): 0x%02x, nearest 0x%02x\n", name, double(x), got, want);
  }
  // Every code decodes to a value that encodes back to it.
  for (int code = 0; code < 256; ++code) {
    const float v = tkc_emu::small_to_float(uint8_t(code), t);
    if (std::isnan(v) || std::isinf(v))
      continue;
    if (tkc_emu::small_from_float(v, t) != code && !(v == 0 && code == 0x80) && failures++ < 10)
      std::printf("%s: code 0x%02x decodes to %g, which encodes to 0x%02x\n", name, code, double(v),
                  tkc_emu::small_from_float(v, t));
  }
  return failures;
}

int check_bf16(std::mt19937 &rng) {
  int failures = 0;
  for (int i = 0; i < 200000; ++i) {
    const uint32_t bits = uint32_t(rng());
    const float x = tkc_emu::bits_float(bits);
    if (std::isnan(x))
      continue;
    const float got = tkc_emu::bf16_to_float(tkc_emu::bf16_from_float(x));
    // The two bf16 neighbours of x, and the nearer (ties: the even one).
    const float low = tkc_emu::bits_float(bits & 0xffff0000u), high = tkc_emu::bits_float((bits & 0xffff0000u) + 0x10000u);
    // Past the largest finite value, the next one up is 2^128 (an overflow to infinity).
    const double up = std::isinf(high) ? std::copysign(std::ldexp(1.0, 128), double(high)) : double(high);
    const double dl = std::fabs(double(x) - double(low)), dh = std::fabs(double(x) - up);
    const float want = (bits & 0xffff) == 0 ? x : dl < dh ? low : dh < dl ? high : ((bits >> 16) & 1) ? high : low;
    if (got != want && failures++ < 5)
      std::printf("bf16(%.9g): %.9g, nearest %.9g\n", double(x), double(got), double(want));
  }
  return failures;
}

} // namespace

int main() {
  std::mt19937 rng(7);
  const int failures = check("e4m3", tkc_emu::kE4M3, rng) + check("e5m2", tkc_emu::kE5M2, rng) + check_bf16(rng);
  std::printf("%s\n", failures ? "FAILED" : "OK");
  return failures != 0;
}
