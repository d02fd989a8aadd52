// Which ranges the scalars of a kernel provably lie in: offsets that cannot
// be negative, slices that cannot run past their tensors. The tail and fold
// passes decide from these which accesses need bounds checks.
#include "passes/IndexBounds.h"
#include "passes/PassUtils.h"

#include <algorithm>

namespace tkc::passes {

using namespace ir;

namespace {

// Deep chains are rare; beyond this depth the answer is the safe one.
constexpr int kMaxDepth = 64;

/// A loop counter's loop, where `v` is the counter of a loop that counts up
/// by a constant step.
const Op *countingLoopOf(const Value *v) {
  const Op *owner = v->ownerBlock ? v->ownerBlock->parentOp : nullptr;
  if (!owner || owner->kind != OpKind::For || v->index != 0 || owner->operands.size() < 3)
    return nullptr;
  auto step = constantIntOf(owner->operands[2]);
  return step && *step > 0 ? owner : nullptr;
}

bool nonNegative(const Kernel &kernel, const Value *v, int depth);

/// Adds values B with v < B whatever the inputs: a loop's bound for its
/// counter, the grid's extent for a block index, x for x - c (c >= 1) and
/// for x - y (y >= 0) as x's bounds, both operands' for a min.
void addStrictUpperBounds(const Kernel &kernel, const Value *v, std::vector<const Value *> &bounds, int depth) {
  if (depth > kMaxDepth)
    return;
  if (const Op *loop = countingLoopOf(v)) {
    bounds.push_back(loop->operands[1]);
    return;
  }
  const Op *def = v->definingOp;
  if (!def)
    return;
  switch (def->kind) {
  case OpKind::BlockId: {
    if (kernel.launch.ops.empty() || kernel.launch.ops.back()->kind != OpKind::Grid)
      return;
    const Op &grid = *kernel.launch.ops.back();
    int64_t axis = def->intAttr("axis");
    if (axis >= 0 && axis < static_cast<int64_t>(grid.operands.size()))
      bounds.push_back(grid.operands[axis]);
    return;
  }
  case OpKind::Sub: {
    auto c = constantIntOf(def->operands[1]);
    if (c && *c >= 1)
      bounds.push_back(def->operands[0]);
    if ((c && *c >= 0) || nonNegative(kernel, def->operands[1], depth + 1))
      addStrictUpperBounds(kernel, def->operands[0], bounds, depth + 1);
    return;
  }
  case OpKind::Min:
    addStrictUpperBounds(kernel, def->operands[0], bounds, depth + 1);
    addStrictUpperBounds(kernel, def->operands[1], bounds, depth + 1);
    return;
  default: return;
  }
}

/// x - y >= 0 because y < B and x is B or B - 1 (a loop walked backwards:
/// cdiv(N, 64) - 1 - c for c below cdiv(N, 64)).
bool differenceNonNegative(const Kernel &kernel, const Value *x, const Value *y, int depth) {
  std::vector<const Value *> bounds;
  addStrictUpperBounds(kernel, y, bounds, depth + 1);
  const Op *xDef = x->definingOp;
  bool xIsPredecessor = xDef && xDef->kind == OpKind::Sub && constantIntOf(xDef->operands[1]) == 1;
  for (const Value *bound : bounds)
    if (sameScalar(x, bound) || (xIsPredecessor && sameScalar(xDef->operands[0], bound)))
      return true;
  return false;
}

bool nonNegative(const Kernel &kernel, const Value *v, int depth) {
  if (depth > kMaxDepth)
    return false;
  if (const Op *def = v->definingOp) {
    auto operandsNonNegative = [&](size_t first) {
      for (size_t i = first; i < def->operands.size(); ++i)
        if (!nonNegative(kernel, def->operands[i], depth + 1))
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
      return nonNegative(kernel, def->operands[0], depth + 1) || nonNegative(kernel, def->operands[1], depth + 1);
    case OpKind::Select: return operandsNonNegative(1);
    case OpKind::Sub: return differenceNonNegative(kernel, def->operands[0], def->operands[1], depth);
    default: return false;
    }
  }
  const Block *block = v->ownerBlock;
  if (!block)
    return false;
  if (!block->parentOp) // the kernel's parameters: scalars are tensor sizes
    return v->type.isScalar() && v->type.dtype == DType::I32;
  // A loop counter: from lo up by a positive step. (Other block arguments
  // carry values around the loop.)
  const Op *loop = countingLoopOf(v);
  return loop && nonNegative(kernel, loop->operands[0], depth + 1);
}

/// Whether `v` is what `dim` measures: the kernel's size parameter named
/// by the dim, or a constant equal to a static dim.
bool isExtentOf(const Dim &dim, const Value *v) {
  if (dim.isStatic()) {
    auto c = constantIntOf(v);
    return c && *c == dim.size;
  }
  return !v->definingOp && v->ownerBlock && !v->ownerBlock->parentOp && v->nameHint == dim.symbol;
}

/// Whether every i < `bound` has i * step < E for an E that `isExtent`
/// accepts: `bound` is cdiv(E, step), a min one of whose operands is such
/// a bound, or a select both of whose choices are.
template <typename ExtentTest>
bool boundsScaledIndex(const Value *bound, int64_t step, const ExtentTest &isExtent, int depth = 0) {
  const Op *def = bound->definingOp;
  if (!def || depth > kMaxDepth)
    return false;
  switch (def->kind) {
  case OpKind::CDiv: {
    auto divisor = constantIntOf(def->operands[1]);
    return divisor && *divisor == step && isExtent(def->operands[0]);
  }
  case OpKind::Min:
    return boundsScaledIndex(def->operands[0], step, isExtent, depth + 1) ||
           boundsScaledIndex(def->operands[1], step, isExtent, depth + 1);
  case OpKind::Select:
    return boundsScaledIndex(def->operands[1], step, isExtent, depth + 1) &&
           boundsScaledIndex(def->operands[2], step, isExtent, depth + 1);
  default: return false;
  }
}

/// `v` as index * step with a constant step > 0, if it is a product of that form.
std::optional<std::pair<const Value *, int64_t>> asScaledIndex(const Value *v) {
  const Op *def = v->definingOp;
  if (!def || def->kind != OpKind::Mul)
    return std::nullopt;
  for (int i = 0; i < 2; ++i)
    if (auto step = constantIntOf(def->operands[i]); step && *step > 0)
      return std::make_pair(def->operands[1 - i], *step);
  return std::nullopt;
}

/// Whether base + index * step < dim (base null: 0) because index < B for a
/// B that bounds it: B = cdiv(dim, step) without a base, cdiv(dim - base,
/// step) with one, or a constant with (B - 1) * step < dim.
bool scaledIndexInside(const Kernel &kernel, const Dim &dim, const Value *index, int64_t step, const Value *base) {
  std::vector<const Value *> bounds;
  addStrictUpperBounds(kernel, index, bounds, 0);
  auto isDimExtent = [&](const Value *v) { return isExtentOf(dim, v); };
  auto isRestOfDim = [&](const Value *v) {
    const Op *sub = v->definingOp;
    return sub && sub->kind == OpKind::Sub && isExtentOf(dim, sub->operands[0]) && sameScalar(sub->operands[1], base);
  };
  for (const Value *bound : bounds) {
    if (auto count = constantIntOf(bound); count && !base && dim.isStatic() && (*count - 1) * step < dim.size)
      return true;
    if (base ? boundsScaledIndex(bound, step, isRestOfDim) : boundsScaledIndex(bound, step, isDimExtent))
      return true;
  }
  return false;
}

} // namespace

bool provablyNonNegative(const Kernel &kernel, const Value *v) { return nonNegative(kernel, v, 0); }

bool provablyStartsInside(const Kernel &kernel, const Dim &dim, const Value *offset) {
  if (auto c = constantIntOf(offset))
    return dim.isStatic() && *c < dim.size;
  std::vector<const Value *> bounds;
  addStrictUpperBounds(kernel, offset, bounds, 0);
  if (std::any_of(bounds.begin(), bounds.end(), [&](const Value *bound) { return isExtentOf(dim, bound); }))
    return true;
  if (auto scaled = asScaledIndex(offset))
    return scaledIndexInside(kernel, dim, scaled->first, scaled->second, nullptr);
  const Op *def = offset->definingOp;
  if (!def || def->kind != OpKind::Add)
    return false;
  for (int i = 0; i < 2; ++i)
    if (auto scaled = asScaledIndex(def->operands[i]))
      if (scaledIndexInside(kernel, dim, scaled->first, scaled->second, def->operands[1 - i]))
        return true;
  return false;
}

/// offset is x * c (c a multiple of `size`) with x below a constant B such
/// that (B - 1) * c + size <= `dimSize`: a loop counter, or a block index on
/// a grid axis of constant extent, that cannot take the slice past the end.
/// (A slice past the end is legal, as padding: the grid or loop may run
/// past a static dim, and its accesses must then be tested.)
static bool scaledIndexEndsInside(const Kernel &kernel, const Value *offset, int64_t size, int64_t dimSize) {
  auto scaled = asScaledIndex(offset);
  if (!scaled || scaled->second % size != 0)
    return false;
  std::vector<const Value *> bounds;
  addStrictUpperBounds(kernel, scaled->first, bounds, 0);
  for (const Value *bound : bounds)
    if (auto count = constantIntOf(bound); count && *count >= 1 && (*count - 1) * scaled->second + size <= dimSize)
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
  // A tile-aligned offset into a dim that tiles exactly, by an index whose
  // constant bound keeps the slice inside.
  return scaledIndexEndsInside(kernel, offset, size, dim.size);
}

} // namespace tkc::passes
