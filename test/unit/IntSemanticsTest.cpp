// runtime/tkc_int.h is the one definition of integer division, remainder,
// cdiv, min and max: the generated code calls it, and the folder, the front
// end and the interpreter include it. This checks it against the
// mathematical definitions over a table of signed operands, and the folder
// against it.

#include "ir/Parser.h"
#include "passes/Pass.h"
#include "runtime/tkc_int.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>

using namespace tkc;

namespace {

const int32_t kOperands[] = {std::numeric_limits<int32_t>::min(), -65, -64, -63, -7, -2, -1, 0, 1, 2, 7, 63, 64, 65,
                             std::numeric_limits<int32_t>::max()};

/// The quotient rounded toward negative infinity, from exact 64-bit values.
int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

int32_t wrap(int64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(v)); }

TEST(IntSemantics, MatchesTheMathematicalDefinitions) {
  for (int32_t a : kOperands)
    for (int32_t b : kOperands) {
      SCOPED_TRACE(testing::Message() << a << ", " << b);
      if (b == 0) {
        EXPECT_EQ(tkc::div(a, b), 0);
        EXPECT_EQ(tkc::rem(a, b), a);
        EXPECT_EQ(tkc::cdiv(a, b), 0);
        continue;
      }
      int64_t a64 = a, b64 = b;
      EXPECT_EQ(tkc::div(a, b), wrap(a64 / b64)); // toward zero
      EXPECT_EQ(tkc::rem(a, b), wrap(a64 - a64 / b64 * b64));
      EXPECT_EQ(tkc::cdiv(a, b), wrap(-floorDiv(-a64, b64))); // the ceiling, for any signs
      EXPECT_EQ(tkc::min(a, b), std::min(a, b));
      EXPECT_EQ(tkc::max(a, b), std::max(a, b));
      // 64-bit operands (the launcher's) agree where the result fits.
      if (wrap(-floorDiv(-a64, b64)) == -floorDiv(-a64, b64)) {
        EXPECT_EQ(tkc::cdiv(a64, b64), -floorDiv(-a64, b64));
      }
    }
  EXPECT_EQ(tkc::cdiv(-64, 64), -1);
  EXPECT_EQ(tkc::cdiv(-65, 64), -1);
  EXPECT_EQ(tkc::cdiv(65, 64), 2);
  EXPECT_EQ(tkc::cdiv(-7, -2), 4);
  EXPECT_EQ(tkc::abs(std::numeric_limits<int32_t>::min()), std::numeric_limits<int32_t>::min());
}

// Usable in constant expressions (the folder may evaluate them at compile time).
static_assert(tkc::cdiv(-64, 64) == -1 && tkc::cdiv(1000, 128) == 8 && tkc::div(-7, 2) == -3 && tkc::rem(-7, 2) == -1);

/// The value that fold gives `kind a, b` on i32 constants, or nothing.
std::optional<int64_t> folded(const char *kind, int32_t a, int32_t b) {
  std::string text = fmt::format(R"(kernel @k(%Y: global<out i32[64]>) warps(4) {{
launch:
  %g = const {{value = 1}} : i32
  grid %g, %g, %g
body:
  %a = const {{value = {}}} : i32
  %b = const {{value = {}}} : i32
  %r = {} %a, %b : i32
  %f = fill {{value = 0.0}} : tile<i32[64]>
  store %Y, %f, %r {{sizes = [64]}}
}}
)",
                                 a, b, kind);
  SourceManager sources;
  std::FILE *sink = std::tmpfile();
  DiagnosticEngine diags(sources, sink);
  uint32_t file = sources.addBuffer("fold.tkir", text);
  std::unique_ptr<ir::Module> module = ir::parseModule(file, sources, diags);
  bool ok = module && createPass("fold")->run(*module, *Target::lookup("sm_80"), diags);
  std::fclose(sink);
  if (!ok)
    return std::nullopt;
  std::optional<int64_t> value;
  for (auto &op : module->kernels[0]->body.ops)
    if (op->kind == ir::OpKind::Store && op->operands[2]->definingOp &&
        op->operands[2]->definingOp->kind == ir::OpKind::Const)
      value = op->operands[2]->definingOp->intAttr("value");
  return value;
}

TEST(IntSemantics, FolderAgrees) {
  const int32_t operands[] = {-65, -64, -7, -1, 0, 1, 2, 64, 65};
  for (int32_t a : operands)
    for (int32_t b : operands) {
      SCOPED_TRACE(testing::Message() << a << ", " << b);
      if (b == 0) {
        EXPECT_EQ(folded("cdiv", a, b), std::nullopt); // an error, reported
        continue;
      }
      EXPECT_EQ(folded("cdiv", a, b), tkc::cdiv(a, b));
      EXPECT_EQ(folded("div", a, b), tkc::div(a, b));
      EXPECT_EQ(folded("rem", a, b), tkc::rem(a, b));
      EXPECT_EQ(folded("min", a, b), tkc::min(a, b));
      EXPECT_EQ(folded("max", a, b), tkc::max(a, b));
    }
}

} // namespace
