// Rules of the ops that shape control flow: for (bounds, iter args and the
// body's arguments and yield), yield, grid (the end of `launch`), and the
// turns the consumer warpgroups take.
#include "ir/OpRuleChecks.h"

namespace tkc::ir::rules {

std::string checkFor(const Op &op) {
  if (op.operands.size() < 3)
    return "expects lower bound, upper bound and step operands";
  for (size_t i = 0; i < 3; ++i)
    if (!isScalarOf(operandType(op, i), DType::I32))
      return fmt::format("{} must be i32, but is {}", i == 0 ? "lower bound" : i == 1 ? "upper bound" : "step",
                         operandType(op, i).str());
  size_t carried = op.operands.size() - 3;
  if (op.results.size() != carried)
    return fmt::format("has {} iter_args but {} result(s)", carried, op.results.size());
  for (size_t i = 0; i < carried; ++i) {
    const Type &init = operandType(op, 3 + i);
    if (init.isGlobal())
      return fmt::format("cannot carry a global tensor (iter_args #{})", i);
    if (resultType(op, i) != init)
      return fmt::format("result #{} is {} but its initial value is {}", i, resultType(op, i).str(), init.str());
  }
  if (auto error = checkIntAttr(op, "stages", Presence::Optional, 1, 8); !error.empty())
    return error;
  if (!op.body)
    return "has no body";
  const Block &body = *op.body;
  if (body.args.size() != carried + 1)
    return fmt::format("body has {} argument(s) but needs {} (induction variable and iter_args)", body.args.size(),
                       carried + 1);
  if (!isScalarOf(body.args[0]->type, DType::I32))
    return fmt::format("induction variable must be i32, but is {}", body.args[0]->type.str());
  for (size_t i = 0; i < carried; ++i)
    if (body.args[i + 1]->type != operandType(op, 3 + i))
      return fmt::format("body argument #{} is {} but its initial value is {}", i + 1, body.args[i + 1]->type.str(),
                         operandType(op, 3 + i).str());
  if (body.ops.empty() || body.ops.back()->kind != OpKind::Yield)
    return "body must end with `yield`";
  const Op &yield = *body.ops.back();
  if (yield.operands.size() != carried)
    return fmt::format("yields {} value(s) but has {} iter_args", yield.operands.size(), carried);
  for (size_t i = 0; i < carried; ++i)
    if (yield.operands[i] && yield.operands[i]->type != resultType(op, i))
      return fmt::format("yields {} as value #{} but the loop carries {}", yield.operands[i]->type.str(), i,
                         resultType(op, i).str());
  return "";
}

std::string checkYield(const Op &op) {
  return op.results.empty() ? "" : countMismatch("result", 0, op.results.size());
}

std::string checkGrid(const Op &op) {
  if (auto error = checkCounts(op, 3, 0); !error.empty())
    return error;
  for (size_t i = 0; i < 3; ++i)
    if (!isScalarOf(operandType(op, i), DType::I32))
      return fmt::format("operand #{} must be i32, but is {}", i, operandType(op, i).str());
  return "";
}

/// variant_guard %v {name = "BN", value = 256}: the launcher runs this
/// specialisation only where %v, computed from the sizes, is `value`.
std::string checkVariantGuard(const Op &op) {
  if (auto error = checkCounts(op, 1, 0); !error.empty())
    return error;
  if (!isScalarOf(operandType(op, 0), DType::I32))
    return fmt::format("operand #0 must be i32, but is {}", operandType(op, 0).str());
  if (op.strAttr("name", "").empty())
    return "needs a `name` attribute: the constant it picks";
  if (!op.attrs.count("value"))
    return "needs a `value` attribute";
  return "";
}

/// turn_wait and turn_pass.
std::string checkTurn(const Op &op) {
  if (auto error = checkCounts(op, 0, 0); !error.empty())
    return error;
  std::string only = op.strAttr("only", "all");
  if (only != "all" && only != "first" && only != "last")
    return fmt::format("attribute `only` must be \"first\" or \"last\", not \"{}\"", only);
  return "";
}

} // namespace tkc::ir::rules
