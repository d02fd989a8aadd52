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
