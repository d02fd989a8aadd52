#include "lowering/LowerToIR.h"
#include "frontend/SemaDims.h"

#include "frontend/Sema.h"

#include <cmath>
#include <limits>
#include <map>
#include <set>

namespace tkc {

namespace {

using ast::Expr;
using ast::ExprKind;
using ir::OpKind;
using sema::ElemType;

ir::DType toIR(ElemType elem) {
  switch (elem) {
  case ElemType::I1: return ir::DType::I1;
  case ElemType::I32: return ir::DType::I32;
  case ElemType::F32: return ir::DType::F32;
  case ElemType::BF16: return ir::DType::BF16;
  case ElemType::F16: return ir::DType::F16;
  case ElemType::F8E4M3: return ir::DType::F8E4M3;
  case ElemType::F8E5M2: return ir::DType::F8E5M2;
  }
  return ir::DType::F32;
}

ir::Type toIR(const sema::Type &type) {
  if (type.isTile())
    return ir::Type::tile(toIR(type.elem), type.shape);
  return ir::Type::scalar(toIR(type.elem));
}

/// The IR op of an elementwise binary operator.
OpKind binaryOpKind(ast::BinaryOp op) {
  switch (op) {
  case ast::BinaryOp::Add: return OpKind::Add;
  case ast::BinaryOp::Sub: return OpKind::Sub;
  case ast::BinaryOp::Mul: return OpKind::Mul;
  case ast::BinaryOp::Div: return OpKind::Div;
  case ast::BinaryOp::Rem: return OpKind::Rem;
  case ast::BinaryOp::Eq: return OpKind::Eq;
  case ast::BinaryOp::Ne: return OpKind::Ne;
  case ast::BinaryOp::Lt: return OpKind::Lt;
  case ast::BinaryOp::Le: return OpKind::Le;
  case ast::BinaryOp::Gt: return OpKind::Gt;
  case ast::BinaryOp::Ge: return OpKind::Ge;
  case ast::BinaryOp::And: return OpKind::And;
  case ast::BinaryOp::Or: return OpKind::Or;
  }
  return OpKind::Add;
}

std::optional<OpKind> mathOpKind(const std::string &name) {
  static const std::map<std::string, OpKind> kOps = {
      {"exp", OpKind::Exp},   {"exp2", OpKind::Exp2}, {"log", OpKind::Log}, {"log2", OpKind::Log2},
      {"sqrt", OpKind::Sqrt}, {"rsqrt", OpKind::Rsqrt}, {"abs", OpKind::Abs}, {"tanh", OpKind::Tanh},
      {"erf", OpKind::Erf},   {"sigmoid", OpKind::Sigmoid}, {"silu", OpKind::Silu},
  };
  auto it = kOps.find(name);
  if (it == kOps.end())
    return std::nullopt;
  return it->second;
}

/// Names assigned anywhere in `body` (nested loops and the taken branches
/// of `if`s included), in order of first assignment.
void collectAssignedNames(const std::vector<ast::StmtPtr> &body, const sema::KernelFacts &facts,
                          std::vector<std::string> &names, std::set<std::string> &seen) {
  for (const ast::StmtPtr &stmt : body) {
    if (stmt->kind == ast::StmtKind::Assign && seen.insert(stmt->name).second)
      names.push_back(stmt->name);
    if (stmt->kind == ast::StmtKind::For)
      collectAssignedNames(stmt->body, facts, names, seen);
    if (stmt->kind == ast::StmtKind::If)
      collectAssignedNames(facts.takenBranch(*stmt), facts, names, seen);
  }
}

/// Lowers one kernel under one specialisation.
class KernelLowering {
public:
  KernelLowering(const ast::Kernel &kernel, const sema::Specialization &specialization, ir::Kernel &out)
      : kernel_(kernel), specialization_(specialization), out_(out),
        facts_(sema::analyzeKernel(kernel, specialization)) {}

  void run() {
    out_.name = specialization_.kernelName(kernel_.name);
    out_.sourceName = kernel_.name;
    // The constants that the sizes pick are no launcher argument: the
    // launch block's guards say where the launcher runs this kernel.
    for (const auto &[name, value] : specialization_.values)
      if (!specialization_.pickedBySizes.count(name))
        out_.specialization.emplace_back(name, value);
    out_.warps = static_cast<int>(facts_.warps);
    out_.persistent = facts_.persistent;
    out_.loc = kernel_.loc;
    createParameters();
    lowerLaunch();
    lowerBody();
  }

private:
  // --- parameters -------------------------------------------------------------

  void createParameters() {
    // Global tensors first, then one i32 per dimension symbol that is still
    // a runtime value (specialised ones became static sizes).
    std::vector<std::string> symbols;
    std::set<std::string> seen;
    std::map<std::string, std::string> derivedSymbols = derivedDimSymbols();
    for (const ast::Param &param : kernel_.params) {
      std::vector<ir::Dim> dims;
      for (const ast::Dim &dim : param.dims) {
        ir::Dim irDim;
        if (dim.isDerived()) {
          irDim.derived = printDimExpr(*dim.expr);
          if (auto value = sema::staticDimSize(dim, specialization_)) {
            irDim.size = *value;
          } else {
            irDim.symbol = derivedSymbols.at(irDim.derived);
            if (seen.insert(irDim.symbol).second)
              symbols.push_back(irDim.symbol);
          }
        } else if (!dim.isSymbol()) {
          irDim.size = dim.size;
        } else if (auto value = specialization_.lookup(dim.symbol)) {
          irDim.size = *value;
        } else {
          irDim.symbol = dim.symbol;
          if (seen.insert(dim.symbol).second)
            symbols.push_back(dim.symbol);
        }
        dims.push_back(irDim);
      }
      auto elem = sema::parseElemType(param.dtype).value_or(ElemType::F32);
      globals_[param.name] = out_.body.addArg(ir::Type::global(toIR(elem), dims, param.isOutput), param.name);
    }
    for (const std::string &symbol : symbols) {
      launchDims_[symbol] = out_.launch.addArg(ir::Type::scalar(ir::DType::I32), symbol);
      bodyDims_[symbol] = out_.body.addArg(ir::Type::scalar(ir::DType::I32), symbol);
    }
  }

  /// The i32 parameter of each derived dim that is a runtime value, by its
  /// text: `dWp_dim0` for dim 0 of `dWp`, the first tensor that has it
  /// (renamed where a source name has that spelling).
  std::map<std::string, std::string> derivedDimSymbols() const {
    std::set<std::string> taken;
    for (const ast::Param &param : kernel_.params) {
      taken.insert(param.name);
      for (const ast::Dim &dim : param.dims)
        if (dim.isSymbol())
          taken.insert(dim.symbol);
    }
    for (const ast::WhereParam &where : kernel_.wheres)
      taken.insert(where.name);
    std::map<std::string, std::string> names;
    for (const ast::Param &param : kernel_.params)
      for (size_t d = 0; d < param.dims.size(); ++d) {
        if (!param.dims[d].isDerived())
          continue;
        std::string text = printDimExpr(*param.dims[d].expr);
        if (names.count(text))
          continue;
        std::string name = fmt::format("{}_dim{}", param.name, d);
        while (taken.count(name))
          name += "_";
        taken.insert(name);
        names[text] = name;
      }
    return names;
  }

  // --- launch block -----------------------------------------------------------

  void lowerLaunch() {
    ir::Builder builder(out_.launch);
    builder_ = &builder;
    dims_ = &launchDims_;
    std::vector<ir::Value *> extents;
    for (const ast::ExprPtr &extent : kernel_.grid)
      extents.push_back(lower(*extent));
    // A constant that the sizes pick: the launcher runs this specialisation
    // where the sizes give its value here.
    for (const ast::WhereParam &where : kernel_.wheres)
      if (specialization_.pickedBySizes.count(where.name)) {
        ir::Value *picked = lower(*where.derived);
        builder.setLoc(where.loc);
        builder.create(OpKind::VariantGuard, {picked}, {},
                       {{"name", ir::Attr(where.name)}, {"value", ir::Attr(*specialization_.lookup(where.name))}});
      }
    builder.setLoc(kernel_.gridLoc);
    while (extents.size() < 3)
      extents.push_back(builder.constInt(1));
    builder.create(OpKind::Grid, extents, {});
    builder_ = nullptr;
  }

  // --- body -------------------------------------------------------------------

  void lowerBody() {
    ir::Builder builder(out_.body);
    builder_ = &builder;
    dims_ = &bodyDims_;
    lowerStatements(kernel_.body);
    builder_ = nullptr;
  }

  void lowerStatements(const std::vector<ast::StmtPtr> &body) {
    for (const ast::StmtPtr &stmt : body) {
      switch (stmt->kind) {
      case ast::StmtKind::Assign: lowerAssign(*stmt); break;
      case ast::StmtKind::Store: lowerStore(*stmt); break;
      case ast::StmtKind::For: lowerFor(*stmt); break;
      case ast::StmtKind::If: lowerStatements(facts_.takenBranch(*stmt)); break;
      }
    }
  }

  void lowerAssign(const ast::Stmt &stmt) {
    ir::Value *value = lower(*stmt.exprs[0]);
    // `m = m_new` makes m another name for an existing value: keep its hint.
    if (value->nameHint.empty())
      value->nameHint = stmt.name;
    variables_[stmt.name] = value;
  }

  void lowerStore(const ast::Stmt &stmt) {
    const Expr &slice = *stmt.exprs[0];
    ir::Value *tile = lower(*stmt.exprs[1]);
    std::vector<ir::Value *> operands{globals_.at(slice.name), tile};
    lowerOffsets(slice, operands);
    builder_->setLoc(stmt.loc);
    std::map<std::string, ir::Attr> attrs{{"sizes", ir::Attr(facts_.sliceSizes.at(&slice))}};
    if (stmt.accumulate)
      attrs["accumulate"] = ir::Attr(int64_t(1));
    builder_->create(OpKind::Store, operands, {}, attrs);
  }

  void lowerFor(const ast::Stmt &stmt) {
    ir::Value *lo = lower(*stmt.exprs[0]);
    ir::Value *hi = lower(*stmt.exprs[1]);
    builder_->setLoc(stmt.loc);
    ir::Value *step = builder_->constInt(1);

    // Variables defined before the loop and assigned in it are carried.
    std::vector<std::string> assigned;
    std::set<std::string> seen;
    collectAssignedNames(stmt.body, facts_, assigned, seen);
    std::vector<std::string> carried;
    std::vector<ir::Value *> operands{lo, hi, step};
    std::vector<ir::Type> resultTypes;
    for (const std::string &name : assigned) {
      auto it = variables_.find(name);
      if (it == variables_.end())
        continue;
      carried.push_back(name);
      operands.push_back(it->second);
      resultTypes.push_back(it->second->type);
    }
    ir::Op *loop = builder_->create(OpKind::For, operands, resultTypes, {{"stages", ir::Attr(facts_.stages.at(&stmt))}});
    loop->body = std::make_unique<ir::Block>();
    loop->body->parentOp = loop;

    auto outerVariables = variables_;
    variables_[stmt.name] = loop->body->addArg(ir::Type::scalar(ir::DType::I32), stmt.name);
    for (const std::string &name : carried)
      variables_[name] = loop->body->addArg(variables_[name]->type, name);

    ir::Builder bodyBuilder(*loop->body);
    ir::Builder *outerBuilder = builder_;
    builder_ = &bodyBuilder;
    lowerStatements(stmt.body);
    std::vector<ir::Value *> yielded;
    for (const std::string &name : carried)
      yielded.push_back(variables_.at(name));
    bodyBuilder.setLoc(stmt.loc);
    bodyBuilder.create(OpKind::Yield, yielded, {});
    builder_ = outerBuilder;

    // Names first defined inside the loop go out of scope with it.
    variables_ = std::move(outerVariables);
    for (size_t i = 0; i < carried.size(); ++i) {
      loop->result(i)->nameHint = carried[i];
      variables_[carried[i]] = loop->result(i);
    }
  }

  // --- expressions ------------------------------------------------------------

  const sema::Type &typeOf(const Expr &expr) const { return facts_.typeOf(expr); }

  ir::Value *create(const Expr &at, OpKind kind, std::vector<ir::Value *> operands, ir::Type type,
                    std::map<std::string, ir::Attr> attrs = {}) {
    builder_->setLoc(at.loc);
    return builder_->value(kind, std::move(operands), std::move(type), std::move(attrs));
  }

  /// `value` with element type `elem`, through a `cast` if it differs.
  ir::Value *castTo(const Expr &at, ir::Value *value, ElemType elem) {
    ir::DType dtype = toIR(elem);
    if (value->type.dtype == dtype)
      return value;
    return create(at, OpKind::Cast, {value}, value->type.withDType(dtype));
  }

  /// Expands a broadcast-marked vector to `shape` right before its use.
  ir::Value *expand(const Expr &at, ir::Value *value, const sema::Type &type, const std::vector<int64_t> &shape) {
    if (type.newAxis < 0)
      return value;
    return create(at, OpKind::Broadcast, {value}, ir::Type::tile(value->type.dtype, shape),
                  {{"axis", ir::Attr(int64_t(type.newAxis))}});
  }

  /// An elementwise op whose operands (possibly broadcast-marked) are
  /// converted to `operandElem` first.
  ir::Value *elementwise(const Expr &at, OpKind kind, const std::vector<const Expr *> &operandExprs,
                         std::optional<ElemType> operandElem) {
    const sema::Type &resultType = typeOf(at);
    std::vector<ir::Value *> operands;
    for (const Expr *operandExpr : operandExprs) {
      ir::Value *value = lower(*operandExpr);
      if (operandElem)
        value = castTo(at, value, *operandElem);
      operands.push_back(expand(*operandExpr, value, typeOf(*operandExpr), resultType.shape));
    }
    return create(at, kind, operands, toIR(resultType));
  }

  ir::Value *lower(const Expr &expr) {
    switch (expr.kind) {
    case ExprKind::IntLiteral: builder_->setLoc(expr.loc); return builder_->constInt(expr.intValue);
    case ExprKind::FloatLiteral: builder_->setLoc(expr.loc); return builder_->constFloat(expr.floatValue);
    case ExprKind::Inf:
      builder_->setLoc(expr.loc);
      return builder_->constFloat(std::numeric_limits<double>::infinity());
    case ExprKind::Name: return lowerName(expr);
    case ExprKind::BlockIndex:
      return create(expr, OpKind::BlockId, {}, ir::Type::scalar(ir::DType::I32),
                    {{"axis", ir::Attr(int64_t(expr.field[0] - 'x'))}});
    case ExprKind::Call: return lowerCall(expr);
    case ExprKind::Unary: return lowerUnary(expr);
    case ExprKind::Binary: return lowerBinary(expr);
    // The marks are applied by the operation that consumes the operand.
    case ExprKind::Broadcast:
    case ExprKind::Transpose: return lower(expr.operand(0));
    case ExprKind::TileType:
    case ExprKind::Slice: break; // only inside the calls that take them
    }
    return nullptr;
  }

  ir::Value *lowerName(const Expr &expr) {
    if (auto it = variables_.find(expr.name); it != variables_.end())
      return it->second;
    std::optional<int64_t> value = specialization_.lookup(expr.name);
    if (auto derived = facts_.derived.find(expr.name); derived != facts_.derived.end())
      value = derived->second;
    if (value) {
      builder_->setLoc(expr.loc);
      return builder_->constInt(*value);
    }
    return dims_->at(expr.name);
  }

  ir::Value *lowerUnary(const Expr &expr) {
    const Expr &operandExpr = expr.operand(0);
    if (expr.unaryOp == ast::UnaryOp::Neg) {
      // A negative literal is a constant in its own right.
      builder_->setLoc(expr.loc);
      if (operandExpr.kind == ExprKind::IntLiteral)
        return builder_->constInt(-operandExpr.intValue);
      if (operandExpr.kind == ExprKind::FloatLiteral)
        return builder_->constFloat(-operandExpr.floatValue);
      if (operandExpr.kind == ExprKind::Inf)
        return builder_->constFloat(-std::numeric_limits<double>::infinity());
      ir::Value *operand = lower(operandExpr);
      return create(expr, OpKind::Neg, {operand}, operand->type);
    }
    ir::Value *condition = lower(operandExpr);
    builder_->setLoc(expr.loc);
    ir::Value *falseValue =
        builder_->value(OpKind::Const, {}, ir::Type::scalar(ir::DType::I1), {{"value", ir::Attr(int64_t(0))}});
    return create(expr, OpKind::Eq, {condition, falseValue}, condition->type);
  }

  ir::Value *lowerBinary(const Expr &expr) {
    const Expr &lhs = expr.operand(0);
    const Expr &rhs = expr.operand(1);
    std::optional<ElemType> operandElem;
    if (!ast::isLogical(expr.binaryOp))
      operandElem = sema::commonElemType(typeOf(lhs), typeOf(rhs));
    return elementwise(expr, binaryOpKind(expr.binaryOp), {&lhs, &rhs}, operandElem);
  }

  void lowerOffsets(const Expr &slice, std::vector<ir::Value *> &operands) {
    for (const ast::Subscript &sub : slice.subscripts) {
      if (sub.kind == ast::Subscript::Kind::All) {
        builder_->setLoc(sub.loc);
        operands.push_back(builder_->constInt(0));
      } else {
        operands.push_back(lower(*sub.start));
      }
    }
  }

  ir::Value *lowerCall(const Expr &call) {
    const std::string &name = call.name;
    const sema::Type &resultType = typeOf(call);
    if (name == "load") {
      const Expr &slice = call.operand(0);
      std::vector<ir::Value *> operands{globals_.at(slice.name)};
      lowerOffsets(slice, operands);
      std::map<std::string, ir::Attr> attrs{{"sizes", ir::Attr(facts_.sliceSizes.at(&slice))}};
      if (auto it = facts_.gatherAxis.find(&slice); it != facts_.gatherAxis.end()) {
        attrs["axis"] = ir::Attr(int64_t(it->second));
        return create(call, OpKind::Gather, operands, toIR(resultType), attrs);
      }
      return create(call, OpKind::Load, operands, toIR(resultType), attrs);
    }
    if (name == "zeros" || name == "fill") {
      double value = name == "fill" ? facts_.fillValues.at(&call) : 0.0;
      return create(call, OpKind::Fill, {}, toIR(resultType), {{"value", numberAttr(value, resultType.elem)}});
    }
    if (name == "mma")
      return lowerMma(call);
    if (auto kind = mathOpKind(name)) {
      ir::Value *operand = castTo(call, lower(call.operand(0)), resultType.elem);
      return create(call, *kind, {operand}, toIR(resultType));
    }
    if (name == "max" || name == "min") {
      auto elem = sema::commonElemType(typeOf(call.operand(0)), typeOf(call.operand(1)));
      return elementwise(call, name == "max" ? OpKind::Max : OpKind::Min, {&call.operand(0), &call.operand(1)},
                         elem);
    }
    if (name == "where")
      return lowerSelect(call);
    if (sema::parseElemType(name))
      return castTo(call, lower(call.operand(0)), resultType.elem);
    if (name == "rowidx" || name == "colidx") {
      // Only the operand's shape matters: it is not evaluated.
      return create(call, OpKind::Iota, {}, toIR(resultType), {{"axis", ir::Attr(int64_t(name[0] == 'r' ? 0 : 1))}});
    }
    if (name.rfind("row", 0) == 0 || name.rfind("col", 0) == 0) {
      // rowsum reduces along the columns (axis 1), colsum along the rows.
      ir::Value *operand = lower(call.operand(0));
      return create(call, OpKind::Reduce, {operand}, toIR(resultType),
                    {{"kind", ir::Attr(name.substr(3))}, {"axis", ir::Attr(int64_t(name[0] == 'r' ? 1 : 0))}});
    }
    // cdiv
    ir::Value *a = lower(call.operand(0));
    ir::Value *b = lower(call.operand(1));
    return create(call, OpKind::CDiv, {a, b}, ir::Type::scalar(ir::DType::I32));
  }

  static ir::Attr numberAttr(double value, ElemType elem) {
    if (sema::isFloatElem(elem))
      return ir::Attr(value);
    return ir::Attr(static_cast<int64_t>(value));
  }

  ir::Value *lowerMma(const Expr &call) {
    const sema::Type &resultType = typeOf(call);
    ir::Value *a = lower(call.operand(0));
    ir::Value *b = lower(call.operand(1));
    ir::Value *c = call.operands.size() == 3
                       ? lower(call.operand(2))
                       : create(call, OpKind::Fill, {}, toIR(resultType), {{"value", ir::Attr(0.0)}});
    std::map<std::string, ir::Attr> attrs;
    if (typeOf(call.operand(0)).transposed)
      attrs["trans_a"] = ir::Attr(int64_t(1));
    if (typeOf(call.operand(1)).transposed)
      attrs["trans_b"] = ir::Attr(int64_t(1));
    return create(call, OpKind::Mma, {a, b, c}, toIR(resultType), std::move(attrs));
  }

  ir::Value *lowerSelect(const Expr &call) {
    const sema::Type &resultType = typeOf(call);
    const Expr &condExpr = call.operand(0);
    ir::Value *cond = expand(condExpr, lower(condExpr), typeOf(condExpr), resultType.shape);
    std::vector<ir::Value *> operands{cond};
    for (size_t i = 1; i < 3; ++i) {
      const Expr &branch = call.operand(i);
      ir::Value *value = castTo(call, lower(branch), resultType.elem);
      operands.push_back(expand(branch, value, typeOf(branch), resultType.shape));
    }
    return create(call, OpKind::Select, operands, toIR(resultType));
  }

  const ast::Kernel &kernel_;
  const sema::Specialization &specialization_;
  ir::Kernel &out_;
  sema::KernelFacts facts_;

  ir::Builder *builder_ = nullptr;
  std::map<std::string, ir::Value *> globals_;
  std::map<std::string, ir::Value *> launchDims_, bodyDims_;
  /// The runtime dimension symbols of the block being lowered.
  std::map<std::string, ir::Value *> *dims_ = nullptr;
  /// Source variables (and loop variables) to their current SSA values.
  std::map<std::string, ir::Value *> variables_;
};

} // namespace

std::unique_ptr<ir::Module> lowerToIR(const ast::File &file, DiagnosticEngine &diags, int64_t sm) {
  auto module = std::make_unique<ir::Module>();
  for (const ast::Kernel &kernel : file.kernels)
    for (const sema::Specialization &specialization : sema::specializationsOf(kernel, sm)) {
      module->kernels.push_back(std::make_unique<ir::Kernel>());
      KernelLowering(kernel, specialization, *module->kernels.back()).run();
    }
  return module;
}

} // namespace tkc
