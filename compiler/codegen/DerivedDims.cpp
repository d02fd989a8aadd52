// The launcher's checks of derived dims (`dWp: out f32[cdiv(R, 32), D]`):
// each such tensor size must equal its expression, computed from the sizes
// that bind its names and the caller's constants.
#include "codegen/HostEmitter.h"
#include "codegen/Identifiers.h"
#include "support/DimExpr.h"

#include <fmt/format.h>

namespace tkc::codegen {

using namespace ir;

namespace {

/// A name of the expression as a host `long long`: a dim symbol's local, a
/// compile-time dim's tensor size, or the caller's constant.
std::string hostName(const std::string &name, const LauncherShape &shape) {
  if (shape.symbols.count(name))
    return sourceIdentifier(name);
  if (auto it = shape.parameterDims.find(name); it != shape.parameterDims.end())
    return fmt::format("(long long){}->sizes[{}]", sourceIdentifier(shape.tensors[it->second[0].tensor]->nameHint),
                       it->second[0].dim);
  return fmt::format("(long long){}", sourceIdentifier(name));
}

/// The expression as host C++ with the language's integer operations;
/// `divisors` collects the non-literal divisors, innermost first, which the
/// launcher checks for zero before it computes the whole.
std::string hostExpression(const DimExpr &e, const LauncherShape &shape, std::vector<std::string> &divisors) {
  switch (e.kind) {
  case DimExpr::Kind::Int: return fmt::format("{}LL", e.value);
  case DimExpr::Kind::Symbol: return hostName(e.symbol, shape);
  default: break;
  }
  std::string a = hostExpression(e.operands[0], shape, divisors);
  std::string b = hostExpression(e.operands[1], shape, divisors);
  switch (e.kind) {
  case DimExpr::Kind::Add:
  case DimExpr::Kind::Sub:
  case DimExpr::Kind::Mul: return fmt::format("({} {} {})", a, dimOperatorName(e.kind), b);
  default: break;
  }
  if (e.operands[1].kind != DimExpr::Kind::Int)
    divisors.push_back(b);
  const char *fn = e.kind == DimExpr::Kind::Div ? "tkc::div" : e.kind == DimExpr::Kind::Rem ? "tkc::rem" : "tkc::cdiv";
  return fmt::format("{}({}, {})", fn, a, b);
}

} // namespace

void emitDerivedDimChecks(const LauncherShape &shape, const Kernel &first, const std::string &fn, CodeWriter &out) {
  for (size_t t = 0; t < shape.tensors.size(); ++t)
    for (size_t d = 0; d < shape.tensors[t]->type.dims.size(); ++d) {
      const Dim &dim = first.body.args[t]->type.dims[d];
      if (dim.derived.empty())
        continue;
      std::optional<DimExpr> expr = parseDimExpr(dim.derived);
      if (!expr)
        continue; // the IR parser and lowering give only valid text
      std::string n = sourceIdentifier(shape.tensors[t]->nameHint);
      const std::string &shown = shape.tensors[t]->nameHint;
      std::vector<std::string> divisors;
      std::string value = hostExpression(*expr, shape, divisors);
      for (const std::string &divisor : divisors)
        out.line("if ({} == 0) return {}_fail(TKC_ERROR_SHAPE, \"{}.sizes[{}] is {}, which divides by zero\");",
                 divisor, fn, shown, d, dim.derived);
      out.line("if ({0}->sizes[{1}] != {2}) return {3}_fail(TKC_ERROR_SHAPE, \"{4}.sizes[{1}] is %lld but {5} is "
               "%lld\", (long long){0}->sizes[{1}], {2});",
               n, d, value, fn, shown, dim.derived);
    }
}

} // namespace tkc::codegen
