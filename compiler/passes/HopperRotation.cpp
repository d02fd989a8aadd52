// hopper-pipeline's rotation of the deferred product and the consumer
// warpgroups' turns (see HopperRotation.h).
#include "passes/HopperRotation.h"
#include "passes/PassUtils.h"

#include <algorithm>
#include <map>

namespace tkc::passes {

using namespace ir;

namespace {

Type scalarI32() { return Type::scalar(DType::I32); }

/// Adds a loop-carried value that starts as `init` and is `like` in the
/// body; returns the body argument.
Value *addCarried(Op &loop, Value *init, Value *like, const std::string &name) {
  Value *arg = loop.body->addArg(like->type, name);
  loop.operands.push_back(init);
  auto result = std::make_unique<Value>();
  result->type = like->type;
  result->nameHint = name;
  result->definingOp = &loop;
  result->index = static_cast<unsigned>(loop.results.size());
  loop.results.push_back(std::move(result));
  return arg;
}

} // namespace

Value *rotateDeferred(Op &loop, Op &first, Op &deferred, Op &deferredWait, Value *deferredArg, Value *deferredResult) {
  Value *lo = loop.operands[0], *hi = loop.operands[1];
  Block &body = *loop.body;
  if (constantIntOf(loop.operands[2]) != 1 || dependsOnCarried(loop, deferred.operands[1]))
    return nullptr;
  auto firstCommit = std::next(positionOf(first));
  auto fence = std::prev(positionOf(deferred));
  auto commit = std::next(positionOf(deferred));
  if ((*firstCommit)->kind != OpKind::WgmmaCommit || (*fence)->kind != OpKind::WgmmaFence ||
      (*commit)->kind != OpKind::WgmmaCommit)
    return nullptr;
  // The scores' wait, before the accumulator's.
  auto firstWait = std::next(firstCommit);
  for (; firstWait != body.ops.end() && firstWait->get() != &deferredWait; ++firstWait)
    if ((*firstWait)->kind == OpKind::WgmmaWait)
      break;
  if (firstWait == body.ops.end() || firstWait->get() == &deferredWait ||
      !reads(**firstWait, first.result()))
    return nullptr;

  // The product's A operand of iteration k - 1 is carried in (undefined
  // before the first iteration, which issues nothing).
  Value *a = deferred.operands[0], *b = deferred.operands[1], *scaled = deferred.operands[2];
  std::map<std::string, Attr> attrs = deferred.attrs;
  SourceLocation loc = deferred.loc;
  Value *carriedA = a;
  Op &yield = *body.ops.back();
  if (a->definingOp && a->definingOp->parent == &body) {
    Builder pre(*loop.parent, positionOf(loop));
    pre.setLoc(deferred.loc);
    Value *none = pre.value(OpKind::Undef, {}, a->type);
    carriedA = addCarried(loop, none, a, a->nameHint.empty() ? "a_prev" : a->nameHint + "_prev");
    yield.operands.push_back(a);
  }

  // Iteration k issues k - 1's product right behind its scores.
  Builder at(body, std::next(firstCommit));
  at.setLoc(deferred.loc);
  Value *k = body.args[0].get();
  Value *hasPrev = at.value(OpKind::Gt, {k, lo}, Type::scalar(DType::I1));
  // (clamped so that the first iteration, which issues nothing, still
  // names a valid slot)
  Value *prevK = at.value(OpKind::Max, {at.value(OpKind::Sub, {k, at.constInt(1)}, scalarI32()), lo}, scalarI32());
  std::map<Value *, Value *> cloned;
  Value *prevB = cloneForIteration(at, loop, b, prevK, cloned);
  at.create(OpKind::WgmmaFence, {}, {});
  Value *accumulated = at.value(OpKind::Wgmma, {carriedA, prevB, deferredArg, hasPrev}, deferredArg->type, attrs);
  accumulated->nameHint = deferredArg->nameHint;
  at.create(OpKind::WgmmaCommit, {}, {});
  (*firstWait)->attrs["pending"] = Attr(int64_t(1));
  // The accumulator's wait now covers the product just issued, the newest.
  deferredWait.attrs["pending"] = Attr(int64_t(0));
  for (auto op = std::next(positionOf(*accumulated->definingOp)); op != body.ops.end(); ++op)
    std::replace((*op)->operands.begin(), (*op)->operands.end(), deferredArg, accumulated);
  std::replace(yield.operands.begin(), yield.operands.end(), deferred.result(), scaled);
  body.ops.erase(commit);
  body.ops.erase(fence);
  eraseOp(deferred);

  // The last iteration's product, after the loop.
  Block &outer = *loop.parent;
  Builder after(outer, std::next(positionOf(loop)));
  after.setLoc(loc);
  Value *lastA = carriedA == a ? a : loop.results.back().get();
  Value *any = after.value(OpKind::Lt, {lo, hi}, Type::scalar(DType::I1));
  // A loop without iterations names its first slot, which the product,
  // not issued then, does not read.
  Value *lastK = after.value(OpKind::Sub, {hi, after.constInt(1)}, scalarI32());
  lastK = after.value(OpKind::Max, {lastK, lo}, scalarI32());
  cloned.clear();
  Value *lastB = cloneForIteration(after, loop, b, lastK, cloned);
  after.create(OpKind::WgmmaFence, {}, {});
  Value *final = after.value(OpKind::Wgmma, {lastA, lastB, deferredResult, any}, deferredResult->type, attrs);
  final->nameHint = deferredResult->nameHint;
  after.create(OpKind::WgmmaCommit, {}, {});
  for (auto op = std::next(positionOf(*final->definingOp)); op != outer.ops.end(); ++op) {
    std::replace((*op)->operands.begin(), (*op)->operands.end(), deferredResult, final);
    if ((*op)->body)
      replaceAllUsesIn(*(*op)->body, deferredResult, final);
  }
  if (b->definingOp && b->definingOp->parent == &body && countUses(body)[b] == 0)
    eraseOp(*b->definingOp);
  return final;
}

void takeTurns(Op &loop, Op &first, Op &finalProduct) {
  Block &body = *loop.body;
  Block &outer = *loop.parent;
  Builder(outer, positionOf(loop)).create(OpKind::TurnPass, {}, {}, {{"only", Attr(std::string("last"))}});
  Builder(body, std::prev(positionOf(first))).create(OpKind::TurnWait, {}, {});
  // After the second product's commit: the first wgmma_commit after `first`'s.
  auto commit = std::next(positionOf(first));
  commit = std::find_if(std::next(commit), body.ops.end(),
                        [](const std::unique_ptr<Op> &op) { return op->kind == OpKind::WgmmaCommit; });
  Builder(body, std::next(commit)).create(OpKind::TurnPass, {}, {});
  Builder(outer, std::prev(positionOf(finalProduct)))
      .create(OpKind::TurnWait, {}, {}, {{"only", Attr(std::string("first"))}});
}

bool dependsOnCarried(const Op &loop, Value *v) {
  if (v->ownerBlock == loop.body.get())
    return v != loop.body->args[0].get();
  Op *def = v->definingOp;
  if (!def || def->parent != loop.body.get())
    return false;
  return std::any_of(def->operands.begin(), def->operands.end(), [&](Value *o) { return dependsOnCarried(loop, o); });
}

} // namespace tkc::passes
