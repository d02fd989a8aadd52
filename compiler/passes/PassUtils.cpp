#include "passes/PassUtils.h"
#include "ir/Registers.h"

#include <algorithm>

namespace tkc::passes {

using namespace ir;

bool hasSideEffects(const Op &op) {
  switch (op.kind) {
  case OpKind::Store:
  case OpKind::AsyncLoad:
  case OpKind::AsyncCommit:
  case OpKind::AsyncWait:
  case OpKind::Barrier:
  case OpKind::Yield:
  case OpKind::Grid:
  case OpKind::VariantGuard:
  // The Hopper pipeline's synchronisation, copies and asynchronous products:
  // their effects are on barriers, shared memory and the issue order.
  case OpKind::MbarrierInit:
  case OpKind::MbarrierExpectTx:
  case OpKind::MbarrierWait:
  case OpKind::MbarrierArrive:
  case OpKind::TmaLoad:
  case OpKind::WarpCopy:
  case OpKind::Wgmma:
  case OpKind::WgmmaFence:
  case OpKind::WgmmaCommit:
  case OpKind::WgmmaWait:
  case OpKind::WarpgroupRole:
  case OpKind::WarpgroupRoleEnd:
  case OpKind::SmemStore:
  case OpKind::FenceProxyAsync:
  case OpKind::WarpgroupBarrier:
  case OpKind::TmaStore:
  case OpKind::TmaStoreWait:
  case OpKind::TurnWait:
  case OpKind::TurnPass:
    return true;
  case OpKind::For:
    return std::any_of(op.body->ops.begin(), op.body->ops.end(), [](const std::unique_ptr<Op> &inner) {
      return inner->kind != OpKind::Yield && hasSideEffects(*inner);
    });
  default:
    return false;
  }
}

UseCounts countUses(Block &block) {
  UseCounts counts;
  walk(block, [&](Op &op) {
    for (Value *operand : op.operands)
      ++counts[operand];
  });
  return counts;
}

std::optional<Attr> constantOf(const Value *v) {
  if (!v->definingOp || v->definingOp->kind != OpKind::Const)
    return std::nullopt;
  auto it = v->definingOp->attrs.find("value");
  if (it == v->definingOp->attrs.end())
    return std::nullopt;
  return it->second;
}

std::optional<Attr> fillValueOf(const Value *v) {
  if (!v->definingOp || v->definingOp->kind != OpKind::Fill)
    return std::nullopt;
  auto it = v->definingOp->attrs.find("value");
  if (it == v->definingOp->attrs.end())
    return std::nullopt;
  return it->second;
}

double attrAsDouble(const Attr &attr) {
  if (auto *i = std::get_if<int64_t>(&attr))
    return static_cast<double>(*i);
  if (auto *d = std::get_if<double>(&attr))
    return *d;
  return 0;
}

bool attrIsZero(const Attr &attr) {
  return (std::holds_alternative<int64_t>(attr) || std::holds_alternative<double>(attr)) && attrAsDouble(attr) == 0;
}

OpIterator positionOf(Op &op) {
  Block &block = *op.parent;
  return std::find_if(block.ops.begin(), block.ops.end(),
                      [&](const std::unique_ptr<Op> &candidate) { return candidate.get() == &op; });
}

void eraseOp(Op &op) { op.parent->ops.erase(positionOf(op)); }

Value *sharedRoot(Value *value) {
  while (value->definingOp && value->definingOp->kind == OpKind::StageView)
    value = value->definingOp->operands[0];
  return value;
}

Value *cloneForIteration(Builder &b, Op &loop, Value *v, Value *k, std::map<Value *, Value *> &cloned) {
  if (v == loop.body->args[0].get())
    return k;
  Op *def = v->definingOp;
  if (!def || def->parent != loop.body.get())
    return v;
  if (auto it = cloned.find(v); it != cloned.end())
    return it->second;
  std::vector<Value *> operands;
  for (Value *operand : def->operands)
    operands.push_back(cloneForIteration(b, loop, operand, k, cloned));
  Value *copy = b.value(def->kind, operands, v->type, def->attrs);
  copy->nameHint = v->nameHint;
  return cloned[v] = copy;
}

int64_t sharedBufferBytes(const Type &type) {
  return type.numElements() * dtypeBytes(type.dtype) * std::max(type.stages, 1);
}

int64_t sharedAlignmentOf(const Type &type) { return type.layout.kind == LayoutKind::Swizzle128 ? 1024 : 128; }

int64_t alignUp(int64_t bytes, int64_t alignment) { return (bytes + alignment - 1) / alignment * alignment; }

int64_t epilogueStagingBytes(const Op &store) {
  const Type &tile = store.operands[1]->type;
  return tile.shape[0] * store.intAttr("staging_cols", tile.shape[1]) * dtypeBytes(tile.dtype);
}

namespace {
std::vector<Op *> productsOf(Block &body) {
  std::vector<Op *> mmas;
  for (auto &op : body.ops)
    if (op->kind == OpKind::Mma)
      mmas.push_back(op.get());
  return mmas;
}

bool onlyFeedsYield(const Op &mma, UseCounts &uses, const Op &yield) {
  return uses[mma.result()] == 1 && reads(yield, mma.result());
}
} // namespace

bool issuesSecondProductLate(Op &loop) {
  Block &body = *loop.body;
  std::vector<Op *> mmas = productsOf(body);
  if (mmas.size() != 2 || body.ops.empty() || body.ops.back()->kind != OpKind::Yield)
    return false;
  UseCounts uses = countUses(body);
  const Op &yield = *body.ops.back();
  return onlyFeedsYield(*mmas[1], uses, yield) && !onlyFeedsYield(*mmas[0], uses, yield);
}

std::vector<Op *> tilesReadAnIterationLate(Op &loop) {
  if (!issuesSecondProductLate(loop))
    return {};
  Block &body = *loop.body;
  std::vector<Op *> late;
  UseCounts uses = countUses(body);
  Op *second = productsOf(body)[1];
  for (auto &op : body.ops) {
    if (op->kind != OpKind::Load)
      continue;
    Value *tile = op->result();
    if (isStageableVector(tile->type))
      return {};
    if (!tile->type.isShared() || !reads(*second, tile))
      continue;
    if (uses[tile] != 1) // read by the first product too
      return {};
    late.push_back(op.get());
  }
  return late;
}

bool definesSharedBuffer(const Op &op) {
  bool sharedResult = op.results.size() == 1 && op.result()->type.isShared();
  return op.kind == OpKind::SmemAlloc || (sharedResult && (op.kind == OpKind::Load || op.kind == OpKind::Convert || op.kind == OpKind::Reduce));
}

Value *pipelineIteration(Op &loop) {
  Value *k = loop.body->args.empty() ? nullptr : loop.body->args[0].get();
  for (auto &op : loop.body->ops) {
    if (op->kind != OpKind::Add)
      continue;
    Op *rel = op->operands[0]->definingOp;
    if (rel && rel->kind == OpKind::Sub && rel->operands[0] == k && rel->operands[1] == loop.operands[0])
      return op->result();
  }
  return nullptr;
}

bool isInside(const Op &op, const Op &loop) {
  for (const Block *block = op.parent; block && block->parentOp; block = block->parentOp->parent)
    if (block->parentOp == &loop)
      return true;
  return false;
}

Op &topLevelOp(Op &op) {
  Op *top = &op;
  while (top->parent && top->parent->parentOp)
    top = top->parent->parentOp;
  return *top;
}

const Op *roleOf(const Kernel &kernel, Op &op) {
  const Op *top = &topLevelOp(op);
  const Op *marker = nullptr;
  for (auto &o : kernel.body.ops) {
    if (o.get() == top)
      return marker && marker->kind == OpKind::WarpgroupRole ? marker : nullptr;
    if (o->kind == OpKind::WarpgroupRole || o->kind == OpKind::WarpgroupRoleEnd)
      marker = o.get();
  }
  return nullptr;
}

bool isStageableVector(const Type &type) {
  return type.isRegister() && type.dtype == DType::F32 && type.shape.size() == 1 &&
         (type.layout.kind == LayoutKind::AccCol || type.layout.kind == LayoutKind::AccRow);
}

Type ringBufferType(const Op &load, int64_t stages) {
  const Type &loaded = load.result()->type;
  Type type = loaded.isShared() ? loaded : loaded.withLayout(MemSpace::Shared, Layout{});
  type.stages = static_cast<int>(stages);
  return type;
}

Value *stagedVectorBuffer(Builder &b, Op &load, int64_t stages) {
  Value *buffer = b.value(OpKind::SmemAlloc, {}, ringBufferType(load, stages));
  buffer->nameHint = load.operands[0]->nameHint + "_buf";
  return buffer;
}

Value *readStagedVector(Builder &b, Value *buffer, Value *slot, Op &load) {
  Type slotType = buffer->type;
  slotType.stages = 0;
  Value *view = b.value(OpKind::StageView, {buffer, slot}, slotType);
  view->nameHint = load.operands[0]->nameHint + "_slot";
  Value *read = b.value(OpKind::Convert, {view}, load.result()->type);
  read->nameHint = load.result()->nameHint;
  return read;
}

std::optional<int64_t> constantIntOf(const Value *v) {
  auto value = constantOf(v);
  if (!value || !std::holds_alternative<int64_t>(*value))
    return std::nullopt;
  return std::get<int64_t>(*value);
}

// --- dead-code elimination ---------------------------------------------------

namespace {

void dropUses(Op &op, UseCounts &uses) {
  for (Value *operand : op.operands)
    --uses[operand];
  if (op.body)
    walk(*op.body, [&](Op &inner) {
      for (Value *operand : inner.operands)
        --uses[operand];
    });
}

/// Drops iter_args whose result is unused and whose block argument only
/// feeds its own slot of the yield.
bool dropUnusedIterArgs(Op &loop, UseCounts &uses) {
  constexpr unsigned kFirstInit = 3; // operands: lo, hi, step, inits...
  Block &body = *loop.body;
  Op &yield = *body.ops.back();
  bool changed = false;
  for (size_t i = loop.results.size(); i-- > 0;) {
    Value *arg = body.args[i + 1].get();
    int ownYieldUses = yield.operands[i] == arg ? 1 : 0;
    if (uses[loop.result(i)] != 0 || uses[arg] != ownYieldUses)
      continue;
    --uses[loop.operands[kFirstInit + i]];
    --uses[yield.operands[i]];
    loop.operands.erase(loop.operands.begin() + kFirstInit + i);
    yield.operands.erase(yield.operands.begin() + i);
    body.args.erase(body.args.begin() + i + 1);
    loop.results.erase(loop.results.begin() + i);
    changed = true;
  }
  for (unsigned i = 0; i < body.args.size(); ++i)
    body.args[i]->index = i;
  for (unsigned i = 0; i < loop.results.size(); ++i)
    loop.results[i]->index = i;
  return changed;
}

bool isDead(const Op &op, UseCounts &uses) {
  if (hasSideEffects(op))
    return false;
  for (auto &result : op.results)
    if (uses[result.get()] != 0)
      return false;
  return true;
}

/// Removes dead ops, last first so that chains of dead ops go in one sweep.
bool sweepDeadOps(Block &block, UseCounts &uses) {
  bool changed = false;
  for (auto it = block.ops.end(); it != block.ops.begin();) {
    --it;
    Op &op = **it;
    if (op.kind == OpKind::For) {
      changed |= sweepDeadOps(*op.body, uses);
      changed |= dropUnusedIterArgs(op, uses);
    }
    if (isDead(op, uses)) {
      dropUses(op, uses);
      it = block.ops.erase(it);
      changed = true;
    }
  }
  return changed;
}

} // namespace

bool eliminateDeadCode(Block &root) {
  bool changed = false;
  UseCounts uses = countUses(root);
  while (sweepDeadOps(root, uses))
    changed = true;
  return changed;
}

int64_t threadRegisters(const ir::Type &type) {
  // Vectors take a few registers each, which kRegisterHeadroom leaves room for.
  return type.shape.size() == 2 ? ir::threadRegisters(type) : 0;
}

int64_t loopRegisters(const ir::Op &loop, const ir::Op *except) {
  int64_t registers = 0;
  for (auto &result : loop.results)
    registers += passes::threadRegisters(result->type);
  ir::walk(*loop.body, [&](const ir::Op &op) {
    if (op.kind != ir::OpKind::Wgmma || &op == except)
      return;
    const ir::Op *init = op.operands[2]->definingOp;
    if (init && init->kind == ir::OpKind::Fill)
      registers += passes::threadRegisters(op.result()->type);
  });
  return registers;
}

/// True when two scalars are computed the same way from the same values
/// (lowering recomputes `block.x * 64` at every use).
bool sameScalar(const Value *a, const Value *b) {
  if (a == b)
    return true;
  const Op *x = a->definingOp, *y = b->definingOp;
  if (!x || !y || x->kind != y->kind || x->body || y->body || x->results.size() != 1 ||
      y->results.size() != 1 || x->attrs != y->attrs || x->operands.size() != y->operands.size() ||
      x->kind == OpKind::For)
    return false;
  for (size_t i = 0; i < x->operands.size(); ++i)
    if (!sameScalar(x->operands[i], y->operands[i]))
      return false;
  return true;
}

} // namespace tkc::passes
