#pragma once
#include "support/DimExpr.h"
#include "support/SourceLocation.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

/// The syntax tree of a .tk file: plain structs that mirror grammar/tk.ebnf.
/// The parser builds it; Sema checks it without changing it; lowering reads it.
namespace tkc::ast {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind {
  IntLiteral,   ///< 42
  FloatLiteral, ///< 1.5, 1e-5
  Inf,          ///< inf
  Name,         ///< acc, N, causal
  BlockIndex,   ///< block.x
  Call,         ///< exp(x), load(X[...]), bf16(x)
  Unary,        ///< -x, !c
  Binary,       ///< a + b, a < b, a && b
  Broadcast,    ///< v[:, new], v[new, :]
  Transpose,    ///< b^T
  TileType,     ///< f32[64, D] (first argument of zeros and fill)
  Slice,        ///< X[i +: 64, :] (argument of load and store)
};

enum class UnaryOp { Neg, Not };
enum class BinaryOp { Add, Sub, Mul, Div, Rem, Eq, Ne, Lt, Le, Gt, Ge, And, Or };

const char *spellingOf(UnaryOp op);
const char *spellingOf(BinaryOp op);
bool isComparison(BinaryOp op);
bool isLogical(BinaryOp op);

/// One subscript of a slice: `:`, `start +: extent`, or a single index.
struct Subscript {
  enum class Kind { All, Range, Index };
  Kind kind = Kind::All;
  SourceLocation loc;
  std::unique_ptr<Expr> start;  ///< Range and Index
  std::unique_ptr<Expr> extent; ///< Range
};

struct Expr {
  ExprKind kind;
  SourceLocation loc;

  // IntLiteral / FloatLiteral
  int64_t intValue = 0;
  double floatValue = 0;
  std::string spelling; ///< literal text as written

  // Name: the name. Call: the callee. BlockIndex: the object (`block`).
  // TileType and Slice: the dtype or tensor name.
  std::string name;
  SourceLocation nameLoc;

  // BlockIndex: the field after the dot and its location.
  std::string field;
  SourceLocation fieldLoc;

  // Unary / Binary
  UnaryOp unaryOp = UnaryOp::Neg;
  BinaryOp binaryOp = BinaryOp::Add;

  /// Call arguments, TileType extents, Unary/Broadcast/Transpose operand
  /// (operands[0]), Binary lhs and rhs (operands[0], operands[1]).
  std::vector<ExprPtr> operands;

  /// Broadcast: which axis `new` stands in: 1 for `v[:, new]`, 0 for `v[new, :]`.
  int newAxis = 1;

  /// Slice subscripts.
  std::vector<Subscript> subscripts;

  /// Height of the tree below and including this node (a leaf is 1). Later
  /// phases recurse over expressions, so the parser bounds it.
  uint32_t depth = 1;

  Expr(ExprKind kind, SourceLocation loc) : kind(kind), loc(loc) {}
  const Expr &operand(size_t i) const { return *operands[i]; }
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;

enum class StmtKind { Assign, Store, For, If };

struct Stmt {
  StmtKind kind;
  SourceLocation loc;

  // Assign: `name = value`. For: the loop variable.
  std::string name;
  SourceLocation nameLoc;

  /// Assign: the value. Store: the slice, then the value. For: lo, then hi.
  /// If: the condition.
  std::vector<ExprPtr> exprs;

  // Store: `atomic_add(slice, value)`, which adds the value to the slice.
  bool accumulate = false;

  // For
  bool pipelined = false;
  ExprPtr stages; ///< `pipelined(stages = e)`: e, a compile-time integer; null for the default
  std::vector<StmtPtr> body; ///< For: the loop body. If: the statements taken when the condition holds.

  // If: the statements taken otherwise (an `else if` is one If statement).
  std::vector<StmtPtr> elseBody;

  Stmt(StmtKind kind, SourceLocation loc) : kind(kind), loc(loc) {}
};

/// One dimension of a parameter: a symbol, a literal size, or an
/// expression over symbols bound by other dims (`cdiv(M, 64)`).
struct Dim {
  std::string symbol; ///< empty for a literal size or an expression
  int64_t size = 0;
  std::optional<DimExpr> expr; ///< a derived dim
  SourceLocation loc;
  bool isSymbol() const { return !symbol.empty(); }
  bool isDerived() const { return expr.has_value(); }
};

struct Param {
  std::string name;
  SourceLocation loc;
  bool isOutput = false;
  std::string dtype;
  SourceLocation dtypeLoc;
  std::vector<Dim> dims;
};

/// `where NAME in {v1, v2, ...}`
/// `where NAME in {v, ...}` (a specialisation axis) or `where NAME = e`
/// (derived: a constant computed from the ones before it, per
/// specialisation; no axis of its own).
struct WhereParam {
  std::string name;
  SourceLocation loc;
  std::vector<int64_t> values;
  std::vector<SourceLocation> valueLocs;
  ExprPtr derived;
};

struct Kernel {
  std::string name;
  SourceLocation loc; ///< the kernel's name
  std::vector<Param> params;
  std::vector<WhereParam> wheres;

  bool hasGrid = false;
  SourceLocation gridLoc;
  std::vector<ExprPtr> grid;

  bool hasWarps = false;
  /// `warps(e)`: a constant expression over `where` values, evaluated per
  /// specialisation (KernelFacts::warps); null means the default, 4.
  ExprPtr warps;
  SourceLocation warpsLoc;

  bool hasPersistent = false;
  /// `persistent(e)`: a constant condition over `where` values, evaluated
  /// per specialisation (KernelFacts::persistent); null leaves the choice
  /// to the compiler.
  ExprPtr persistent;
  SourceLocation persistentLoc;

  std::vector<StmtPtr> body;
  SourceLocation bodyEnd; ///< the closing brace
};

struct File {
  std::vector<Kernel> kernels;
};

/// The indented tree printed by --emit=ast.
std::string dumpAST(const File &file);

} // namespace tkc::ast
