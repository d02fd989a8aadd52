#pragma once
#include "frontend/AST.h"
#include "frontend/SemaTypes.h"
#include "support/Diagnostics.h"

#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tkc::sema {

/// One choice of value for every `where` parameter of a kernel, in
/// declaration order. A kernel without `where` has one, empty, specialisation.
struct Specialization {
  std::vector<std::pair<std::string, int64_t>> values;
  /// The names among `values` of derived constants that depend on the sizes
  /// (`where BN = where(N >= 2048, 256, 128)`): the launcher picks this
  /// specialisation where the sizes give these values (SemaChoices.h).
  std::set<std::string> pickedBySizes;
  /// The target's compute capability (80, 90): the value of the built-in
  /// constant `sm`, so that a schedule can differ between targets.
  int64_t sm = 80;

  std::optional<int64_t> lookup(const std::string &name) const;
  /// `attn__D64__causal0`; the plain kernel name when there are no values.
  std::string kernelName(const std::string &base) const;
  /// `D = 64, causal = 0`
  std::string describe() const;
};

/// A kernel may expand to at most this many specialisations.
constexpr size_t kMaxSpecializations = 64;

/// The cartesian product of the kernel's `where` values, and of the values
/// that each derived constant depending on the sizes can take under them,
/// first `where` varying slowest; capped at kMaxSpecializations
/// (`uncapped`, when given, receives the number before the cap).
std::vector<Specialization> specializationsOf(const ast::Kernel &kernel, int64_t sm = 80, size_t *uncapped = nullptr);

/// Everything the checker worked out about one kernel under one
/// specialisation that lowering needs and cannot see in the syntax.
struct KernelFacts {
  std::unordered_map<const ast::Expr *, Type> types;
  /// Slice expressions: per global dim, the extent read (0 = dropped).
  std::unordered_map<const ast::Expr *, std::vector<int64_t>> sliceSizes;
  /// Slices of `load` indexed by a tile of indices (a gather): that dim.
  std::unordered_map<const ast::Expr *, size_t> gatherAxis;
  /// `fill` calls: the constant.
  std::unordered_map<const ast::Expr *, double> fillValues;
  /// Warps per block under this specialisation.
  int64_t warps = 4;
  /// `for` statements: their pipeline depth under this specialisation.
  std::unordered_map<const ast::Stmt *, int64_t> stages;
  /// `persistent(e)` under this specialisation: 1 or 0, or -1 when the
  /// kernel leaves the choice to the compiler.
  int persistent = -1;
  /// The values of `where NAME = e` under this specialisation.
  std::map<std::string, int64_t> derived;
  /// `if` statements: whether the condition holds under this specialisation.
  std::unordered_map<const ast::Stmt *, bool> conditions;

  /// The statements of an `if` that this specialisation compiles.
  const std::vector<ast::StmtPtr> &takenBranch(const ast::Stmt &stmt) const;

  const Type &typeOf(const ast::Expr &expr) const;
};

/// Checks every kernel of the file under every specialisation and reports
/// problems. Returns true if there were no errors. A problem that appears
/// only under some specialisations gets a note naming the first of them.
bool checkFile(const ast::File &file, DiagnosticEngine &diags, int64_t sm = 80);

/// Re-derives the facts of one kernel that checkFile accepted.
KernelFacts analyzeKernel(const ast::Kernel &kernel, const Specialization &specialization);

} // namespace tkc::sema
