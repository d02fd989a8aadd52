// The interpreter rounds every value to its element type as the GPU does:
// f16 keeps 11 significant bits down to 2^-14 and a fixed step of 2^-24
// below, and rounds past 65504 to infinity; bf16 keeps 8 significant bits.

#include "interp/Interpreter.h"

#include <gtest/gtest.h>

#include <cmath>

using tkc::interp::roundTo;
using tkc::ir::DType;

TEST(Rounding, F16KeepsZerosAndSigns) {
  EXPECT_EQ(roundTo(DType::F16, 0.0), 0.0);
  EXPECT_TRUE(std::signbit(roundTo(DType::F16, -0.0)));
  EXPECT_EQ(roundTo(DType::BF16, 0.0), 0.0);
}

TEST(Rounding, F16NormalsKeepElevenBits) {
  EXPECT_EQ(roundTo(DType::F16, 1.0 + std::ldexp(1.0, -10)), 1.0 + std::ldexp(1.0, -10));
  EXPECT_EQ(roundTo(DType::F16, 1.0 + std::ldexp(1.0, -12)), 1.0); // below half a step
  EXPECT_EQ(roundTo(DType::F16, 65504.0), 65504.0);
  EXPECT_EQ(roundTo(DType::F16, 65519.0), 65504.0);
  EXPECT_TRUE(std::isinf(roundTo(DType::F16, 65520.0)));
  EXPECT_TRUE(std::isinf(roundTo(DType::F16, -1e6)) && roundTo(DType::F16, -1e6) < 0);
}

TEST(Rounding, F16SubnormalsHaveAFixedStep) {
  double step = std::ldexp(1.0, -24);
  EXPECT_EQ(roundTo(DType::F16, step), step);
  EXPECT_EQ(roundTo(DType::F16, 3 * step + step / 4), 3 * step);
  EXPECT_EQ(roundTo(DType::F16, step / 4), 0.0);
  EXPECT_EQ(roundTo(DType::F16, 1e-30), 0.0);
}

// E4M3 keeps 4 significant bits from 2^-6 up, a step of 2^-9 below, and
// has no infinities: past 448 it saturates, as cvt.rn.satfinite does.
TEST(Rounding, E4M3RoundsToNearestEven) {
  EXPECT_EQ(roundTo(DType::F8E4M3, 1.0625), 1.0);     // halfway between 1 and 1.125: to even
  EXPECT_EQ(roundTo(DType::F8E4M3, 1.1875), 1.25);    // halfway between 1.125 and 1.25: to even
  EXPECT_EQ(roundTo(DType::F8E4M3, 1.07), 1.125);     // above halfway
  EXPECT_EQ(roundTo(DType::F8E4M3, -3.3), -3.25);
  EXPECT_TRUE(std::signbit(roundTo(DType::F8E4M3, -0.0)));
}

TEST(Rounding, E4M3SubnormalsAndSaturation) {
  double step = std::ldexp(1.0, -9);
  EXPECT_EQ(roundTo(DType::F8E4M3, step), step);
  EXPECT_EQ(roundTo(DType::F8E4M3, 5 * step + step / 4), 5 * step);
  EXPECT_EQ(roundTo(DType::F8E4M3, step / 2), 0.0); // a tie with zero goes to zero, the even one
  EXPECT_EQ(roundTo(DType::F8E4M3, 448.0), 448.0);
  EXPECT_EQ(roundTo(DType::F8E4M3, 470.0), 448.0); // would round to 480, which E4M3 lacks
  EXPECT_EQ(roundTo(DType::F8E4M3, -1e6), -448.0);
  EXPECT_EQ(roundTo(DType::F8E4M3, INFINITY), 448.0);
  EXPECT_TRUE(std::isnan(roundTo(DType::F8E4M3, NAN)));
}

// E5M2 keeps 3 significant bits from 2^-14 up (a step of 2^-16 below) and
// saturates at 57344, infinities included.
TEST(Rounding, E5M2RoundsAndSaturates) {
  EXPECT_EQ(roundTo(DType::F8E5M2, 1.125), 1.0);  // halfway between 1 and 1.25: to even
  EXPECT_EQ(roundTo(DType::F8E5M2, 1.375), 1.5);  // halfway between 1.25 and 1.5: to even
  EXPECT_EQ(roundTo(DType::F8E5M2, std::ldexp(3.0, -16)), std::ldexp(3.0, -16));
  EXPECT_EQ(roundTo(DType::F8E5M2, 57344.0), 57344.0);
  EXPECT_EQ(roundTo(DType::F8E5M2, 61440.0), 57344.0);
  EXPECT_EQ(roundTo(DType::F8E5M2, -INFINITY), -57344.0);
  EXPECT_TRUE(std::isnan(roundTo(DType::F8E5M2, NAN)));
}
