#include "frontend/AST.h"

#include <fmt/format.h>

namespace tkc::ast {

const char *spellingOf(UnaryOp op) { return op == UnaryOp::Neg ? "-" : "!"; }

const char *spellingOf(BinaryOp op) {
  switch (op) {
  case BinaryOp::Add: return "+";
  case BinaryOp::Sub: return "-";
  case BinaryOp::Mul: return "*";
  case BinaryOp::Div: return "/";
  case BinaryOp::Rem: return "%";
  case BinaryOp::Eq: return "==";
  case BinaryOp::Ne: return "!=";
  case BinaryOp::Lt: return "<";
  case BinaryOp::Le: return "<=";
  case BinaryOp::Gt: return ">";
  case BinaryOp::Ge: return ">=";
  case BinaryOp::And: return "&&";
  case BinaryOp::Or: return "||";
  }
  return "?";
}

bool isComparison(BinaryOp op) {
  return op == BinaryOp::Eq || op == BinaryOp::Ne || op == BinaryOp::Lt || op == BinaryOp::Le ||
         op == BinaryOp::Gt || op == BinaryOp::Ge;
}

bool isLogical(BinaryOp op) { return op == BinaryOp::And || op == BinaryOp::Or; }

namespace {

class Dumper {
public:
  std::string out;

  void file(const File &file) {
    line(0, "File");
    for (const Kernel &kernel : file.kernels)
      this->kernel(kernel);
  }

private:
  template <typename... Args> void line(int depth, fmt::format_string<Args...> format, Args &&...args) {
    out.append(static_cast<size_t>(depth) * 2, ' ');
    out += fmt::format(format, std::forward<Args>(args)...);
    out += '\n';
  }

  static std::string at(SourceLocation loc) { return fmt::format("<{}:{}>", loc.line, loc.column); }

  void kernel(const Kernel &kernel) {
    line(1, "Kernel {} {}", kernel.name, at(kernel.loc));
    for (const Param &param : kernel.params) {
      std::string dims;
      for (const Dim &dim : param.dims) {
        if (!dims.empty())
          dims += ", ";
        dims += dim.isDerived() ? printDimExpr(*dim.expr) : dim.isSymbol() ? dim.symbol : std::to_string(dim.size);
      }
      line(2, "Param {}: {}{}[{}] {}", param.name, param.isOutput ? "out " : "", param.dtype, dims, at(param.loc));
    }
    for (const WhereParam &where : kernel.wheres) {
      if (where.derived) {
        line(2, "Where {} = {}", where.name, at(where.loc));
        expr(3, *where.derived);
      } else {
        line(2, "Where {} in {{{}}} {}", where.name, fmt::join(where.values, ", "), at(where.loc));
      }
    }
    if (kernel.hasGrid) {
      line(2, "Grid {}", at(kernel.gridLoc));
      for (const ExprPtr &extent : kernel.grid)
        expr(3, *extent);
    }
    if (kernel.hasWarps && kernel.warps) {
      line(2, "Warps {}", at(kernel.warpsLoc));
      expr(3, *kernel.warps);
    }
    if (kernel.hasPersistent && kernel.persistent) {
      line(2, "Persistent {}", at(kernel.persistentLoc));
      expr(3, *kernel.persistent);
    }
    line(2, "Body");
    for (const StmtPtr &stmt : kernel.body)
      this->stmt(3, *stmt);
  }

  void stmt(int depth, const Stmt &stmt) {
    switch (stmt.kind) {
    case StmtKind::Assign:
      line(depth, "Assign {} {}", stmt.name, at(stmt.loc));
      expr(depth + 1, *stmt.exprs[0]);
      return;
    case StmtKind::Store:
      line(depth, "{} {}", stmt.accumulate ? "AtomicAdd" : "Store", at(stmt.loc));
      expr(depth + 1, *stmt.exprs[0]);
      expr(depth + 1, *stmt.exprs[1]);
      return;
    case StmtKind::For:
      line(depth, "For {}{} {}", stmt.name, stmt.pipelined ? " pipelined" : "", at(stmt.loc));
      expr(depth + 1, *stmt.exprs[0]);
      expr(depth + 1, *stmt.exprs[1]);
      if (stmt.stages) {
        line(depth + 1, "Stages");
        expr(depth + 2, *stmt.stages);
      }
      line(depth + 1, "Body");
      for (const StmtPtr &inner : stmt.body)
        this->stmt(depth + 2, *inner);
      return;
    case StmtKind::If:
      line(depth, "If {}", at(stmt.loc));
      expr(depth + 1, *stmt.exprs[0]);
      line(depth + 1, "Then");
      for (const StmtPtr &inner : stmt.body)
        this->stmt(depth + 2, *inner);
      if (!stmt.elseBody.empty()) {
        line(depth + 1, "Else");
        for (const StmtPtr &inner : stmt.elseBody)
          this->stmt(depth + 2, *inner);
      }
      return;
    }
  }

  void expr(int depth, const Expr &e) {
    switch (e.kind) {
    case ExprKind::IntLiteral: line(depth, "Int {} {}", e.intValue, at(e.loc)); return;
    case ExprKind::FloatLiteral: line(depth, "Float {} {}", e.spelling, at(e.loc)); return;
    case ExprKind::Inf: line(depth, "Inf {}", at(e.loc)); return;
    case ExprKind::Name: line(depth, "Name {} {}", e.name, at(e.loc)); return;
    case ExprKind::BlockIndex: line(depth, "BlockIndex {}.{} {}", e.name, e.field, at(e.loc)); return;
    case ExprKind::Call: line(depth, "Call {} {}", e.name, at(e.loc)); break;
    case ExprKind::Unary: line(depth, "Unary {} {}", spellingOf(e.unaryOp), at(e.loc)); break;
    case ExprKind::Binary: line(depth, "Binary {} {}", spellingOf(e.binaryOp), at(e.loc)); break;
    case ExprKind::Broadcast:
      line(depth, "Broadcast {} {}", e.newAxis == 1 ? "[:, new]" : "[new, :]", at(e.loc));
      break;
    case ExprKind::Transpose: line(depth, "Transpose {}", at(e.loc)); break;
    case ExprKind::TileType: line(depth, "TileType {} {}", e.name, at(e.loc)); break;
    case ExprKind::Slice:
      line(depth, "Slice {} {}", e.name, at(e.loc));
      for (const Subscript &sub : e.subscripts) {
        switch (sub.kind) {
        case Subscript::Kind::All: line(depth + 1, "All {}", at(sub.loc)); break;
        case Subscript::Kind::Range:
          line(depth + 1, "Range {}", at(sub.loc));
          expr(depth + 2, *sub.start);
          expr(depth + 2, *sub.extent);
          break;
        case Subscript::Kind::Index:
          line(depth + 1, "Index {}", at(sub.loc));
          expr(depth + 2, *sub.start);
          break;
        }
      }
      return;
    }
    for (const ExprPtr &operand : e.operands)
      expr(depth + 1, *operand);
  }
};

} // namespace

std::string dumpAST(const File &file) {
  Dumper dumper;
  dumper.file(file);
  return std::move(dumper.out);
}

} // namespace tkc::ast
