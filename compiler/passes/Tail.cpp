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
//
// The pass runs its phases over each kernel in turn (TailRewriter.h lists
// the files that hold them); this file holds their order and the pass.
#include "passes/Pass.h"
#include "passes/TailRewriter.h"

#include <set>

namespace tkc {

namespace passes::tail {

void TailRewriter::run() {
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

} // namespace passes::tail

namespace {

class TailPass : public Pass {
public:
  const char *name() const override { return "tail"; }
  const char *description() const override {
    return "mark accesses that may run past a tensor's end and mask padding before reductions and mma";
  }
  bool run(ir::Module &module, const Target &, DiagnosticEngine &) override {
    for (auto &kernel : module.kernels)
      passes::tail::TailRewriter(*kernel).run();
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> createTailPass() { return std::make_unique<TailPass>(); }

} // namespace tkc
