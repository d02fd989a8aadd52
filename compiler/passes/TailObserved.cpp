// Which padding the tail pass must hide because something observes it: stores
// that write padded elements, the reductions and products whose results
// those stores write, and the iter args whose yielded padding reaches such
// a consumer (the carried-padding rule then applies to them).
#include "passes/TailRewriter.h"

#include <algorithm>

namespace tkc::passes::tail {

/// Whether every padded element of the stored tile that comes from a load
/// falls outside the store's tensor: that padding comes from loads of the
/// same dims at the same offsets. Otherwise the padded elements are
/// written, and they must hold what the language defines there (a
/// reduction's identity, which the reductions they come from give where
/// they mask their kept axes too).
bool TailRewriter::storeDropsLoadPadding(const Op &store) {
  std::vector<int64_t> sizes = store.listAttr("sizes");
  const Padding &padding = paddingOf(store.operands[1]);
  int64_t tileAxis = 0;
  for (unsigned d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0)
      continue;
    if (auto it = padding.find(tileAxis); it != padding.end())
      for (auto [load, globalDim] : it->second.origins)
        if (!(globalDimOf(*load, globalDim) == globalDimOf(store, d)) ||
            !sameScalar(offsetOf(*load, globalDim), offsetOf(store, d)))
          return false;
    ++tileAxis;
  }
  return true;
}

/// Whether the store writes no padded element at all: also none of the
/// results of reducing only padding, which lie inside the tensor. (Those
/// hold the reduction's identity already; what the carried-padding rule
/// keeps there is what a store would show.)
bool TailRewriter::storeDropsPadding(const Op &store) {
  const Padding &padding = paddingOf(store.operands[1]);
  return storeDropsLoadPadding(store) &&
         std::none_of(padding.begin(), padding.end(), [](const auto &entry) { return entry.second.beyondOrigins; });
}

/// A reduction over elements that are all padding gives its identity
/// (a product, its accumulator): where such results are written, the
/// reductions they come from mask their kept axes too.
void TailRewriter::findObservedReductions() {
  std::vector<const Value *> work;
  walk(kernel_.body, [&](Op &op) {
    if (op.kind == OpKind::Store && !paddingOf(op.operands[1]).empty() && !storeDropsLoadPadding(op))
      work.push_back(op.operands[1]);
  });
  std::set<const Value *> seen;
  while (!work.empty()) {
    const Value *v = work.back();
    work.pop_back();
    if (!v->type.isTile() || !seen.insert(v).second)
      continue;
    if (Block *owner = v->ownerBlock) {
      // An iter arg: its initial value and what the body yields.
      if (Op *loop = owner->parentOp; loop && loop->kind == OpKind::For && v->index > 0) {
        work.push_back(loop->operands[3 + v->index - 1]);
        work.push_back(owner->ops.back()->operands[v->index - 1]);
      }
      continue;
    }
    Op *def = v->definingOp;
    if (!def)
      continue;
    if (def->kind == OpKind::For) {
      work.push_back(def->operands[3 + v->index]);
      work.push_back(def->body->ops.back()->operands[v->index]);
    } else if (def->kind == OpKind::Reduce) {
      observed_.insert(def);
    } else if (def->kind == OpKind::Mma) {
      observed_.insert(def);
      work.push_back(def->operands[2]);
    } else if (def->kind != OpKind::Load) {
      for (const Value *operand : def->operands)
        work.push_back(operand);
    }
  }
}

/// The iter args whose yielded padding reaches a consumer that would see
/// it: a reduction over its axis (or over any axis, where the result is
/// written), an mma contracting it (or any of its axes, likewise), a store
/// that writes it, or the select at another selected yield.
std::set<Carrier> TailRewriter::observedCarriers() {
  std::set<Carrier> seen;
  auto note = [&](const Padding &padding, int64_t axis) {
    if (auto it = padding.find(axis); it != padding.end())
      seen.insert(it->second.carriers.begin(), it->second.carriers.end());
  };
  auto noteAll = [&](const Padding &padding) {
    for (auto &entry : padding)
      note(padding, entry.first);
  };
  walk(kernel_.body, [&](Op &op) {
    if (op.kind == OpKind::Reduce) {
      const Padding &input = paddingOf(op.operands[0]);
      note(input, op.intAttr("axis"));
      if (observed_.count(&op))
        noteAll(input);
    } else if (op.kind == OpKind::Mma) {
      const Padding &a = paddingOf(op.operands[0]), &b = paddingOf(op.operands[1]);
      note(a, op.intAttr("trans_a") ? 0 : 1);
      note(b, op.intAttr("trans_b") ? 1 : 0);
      if (observed_.count(&op)) {
        noteAll(a);
        noteAll(b);
      }
    } else if (op.kind == OpKind::Store) {
      if (!paddingOf(op.operands[1]).empty() && !storeDropsPadding(op))
        noteAll(paddingOf(op.operands[1]));
    } else if (op.kind == OpKind::For) {
      // The selects read the limits of the padding they keep out, which
      // other iter args may have carried (this one's own is the point).
      const Op &yield = *op.body->ops.back();
      for (size_t i = 0; i < op.results.size(); ++i) {
        std::set<Carrier> before = seen;
        if (selected_.count({&op, i}))
          noteAll(paddingOf(yield.operands[i]));
        if (keptAfter_.count({&op, i}))
          noteAll(paddingOf(op.body->args[i + 1].get()));
        for (bool after : {false, true})
          if (!before.count({.loop = &op, .iterArg = i, .after = after}))
            seen.erase({.loop = &op, .iterArg = i, .after = after});
      }
    }
  });
  return seen;
}

/// Whether the padding an iter arg carries has the same limits in every
/// iteration (none is a limit the loop itself carries): the iterations
/// then all yield padding at the same elements, which keep the initial
/// value throughout.
bool TailRewriter::sameEveryIteration(const IterArg &arg) {
  const Op &loop = *arg.first;
  for (auto &[axis, padding] : paddingOf(loop.body->args[arg.second + 1].get()))
    for (const BoundTerm &term : padding.terms)
      if (!availableOutside(term, loop) && !loadLimitSameInEveryIteration(term, loop))
        return false;
  return true;
}

} // namespace tkc::passes::tail
