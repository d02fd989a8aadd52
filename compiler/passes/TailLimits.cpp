// The limits of valid elements that the tail pass's masks and selects read:
// dim - offset of a load, computed right after it, or a limit a loop
// carries as an i32 iter arg; and where such a limit holds (outside a loop,
// or the same in every iteration).
#include "passes/TailRewriter.h"

#include <algorithm>
#include <limits>

namespace tkc::passes::tail {

/// Whether the value a term stands for is defined outside `loop`, so that
/// it holds at the top of every iteration and after the loop.
bool availableOutside(const BoundTerm &term, const Op &loop) {
  if (term.reduction)
    return !isInside(*term.reduction, loop);
  if (term.load)
    return !isInside(*term.load, loop);
  if (term.afterLoop)
    return term.loop != &loop && !isInside(*term.loop, loop);
  return term.loop != &loop && !isInside(*term.loop, loop) && isInside(loop, *term.loop);
}

namespace {

/// Whether the scalar `v` has one value in every iteration of `loop`:
/// defined outside it, or computed in its body (not deeper) by side-effect
/// free scalar ops from such values (a load's `block.y * 128`, which
/// lowering recomputes in the body).
bool sameInEveryIteration(const Value *v, const Op &loop) {
  const Op *def = v->definingOp;
  if (!def) {
    const Op *owner = v->ownerBlock ? v->ownerBlock->parentOp : nullptr;
    return !owner || (owner != &loop && !isInside(*owner, loop));
  }
  if (!isInside(*def, loop))
    return true;
  if (def->parent != loop.body.get() || def->body || def->results.size() != 1 || !v->type.isScalar() ||
      hasSideEffects(*def))
    return false;
  return std::all_of(def->operands.begin(), def->operands.end(),
                     [&](const Value *operand) { return sameInEveryIteration(operand, loop); });
}

} // namespace

/// A load term of a load in `loop`'s body whose limit is the same in every
/// iteration: the load's offset along the dim is (the padding of a GEMM
/// step's accumulator, whose rows and columns the loop does not move).
bool loadLimitSameInEveryIteration(const BoundTerm &term, const Op &loop) {
  return term.load && term.load->parent == loop.body.get() &&
         sameInEveryIteration(offsetOf(*term.load, term.globalDim), loop);
}

/// The limits of every term of `padding`, combined right before `before`
/// (the smallest high limit, the smallest low offset).
Limits TailRewriter::combine(const AxisPadding &padding, Op &before) {
  return combine(padding, *before.parent, positionOf(before), before.loc);
}

/// Narrows `result` to also respect `limits`: the smaller high limit and
/// the smaller low offset.
void TailRewriter::narrow(Builder &builder, Limits &result, const Limits &limits) {
  auto smaller = [&](Value *a, Value *b) {
    return a ? builder.value(OpKind::Min, {a, b}, Type::scalar(DType::I32)) : b;
  };
  result.high = smaller(result.high, limits.high);
  if (limits.lowOffset)
    result.lowOffset = smaller(result.lowOffset, limits.lowOffset);
}

Limits TailRewriter::combine(const AxisPadding &padding, Block &block, OpIterator before, SourceLocation loc) {
  Builder builder(block, before);
  builder.setLoc(loc);
  Limits result;
  for (const BoundTerm &term : padding.terms) {
    Limits limits = materialize(term);
    if (!limits.high)
      return {};
    narrow(builder, result, limits);
  }
  return result;
}

/// As `combine`, after `loop`, for terms that hold outside it or are the
/// same in every iteration of it (a load in its body whose offset the
/// iterations share, recomputed after the loop).
Limits TailRewriter::combineAfter(const AxisPadding &padding, Op &loop, Block &block, OpIterator before,
                                  SourceLocation loc) {
  Builder builder(block, before);
  builder.setLoc(loc);
  std::map<Value *, Value *> cloned;
  Limits result;
  for (const BoundTerm &term : padding.terms) {
    Limits limits;
    if (availableOutside(term, loop)) {
      limits = materialize(term);
    } else if (loadLimitSameInEveryIteration(term, loop)) {
      Op &load = *term.load;
      Value *offset = cloneForIteration(builder, loop, load.operands[firstOffsetOperand(load) + term.globalDim],
                                        loop.operands[0], cloned);
      limits = limitsOf(builder, globalDimOf(load, term.globalDim), offset,
                        mayStartBeforeTensor(load, term.globalDim));
    }
    if (!limits.high)
      return {};
    narrow(builder, result, limits);
  }
  return result;
}

/// dim - offset, and the offset where the slice may start before the
/// tensor, computed at `builder`.
Limits TailRewriter::limitsOf(Builder &builder, const Dim &dim, Value *offset, bool low) {
  Limits result;
  if (dim.isStatic()) {
    auto constantOffset = constantIntOf(offset);
    result.high = constantOffset
                      ? builder.constInt(dim.size - *constantOffset)
                      : builder.value(OpKind::Sub, {builder.constInt(dim.size), offset}, Type::scalar(DType::I32));
  } else if (Value *extent = parameterNamed(dim.symbol)) {
    result.high = builder.value(OpKind::Sub, {extent, offset}, Type::scalar(DType::I32));
  }
  // The verifier guarantees that every dim symbol names a parameter, so a
  // null high limit is not expected.
  if (low)
    result.lowOffset = offset;
  return result;
}

Limits TailRewriter::materialize(const BoundTerm &term) {
  if (auto it = bounds_.find(term); it != bounds_.end())
    return it->second;
  Limits result = term.load        ? materializeLoad(term)
                  : term.reduction ? materializeNonEmpty(term)
                                   : materializeCarried(term);
  bounds_[term] = result;
  return result;
}

/// dim - offset as an i32, computed right after the load.
Limits TailRewriter::materializeLoad(const BoundTerm &term) {
  Op &load = *term.load;
  const Dim &dim = globalDimOf(load, term.globalDim);
  Value *offset = load.operands[firstOffsetOperand(load) + term.globalDim];
  Builder builder(*load.parent, std::next(positionOf(load)));
  builder.setLoc(load.loc);
  return limitsOf(builder, dim, offset, mayStartBeforeTensor(load, term.globalDim));
}

/// The extent of the limited axis where the reduced axis holds a valid
/// element, else 0, computed right before the reduction: with the reduced
/// axis's limits high and (maybe) low offset over its extent E, the count
/// of valid elements min(E, high) + min(0, low offset), clamped to 0 or 1
/// and scaled.
Limits TailRewriter::materializeNonEmpty(const BoundTerm &term) {
  Op &reduction = *term.reduction;
  const Padding &input = paddingOf(term.reducedInput);
  auto it = input.find(term.reducedAxis);
  if (it == input.end())
    return {};
  Limits reduced = combine(it->second, reduction);
  if (!reduced.high)
    return {};
  Builder builder(*reduction.parent, positionOf(reduction));
  builder.setLoc(reduction.loc);
  Type i32 = Type::scalar(DType::I32);
  int64_t reducedExtent = term.reducedInput->type.shape[term.reducedAxis];
  Value *count = builder.value(OpKind::Min, {builder.constInt(reducedExtent), reduced.high}, i32);
  if (reduced.lowOffset)
    count = builder.value(OpKind::Add, {count, builder.value(OpKind::Min, {builder.constInt(0), reduced.lowOffset}, i32)},
                          i32);
  Value *any = builder.value(OpKind::Min, {builder.value(OpKind::Max, {count, builder.constInt(0)}, i32),
                                           builder.constInt(1)},
                             i32);
  return {.high = builder.value(OpKind::Mul, {any, builder.constInt(term.extent)}, i32), .lowOffset = nullptr};
}

/// The limits a loop carries for one axis of one iter arg: i32 iter args
/// that start with the initial value's limits (or ones that exclude
/// nothing) and take the yielded value's limits at each yield. Returns
/// the body's arguments or the loop's results, as the term asks.
///
/// Since carried tiles keep their elements where a yield is padding, the
/// rounds in `run` select away every carried padding that a mask or a
/// select would read, and no test reaches this; it stays as the lowering
/// of such a limit should a consumer the rounds do not count read one.
Limits TailRewriter::materializeCarried(const BoundTerm &term) {
  Op &loop = *term.loop;
  Block &body = *loop.body;
  constexpr unsigned kFirstInit = 3;
  const Padding &init = paddingOf(loop.operands[kFirstInit + term.iterArg]);
  auto initIt = init.find(term.axis);
  Op &yield = *body.ops.back();
  const Padding &yieldedPadding = paddingOf(yield.operands[term.iterArg]);
  auto yieldedIt = yieldedPadding.find(term.axis);
  AxisPadding yielded = yieldedIt == yieldedPadding.end() ? AxisPadding{} : yieldedIt->second;
  bool low = std::any_of(yielded.origins.begin(), yielded.origins.end(),
                         [](const Origin &o) { return mayStartBeforeTensor(*o.first, o.second); });
  if (initIt != init.end())
    low = low || std::any_of(initIt->second.origins.begin(), initIt->second.origins.end(),
                             [](const Origin &o) { return mayStartBeforeTensor(*o.first, o.second); });

  Limits initial;
  if (initIt != init.end())
    initial = combine(initIt->second, loop);
  Builder before(*loop.parent, positionOf(loop));
  before.setLoc(loop.loc);
  if (!initial.high)
    initial.high = before.constInt(std::numeric_limits<int32_t>::max());
  if (low && !initial.lowOffset)
    initial.lowOffset = before.constInt(0);

  std::string name = loop.result(term.iterArg)->nameHint;
  if (name.empty())
    name = body.args[term.iterArg + 1]->nameHint;
  BoundTerm inside = term, after = term;
  inside.afterLoop = false;
  after.afterLoop = true;
  Limits args, results;
  // Each new iter arg gets its yield operand now (the initial value stands
  // in until the yielded limit is known): combining the yielded limits may
  // carry other limits through this loop first, whose iter args and yield
  // operands must not be interleaved with these.
  args.high = addCarried(loop, initial.high, name + "_limit", results.high);
  size_t highAt = yield.operands.size();
  yield.operands.push_back(initial.high);
  size_t lowAt = 0;
  if (low) {
    args.lowOffset = addCarried(loop, initial.lowOffset, name + "_start", results.lowOffset);
    lowAt = yield.operands.size();
    yield.operands.push_back(initial.lowOffset);
  }
  bounds_[inside] = args;
  bounds_[after] = results;

  // A yielded value without padding along the axis excludes nothing.
  Limits next = combine(yielded, yield);
  Builder atYield(body, positionOf(yield));
  atYield.setLoc(yield.loc);
  yield.operands[highAt] = next.high ? next.high : atYield.constInt(std::numeric_limits<int32_t>::max());
  if (low)
    yield.operands[lowAt] = next.lowOffset ? next.lowOffset : atYield.constInt(0);
  return term.afterLoop ? results : args;
}

/// Appends an i32 iter arg to `loop`; returns its body argument and sets
/// `result` to the loop's result.
Value *TailRewriter::addCarried(Op &loop, Value *init, const std::string &name, Value *&result) {
  Value *arg = loop.body->addArg(Type::scalar(DType::I32), name);
  loop.operands.push_back(init);
  auto value = std::make_unique<Value>();
  value->type = Type::scalar(DType::I32);
  value->nameHint = name;
  value->definingOp = &loop;
  value->index = static_cast<unsigned>(loop.results.size());
  result = value.get();
  loop.results.push_back(std::move(value));
  return arg;
}

Value *TailRewriter::parameterNamed(const std::string &name) {
  for (auto &arg : kernel_.body.args)
    if (arg->nameHint == name && arg->type.isScalar())
      return arg.get();
  return nullptr;
}

} // namespace tkc::passes::tail
