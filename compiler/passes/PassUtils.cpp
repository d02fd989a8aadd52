#include "passes/PassUtils.h"

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

int64_t sharedBufferBytes(const Type &type) {
  return type.numElements() * dtypeBytes(type.dtype) * std::max(type.stages, 1);
}

bool isInside(const Op &op, const Op &loop) {
  for (const Block *block = op.parent; block && block->parentOp; block = block->parentOp->parent)
    if (block->parentOp == &loop)
      return true;
  return false;
}

std::optional<int64_t> constantIntOf(const Value *v) {
  auto value = constantOf(v);
  if (!value || !std::holds_alternative<int64_t>(*value))
    return std::nullopt;
  return std::get<int64_t>(*value);
}

} // namespace tkc::passes
