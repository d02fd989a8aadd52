#pragma once
// The semantic checker of one kernel body under one specialisation. Shared
// by Sema.cpp (kernel, statements, names), SemaExpr.cpp (operators, shapes)
// and SemaCalls.cpp (the built-in operations); not part of the public API.
#include "frontend/Sema.h"
#include "frontend/SemaReporter.h"

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace tkc::sema {

struct Symbol {
  enum class Kind { Global, Dim, WhereConst, Variable, LoopVar };
  Kind kind = Kind::Variable;
  SourceLocation loc;
  Type type;                          ///< Variable: its current type
  const ast::Param *param = nullptr;  ///< Global
  std::optional<int64_t> value;       ///< Dim (when specialised), WhereConst, and a Variable
                                      ///< assigned once, from a compile-time integer
  bool used = false;
};

/// "a variable", "a kernel parameter", ... for messages.
const char *describeSymbolKind(Symbol::Kind kind);

class KernelChecker {
public:
  KernelChecker(const ast::Kernel &kernel, const Specialization &specialization, SpecializationReporter &reporter,
                KernelFacts &facts);
  void run();

  // --- names and scopes (Sema.cpp) ---
  Symbol *lookup(const std::string &name, size_t *scopeIndex = nullptr);
  void define(const std::string &name, Symbol symbol);
  void popScope();

  // --- statements (Sema.cpp) ---
  void checkStatements(const std::vector<ast::StmtPtr> &body);
  void checkAssign(const ast::Stmt &stmt);
  void checkStore(const ast::Stmt &stmt);
  void checkFor(const ast::Stmt &stmt);
  void checkIf(const ast::Stmt &stmt);
  /// Counts the assignments to each name in `body` (into assignments_): in
  /// loops, and in the branch of an `if` whose condition is already known
  /// (in both otherwise).
  void countAssignments(const std::vector<ast::StmtPtr> &body);

  // --- expressions (SemaExpr.cpp) ---
  /// Any expression; records and returns its type, marks and all.
  Type check(const ast::Expr &expr);
  /// A value: no global, slice, tile type, `^T` or broadcast mark.
  Type checkValue(const ast::Expr &expr);
  /// An operand of an elementwise operation: broadcast marks allowed.
  Type checkOperand(const ast::Expr &expr);
  /// Rejects what `check` accepted but a value context does not.
  Type rejectNonValue(const ast::Expr &expr, Type type, bool allowBroadcast, bool allowTranspose);
  Type checkName(const ast::Expr &expr);
  Type checkBlockIndex(const ast::Expr &expr);
  Type checkUnary(const ast::Expr &expr);
  Type checkBinary(const ast::Expr &expr);
  Type checkBroadcast(const ast::Expr &expr);
  Type checkTranspose(const ast::Expr &expr);

  /// The shape of an elementwise operation over `operands` (scalars, tiles
  /// and broadcast-marked vectors); nullopt after reporting a mismatch.
  /// An empty shape with `isTile` false means every operand is a scalar.
  std::optional<std::vector<int64_t>> combineShapes(const char *opName, SourceLocation opLoc,
                                                    const std::vector<std::pair<const ast::Expr *, Type>> &operands,
                                                    bool &isTile);
  /// The element type operands of `opName` are converted to, or nullopt
  /// after reporting.
  std::optional<ElemType> commonElem(const char *opName, SourceLocation loc, const Type &a, const Type &b);

  bool requireIntScalar(const Type &type, const std::string &what, SourceLocation loc);
  bool requireNumeric(const Type &type, const std::string &what, SourceLocation loc);
  bool requireTile(const Type &type, const std::string &what, SourceLocation loc);

  /// A compile-time integer: literals, `where` values, specialised dims,
  /// variables assigned once from such an integer, and + - * / % cdiv min
  /// max over them. Reports and returns nullopt otherwise.
  std::optional<int64_t> evalConst(const ast::Expr &expr);
  /// evalConst without reporting why an expression is not constant.
  std::optional<int64_t> evalConstQuietly(const ast::Expr &expr) {
    quiet_ = true;
    std::optional<int64_t> value = evalConst(expr);
    quiet_ = false;
    return value;
  }
  void checkWarps(const ast::Expr &expr);
  void checkStages(const ast::Stmt &stmt);
  void checkPersistent(const ast::Expr &expr);
  /// A compile-time condition (a comparison, or an integer: nonzero holds)
  /// under this specialisation; reports `notCondition` at the expression or
  /// `notConstant` at `constantLoc` otherwise.
  std::optional<bool> compileTimeCondition(const ast::Expr &expr, DiagId notCondition, DiagId notConstant,
                                           SourceLocation constantLoc);
  std::optional<int64_t> derivedValue(const ast::WhereParam &where);
  /// A positive compile-time extent (`what` names it in messages).
  std::optional<int64_t> evalExtent(const ast::Expr &expr, const char *what);
  /// The value of a `fill`: a number, `inf`, a `where` value, or minus one.
  std::optional<double> evalConstNumber(const ast::Expr &expr);
  /// Checks a tile shape's rank and size; reports at `loc`.
  bool checkTileShape(const std::vector<int64_t> &shape, SourceLocation loc);

  // --- built-in operations (SemaCalls.cpp) ---
  Type checkCall(const ast::Expr &call);
  Type checkSlice(const ast::Expr &slice, bool forStore);
  /// A tile in an index position of a slice (a gather): where it may stand.
  bool checkGatherIndex(const ast::Expr &slice, const ast::Subscript &sub, const Type &index, bool forStore,
                        bool another);
  Type checkTileSpec(const ast::Expr &spec);
  Type checkLoad(const ast::Expr &call);
  Type checkConstantTile(const ast::Expr &call);
  Type checkMma(const ast::Expr &call);
  Type checkMathFunction(const ast::Expr &call);
  Type checkMinMax(const ast::Expr &call);
  Type checkSelect(const ast::Expr &call);
  Type checkCast(const ast::Expr &call, ElemType to);
  Type checkReduction(const ast::Expr &call);
  Type checkIndexTile(const ast::Expr &call);
  Type checkCdiv(const ast::Expr &call);
  bool checkArgCount(const ast::Expr &call, size_t expected);

  template <typename... Args> void report(SourceLocation loc, DiagId id, Args &&...args) {
    if (quiet_)
      return;
    reporter_.report(loc, id, std::forward<Args>(args)...);
  }
  Type record(const ast::Expr &expr, Type type) {
    facts_.types[&expr] = type;
    return type;
  }

  const ast::Kernel &kernel_;
  const Specialization &specialization_;
  SpecializationReporter &reporter_;
  KernelFacts &facts_;
  /// scopes_[0]: parameters, dims and `where` values; [1]: the kernel body;
  /// one more per enclosing loop body.
  std::vector<std::unordered_map<std::string, Symbol>> scopes_;
  /// Names in definition order per scope, for deterministic warnings.
  std::vector<std::vector<std::string>> scopeOrder_;
  bool inGrid_ = false;
  /// Assignments per variable name in the whole body.
  std::unordered_map<std::string, int> assignments_;
  /// Set while probing whether an expression is constant: no reports.
  bool quiet_ = false;
};

} // namespace tkc::sema
