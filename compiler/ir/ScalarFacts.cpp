#include "ir/ScalarFacts.h"

#include <numeric>
#include <optional>

namespace tkc::ir {

namespace {
std::optional<int64_t> integerConstant(const Value *v) {
  if (v->definingOp && v->definingOp->kind == OpKind::Const && v->type.dtype == DType::I32)
    return v->definingOp->intAttr("value");
  return std::nullopt;
}

bool provablyMultipleOf(const Value *v, int64_t factor, int depth) {
  if (factor <= 1)
    return true;
  if (depth > 64)
    return false;
  auto multiple = [&](const Value *operand) { return provablyMultipleOf(operand, factor, depth + 1); };
  if (const Op *def = v->definingOp) {
    switch (def->kind) {
    case OpKind::Const: return v->type.dtype == DType::I32 && def->intAttr("value") % factor == 0;
    case OpKind::Mul: {
      // (c * x) is a multiple of factor when c is, or when c's part of the
      // factor and x the rest are: 4 * (2 * j) for 8.
      auto a = integerConstant(def->operands[0]), b = integerConstant(def->operands[1]);
      if (multiple(def->operands[0]) || multiple(def->operands[1]))
        return true;
      for (auto [constant, other] : {std::pair{a, def->operands[1]}, std::pair{b, def->operands[0]}})
        if (constant && *constant != 0) {
          int64_t shared = std::gcd(*constant, factor);
          if (shared > 1 && provablyMultipleOf(other, factor / shared, depth + 1))
            return true;
        }
      return false;
    }
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Min:
    case OpKind::Max: return multiple(def->operands[0]) && multiple(def->operands[1]);
    case OpKind::Select: return multiple(def->operands[1]) && multiple(def->operands[2]);
    default: return false;
    }
  }
  const Block *block = v->ownerBlock;
  const Op *owner = block ? block->parentOp : nullptr;
  if (!owner || owner->kind != OpKind::For || v->index != 0 || owner->operands.size() < 3)
    return false;
  return multiple(owner->operands[0]) && multiple(owner->operands[2]);
}
} // namespace

bool provablyMultipleOf(const Value *v, int64_t factor) { return provablyMultipleOf(v, factor, 0); }

} // namespace tkc::ir
