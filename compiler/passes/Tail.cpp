// tail: dims that are not a multiple of the tile.
//
// A load past the end of a tensor reads zeros and a store past it writes
// nothing; the code generator needs bounds checks exactly where an access may
// run past the end, which `checked` records. The zeros (or whatever
// elementwise ops turned them into) must not reach a reduction or an mma
// contraction, so this pass tracks, for every tile, the axes that may hold
// such padding and masks them right before the consumers that would see them.
//
// Where a loop yields padding for a carried tile, the language keeps the
// tile's previous elements there (an iteration's padding never replaces what
// earlier iterations or the initial value put in the tile). The values and
// padding the loop would carry without that rule differ only at those
// elements, so the pass makes the rule explicit only for the iter args whose
// yielded padding something observes (a reduction or contraction over its
// axis, a store that writes it): a select at the yield, or, where only
// code after the loop observes padding that every iteration has in the same
// place, one select after the loop that puts back the initial value there.
#include "passes/Pass.h"
#include "passes/PassUtils.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>

namespace tkc {
namespace {

using namespace ir;
using namespace passes;

// --- checked ----------------------------------------------------------------

/// Index of the first offset operand of a global access.
unsigned firstOffsetOperand(const Op &op) {
  switch (op.kind) {
  case OpKind::Load: return 1;     // global, offsets
  case OpKind::Gather: return 1;   // global, offsets with the indices at `axis`
  case OpKind::Store: return 2;    // global, tile, offsets
  case OpKind::AsyncLoad: return 4; // buffer, stage, pred, global, offsets
  default: return 0;
  }
}

unsigned globalOperand(const Op &op) { return op.kind == OpKind::AsyncLoad ? 3 : 0; }

void setChecked(const Kernel &kernel, Op &op) {
  const Type &global = op.operands[globalOperand(op)]->type;
  std::vector<int64_t> sizes = op.listAttr("sizes");
  std::vector<int64_t> checked, checkedLow;
  // A gather's indices are tested element by element wherever they run.
  int64_t gathered = op.kind == OpKind::Gather ? op.intAttr("axis") : -1;
  for (size_t d = 0; d < global.dims.size(); ++d) {
    const Value *offset = op.operands[firstOffsetOperand(op) + d];
    if (int64_t(d) == gathered) {
      checked.push_back(0);
      checkedLow.push_back(0);
      continue;
    }
    int64_t size = d < sizes.size() ? sizes[d] : 0;
    checked.push_back(provablyInBounds(kernel, global.dims[d], size, offset) ? 0 : 1);
    checkedLow.push_back(provablyNonNegative(offset) ? 0 : 1);
  }
  op.attrs["checked"] = Attr(checked);
  // Slices that may start before the tensor: most kernels have none, and
  // their IR does not mention it.
  if (std::count(checkedLow.begin(), checkedLow.end(), 1))
    op.attrs["checked_low"] = Attr(checkedLow);
}

// --- padding analysis -------------------------------------------------------

/// One limit on the valid elements along a tile axis: either dim - offset of
/// one global dim of one load, or the limit a loop carries for one axis of
/// one of its iter args (inside the body, or after the loop). Materialised
/// only when a mask needs it.
struct BoundTerm {
  /// The program position of `load` or `loop`, compared first: sets of
  /// terms then iterate in program order, not by address, and the limits
  /// they combine into print the same on every run.
  size_t order = 0;
  Op *load = nullptr;
  unsigned globalDim = 0;
  Op *loop = nullptr;
  size_t iterArg = 0;
  int64_t axis = 0;
  bool afterLoop = false;
  auto operator<=>(const BoundTerm &) const = default;
};

/// A load dim whose padding may have reached a value.
using Origin = std::pair<Op *, unsigned>;

/// An iter arg: its loop, its index among the loop's results.
using IterArg = std::pair<const Op *, size_t>;

/// An iter arg whose yielded padding reached a value by way of the loop's
/// back edge (inside the loop) or its result (after it).
struct Carrier {
  const Op *loop = nullptr;
  size_t iterArg = 0;
  bool after = false;
  auto operator<=>(const Carrier &) const = default;
};

struct AxisPadding {
  std::set<BoundTerm> terms;   ///< the valid elements are those inside every term
  std::set<Origin> origins;    ///< where the padding comes from (for stores)
  std::set<Carrier> carriers;  ///< the iter args it went through unselected
  bool knownZero = false;      ///< the padding holds zeros, as a load leaves it
  bool operator==(const AxisPadding &) const = default;
};

/// Tile axis -> its padding; absent axes have none.
using Padding = std::map<int64_t, AxisPadding>;

const Dim &globalDimOf(const Op &access, unsigned d) { return access.operands[globalOperand(access)]->type.dims[d]; }
const Value *offsetOf(const Op &access, unsigned d) { return access.operands[firstOffsetOperand(access) + d]; }

bool mayStartBeforeTensor(const Op &load, unsigned globalDim) {
  std::vector<int64_t> checkedLow = load.listAttr("checked_low");
  return globalDim < checkedLow.size() && checkedLow[globalDim];
}

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

/// Whether the value a term stands for is defined outside `loop`, so that
/// it holds at the top of every iteration and after the loop.
bool availableOutside(const BoundTerm &term, const Op &loop) {
  if (term.load)
    return !isInside(*term.load, loop);
  if (term.afterLoop)
    return term.loop != &loop && !isInside(*term.loop, loop);
  return term.loop != &loop && !isInside(*term.loop, loop) && isInside(loop, *term.loop);
}

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

/// A load term of a load in `loop`'s body whose limit is the same in every
/// iteration: the load's offset along the dim is (the padding of a GEMM
/// step's accumulator, whose rows and columns the loop does not move).
bool loadLimitSameInEveryIteration(const BoundTerm &term, const Op &loop) {
  return term.load && term.load->parent == loop.body.get() &&
         sameInEveryIteration(offsetOf(*term.load, term.globalDim), loop);
}

/// A limit on valid indices i: i < high, and i + lowOffset >= 0 where the
/// slice may start before its tensor (null lowOffset: it does not).
struct Limits {
  Value *high = nullptr;
  Value *lowOffset = nullptr;
};

class TailRewriter {
public:
  explicit TailRewriter(Kernel &kernel) : kernel_(kernel) {}

  void run() {
    walk(kernel_.body, [&](Op &op) {
      order_.emplace(&op, order_.size());
      if (firstOffsetOperand(op) != 0)
        setChecked(kernel_, op);
    });
    // Each round keeps the elements of iter args whose padding the last one
    // found observed, which removes padding. Selects after loops come first:
    // they take the padding out of the loops' results, which may be all that
    // made other iter args' padding observed. An iter arg moves only from
    // unselected to selected after its loop to selected at its yield.
    for (;;) {
      padding_.clear();
      carried_.clear();
      do {
        grew_ = false;
        analyzeBlock(kernel_.body);
      } while (grew_);
      observed_.clear();
      findObservedReductions();
      std::set<Carrier> seen = observedCarriers();
      auto insideToo = [&](const Carrier &c) { return seen.count({.loop = c.loop, .iterArg = c.iterArg}) != 0; };
      bool changed = false;
      for (const Carrier &c : seen) {
        IterArg arg{c.loop, c.iterArg};
        if (c.after && !insideToo(c) && !selected_.count(arg) && sameEveryIteration(arg))
          changed = keptAfter_.insert(arg).second || changed;
      }
      if (changed)
        continue;
      for (const Carrier &c : seen) {
        IterArg arg{c.loop, c.iterArg};
        if (selected_.count(arg) || (keptAfter_.count(arg) && !insideToo(c)))
          continue;
        keptAfter_.erase(arg);
        selected_.insert(arg);
        changed = true;
      }
      if (!changed)
        break;
    }
    keepCarriedElements();
    maskBlock(kernel_.body);
  }

private:
  const Padding &paddingOf(const Value *v) {
    static const Padding none;
    auto it = padding_.find(v);
    return it == padding_.end() ? none : it->second;
  }

  void analyzeBlock(Block &block) {
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
  void analyzeLoop(Op &loop) {
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
  void absorb(Padding &into, int64_t axis, const AxisPadding &padding, Op &loop, size_t i) const {
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
    limit.carriers.insert(padding.carriers.begin(), padding.carriers.end());
    limit.knownZero = false;
    into[axis] = std::move(limit);
  }

  Padding transfer(const Op &op) {
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

  // --- stores that write padding ------------------------------------------

  /// Whether every padded element of the stored tile falls outside the
  /// store's tensor: its padding comes from loads of the same dims at the
  /// same offsets. Otherwise the padded elements are written, and they must
  /// hold what the language defines there.
  bool storeDropsPadding(const Op &store) {
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

  /// A reduction over elements that are all padding gives its identity
  /// (a product, its accumulator): where such results are written, the
  /// reductions they come from mask their kept axes too.
  void findObservedReductions() {
    std::vector<const Value *> work;
    walk(kernel_.body, [&](Op &op) {
      if (op.kind == OpKind::Store && !paddingOf(op.operands[1]).empty() && !storeDropsPadding(op))
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

  // --- the carried-padding rule -------------------------------------------

  /// The iter args whose yielded padding reaches a consumer that would see
  /// it: a reduction over its axis (or over any axis, where the result is
  /// written), an mma contracting it (or any of its axes, likewise), a store
  /// that writes it, or the select at another selected yield.
  std::set<Carrier> observedCarriers() {
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
  bool sameEveryIteration(const IterArg &arg) {
    const Op &loop = *arg.first;
    for (auto &[axis, padding] : paddingOf(loop.body->args[arg.second + 1].get()))
      for (const BoundTerm &term : padding.terms)
        if (!availableOutside(term, loop) && !loadLimitSameInEveryIteration(term, loop))
          return false;
    return true;
  }

  /// The limits of `padding`, as flags of `type`'s shape (one an index
  /// comparison), computed before `before` in `block`: after `afterLoop`
  /// where given, whose body's loads may give limits the same in every
  /// iteration.
  std::vector<Value *> validFlags(const Padding &padding, const Type &type, Block &block, OpIterator before,
                                  SourceLocation loc, Op *afterLoop = nullptr) {
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
  static Value *selectCarried(Block &block, OpIterator before, SourceLocation loc, const std::vector<Value *> &valid,
                              Value *value, Value *other) {
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
  void keepCarriedElements() {
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

  // --- masks ----------------------------------------------------------------

  void maskBlock(Block &block) {
    for (auto it = block.ops.begin(); it != block.ops.end(); ++it) {
      Op &op = **it;
      if (op.body)
        maskBlock(*op.body);
      if (op.kind == OpKind::Reduce)
        maskReduceInput(op);
      else if (op.kind == OpKind::Mma)
        maskContraction(op);
    }
  }

  void maskReduceInput(Op &reduce) {
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
  void maskContraction(Op &mma) {
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
  Value *maskedCastInput(Value *value, int64_t axis) {
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
  Value *masked(Op &consumer, Value *value, int64_t axis, const AxisPadding &padding, double fill) {
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
      result = builder.value(OpKind::Select, {inside, result, builder.constFloat(fill, value->type.dtype)}, value->type);
    }
    masks_[key] = result;
    return result;
  }

  /// The limits of every term of `padding`, combined right before `before`
  /// (the smallest high limit, the smallest low offset).
  Limits combine(const AxisPadding &padding, Op &before) {
    return combine(padding, *before.parent, positionOf(before), before.loc);
  }

  /// Narrows `result` to also respect `limits`: the smaller high limit and
  /// the smaller low offset.
  static void narrow(Builder &builder, Limits &result, const Limits &limits) {
    auto smaller = [&](Value *a, Value *b) {
      return a ? builder.value(OpKind::Min, {a, b}, Type::scalar(DType::I32)) : b;
    };
    result.high = smaller(result.high, limits.high);
    if (limits.lowOffset)
      result.lowOffset = smaller(result.lowOffset, limits.lowOffset);
  }

  Limits combine(const AxisPadding &padding, Block &block, OpIterator before, SourceLocation loc) {
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
  Limits combineAfter(const AxisPadding &padding, Op &loop, Block &block, OpIterator before, SourceLocation loc) {
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
  Limits limitsOf(Builder &builder, const Dim &dim, Value *offset, bool low) {
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

  Limits materialize(const BoundTerm &term) {
    if (auto it = bounds_.find(term); it != bounds_.end())
      return it->second;
    Limits result = term.load ? materializeLoad(term) : materializeCarried(term);
    bounds_[term] = result;
    return result;
  }

  /// dim - offset as an i32, computed right after the load.
  Limits materializeLoad(const BoundTerm &term) {
    Op &load = *term.load;
    const Dim &dim = globalDimOf(load, term.globalDim);
    Value *offset = load.operands[firstOffsetOperand(load) + term.globalDim];
    Builder builder(*load.parent, std::next(positionOf(load)));
    builder.setLoc(load.loc);
    return limitsOf(builder, dim, offset, mayStartBeforeTensor(load, term.globalDim));
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
  Limits materializeCarried(const BoundTerm &term) {
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
  static Value *addCarried(Op &loop, Value *init, const std::string &name, Value *&result) {
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

  Value *parameterNamed(const std::string &name) {
    for (auto &arg : kernel_.body.args)
      if (arg->nameHint == name && arg->type.isScalar())
        return arg.get();
    return nullptr;
  }

  Kernel &kernel_;
  std::map<const Op *, size_t> order_; ///< each op's position in the kernel before the pass
  std::map<const Value *, Padding> padding_;
  std::map<const Op *, std::vector<Padding>> carried_;
  bool grew_ = false;
  std::set<const Op *> observed_;
  std::set<IterArg> selected_;  ///< iter args that keep their elements where the yield is padding
  std::set<IterArg> keptAfter_; ///< iter args whose padded elements the loop's result puts back
  std::map<BoundTerm, Limits> bounds_;
  std::map<std::tuple<Value *, int64_t, double, Block *>, Value *> masks_;
};

class TailPass : public Pass {
public:
  const char *name() const override { return "tail"; }
  const char *description() const override {
    return "mark accesses that may run past a tensor's end and mask padding before reductions and mma";
  }
  bool run(Module &module, const Target &, DiagnosticEngine &) override {
    for (auto &kernel : module.kernels)
      TailRewriter(*kernel).run();
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> createTailPass() { return std::make_unique<TailPass>(); }

} // namespace tkc
