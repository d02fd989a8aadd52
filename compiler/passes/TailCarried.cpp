// The carried-padding rule of the tail pass made explicit: a loop-carried tile
// keeps its elements where an iteration yields padding, by a select at the
// yield or, where every iteration's padding is in the same place, one select
// after the loop that puts back the initial value.
#include "passes/TailRewriter.h"

#include <algorithm>

namespace tkc::passes::tail {

/// The limits of `padding`, as flags of `type`'s shape (one an index
/// comparison), computed before `before` in `block`: after `afterLoop`
/// where given, whose body's loads may give limits the same in every
/// iteration.
std::vector<Value *> TailRewriter::validFlags(const Padding &padding, const Type &type, Block &block, OpIterator before,
                                              SourceLocation loc, Op *afterLoop) {
  Type indexType = type.withDType(DType::I32), flagType = type.withDType(DType::I1);
  std::vector<Value *> valid;
  for (auto &[axis, axisPadding] : padding) {
    Limits limits = afterLoop ? combineAfter(axisPadding, *afterLoop, block, before, loc)
                              : combine(axisPadding, block, before, loc);
    if (!limits.high)
      continue;
    Builder builder(block, before);
    builder.setLoc(loc);
    Value *index = builder.value(OpKind::Iota, {}, indexType, {{"axis", Attr(axis)}});
    valid.push_back(builder.value(OpKind::Lt, {index, limits.high}, flagType));
    if (limits.lowOffset) {
      Value *position = builder.value(OpKind::Add, {index, limits.lowOffset}, indexType);
      valid.push_back(builder.value(OpKind::Ge, {position, builder.constInt(0)}, flagType));
    }
  }
  return valid;
}

/// `value` where every flag holds, else `other`: one select a flag.
Value *TailRewriter::selectCarried(Block &block, OpIterator before, SourceLocation loc,
                                   const std::vector<Value *> &valid, Value *value, Value *other) {
  Builder builder(block, before);
  builder.setLoc(loc);
  for (Value *flag : valid)
    value = builder.value(OpKind::Select, {flag, value, other}, value->type, {{"carried", Attr(int64_t(1))}});
  return value;
}

/// At the yield of each selected iter arg: the yielded value where it is
/// not padding, else the iter arg's element, as the language defines. One
/// select a limit, each on one index comparison, so that the code
/// generator can test the whole tile once (an interior step copies); the
/// comparisons all come first, before the code generator's branch.
void TailRewriter::keepCarriedElements() {
  auto inProgramOrder = [&](const std::set<IterArg> &args) {
    std::vector<IterArg> ordered(args.begin(), args.end());
    std::sort(ordered.begin(), ordered.end(), [&](const IterArg &a, const IterArg &b) {
      return std::make_pair(order_.at(a.first), a.second) < std::make_pair(order_.at(b.first), b.second);
    });
    return ordered;
  };
  for (auto [constLoop, i] : inProgramOrder(selected_)) {
    Op &loop = const_cast<Op &>(*constLoop);
    Op &yield = *loop.body->ops.back();
    Value *yielded = yield.operands[i], *previous = loop.body->args[i + 1].get();
    if (!yielded->type.isTile())
      continue;
    std::vector<Value *> valid = validFlags(paddingOf(yielded), yielded->type, *loop.body, positionOf(yield), yield.loc);
    Value *kept = selectCarried(*loop.body, positionOf(yield), yield.loc, valid, yielded, previous);
    padding_[kept] = paddingOf(previous);
    yield.operands[i] = kept;
  }
  // After the loop: the initial value where every iteration yielded
  // padding, the loop's result elsewhere.
  for (auto [constLoop, i] : inProgramOrder(keptAfter_)) {
    Op &loop = const_cast<Op &>(*constLoop);
    Value *result = loop.result(i), *init = loop.operands[3 + i];
    if (!result->type.isTile())
      continue;
    Block &block = *loop.parent;
    OpIterator after = std::next(positionOf(loop));
    std::vector<Value *> valid =
        validFlags(paddingOf(loop.body->args[i + 1].get()), result->type, block, after, loop.loc, &loop);
    if (valid.empty())
      continue;
    Value *kept = selectCarried(block, after, loop.loc, valid, result, init);
    // Every later use reads the kept value; the first select still reads
    // the loop's result.
    Value *firstSelect = kept;
    while (firstSelect->definingOp->operands[1] != result)
      firstSelect = firstSelect->definingOp->operands[1];
    replaceAllUsesIn(block, result, kept);
    firstSelect->definingOp->operands[1] = result;
    padding_[kept] = paddingOf(init);
  }
}

} // namespace tkc::passes::tail
