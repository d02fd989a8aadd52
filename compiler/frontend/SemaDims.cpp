#include "frontend/SemaDims.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace tkc::sema {

namespace {

/// The values an expression can take. Sizes are at most 2^31 - 1, so a
/// bound that leaves +-2^62 is clamped there (which only widens it).
struct Range {
  int64_t lo = 0, hi = 0;
};

constexpr int64_t kLargestSize = 0x7fffffff;
constexpr int64_t kBound = int64_t(1) << 62;


int64_t truncDiv(int64_t a, int64_t b) { return a / b; }
int64_t ceilDiv(int64_t a, int64_t b) { return a / b + ((a % b != 0 && (a < 0) == (b < 0)) ? 1 : 0); }

class DimChecker {
public:
  DimChecker(const ast::Kernel &kernel, DiagnosticEngine &diags) : diags_(diags) {
    for (const ast::Param &param : kernel.params) {
      tensors_.insert(param.name);
      for (const ast::Dim &dim : param.dims)
        if (dim.isSymbol())
          bound_.insert(dim.symbol);
        else if (dim.isDerived())
          for (const std::string &name : dimSymbols(*dim.expr))
            ++mentions_[name];
    }
    for (const ast::WhereParam &where : kernel.wheres) {
      if (where.derived) {
        derivedWheres_.insert(where.name);
        continue;
      }
      if (where.values.empty())
        continue;
      auto [lo, hi] = std::minmax_element(where.values.begin(), where.values.end());
      whereRanges_[where.name] = {*lo, *hi};
    }
  }

  void check(const ast::Dim &dim) {
    ok_ = true;
    usesSizes_ = false;
    overflows_ = false;
    Range r = range(*dim.expr);
    if (!ok_)
      return;
    std::string text = printDimExpr(*dim.expr);
    // The launcher computes it in 64 bits; a part that can leave +-2^62
    // could overflow there.
    if (overflows_)
      diags_.report(dim.loc, DiagId::DimTooLarge, text);
    else if (r.lo < 0)
      diags_.report(dim.loc, DiagId::DimMayBeNegative, text, r.lo);
    else if (!usesSizes_ && r.lo == 0)
      // Without a runtime size it is a compile-time extent, and those are positive.
      diags_.report(dim.loc, DiagId::NonPositiveSize, fmt::format("dimension `{}`", text), r.lo);
  }

private:
  Range name(const DimExpr &e) {
    if (derivedWheres_.count(e.symbol)) {
      diags_.report(e.loc, DiagId::DimUsesDerivedWhere, e.symbol);
      ok_ = false;
      return {};
    }
    // A `where` value that is also a dim alone is the specialised size.
    if (auto it = whereRanges_.find(e.symbol); it != whereRanges_.end())
      return it->second;
    if (bound_.count(e.symbol)) {
      usesSizes_ = true;
      return {0, kLargestSize};
    }
    bool looksLikeADim = !tensors_.count(e.symbol) && mentions_[e.symbol] > 1;
    diags_.report(e.loc, looksLikeADim ? DiagId::DimNameNotBound : DiagId::DimUnknownName, e.symbol);
    ok_ = false;
    return {};
  }

  Range range(const DimExpr &e) {
    if (e.kind == DimExpr::Kind::Int)
      return {e.value, e.value};
    if (e.kind == DimExpr::Kind::Symbol)
      return name(e);
    Range a = range(e.operands[0]), b = range(e.operands[1]);
    if (!ok_)
      return {};
    switch (e.kind) {
    case DimExpr::Kind::Add: return {clamp(__int128(a.lo) + b.lo), clamp(__int128(a.hi) + b.hi)};
    case DimExpr::Kind::Sub: return {clamp(__int128(a.lo) - b.hi), clamp(__int128(a.hi) - b.lo)};
    case DimExpr::Kind::Mul: {
      __int128 c[] = {__int128(a.lo) * b.lo, __int128(a.lo) * b.hi, __int128(a.hi) * b.lo, __int128(a.hi) * b.hi};
      return {clamp(*std::min_element(c, c + 4)), clamp(*std::max_element(c, c + 4))};
    }
    default: break;
    }
    if (b.lo == 0 && b.hi == 0) {
      diags_.report(e.loc, DiagId::DivisorIsZero, dimOperatorName(e.kind));
      ok_ = false;
      return {};
    }
    // A size that is zero at run time is the launcher's error; the range
    // covers the other divisors.
    if (b.lo == 0)
      b.lo = 1;
    if (b.hi == 0)
      b.hi = -1;
    if (b.lo < 0 && b.hi > 0)
      return {-kBound, kBound};
    if (e.kind == DimExpr::Kind::Rem) {
      int64_t largest = std::max(std::abs(b.lo), std::abs(b.hi)) - 1;
      return {a.lo < 0 ? -std::min(largest, -a.lo) : 0, a.hi > 0 ? std::min(largest, a.hi) : 0};
    }
    // Truncating and rounding-up division are monotonic in each operand
    // while the divisor keeps its sign, so the corners bound them.
    auto divide = e.kind == DimExpr::Kind::Div ? truncDiv : ceilDiv;
    int64_t c[] = {divide(a.lo, b.lo), divide(a.lo, b.hi), divide(a.hi, b.lo), divide(a.hi, b.hi)};
    return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
  }

  int64_t clamp(__int128 v) {
    overflows_ = overflows_ || v < -kBound || v > kBound;
    return static_cast<int64_t>(std::clamp<__int128>(v, -kBound, kBound));
  }

  DiagnosticEngine &diags_;
  std::set<std::string> tensors_, bound_, derivedWheres_;
  std::map<std::string, int> mentions_;
  std::map<std::string, Range> whereRanges_;
  bool ok_ = true;
  bool usesSizes_ = false;
  bool overflows_ = false;
};

} // namespace

void checkDerivedDims(const ast::Kernel &kernel, DiagnosticEngine &diags) {
  DimChecker checker(kernel, diags);
  for (const ast::Param &param : kernel.params)
    for (const ast::Dim &dim : param.dims)
      if (dim.isDerived())
        checker.check(dim);
}

std::optional<int64_t> staticDimSize(const ast::Dim &dim, const Specialization &specialization) {
  if (dim.isDerived())
    return evaluateDimExpr(*dim.expr, [&](const std::string &name) { return specialization.lookup(name); });
  if (dim.isSymbol())
    return specialization.lookup(dim.symbol);
  return dim.size;
}

std::string dimText(const ast::Dim &dim) {
  if (dim.isDerived())
    return printDimExpr(*dim.expr);
  return dim.isSymbol() ? dim.symbol : std::to_string(dim.size);
}

} // namespace tkc::sema
