// The padding analysis of the tail pass: for every value, the tile axes that
// may hold padding, the limits of its valid elements, the loads it comes
// from and the iter args it went through. Loops iterate to a fixed point
// (TailRewriter::run repeats the analysis while a loop's carried padding
// grows).
#include "passes/TailRewriter.h"

#include <algorithm>

namespace tkc::passes::tail {

namespace {

/// Two load terms that give the same limit: one is enough.
bool sameLimit(const BoundTerm &a, const BoundTerm &b) {
  if (!a.load || !b.load)
    return a == b;
  return globalDimOf(*a.load, a.globalDim) == globalDimOf(*b.load, b.globalDim) &&
         mayStartBeforeTensor(*a.load, a.globalDim) == mayStartBeforeTensor(*b.load, b.globalDim) &&
         sameScalar(offsetOf(*a.load, a.globalDim), offsetOf(*b.load, b.globalDim));
}

void addTerm(AxisPadding &into, const BoundTerm &term) {
  for (const BoundTerm &existing : into.terms)
    if (sameLimit(existing, term))
      return;
  into.terms.insert(term);
}

/// Adds `from`'s axes to `into`: an element is padding if it is in either,
/// so the valid elements are inside the limits of both; padding is zero
/// only if both are.
void unite(Padding &into, const Padding &from) {
  for (auto &[axis, padding] : from) {
    auto [it, inserted] = into.emplace(axis, padding);
    if (inserted)
      continue;
    for (const BoundTerm &term : padding.terms)
      addTerm(it->second, term);
    it->second.origins.insert(padding.origins.begin(), padding.origins.end());
    it->second.beyondOrigins = it->second.beyondOrigins || padding.beyondOrigins;
    it->second.carriers.insert(padding.carriers.begin(), padding.carriers.end());
    it->second.knownZero = it->second.knownZero && padding.knownZero;
  }
}

Padding withoutZeroKnowledge(Padding padding) {
  for (auto &entry : padding)
    entry.second.knownZero = false;
  return padding;
}

AxisPadding withoutZeroKnowledge(AxisPadding padding) {
  padding.knownZero = false;
  return padding;
}

bool isElementwise(OpKind kind) {
  return (kind >= OpKind::Add && kind <= OpKind::Silu) || kind == OpKind::Cast;
}

} // namespace

const Padding &TailRewriter::paddingOf(const Value *v) {
  static const Padding none;
  auto it = padding_.find(v);
  return it == padding_.end() ? none : it->second;
}

void TailRewriter::analyzeBlock(Block &block) {
  for (auto &op : block.ops) {
    if (op->kind == OpKind::For)
      analyzeLoop(*op);
    else if (op->results.size() == 1)
      padding_[op->result()] = transfer(*op);
  }
}

/// Iter args carry the union of their initial and yielded padding, kept
/// from one analysis of the kernel to the next (which `run` repeats until
/// no loop's grows: once per round, not once per round of every enclosing
/// loop, so deep nests stay linear). Where the yielded padding is limited
/// by a value computed in the body, the loop carries the limit itself (an
/// i32 iter arg, added only when a mask needs it).
void TailRewriter::analyzeLoop(Op &loop) {
  constexpr unsigned kFirstInit = 3; // operands: lo, hi, step, inits...
  Block &body = *loop.body;
  std::vector<Padding> &carried = carried_[&loop];
  carried.resize(loop.results.size());
  for (size_t i = 0; i < carried.size(); ++i) {
    Padding entry = carried[i];
    for (auto &[axis, padding] : paddingOf(loop.operands[kFirstInit + i]))
      absorb(entry, axis, padding, loop, i);
    padding_[body.args[i + 1].get()] = std::move(entry);
  }
  analyzeBlock(body);
  const Op &yield = *body.ops.back();
  for (size_t i = 0; i < carried.size(); ++i) {
    Padding next = paddingOf(body.args[i + 1].get());
    // A selected iter arg keeps its elements where the yield is padding:
    // it carries only the padding it started with.
    if (!selected_.count({&loop, i}))
      for (auto &[axis, padding] : paddingOf(yield.operands[i])) {
        AxisPadding tagged = padding;
        tagged.carriers.insert({.loop = &loop, .iterArg = i});
        absorb(next, axis, tagged, loop, i);
      }
    if (next != carried[i]) {
      grew_ = true;
      carried[i] = next;
    }
    for (auto &[axis, padding] : next) {
      if (padding.terms.size() == 1 && padding.terms.begin()->loop == &loop)
        padding.terms = {
            BoundTerm{.order = order_.at(&loop), .loop = &loop, .iterArg = i, .axis = axis, .afterLoop = true}};
      if (padding.carriers.erase({.loop = &loop, .iterArg = i}))
        padding.carriers.insert({.loop = &loop, .iterArg = i, .after = true});
    }
    // The select after the loop leaves the initial value's padding.
    if (keptAfter_.count({&loop, i}))
      next = paddingOf(loop.operands[kFirstInit + i]);
    padding_[loop.result(i)] = std::move(next);
  }
}

/// Adds padding that reaches iter arg `i` along `axis` to what the loop
/// carries there: its terms where they hold throughout the loop, else the
/// loop's own carried limit (which covers both the initial and the yielded
/// values).
void TailRewriter::absorb(Padding &into, int64_t axis, const AxisPadding &padding, Op &loop, size_t i) const {
  auto it = into.find(axis);
  bool alreadyCarried =
      it != into.end() && it->second.terms.size() == 1 && it->second.terms.begin()->loop == &loop;
  bool invariant = std::all_of(padding.terms.begin(), padding.terms.end(), [&](const BoundTerm &term) {
    return availableOutside(term, loop) || loadLimitSameInEveryIteration(term, loop);
  });
  if (invariant && !alreadyCarried) {
    unite(into, {{axis, padding}});
    return;
  }
  AxisPadding limit = it == into.end() ? AxisPadding{} : it->second;
  limit.terms = {BoundTerm{.order = order_.at(&loop), .loop = &loop, .iterArg = i, .axis = axis}};
  limit.origins.insert(padding.origins.begin(), padding.origins.end());
  limit.beyondOrigins = limit.beyondOrigins || padding.beyondOrigins;
  limit.carriers.insert(padding.carriers.begin(), padding.carriers.end());
  limit.knownZero = false;
  into[axis] = std::move(limit);
}

/// Whether the axis `padding` describes provably holds a valid element in
/// every run: its limits are all loads' ends, of slices that cannot start
/// before their tensors and provably start before their ends (a GEMM's
/// step of K, a row-batched loop's rows).
bool TailRewriter::provablyNonEmpty(const AxisPadding &padding) const {
  return std::all_of(padding.terms.begin(), padding.terms.end(), [&](const BoundTerm &term) {
    return term.load && !mayStartBeforeTensor(*term.load, term.globalDim) &&
           provablyStartsInside(kernel_, globalDimOf(*term.load, term.globalDim), offsetOf(*term.load, term.globalDim));
  });
}

/// Where the axis that `reduction` reduces of `input` may hold padding only,
/// the result's elements are all padding: a term on `resultAxis` that is
/// everything or nothing, unless the axis provably holds a valid element.
void TailRewriter::addEmptyAxisTerm(Padding &result, int64_t resultAxis, const Op &reduction, const Value *input,
                                    int64_t reducedAxis) {
  const Padding &padding = paddingOf(input);
  auto it = padding.find(reducedAxis);
  if (it == padding.end() || provablyNonEmpty(it->second))
    return;
  Op *op = const_cast<Op *>(&reduction);
  BoundTerm term{.order = order_.at(op),
                 .reduction = op,
                 .reducedInput = input,
                 .reducedAxis = reducedAxis,
                 .extent = reduction.result()->type.shape[resultAxis]};
  AxisPadding &into = result[resultAxis];
  addTerm(into, term);
  into.carriers.insert(it->second.carriers.begin(), it->second.carriers.end());
  into.knownZero = false;
  into.beyondOrigins = true;
}

Padding TailRewriter::transfer(const Op &op) {
  switch (op.kind) {
  case OpKind::Load: {
    Padding result;
    std::vector<int64_t> sizes = op.listAttr("sizes"), checked = op.listAttr("checked"),
                         checkedLow = op.listAttr("checked_low");
    int64_t tileAxis = 0;
    for (unsigned d = 0; d < sizes.size(); ++d) {
      if (sizes[d] == 0)
        continue; // a dropped dim has no tile axis
      if ((d < checked.size() && checked[d]) || (d < checkedLow.size() && checkedLow[d])) {
        Op *load = const_cast<Op *>(&op);
        result[tileAxis] = {.terms = {BoundTerm{.order = order_.at(load), .load = load, .globalDim = d}},
                            .origins = {{load, d}},
                            .carriers = {},
                            .knownZero = true};
      }
      ++tileAxis;
    }
    return result;
  }
  case OpKind::Gather: {
    // Padding where the sliced dim runs past the tensor (zeros, as a load
    // leaves them) or where the indices are padding (whatever they read).
    Padding result = withoutZeroKnowledge(paddingOf(op.operands[1 + op.intAttr("axis")]));
    std::vector<int64_t> sizes = op.listAttr("sizes"), checked = op.listAttr("checked"),
                         checkedLow = op.listAttr("checked_low");
    for (unsigned d = 0; d < sizes.size(); ++d) {
      if (sizes[d] == 0 || !((d < checked.size() && checked[d]) || (d < checkedLow.size() && checkedLow[d])))
        continue;
      Op *gather = const_cast<Op *>(&op);
      AxisPadding sliced{.terms = {BoundTerm{.order = order_.at(gather), .load = gather, .globalDim = d}},
                         .origins = {{gather, d}},
                         .carriers = {},
                         .knownZero = true};
      unite(result, {{0, sliced}});
    }
    return result;
  }
  case OpKind::Convert:
  case OpKind::Cast: return paddingOf(op.operands[0]);
  case OpKind::Mask: {
    Padding result = paddingOf(op.operands[0]);
    result.erase(op.intAttr("axis"));
    return result;
  }
  case OpKind::Broadcast: {
    // The vector's axis becomes the tile axis other than the new one.
    Padding result;
    if (auto it = paddingOf(op.operands[0]).find(0); it != paddingOf(op.operands[0]).end())
      result[1 - op.intAttr("axis")] = withoutZeroKnowledge(it->second);
    return result;
  }
  case OpKind::Reduce: {
    Padding result;
    const Padding &input = paddingOf(op.operands[0]);
    // Shared partial results of a column reduction keep the columns as
    // their second axis (their rows are warp rows, never padding).
    size_t kept = op.result()->type.shape.size() == 2 ? 1 : 0;
    if (auto it = input.find(1 - op.intAttr("axis")); it != input.end())
      result[kept] = withoutZeroKnowledge(it->second);
    addEmptyAxisTerm(result, kept, op, op.operands[0], op.intAttr("axis"));
    return result;
  }
  case OpKind::Mma: {
    // Rows come from a's M axis, columns from b's N axis, and c adds in
    // elementwise.
    Padding result;
    const Padding &a = paddingOf(op.operands[0]), &b = paddingOf(op.operands[1]);
    if (auto it = a.find(op.intAttr("trans_a") ? 1 : 0); it != a.end())
      result[0] = withoutZeroKnowledge(it->second);
    if (auto it = b.find(op.intAttr("trans_b") ? 0 : 1); it != b.end())
      result[1] = withoutZeroKnowledge(it->second);
    addEmptyAxisTerm(result, 0, op, op.operands[0], op.intAttr("trans_a") ? 0 : 1);
    addEmptyAxisTerm(result, 1, op, op.operands[1], op.intAttr("trans_b") ? 1 : 0);
    unite(result, withoutZeroKnowledge(paddingOf(op.operands[2])));
    return result;
  }
  default:
    break;
  }
  if (!isElementwise(op.kind))
    return {};
  Padding result;
  for (const Value *operand : op.operands)
    if (operand->type.isTile())
      unite(result, paddingOf(operand));
  return withoutZeroKnowledge(std::move(result));
}

} // namespace tkc::passes::tail
