// Rules of the tensor-core products: what mma (mma.sync) and wgmma
// (wgmma.mma_async) share, operand dtypes, shapes and transposes, and what
// wgmma adds, where each operand lives and the instruction's widths.
#include "ir/OpRuleChecks.h"

namespace tkc::ir::rules {

namespace {

/// What `mma` and `wgmma` share: a, b and the accumulator (operands 0-2)
/// multiply as their shapes and `trans_*` flags say, the result is the
/// accumulator's type.
std::string checkProduct(const Op &op) {
  const char *names[] = {"a", "b", "accumulator"};
  for (size_t i = 0; i < 3; ++i)
    if (!operandType(op, i).isTile() || operandType(op, i).shape.size() != 2)
      return fmt::format("{} operand must be a 2-d tile, but is {}", names[i], operandType(op, i).str());
  for (const char *flag : {"trans_a", "trans_b"})
    if (auto error = checkIntAttr(op, flag, Presence::Optional, 0, 1); !error.empty())
      return error;
  const Type &a = operandType(op, 0), &b = operandType(op, 1), &c = operandType(op, 2);
  if (isF8(a.dtype) || isF8(b.dtype)) {
    // wgmma pairs e4m3 and e5m2 freely, both operands K-major.
    if (!isF8(a.dtype) || !isF8(b.dtype))
      return fmt::format("an 8-bit float operand needs an 8-bit float partner, but a is {} and b is {}",
                         dtypeName(a.dtype), dtypeName(b.dtype));
    if (op.intAttr("trans_a") == 1 || op.intAttr("trans_b") != 1)
      return "8-bit float operands are read K-major: a untransposed, b transposed (`trans_b = 1`)";
    if (a.shape[1] % 32 != 0)
      return fmt::format("8-bit float operands take k in steps of 32, but k is {}", a.shape[1]);
  } else if (a.dtype != DType::BF16 && a.dtype != DType::F16) {
    return fmt::format("a operand must be bf16, f16, f8e4m3 or f8e5m2, but is {}", dtypeName(a.dtype));
  } else if (b.dtype != a.dtype) {
    return fmt::format("b operand must be {} like a, but is {}", dtypeName(a.dtype), dtypeName(b.dtype));
  }
  if (c.dtype != DType::F32)
    return fmt::format("accumulator must be f32, but is {}", dtypeName(c.dtype));
  bool transA = op.intAttr("trans_a") == 1, transB = op.intAttr("trans_b") == 1;
  int64_t m = transA ? a.shape[1] : a.shape[0], k = transA ? a.shape[0] : a.shape[1];
  int64_t bk = transB ? b.shape[1] : b.shape[0], n = transB ? b.shape[0] : b.shape[1];
  if (bk != k)
    return fmt::format("b operand {}{} does not match a operand {}{}", shapeText(b.shape),
                       transB ? " (transposed)" : "", shapeText(a.shape), transA ? " (transposed)" : "");
  if (c.shape != std::vector<int64_t>{m, n})
    return fmt::format("accumulator shape {} must be {}", shapeText(c.shape), shapeText({m, n}));
  if (resultType(op) != c)
    return fmt::format("result must be {} like the accumulator, but is {}", c.str(), resultType(op).str());
  return "";
}

} // namespace

std::string checkMma(const Op &op) {
  if (auto error = checkCounts(op, 3, 1); !error.empty())
    return error;
  return checkProduct(op);
}

/// A product on the tensor cores (wgmma.mma_async): B, and A unless it is
/// an A fragment in registers, in 128-byte-swizzled shared panels; the
/// accumulator in registers, 16 rows per warp; k in steps of 16; n per
/// warpgroup a multiple of 8 up to 256 (the instruction's widths).
std::string checkWgmma(const Op &op) {
  if (op.operands.size() != 3 && op.operands.size() != 4)
    return fmt::format("expects a, b, an accumulator and an optional predicate, but has {} operands",
                       op.operands.size());
  if (op.results.size() != 1)
    return countMismatch("result", 1, op.results.size());
  if (auto error = checkProduct(op); !error.empty())
    return error;
  const Type &a = operandType(op, 0), &c = operandType(op, 2);
  if (a.isRegister()) {
    if (isF8(a.dtype))
      return "an 8-bit float a operand must be in shared memory";
    if (a.layout.kind != LayoutKind::OperandA)
      return fmt::format("a operand in registers must be in #opa, but is {}", a.str());
    if (op.intAttr("trans_a") == 1)
      return "a operand in registers cannot be read transposed (`trans_a`)";
  } else if (!a.isShared() || a.layout.kind != LayoutKind::Swizzle128 || a.stages != 0) {
    return fmt::format("a operand must be an unstaged #swizzle128 shared tile or registers in #opa, but is {}",
                       a.str());
  }
  if (auto error = checkSwizzledPanel(op, 1); !error.empty())
    return error;
  if (!c.isRegister() || c.layout.kind != LayoutKind::Acc)
    return fmt::format("accumulator must be registers in #acc, but is {}", c.str());
  if (c.shape[0] != 16 * c.layout.warpsM)
    return fmt::format("accumulator {} must have 16 rows per warp of {}", shapeText(c.shape), c.str());
  int64_t k = op.intAttr("trans_a") == 1 ? a.shape[0] : a.shape[1];
  if (k % 16 != 0)
    return fmt::format("the product's k extent {} must be a multiple of 16", k);
  int64_t n = c.shape[1] / c.layout.warpsN;
  if (n % 8 != 0 || n > 256)
    return fmt::format("each warpgroup's {} columns must be a multiple of 8 up to 256", n);
  if (op.operands.size() == 4 && !isScalarOf(operandType(op, 3), DType::I1))
    return fmt::format("predicate must be i1, but is {}", operandType(op, 3).str());
  return "";
}

} // namespace tkc::ir::rules
