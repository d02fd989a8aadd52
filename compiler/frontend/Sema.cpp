#include "frontend/KernelChecker.h"
#include "frontend/SemaChoices.h"
#include "frontend/SemaDims.h"

#include <fmt/format.h>

#include <algorithm>

#include <map>
#include <set>

namespace tkc::sema {

// --- specialisations ----------------------------------------------------------

constexpr const char *kBuiltinSm = "sm";

std::optional<int64_t> Specialization::lookup(const std::string &name) const {
  for (const auto &[key, value] : values)
    if (key == name)
      return value;
  return std::nullopt;
}

std::string Specialization::kernelName(const std::string &base) const {
  std::string name = base;
  for (const auto &[key, value] : values)
    name += fmt::format("__{}{}", key, value);
  return name;
}

std::string Specialization::describe() const {
  std::string text;
  for (const auto &[key, value] : values)
    text += fmt::format("{}{} = {}", text.empty() ? "" : ", ", key, value);
  return text;
}

std::vector<Specialization> specializationsOf(const ast::Kernel &kernel, int64_t sm, size_t *uncapped) {
  Specialization plain;
  plain.sm = sm;
  std::vector<Specialization> result{plain};
  // The compile-time values each specialisation knows so far, for the
  // derived constants after them.
  std::vector<std::map<std::string, int64_t>> known(1);
  bool namesSm = std::any_of(kernel.wheres.begin(), kernel.wheres.end(),
                             [](const ast::WhereParam &w) { return w.name == kBuiltinSm; });
  for (const ast::Param &param : kernel.params) {
    namesSm |= param.name == kBuiltinSm;
    for (const ast::Dim &dim : param.dims)
      namesSm |= dim.isSymbol() && dim.symbol == kBuiltinSm;
  }
  if (!namesSm)
    known[0][kBuiltinSm] = sm;
  size_t total = 1;
  for (const ast::WhereParam &where : kernel.wheres) {
    std::vector<Specialization> next;
    std::vector<std::map<std::string, int64_t>> nextKnown;
    size_t nextTotal = 0;
    for (size_t i = 0; i < result.size(); ++i) {
      std::vector<int64_t> values = where.values;
      bool picked = false;
      if (where.derived) {
        std::optional<std::set<int64_t>> choices = possibleValues(*where.derived, known[i]);
        if (!choices || choices->empty()) { // the checker reports it
          next.push_back(result[i]);
          nextKnown.push_back(known[i]);
          ++nextTotal;
          continue;
        }
        values.assign(choices->begin(), choices->end());
        picked = values.size() > 1;
      }
      nextTotal += values.size();
      for (int64_t value : values) {
        if (next.size() == kMaxSpecializations)
          break;
        Specialization extended = result[i];
        std::map<std::string, int64_t> extendedKnown = known[i];
        extendedKnown[where.name] = value;
        if (!where.derived || picked)
          extended.values.emplace_back(where.name, value);
        if (picked)
          extended.pickedBySizes.insert(where.name);
        next.push_back(std::move(extended));
        nextKnown.push_back(std::move(extendedKnown));
      }
    }
    // What the cap cut off multiplies too.
    if (!result.empty())
      total = std::min<size_t>(total * std::max<size_t>(nextTotal, 1) / result.size(), size_t(1) << 30);
    result = std::move(next);
    known = std::move(nextKnown);
  }
  if (uncapped)
    *uncapped = total;
  return result;
}

const Type &KernelFacts::typeOf(const ast::Expr &expr) const {
  static const Type kInvalid;
  auto it = types.find(&expr);
  return it == types.end() ? kInvalid : it->second;
}

const std::vector<ast::StmtPtr> &KernelFacts::takenBranch(const ast::Stmt &stmt) const {
  return conditions.at(&stmt) ? stmt.body : stmt.elseBody;
}

const char *describeSymbolKind(Symbol::Kind kind) {
  switch (kind) {
  case Symbol::Kind::Global: return "a kernel parameter";
  case Symbol::Kind::Dim: return "a dimension";
  case Symbol::Kind::WhereConst: return "a compile-time parameter";
  case Symbol::Kind::Variable: return "a variable";
  case Symbol::Kind::LoopVar: return "a loop variable";
  }
  return "a name";
}

namespace {

// --- checks that do not depend on the specialisation -------------------------

/// The target's compute capability, as a compile-time constant of every kernel.

bool isPowerOfTwo(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

/// Parameters, dimensions, `where` clauses and annotations.
void checkKernelHeader(const ast::Kernel &kernel, DiagnosticEngine &diags) {
  std::map<std::string, SourceLocation> params;
  for (const ast::Param &param : kernel.params) {
    auto [it, inserted] = params.emplace(param.name, param.loc);
    if (!inserted) {
      diags.report(param.loc, DiagId::Redefinition, param.name);
      diags.report(it->second, DiagId::PreviousDefinition);
    }
  }
  std::map<std::string, SourceLocation> dims;
  for (const ast::Param &param : kernel.params)
    for (const ast::Dim &dim : param.dims) {
      if (dim.isDerived())
        continue;
      if (!dim.isSymbol()) {
        if (dim.size <= 0)
          diags.report(dim.loc, DiagId::NonPositiveSize, "a dimension size", dim.size);
        continue;
      }
      if (!dims.emplace(dim.symbol, dim.loc).second)
        continue;
      if (auto clash = params.find(dim.symbol); clash != params.end()) {
        diags.report(dim.loc, DiagId::Redefinition, dim.symbol);
        diags.report(clash->second, DiagId::PreviousDefinition);
      }
    }

  std::map<std::string, SourceLocation> wheres;
  for (const ast::WhereParam &where : kernel.wheres) {
    auto [it, inserted] = wheres.emplace(where.name, where.loc);
    if (!inserted) {
      diags.report(where.loc, DiagId::Redefinition, where.name);
      diags.report(it->second, DiagId::PreviousDefinition);
    } else if (auto clash = params.find(where.name); clash != params.end()) {
      diags.report(where.loc, DiagId::Redefinition, where.name);
      diags.report(clash->second, DiagId::PreviousDefinition);
    }
    bool isDim = dims.count(where.name) != 0;
    if (where.derived && isDim)
      diags.report(where.loc, DiagId::DerivedWhereIsDim, where.name);
    std::set<int64_t> seen;
    for (size_t i = 0; i < where.values.size(); ++i) {
      int64_t value = where.values[i];
      if (!seen.insert(value).second)
        diags.report(where.valueLocs[i], DiagId::DuplicateWhereValue, value, where.name);
      if (isDim && value <= 0)
        diags.report(where.valueLocs[i], DiagId::NonPositiveSize, fmt::format("dimension `{}`", where.name), value);
    }
  }

  checkDerivedDims(kernel, diags);

  if (!kernel.hasGrid)
    diags.report(kernel.loc, DiagId::MissingGrid, kernel.name);
  else if (kernel.grid.empty() || kernel.grid.size() > 3)
    diags.report(kernel.gridLoc, DiagId::GridRank, kernel.grid.size());

  bool hasOutput = false;
  for (const ast::Param &param : kernel.params)
    hasOutput |= param.isOutput;
  if (!hasOutput)
    diags.report(kernel.loc, DiagId::NoOutputs, kernel.name);
}

} // namespace

bool checkFile(const ast::File &file, DiagnosticEngine &diags, int64_t sm) {
  unsigned errorsBefore = diags.errorCount();
  std::map<std::string, SourceLocation> kernels;
  std::map<std::string, std::string> generatedNames; // kernel function name -> source kernel
  for (const ast::Kernel &kernel : file.kernels) {
    auto [it, inserted] = kernels.emplace(kernel.name, kernel.loc);
    if (!inserted) {
      diags.report(kernel.loc, DiagId::Redefinition, kernel.name);
      diags.report(it->second, DiagId::PreviousDefinition);
    }
    checkKernelHeader(kernel, diags);

    size_t combinations = 0;
    std::vector<Specialization> specializations = specializationsOf(kernel, sm, &combinations);
    if (combinations > kMaxSpecializations)
      diags.report(kernel.loc, DiagId::TooManySpecializations, kernel.name, combinations, kMaxSpecializations);
    // A specialisation is named `NAME__D64` in the generated code, which a
    // kernel of that name would also be.
    for (const Specialization &specialization : specializations) {
      std::string generated = specialization.kernelName(kernel.name);
      auto [owner, fresh] = generatedNames.emplace(generated, kernel.name);
      if (!fresh && owner->second != kernel.name)
        diags.report(kernel.loc, DiagId::GeneratedNameClash, kernel.name, generated + "_kernel", owner->second);
    }
    SpecializationReporter reporter(true);
    for (size_t i = 0; i < specializations.size(); ++i) {
      reporter.setSpecialization(i);
      KernelFacts facts;
      KernelChecker(kernel, specializations[i], reporter, facts).run();
    }
    reporter.flush(diags, kernel.name, specializations.size(),
                   [&](size_t i) { return specializations[i].describe(); });
    if (diags.limitReached())
      break;
  }
  return diags.errorCount() == errorsBefore;
}

KernelFacts analyzeKernel(const ast::Kernel &kernel, const Specialization &specialization) {
  KernelFacts facts;
  SpecializationReporter silent(false);
  KernelChecker(kernel, specialization, silent, facts).run();
  return facts;
}

// --- the kernel checker: kernel, names, statements -----------------------------

void KernelChecker::countAssignments(const std::vector<ast::StmtPtr> &body) {
  for (const ast::StmtPtr &stmt : body) {
    if (stmt->kind == ast::StmtKind::Assign) {
      ++assignments_[stmt->name];
    } else if (stmt->kind == ast::StmtKind::For) {
      countAssignments(stmt->body);
    } else if (stmt->kind == ast::StmtKind::If) {
      std::optional<int64_t> holds = evalConstQuietly(*stmt->exprs[0]);
      if (!holds || *holds != 0)
        countAssignments(stmt->body);
      if (!holds || *holds == 0)
        countAssignments(stmt->elseBody);
    }
  }
}

KernelChecker::KernelChecker(const ast::Kernel &kernel, const Specialization &specialization,
                             SpecializationReporter &reporter, KernelFacts &facts)
    : kernel_(kernel), specialization_(specialization), reporter_(reporter), facts_(facts) {}

void KernelChecker::run() {
  // Kernel-level names. Clashes among them were reported by the header
  // check; here the first definition wins.
  scopes_.emplace_back();
  scopeOrder_.emplace_back();
  for (const ast::Param &param : kernel_.params) {
    Symbol symbol;
    symbol.kind = Symbol::Kind::Global;
    symbol.loc = param.loc;
    symbol.param = &param;
    symbol.type.kind = Type::Kind::Global;
    symbol.type.elem = parseElemType(param.dtype).value_or(ElemType::F32);
    define(param.name, symbol);
  }
  for (const ast::Param &param : kernel_.params)
    for (const ast::Dim &dim : param.dims)
      if (dim.isSymbol() && !lookup(dim.symbol)) {
        Symbol symbol;
        symbol.kind = Symbol::Kind::Dim;
        symbol.loc = dim.loc;
        symbol.type = Type::scalar(ElemType::I32);
        symbol.value = specialization_.lookup(dim.symbol);
        define(dim.symbol, symbol);
      }
  // The built-in `sm` (before the `where`s, which may use it), unless a
  // parameter, dimension or `where` of the kernel is named so.
  bool namesSm = lookup(kBuiltinSm) || std::any_of(kernel_.wheres.begin(), kernel_.wheres.end(),
                                                   [](const ast::WhereParam &w) { return w.name == kBuiltinSm; });
  if (!namesSm) {
    Symbol symbol;
    symbol.kind = Symbol::Kind::WhereConst;
    symbol.loc = kernel_.loc;
    symbol.type = Type::scalar(ElemType::I32);
    symbol.value = specialization_.sm;
    symbol.used = true;
    define(kBuiltinSm, symbol);
    facts_.derived[kBuiltinSm] = specialization_.sm;
  }
  for (const ast::WhereParam &where : kernel_.wheres)
    if (!lookup(where.name)) {
      Symbol symbol;
      symbol.kind = Symbol::Kind::WhereConst;
      symbol.loc = where.loc;
      symbol.type = Type::scalar(ElemType::I32);
      symbol.value = where.derived ? derivedValue(where) : specialization_.lookup(where.name);
      define(where.name, symbol);
    }

  inGrid_ = true;
  for (const ast::ExprPtr &extent : kernel_.grid)
    requireIntScalar(checkValue(*extent), "a grid extent", extent->loc);
  if (kernel_.warps)
    checkWarps(*kernel_.warps);
  if (kernel_.persistent)
    checkPersistent(*kernel_.persistent);
  inGrid_ = false;

  scopes_.emplace_back();
  scopeOrder_.emplace_back();
  countAssignments(kernel_.body);
  checkStatements(kernel_.body);
  popScope();
}

Symbol *KernelChecker::lookup(const std::string &name, size_t *scopeIndex) {
  for (size_t i = scopes_.size(); i-- > 0;) {
    auto it = scopes_[i].find(name);
    if (it != scopes_[i].end()) {
      if (scopeIndex)
        *scopeIndex = i;
      return &it->second;
    }
  }
  return nullptr;
}

void KernelChecker::define(const std::string &name, Symbol symbol) {
  scopes_.back()[name] = std::move(symbol);
  scopeOrder_.back().push_back(name);
}

void KernelChecker::popScope() {
  for (const std::string &name : scopeOrder_.back()) {
    const Symbol &symbol = scopes_.back().at(name);
    // A variable whose value was already an error gets no second message.
    if (symbol.kind == Symbol::Kind::Variable && !symbol.used && !symbol.type.isInvalid())
      report(symbol.loc, DiagId::UnusedValue, name);
  }
  scopes_.pop_back();
  scopeOrder_.pop_back();
}

void KernelChecker::checkStatements(const std::vector<ast::StmtPtr> &body) {
  for (const ast::StmtPtr &stmt : body) {
    switch (stmt->kind) {
    case ast::StmtKind::Assign: checkAssign(*stmt); break;
    case ast::StmtKind::Store: checkStore(*stmt); break;
    case ast::StmtKind::For: checkFor(*stmt); break;
    case ast::StmtKind::If: checkIf(*stmt); break;
    }
  }
}

/// `where NAME = e`: e is evaluated under the specialisation, from literals,
/// the `where` values before it and `sm`; where it depends on the sizes, it
/// must pick among compile-time values, and the specialisation holds the one
/// it stands for.
std::optional<int64_t> KernelChecker::derivedValue(const ast::WhereParam &where) {
  Type type = checkValue(*where.derived);
  if (!type.isScalar() || type.elem != ElemType::I32) {
    requireIntScalar(type, fmt::format("`{}`", where.name).c_str(), where.derived->loc);
    return std::nullopt;
  }
  std::optional<int64_t> value = specialization_.pickedBySizes.count(where.name)
                                     ? specialization_.lookup(where.name)
                                     : evalConstQuietly(*where.derived);
  if (!value) {
    std::map<std::string, int64_t> known(facts_.derived.begin(), facts_.derived.end());
    for (const auto &[name, v] : specialization_.values)
      known[name] = v;
    std::optional<std::set<int64_t>> choices = possibleValues(*where.derived, known);
    if (choices && choices->size() == 1)
      value = *choices->begin();
  }
  if (!value) {
    report(where.derived->loc, DiagId::WhereNotConstant, where.name, kMaxChoices);
    return std::nullopt;
  }
  facts_.derived[where.name] = *value;
  return value;
}

/// `warps(e)`: e is evaluated under each specialisation, so that a schedule
/// can differ between them (`warps(where(D == 64, 12, 8))`). 12 (three
/// warpgroups) is allowed besides powers of two.
void KernelChecker::checkWarps(const ast::Expr &expr) {
  Type type = checkValue(expr);
  if (!type.isScalar() || type.elem != ElemType::I32) {
    requireIntScalar(type, "`warps`", expr.loc);
    return;
  }
  std::optional<int64_t> warps = evalConstQuietly(expr);
  if (!warps) {
    report(kernel_.warpsLoc, DiagId::WarpsNotConstant);
    return;
  }
  if ((!isPowerOfTwo(*warps) && *warps != 12) || *warps > 16) {
    report(kernel_.warpsLoc, DiagId::WarpsOutOfRange, *warps);
    return;
  }
  facts_.warps = *warps;
}

/// `pipelined(stages = e)`: like `warps`, e is evaluated under each
/// specialisation (`stages = where(D == 64, 4, 2)`); without it a pipelined
/// loop has 2 stages and any other loop 1.
void KernelChecker::checkStages(const ast::Stmt &stmt) {
  int64_t stages = stmt.pipelined ? 2 : 1;
  if (stmt.stages) {
    const ast::Expr &expr = *stmt.stages;
    if (requireIntScalar(checkValue(expr), "`stages`", expr.loc)) {
      if (std::optional<int64_t> value = evalConstQuietly(expr); !value)
        report(expr.loc, DiagId::StagesNotConstant);
      else if (*value < 1 || *value > 8)
        report(expr.loc, DiagId::StagesOutOfRange, *value);
      else
        stages = *value;
    }
  }
  facts_.stages[&stmt] = stages;
}

/// `persistent(e)`: a condition (or integer, nonzero for yes) evaluated
/// under each specialisation, like `warps`.
void KernelChecker::checkPersistent(const ast::Expr &expr) {
  if (std::optional<bool> yes = compileTimeCondition(expr, DiagId::PersistentNotCondition,
                                                     DiagId::PersistentNotConstant, kernel_.persistentLoc))
    facts_.persistent = *yes ? 1 : 0;
}

std::optional<bool> KernelChecker::compileTimeCondition(const ast::Expr &expr, DiagId notCondition,
                                                        DiagId notConstant, SourceLocation constantLoc) {
  Type type = checkValue(expr);
  if (type.isInvalid())
    return std::nullopt;
  if (!type.isScalar() || (type.elem != ElemType::I32 && type.elem != ElemType::I1)) {
    report(expr.loc, notCondition, describeType(type));
    return std::nullopt;
  }
  std::optional<int64_t> value = evalConstQuietly(expr);
  if (!value) {
    report(constantLoc, notConstant);
    return std::nullopt;
  }
  return *value != 0;
}

void KernelChecker::checkAssign(const ast::Stmt &stmt) {
  Type value = checkValue(*stmt.exprs[0]);
  size_t scopeIndex = 0;
  Symbol *existing = lookup(stmt.name, &scopeIndex);
  if (!existing) {
    Symbol symbol;
    symbol.kind = Symbol::Kind::Variable;
    symbol.loc = stmt.nameLoc;
    symbol.type = value;
    // A variable assigned once from a compile-time integer is one too (it
    // may size tiles).
    if (assignments_[stmt.name] == 1 && value.isScalar() && value.elem == ElemType::I32) {
      symbol.value = evalConstQuietly(*stmt.exprs[0]);
    }
    define(stmt.name, symbol);
    return;
  }
  if (existing->kind != Symbol::Kind::Variable) {
    report(stmt.nameLoc, DiagId::AssignToReadOnly, stmt.name, describeSymbolKind(existing->kind));
    report(existing->loc, DiagId::PreviousDefinition);
    return;
  }
  // A variable of an enclosing scope assigned inside a loop body is carried
  // from one iteration to the next, so its type must not change.
  bool loopCarried = scopeIndex + 1 < scopes_.size();
  if (loopCarried) {
    if (!existing->type.isInvalid() && !value.isInvalid() && !existing->type.sameValueType(value))
      report(stmt.nameLoc, DiagId::LoopCarriedTypeChange, stmt.name, typeString(existing->type), typeString(value));
    return;
  }
  existing->type = value;
}

void KernelChecker::checkStore(const ast::Stmt &stmt) {
  const ast::Expr &destination = *stmt.exprs[0];
  const ast::Expr &valueExpr = *stmt.exprs[1];
  Type slice;
  if (destination.kind != ast::ExprKind::Slice)
    report(destination.loc, DiagId::LoadNeedsSlice, stmt.accumulate ? "atomic_add" : "store");
  else
    slice = checkSlice(destination, /*forStore=*/true);
  Type value = checkValue(valueExpr);
  if (slice.isInvalid() || value.isInvalid())
    return;
  if (!requireTile(value, "the stored value", valueExpr.loc))
    return;
  if (value.shape != slice.shape) {
    report(valueExpr.loc, DiagId::StoreShapeMismatch, shapeString(value.shape), shapeString(slice.shape));
    return;
  }
  if (value.elem != slice.elem) {
    const char *to = elemTypeName(slice.elem);
    report(valueExpr.loc, DiagId::StoreDTypeMismatch, elemTypeName(value.elem), destination.name, to, to);
    return;
  }
  // The GPU adds f32 in memory; 16-bit sums would round at every addition.
  if (stmt.accumulate && slice.elem != ElemType::F32)
    report(destination.nameLoc, DiagId::AtomicAddNeedsF32, destination.name, elemTypeName(slice.elem));
}

void KernelChecker::checkFor(const ast::Stmt &stmt) {
  requireIntScalar(checkValue(*stmt.exprs[0]), "the start of a loop range", stmt.exprs[0]->loc);
  requireIntScalar(checkValue(*stmt.exprs[1]), "the end of a loop range", stmt.exprs[1]->loc);
  checkStages(stmt);
  if (Symbol *existing = lookup(stmt.name)) {
    report(stmt.nameLoc, DiagId::Redefinition, stmt.name);
    report(existing->loc, DiagId::PreviousDefinition);
  }
  scopes_.emplace_back();
  scopeOrder_.emplace_back();
  Symbol induction;
  induction.kind = Symbol::Kind::LoopVar;
  induction.loc = stmt.nameLoc;
  induction.type = Type::scalar(ElemType::I32);
  define(stmt.name, induction);
  checkStatements(stmt.body);
  popScope();
}

/// `if`: the condition is known under each specialisation, which compiles
/// the statements of the branch it selects as if they were written in place
/// of the `if` (the other branch is only parsed, as code for another target
/// or size may not make sense here).
void KernelChecker::checkIf(const ast::Stmt &stmt) {
  const ast::Expr &condition = *stmt.exprs[0];
  std::optional<bool> holds =
      compileTimeCondition(condition, DiagId::IfNotCondition, DiagId::IfNotConstant, condition.loc);
  if (!holds)
    return;
  facts_.conditions[&stmt] = *holds;
  checkStatements(facts_.takenBranch(stmt));
}

} // namespace tkc::sema
