// The count and attribute checks that the rules of every op family make
// (OpRuleChecks.h).
#include "ir/OpRuleChecks.h"

namespace tkc::ir::rules {

std::string checkCounts(const Op &op, size_t operands, size_t results) {
  if (op.operands.size() != operands)
    return countMismatch("operand", operands, op.operands.size());
  if (op.results.size() != results)
    return countMismatch("result", results, op.results.size());
  return "";
}

std::string checkIntAttr(const Op &op, const std::string &name, Presence presence, int64_t lo, int64_t hi) {
  auto it = op.attrs.find(name);
  if (it == op.attrs.end())
    return presence == Presence::Required ? fmt::format("requires attribute `{}`", name) : "";
  auto *value = std::get_if<int64_t>(&it->second);
  if (!value)
    return fmt::format("attribute `{}` must be an integer", name);
  if (*value < lo || *value > hi)
    return fmt::format("attribute `{}` must be between {} and {}, but is {}", name, lo, hi, *value);
  return "";
}

std::string checkNotF8(const Op &op) {
  for (size_t i = 0; i < op.operands.size(); ++i)
    if (isF8(operandType(op, i).dtype))
      return fmt::format("operand #{} is {}, which takes no arithmetic", i, dtypeName(operandType(op, i).dtype));
  for (size_t i = 0; i < op.results.size(); ++i)
    if (isF8(op.results[i]->type.dtype))
      return fmt::format("result #{} is {}, which only loads make", i, dtypeName(op.results[i]->type.dtype));
  return "";
}

} // namespace tkc::ir::rules
