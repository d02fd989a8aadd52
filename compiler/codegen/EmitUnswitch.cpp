// Loop bodies whose masks only matter on boundary tiles.
//
// A `mask` (tail of a tensor) or a `select` on index comparisons (a causal
// mask) changes nothing on most tiles of a loop: only the last key tile
// reaches past the end, only the diagonal block straddles it. Written as a
// test per element, the compiler turns each into a compare and a select
// that every iteration pays for; written behind a branch each, the body is
// cut into small blocks that the instruction scheduler cannot interleave.
// So the body is emitted twice from the first such op on: once without
// them, under the block-uniform condition that they are all identities,
// and once as written; from the wgmma wait before the first such op when
// that wait ends work overlapping the products (findWgmmaSchedule).
// The split waits for a mask with at most three products after it: where
// more follow, the masks are a small share of the work, and twice the code
// costs registers (the sm_80 dK/dV kernel spilled when split before its
// first product). For the same reason no split is made where the tiles
// live across it fill more than three quarters of a thread's registers:
// both copies hold them, and their demands meet there (the sm_80 attention
// forward with 32 x 128 outputs and 32 x 64 scores per warp, over 200,
// spilled when split and ran 2-3% slower; unsplit, its masks are
// tested once per tile). Three products, not two, so that the one-pass
// attention backward on Hopper (dV's, dK's and dQ's products after dS's
// masks) tests them once per tile: 4-13% faster than split before dQ's
// mask alone.
#include "codegen/KernelEmitter.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace tkc::codegen {

using namespace ir;

namespace {
/// No split where tiles of more registers per thread live across it.
constexpr int kUnsplitLiveRegisters = 192;

/// Registers per thread of the tiles defined before `at` in `body` (or
/// carried into it) that are still read at `at` or after.
int registersLiveAt(const Block &body, Block::OpList::const_iterator at) {
  std::set<const Value *> later;
  auto reads = [&](const Op &op) {
    for (const Value *operand : op.operands)
      later.insert(operand);
  };
  for (auto it = at; it != body.ops.end(); ++it) {
    reads(**it);
    if ((*it)->body)
      walk(*(*it)->body, reads);
  }
  int registers = 0;
  for (auto &arg : body.args)
    if (later.count(arg.get()))
      registers += registersOf(arg->type);
  for (auto it = body.ops.begin(); it != at; ++it)
    for (auto &result : (*it)->results)
      if (later.count(result.get()))
        registers += registersOf(result->type);
  return registers;
}
} // namespace

std::vector<CExpr> KernelEmitter::maskFreeConditions(const Block &body, Block::OpList::const_iterator from,
                                                          const std::map<const Op *, int> &position,
                                                          std::set<const Op *> &identities) {
  int start = position.at(from->get());
  // Scalars computed before the branch can be tested there.
  auto available = [&](const Value *v) {
    const Op *def = v->definingOp;
    return !def || def->parent != &body || position.at(def) < start;
  };
  std::vector<CExpr> conditions;
  for (auto it = from; it != body.ops.end(); ++it) {
    const Op &op = **it;
    std::vector<const Value *> leaves;
    std::optional<CExpr> condition;
    if (op.kind == OpKind::Mask && op.operands[1]->type.isScalar()) {
      leaves.push_back(op.operands[1]);
      condition = binary(BinaryOperator::Ge, scalarExpr(op.operands[1]),
                         CExpr::integer(op.result()->type.shape[op.intAttr("axis")]));
    } else if (op.kind == OpKind::Select && op.operands[0]->type.isTile() &&
               op.operands[1]->type == op.result()->type) {
      condition = wholeTileCondition(op.operands[0], &leaves);
    }
    if (!condition || !std::all_of(leaves.begin(), leaves.end(), available))
      continue;
    identities.insert(&op);
    if (std::none_of(conditions.begin(), conditions.end(),
                     [&](const CExpr &term) { return term.str() == condition->str(); }))
      conditions.push_back(*condition);
  }
  return conditions;
}

namespace {
/// Whether two scalars are computed alike: the same value, or ops of one
/// kind and attributes on operands computed alike (lowering repeats
/// `i * 64` for every access that indexes with it).
bool computedAlike(const Value *a, const Value *b) {
  if (a == b)
    return true;
  const Op *x = a->definingOp, *y = b->definingOp;
  if (!x || !y || x->kind != y->kind || x->attrs != y->attrs || x->operands.size() != y->operands.size() ||
      x->body || y->body || x->results.size() != 1 || y->results.size() != 1)
    return false;
  for (size_t i = 0; i < x->operands.size(); ++i)
    if (!computedAlike(x->operands[i], y->operands[i]))
      return false;
  return true;
}
} // namespace

bool KernelEmitter::interiorTileCovers(const std::string &symbol, const Value *offset, int64_t size) const {
  for (const Op *op : identityOps_) {
    if (op->kind != OpKind::Mask)
      continue;
    const Op *valid = op->operands[1]->definingOp;
    if (!valid || valid->kind != OpKind::Sub)
      continue;
    const Value *dim = valid->operands[0];
    bool ofDim = !dim->definingOp && dim->nameHint == symbol;
    if (ofDim && computedAlike(valid->operands[1], offset) && op->result()->type.shape[op->intAttr("axis")] >= size)
      return true;
  }
  return false;
}

bool KernelEmitter::isMaskLike(const Op &op) const {
  return op.kind == OpKind::Mask || (op.kind == OpKind::Select && op.operands[0]->type.isTile());
}

void KernelEmitter::emitLoopBody(const Op &loop, Block::OpList::const_iterator from, bool split) {
  const Block &body = *loop.body;
  // A branch lies between what came before and this code.
  registerProducts_.clear();
  // Each op's position, and how many products run from it to the end.
  std::map<const Op *, int> position;
  std::vector<int> productsFrom(body.ops.size() + 1, 0);
  if (split) {
    int at = 0;
    for (auto &op : body.ops)
      position[op.get()] = at++;
    for (auto it = body.ops.rbegin(); it != body.ops.rend(); ++it) {
      --at;
      bool product = (*it)->kind == OpKind::Mma || (*it)->kind == OpKind::Wgmma;
      productsFrom[at] = productsFrom[at + 1] + (product ? 1 : 0);
    }
  }
  auto splitsAt = [&](Block::OpList::const_iterator at) {
    return isMaskLike(**at) && productsFrom[position.at(at->get())] <= 3 &&
           registersLiveAt(body, at) <= kUnsplitLiveRegisters;
  };
  for (auto it = from; it != body.ops.end(); ++it) {
    // A wait that closes a window of work starts the split where one
    // follows, so that a branch keeps the work above the wait (EmitHopper.cpp:
    // findWgmmaSchedule).
    bool splitHere = split && splitsAt(it);
    if (split && !splitHere && windowClosingWaits_.count(it->get())) {
      auto mask = std::find_if(std::next(it), body.ops.end(), [&](const std::unique_ptr<Op> &op) {
        return isMaskLike(*op) || op->kind == OpKind::Wgmma || op->kind == OpKind::WgmmaWait;
      });
      splitHere = mask != body.ops.end() && isMaskLike(**mask) && splitsAt(mask);
    }
    if (splitHere) {
      std::set<const Op *> identities;
      std::vector<CExpr> conditions = maskFreeConditions(body, it, position, identities);
      if (!conditions.empty()) {
        out_.open(fmt::format("if ({})", conjunction(conditions).str()));
        out_.line("// an interior tile: the masks below change nothing");
        std::set<const Op *> saved = std::move(identityOps_);
        identityOps_ = identities;
        emitLoopBody(loop, it, false);
        identityOps_ = std::move(saved);
        out_.dedent();
        out_.open("} else");
        emitLoopBody(loop, it, false);
        out_.close();
        return;
      }
    }
    if (!emitOp(**it))
      return;
  }
  emitYield(loop);
}

} // namespace tkc::codegen
