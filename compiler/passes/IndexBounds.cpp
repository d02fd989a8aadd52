// Which ranges the scalars of a kernel provably lie in: offsets that cannot
// be negative, slices that cannot run past their tensors. The tail and fold
// passes decide from these which accesses need bounds checks.
#include "passes/IndexBounds.h"
#include "passes/PassUtils.h"

namespace tkc::passes {

using namespace ir;

namespace {
bool provablyNonNegative(const Value *v, int depth) {
  // Deep chains are rare; beyond the bound the answer is the safe one.
  if (depth > 64)
    return false;
  if (const Op *def = v->definingOp) {
    auto operandsNonNegative = [&](size_t first) {
      for (size_t i = first; i < def->operands.size(); ++i)
        if (!provablyNonNegative(def->operands[i], depth + 1))
          return false;
      return true;
    };
    switch (def->kind) {
    case OpKind::Const: return v->type.dtype == DType::I32 && def->intAttr("value") >= 0;
    case OpKind::BlockId:
    case OpKind::GridSize:
    case OpKind::NumSms: return true;
    case OpKind::Add:
    case OpKind::Mul:
    case OpKind::Div:
    case OpKind::CDiv:
    case OpKind::Rem:
    case OpKind::Min: return operandsNonNegative(0);
    case OpKind::Max:
      return provablyNonNegative(def->operands[0], depth + 1) || provablyNonNegative(def->operands[1], depth + 1);
    case OpKind::Select: return operandsNonNegative(1);
    default: return false;
    }
  }
  const Block *block = v->ownerBlock;
  if (!block)
    return false;
  const Op *owner = block->parentOp;
  if (!owner) // the kernel's parameters: scalars are tensor sizes
    return v->type.isScalar() && v->type.dtype == DType::I32;
  // A loop counter: from lo up by a positive step. (Other block arguments
  // carry values around the loop.)
  if (owner->kind != OpKind::For || v->index != 0 || owner->operands.size() < 3)
    return false;
  auto step = constantIntOf(owner->operands[2]);
  return step && *step > 0 && provablyNonNegative(owner->operands[0], depth + 1);
}
} // namespace

bool provablyNonNegative(const Value *v) { return provablyNonNegative(v, 0); }

/// offset is `mul(x, c)` or `mul(c, x)` with c a multiple of `size`.
static bool isScaledByMultipleOf(const Value *offset, int64_t size) {
  const Op *def = offset->definingOp;
  if (!def || def->kind != OpKind::Mul)
    return false;
  for (const Value *factor : def->operands)
    if (auto c = constantIntOf(factor); c && *c % size == 0)
      return true;
  return false;
}

/// True when `index` is the block's coordinate along a grid axis whose
/// extent is the kernel parameter that sizes `dim` (`grid(..., H, B)`
/// indexing `[block.z, block.y, ...]`): the host launches exactly that many
/// blocks along the axis, and a persistent kernel's tiles cover the same
/// range.
static bool isBlockIndexOfExactGrid(const Kernel &kernel, const Dim &dim, const Value *index) {
  const Op *def = index->definingOp;
  if (dim.isStatic() || !def || def->kind != OpKind::BlockId || kernel.launch.ops.empty())
    return false;
  const Op &grid = *kernel.launch.ops.back();
  int64_t axis = def->intAttr("axis");
  if (grid.kind != OpKind::Grid || axis < 0 || axis >= static_cast<int64_t>(grid.operands.size()))
    return false;
  const Value *extent = grid.operands[axis];
  return !extent->definingOp && extent->nameHint == dim.symbol;
}

/// True when the slice [offset, offset + size) (or the single index `offset`
/// when size is 0) provably lies inside a dim.
bool provablyInBounds(const Kernel &kernel, const Dim &dim, int64_t size, const Value *offset) {
  if (size == 0 && isBlockIndexOfExactGrid(kernel, dim, offset))
    return true;
  if (!dim.isStatic())
    return false;
  auto c = constantIntOf(offset);
  if (size == 0)
    return c && *c >= 0 && *c < dim.size;
  if (size == dim.size && c && *c == 0)
    return true;
  if (dim.size % size != 0)
    return false;
  if (c)
    return *c >= 0 && *c % size == 0 && *c + size <= dim.size;
  // A tile-aligned offset into a dim that tiles exactly: the launch grid is
  // assumed to cover the tensor, not to run past it.
  return isScaledByMultipleOf(offset, size);
}

} // namespace tkc::passes
