// The masks of the tail pass: padding replaced by each consumer's identity
// (zero, -inf, inf) right before the reductions and mma contractions that
// would see it, one mask per value, axis and block; and padded indices of a
// gather replaced by -1, which reads as 0.
#include "passes/TailRewriter.h"

#include <limits>

namespace tkc::passes::tail {

void TailRewriter::maskBlock(Block &block) {
  for (auto it = block.ops.begin(); it != block.ops.end(); ++it) {
    Op &op = **it;
    if (op.body)
      maskBlock(*op.body);
    if (op.kind == OpKind::Reduce)
      maskReduceInput(op);
    else if (op.kind == OpKind::Mma)
      maskContraction(op);
    else if (op.kind == OpKind::Gather)
      maskGatherIndices(op);
  }
}

/// An element of a gather is padding where its index is, and padding reads
/// as 0 wherever it is written; but the index's own padding holds 0, a
/// valid index, so the gather would read the indexed dimension's first
/// element there. Padded indices become -1 instead, which reads as 0 (an
/// index outside the dimension), unless the gather's own slice ends where
/// the indices do (`X[r +: 4, t]` with `t = load(T[r +: 4])`, T's and X's
/// rows the same dim): those elements read as 0 already.
void TailRewriter::maskGatherIndices(Op &gather) {
  int64_t axis = gather.intAttr("axis");
  Value *indices = gather.operands[1 + axis];
  Padding padding = paddingOf(indices);
  auto it = padding.find(0);
  if (it == padding.end() || sliceEndsWithIndices(gather, it->second))
    return;
  Value *result = masked(gather, indices, 0, it->second, -1.0);
  padding_[result] = padding;
  gather.operands[1 + axis] = result;
}

/// Whether a checked slice of `gather` ends at every limit of the padding of
/// its indices: the same dim of the same extent at the same offset as each
/// load it comes from.
bool TailRewriter::sliceEndsWithIndices(const Op &gather, const AxisPadding &indexPadding) const {
  if (indexPadding.beyondOrigins)
    return false;
  std::vector<int64_t> sizes = gather.listAttr("sizes"), checked = gather.listAttr("checked");
  int64_t axis = gather.intAttr("axis");
  for (auto [load, globalDim] : indexPadding.origins) {
    bool covered = false;
    for (unsigned d = 0; d < sizes.size() && !covered; ++d)
      covered = int64_t(d) != axis && sizes[d] != 0 && d < checked.size() && checked[d] &&
                globalDimOf(gather, d) == globalDimOf(*load, globalDim) &&
                sameScalar(offsetOf(gather, d), offsetOf(*load, globalDim));
    if (!covered)
      return false;
  }
  return true;
}

void TailRewriter::maskReduceInput(Op &reduce) {
  int64_t axis = reduce.intAttr("axis");
  std::string kind = reduce.strAttr("kind");
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double fill = kind == "max" ? -kInf : kind == "min" ? kInf : 0.0;
  Padding input = paddingOf(reduce.operands[0]);
  std::vector<int64_t> axes = {axis};
  if (observed_.count(&reduce) && reduce.operands[0]->type.shape.size() == 2)
    axes.push_back(1 - axis);
  for (int64_t a : axes) {
    auto it = input.find(a);
    if (it == input.end())
      continue;
    if (kind == "sum" && it->second.knownZero)
      continue; // zeros do not change a sum
    reduce.operands[0] = masked(reduce, reduce.operands[0], a, it->second, fill);
  }
}

/// Padding along K is multiplied into every product, so any that is not
/// known to be zero is replaced by zeros; so are padded rows of a and
/// columns of b where the product's padding is written.
void TailRewriter::maskContraction(Op &mma) {
  bool transA = mma.intAttr("trans_a"), transB = mma.intAttr("trans_b");
  int64_t aAxisK = transA ? 0 : 1, bAxisK = transB ? 1 : 0;
  std::vector<std::pair<unsigned, int64_t>> axes = {{0, aAxisK}, {1, bAxisK}};
  if (observed_.count(&mma)) {
    axes.push_back({0, 1 - aAxisK});
    axes.push_back({1, 1 - bAxisK});
  }
  for (auto [operand, axis] : axes) {
    Padding padding = paddingOf(mma.operands[operand]);
    auto it = padding.find(axis);
    if (it == padding.end() || it->second.knownZero)
      continue;
    // A cast used only here whose input is already masked the same way
    // before it (attention's probabilities, summed and then multiplied)
    // reads that mask instead (a zero casts to zero): one mask, not two.
    Value *value = mma.operands[operand];
    if (Value *input = maskedCastInput(value, axis)) {
      value->definingOp->operands[0] = input;
      padding_[value] = padding;
      continue;
    }
    Value *result = masked(mma, value, axis, it->second, 0.0);
    padding_[result] = padding;
    mma.operands[operand] = result;
  }
}

/// The existing zero mask along `axis` of the input of the single-use
/// cast `value`, where it comes before the cast; null otherwise.
Value *TailRewriter::maskedCastInput(Value *value, int64_t axis) {
  Op *cast = value->definingOp;
  if (!cast || cast->kind != OpKind::Cast || countUses(*cast->parent)[value] != 1)
    return nullptr;
  auto it = masks_.find(std::make_tuple(cast->operands[0], axis, 0.0, cast->parent));
  if (it == masks_.end())
    return nullptr;
  for (auto &op : cast->parent->ops) {
    if (op.get() == cast)
      return nullptr;
    if (op.get() == it->second->definingOp)
      return it->second;
  }
  return nullptr;
}

/// `value` masked along `axis`, created right before `consumer` unless the
/// same mask already exists in that block: past the tensor's end and,
/// where the slice may start before the tensor, before its start.
Value *TailRewriter::masked(Op &consumer, Value *value, int64_t axis, const AxisPadding &padding, double fill) {
  auto key = std::make_tuple(value, axis, fill, consumer.parent);
  if (auto it = masks_.find(key); it != masks_.end())
    return it->second;
  Limits limits = combine(padding, consumer);
  if (!limits.high)
    return value;
  Builder builder(*consumer.parent, positionOf(consumer));
  builder.setLoc(consumer.loc);
  Value *result =
      builder.value(OpKind::Mask, {value, limits.high}, value->type, {{"axis", Attr(axis)}, {"fill", Attr(fill)}});
  if (limits.lowOffset) {
    // Rare enough that plain elementwise ops do: index + offset >= 0.
    Value *index = builder.value(OpKind::Iota, {}, value->type.withDType(DType::I32), {{"axis", Attr(axis)}});
    Value *position = builder.value(OpKind::Add, {index, limits.lowOffset}, index->type);
    Value *inside = builder.value(OpKind::Ge, {position, builder.constInt(0)}, index->type.withDType(DType::I1));
    Value *outside = isFloat(value->type.dtype) ? builder.constFloat(fill, value->type.dtype)
                                                : builder.constInt(int64_t(fill)); // a gather's indices
    result = builder.value(OpKind::Select, {inside, result, outside}, value->type);
  }
  masks_[key] = result;
  return result;
}

} // namespace tkc::passes::tail
