#include "frontend/KernelChecker.h"
#include "frontend/SemaDims.h"
#include "target/Target.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace tkc::sema {

using ast::Expr;
using ast::ExprKind;

namespace {

bool isOneOf(const std::string &name, std::initializer_list<const char *> names) {
  for (const char *candidate : names)
    if (name == candidate)
      return true;
  return false;
}

std::string argument(const Expr &call, size_t index, size_t count) {
  if (count == 1)
    return fmt::format("the argument of `{}`", call.name);
  static const char *kOrdinals[] = {"first", "second", "third"};
  return fmt::format("the {} argument of `{}`", kOrdinals[std::min<size_t>(index, 2)], call.name);
}

} // namespace

bool KernelChecker::checkArgCount(const Expr &call, size_t expected) {
  if (call.operands.size() == expected)
    return true;
  report(call.loc, DiagId::WrongArgumentCount, call.name, expected, call.operands.size());
  return false;
}

Type KernelChecker::checkCall(const Expr &call) {
  const std::string &name = call.name;
  if (name == "load")
    return checkLoad(call);
  if (name == "zeros" || name == "fill")
    return checkConstantTile(call);
  if (name == "mma")
    return checkMma(call);
  if (isOneOf(name, {"exp", "exp2", "log", "log2", "sqrt", "rsqrt", "abs", "tanh", "erf", "sigmoid", "silu"}))
    return checkMathFunction(call);
  if (name == "max" || name == "min")
    return checkMinMax(call);
  if (name == "where")
    return checkSelect(call);
  if (auto elem = parseElemType(name))
    return checkCast(call, *elem);
  if (isOneOf(name, {"rowsum", "rowmax", "rowmin", "colsum", "colmax", "colmin"}))
    return checkReduction(call);
  if (name == "rowidx" || name == "colidx")
    return checkIndexTile(call);
  if (name == "cdiv")
    return checkCdiv(call);
  report(call.nameLoc, DiagId::UnknownFunction, name);
  return Type::invalid();
}

Type KernelChecker::checkSlice(const Expr &slice, bool forStore) {
  Symbol *symbol = lookup(slice.name);
  if (!symbol) {
    report(slice.nameLoc, DiagId::UndefinedName, slice.name);
    return Type::invalid();
  }
  symbol->used = true;
  if (symbol->kind != Symbol::Kind::Global) {
    report(slice.nameLoc, DiagId::SliceNotGlobal, slice.name, describeSymbolKind(symbol->kind));
    return Type::invalid();
  }
  const ast::Param &param = *symbol->param;
  if (forStore && !param.isOutput) {
    report(slice.nameLoc, DiagId::StoreToInput, slice.name);
    return Type::invalid();
  }
  if (!forStore && param.isOutput) {
    report(slice.nameLoc, DiagId::LoadFromOutput, slice.name);
    return Type::invalid();
  }
  if (slice.subscripts.size() != param.dims.size()) {
    report(slice.loc, DiagId::SliceRankMismatch, slice.name, param.dims.size(), slice.subscripts.size());
    return Type::invalid();
  }

  bool ok = true;
  std::vector<int64_t> sizes, shape;
  std::optional<size_t> gatherAxis;
  int64_t gatherCount = 0;
  for (size_t i = 0; i < param.dims.size(); ++i) {
    const ast::Subscript &sub = slice.subscripts[i];
    const ast::Dim &dim = param.dims[i];
    int64_t size = 0;
    switch (sub.kind) {
    case ast::Subscript::Kind::All: {
      std::optional<int64_t> extent = staticDimSize(dim, specialization_);
      if (!extent) {
        report(sub.loc, DiagId::DimNotStatic, dimText(dim));
        ok = false;
      } else {
        size = *extent;
      }
      break;
    }
    case ast::Subscript::Kind::Range: {
      ok &= requireIntScalar(checkValue(*sub.start), "the start of a slice", sub.start->loc);
      auto extent = evalExtent(*sub.extent, "a slice extent");
      ok &= extent.has_value();
      size = extent.value_or(0);
      break;
    }
    case ast::Subscript::Kind::Index: {
      Type index = checkValue(*sub.start);
      if (index.isTile()) {
        ok &= checkGatherIndex(slice, sub, index, forStore, gatherAxis.has_value());
        gatherAxis = i;
        gatherCount = index.shape.empty() ? 0 : index.shape[0];
        break;
      }
      ok &= requireIntScalar(index, "a slice index", sub.start->loc);
      break;
    }
    }
    sizes.push_back(size);
    if (sub.kind != ast::Subscript::Kind::Index)
      shape.push_back(size);
  }
  if (ok && gatherAxis) {
    // The gathered tile is 1-d: element i pairs the i-th index with the
    // i-th position of the sliced dim, if there is one.
    const ast::Subscript &sub = slice.subscripts[*gatherAxis];
    int64_t count = gatherCount;
    if (shape.size() > 1) {
      report(slice.loc, DiagId::GatherTwoSlicedDims);
      ok = false;
    } else if (shape.size() == 1 && shape[0] != count) {
      report(sub.start->loc, DiagId::GatherExtentMismatch, count, shape[0]);
      ok = false;
    } else {
      shape = {count};
    }
  }
  if (!ok || !checkTileShape(shape, slice.loc))
    return Type::invalid();
  facts_.sliceSizes[&slice] = sizes;
  if (gatherAxis)
    facts_.gatherAxis[&slice] = *gatherAxis;
  Type type;
  type.kind = Type::Kind::Slice;
  type.elem = symbol->type.elem;
  type.shape = shape;
  record(slice, type);
  return Type::tile(type.elem, shape);
}

bool KernelChecker::checkGatherIndex(const Expr &slice, const ast::Subscript &sub, const Type &index, bool forStore,
                                     bool another) {
  if (forStore) {
    report(sub.start->loc, DiagId::GatherInStore, slice.name);
    return false;
  }
  if (another) {
    report(sub.start->loc, DiagId::GatherTwoIndexTiles);
    return false;
  }
  if (index.elem != ElemType::I32) {
    report(sub.start->loc, DiagId::GatherIndexType, describeType(index));
    return false;
  }
  if (index.shape.size() != 1) {
    report(sub.start->loc, DiagId::GatherIndexRank, shapeString(index.shape));
    return false;
  }
  return true;
}

Type KernelChecker::checkLoad(const Expr &call) {
  if (!checkArgCount(call, 1))
    return Type::invalid();
  const Expr &arg = call.operand(0);
  if (arg.kind != ExprKind::Slice) {
    report(arg.loc, DiagId::LoadNeedsSlice, "load");
    return Type::invalid();
  }
  return checkSlice(arg, /*forStore=*/false);
}

Type KernelChecker::checkTileSpec(const Expr &spec) {
  if (spec.kind != ExprKind::TileType) {
    // `f64[64]` parses as a slice of an unknown tensor: say what it is.
    if (spec.kind == ExprKind::Slice && !lookup(spec.name)) {
      report(spec.nameLoc, DiagId::UnknownDType, spec.name);
      return Type::invalid();
    }
    std::string found = spec.kind == ExprKind::Slice  ? fmt::format("a slice of `{}`", spec.name)
                        : spec.kind == ExprKind::Name ? fmt::format("`{}`", spec.name)
                                                      : "an expression";
    report(spec.loc, DiagId::ExpectedType, found);
    return Type::invalid();
  }
  bool ok = true;
  std::vector<int64_t> shape;
  for (const ast::ExprPtr &extentExpr : spec.operands) {
    auto extent = evalExtent(*extentExpr, "a tile extent");
    ok &= extent.has_value();
    shape.push_back(extent.value_or(0));
  }
  if (!ok || !checkTileShape(shape, spec.loc))
    return Type::invalid();
  Type type;
  type.kind = Type::Kind::TileSpec;
  type.elem = *parseElemType(spec.name);
  type.shape = shape;
  record(spec, type);
  return Type::tile(type.elem, shape);
}

Type KernelChecker::checkConstantTile(const Expr &call) {
  bool isFill = call.name == "fill";
  if (!checkArgCount(call, isFill ? 2 : 1))
    return Type::invalid();
  Type tile = checkTileSpec(call.operand(0));
  if (!tile.isInvalid() && isF8Elem(tile.elem)) {
    report(call.operand(0).loc, DiagId::F8Constant, call.name, elemTypeName(tile.elem));
    return Type::invalid();
  }
  if (!isFill)
    return tile;
  const Expr &valueExpr = call.operand(1);
  auto value = evalConstNumber(valueExpr);
  if (!value) {
    report(valueExpr.loc, DiagId::FillValueNotConstant);
    return Type::invalid();
  }
  if (tile.isInvalid())
    return tile;
  if (!isFloatElem(tile.elem) && (std::isinf(*value) || *value != std::floor(*value))) {
    report(valueExpr.loc, DiagId::FillValueType, elemTypeName(tile.elem), fmt::format("{}", *value));
    return Type::invalid();
  }
  if (!isFloatElem(tile.elem)) {
    // The IR verifier holds the constant to its element type's range; say so
    // at the source rather than fail there.
    double lowest = std::numeric_limits<int32_t>::min();
    double highest = std::numeric_limits<int32_t>::max();
    if (*value < lowest || *value > highest) {
      report(valueExpr.loc, DiagId::FillValueRange, elemTypeName(tile.elem), fmt::format("{}", lowest),
             fmt::format("{}", highest), fmt::format("{}", *value));
      return Type::invalid();
    }
  }
  facts_.fillValues[&call] = *value;
  return tile;
}

Type KernelChecker::checkMma(const Expr &call) {
  size_t count = call.operands.size();
  if (count != 2 && count != 3) {
    report(call.loc, DiagId::WrongArgumentCount, "mma", "2 or 3", count);
    return Type::invalid();
  }
  const Expr &aExpr = call.operand(0);
  const Expr &bExpr = call.operand(1);
  Type a = rejectNonValue(aExpr, check(aExpr), false, /*allowTranspose=*/true);
  Type b = rejectNonValue(bExpr, check(bExpr), false, /*allowTranspose=*/true);
  Type c = count == 3 ? checkValue(call.operand(2)) : Type::invalid();
  if (a.isInvalid() || b.isInvalid() || (count == 3 && c.isInvalid()))
    return Type::invalid();

  bool ok = true;
  for (auto [type, expr, which] : {std::tuple{&a, &aExpr, "first"}, std::tuple{&b, &bExpr, "second"}}) {
    if (!requireTile(*type, fmt::format("the {} operand of `mma`", which), expr->loc)) {
      ok = false;
    } else if (type->shape.size() != 2) {
      report(expr->loc, DiagId::MmaRankMismatch, which, shapeString(type->shape));
      ok = false;
    } else if (type->elem != ElemType::BF16 && type->elem != ElemType::F16 && !isF8Elem(type->elem)) {
      report(expr->loc, DiagId::MmaDType, which, elemTypeName(type->elem));
      ok = false;
    } else if (type->shape[0] % 16 != 0 || type->shape[1] % 16 != 0) {
      report(expr->loc, DiagId::MmaTileAlignment, which, shapeString(type->shape));
      ok = false;
    }
  }
  if (!ok)
    return Type::invalid();
  bool f8 = isF8Elem(a.elem) || isF8Elem(b.elem);
  if (f8 && !(isF8Elem(a.elem) && isF8Elem(b.elem))) {
    bool aIsF8 = isF8Elem(a.elem);
    report(aIsF8 ? aExpr.loc : bExpr.loc, DiagId::MmaF8Mixed, elemTypeName(a.elem), elemTypeName(b.elem));
    return Type::invalid();
  }
  // wgmma takes e4m3 and e5m2 in any pairing, so only 16-bit operands must
  // match.
  if (!f8 && a.elem != b.elem) {
    report(call.loc, DiagId::DTypeMismatch, "mma", elemTypeName(a.elem), elemTypeName(b.elem));
    return Type::invalid();
  }
  const Target *target = Target::forComputeCapability(specialization_.sm);
  if (f8 && !(target && target->hasF8Mma())) {
    report(call.loc, DiagId::MmaF8Target, fmt::format("sm_{}", specialization_.sm));
    return Type::invalid();
  }
  if (f8 && (a.transposed || !b.transposed)) {
    report(a.transposed ? aExpr.loc : bExpr.loc, DiagId::MmaF8Layout,
           a.transposed ? "the first operand is transposed" : "the second operand is not transposed");
    return Type::invalid();
  }
  int64_t m = a.transposed ? a.shape[1] : a.shape[0], k = a.transposed ? a.shape[0] : a.shape[1];
  if (f8 && k % 32 != 0) {
    report(aExpr.loc, DiagId::MmaF8K, k);
    return Type::invalid();
  }
  int64_t kb = b.transposed ? b.shape[1] : b.shape[0];
  int64_t n = b.transposed ? b.shape[0] : b.shape[1];
  if (k != kb) {
    report(bExpr.loc, DiagId::MmaShapeMismatch, k, kb);
    return Type::invalid();
  }
  Type result = Type::tile(ElemType::F32, {m, n});
  if (count == 3) {
    const Expr &cExpr = call.operand(2);
    if (!requireTile(c, "the accumulator of `mma`", cExpr.loc))
      return Type::invalid();
    if (c.elem != ElemType::F32) {
      report(cExpr.loc, DiagId::MmaAccDType, elemTypeName(c.elem));
      return Type::invalid();
    }
    if (c.shape != result.shape) {
      report(cExpr.loc, DiagId::MmaAccMismatch, shapeString(c.shape), shapeString(result.shape));
      return Type::invalid();
    }
  }
  return result;
}

Type KernelChecker::checkMathFunction(const Expr &call) {
  if (!checkArgCount(call, 1))
    return Type::invalid();
  const Expr &arg = call.operand(0);
  Type type = checkValue(arg);
  if (!requireNumeric(type, argument(call, 0, 1), arg.loc))
    return Type::invalid();
  // Transcendentals of integers are computed in f32; abs keeps integers.
  if (type.elem == ElemType::I32 && call.name != "abs")
    type.elem = ElemType::F32;
  return type;
}

Type KernelChecker::checkMinMax(const Expr &call) {
  if (!checkArgCount(call, 2))
    return Type::invalid();
  const Expr &aExpr = call.operand(0);
  const Expr &bExpr = call.operand(1);
  Type a = checkOperand(aExpr);
  Type b = checkOperand(bExpr);
  if (!requireNumeric(a, argument(call, 0, 2), aExpr.loc) || !requireNumeric(b, argument(call, 1, 2), bExpr.loc))
    return Type::invalid();
  auto elem = commonElem(call.name.c_str(), call.loc, a, b);
  if (!elem)
    return Type::invalid();
  bool isTile = false;
  auto shape = combineShapes(call.name.c_str(), call.loc, {{&aExpr, a}, {&bExpr, b}}, isTile);
  if (!shape)
    return Type::invalid();
  return isTile ? Type::tile(*elem, *shape) : Type::scalar(*elem);
}

Type KernelChecker::checkSelect(const Expr &call) {
  if (!checkArgCount(call, 3))
    return Type::invalid();
  const Expr &condExpr = call.operand(0);
  const Expr &aExpr = call.operand(1);
  const Expr &bExpr = call.operand(2);
  Type cond = checkOperand(condExpr);
  Type a = checkOperand(aExpr);
  Type b = checkOperand(bExpr);
  if (cond.isInvalid() || a.isInvalid() || b.isInvalid())
    return Type::invalid();
  if (cond.elem != ElemType::I1) {
    report(condExpr.loc, DiagId::MaskNeedsCompare, describeType(cond));
    return Type::invalid();
  }
  std::optional<ElemType> elem = a.elem;
  if (a.elem != ElemType::I1 || b.elem != ElemType::I1) {
    if (!requireNumeric(a, argument(call, 1, 3), aExpr.loc) || !requireNumeric(b, argument(call, 2, 3), bExpr.loc))
      return Type::invalid();
    elem = commonElem("where", call.loc, a, b);
    if (!elem)
      return Type::invalid();
  }
  bool isTile = false;
  auto shape = combineShapes("where", call.loc, {{&condExpr, cond}, {&aExpr, a}, {&bExpr, b}}, isTile);
  if (!shape)
    return Type::invalid();
  return isTile ? Type::tile(*elem, *shape) : Type::scalar(*elem);
}

Type KernelChecker::checkCast(const Expr &call, ElemType to) {
  if (!checkArgCount(call, 1))
    return Type::invalid();
  Type type = checkValue(call.operand(0));
  if (type.isInvalid())
    return type;
  // 8-bit floats come from loads and go to f32, bf16 or f16 (exactly);
  // nothing converts to them.
  bool widens = isF8Elem(type.elem) && type.isTile() && isFloatElem(to);
  if ((isF8Elem(type.elem) || isF8Elem(to)) && !widens) {
    ElemType f8 = isF8Elem(type.elem) ? type.elem : to;
    report(call.loc, DiagId::F8Conversion, elemTypeName(f8), elemTypeName(to), describeType(type));
    return Type::invalid();
  }
  type.elem = to;
  return type;
}

Type KernelChecker::checkReduction(const Expr &call) {
  if (!checkArgCount(call, 1))
    return Type::invalid();
  const Expr &arg = call.operand(0);
  Type type = checkValue(arg);
  if (!requireTile(type, argument(call, 0, 1), arg.loc) || !requireNumeric(type, argument(call, 0, 1), arg.loc))
    return Type::invalid();
  if (type.shape.size() != 2) {
    report(arg.loc, DiagId::ReduceRank, call.name, shapeString(type.shape));
    return Type::invalid();
  }
  bool perRow = call.name.rfind("row", 0) == 0;
  return Type::tile(type.elem, {perRow ? type.shape[0] : type.shape[1]});
}

Type KernelChecker::checkIndexTile(const Expr &call) {
  if (!checkArgCount(call, 1))
    return Type::invalid();
  const Expr &arg = call.operand(0);
  Type type = checkValue(arg);
  if (!requireTile(type, argument(call, 0, 1), arg.loc))
    return Type::invalid();
  if (type.shape.size() != 2) {
    report(arg.loc, DiagId::ReduceRank, call.name, shapeString(type.shape));
    return Type::invalid();
  }
  return Type::tile(ElemType::I32, type.shape);
}

Type KernelChecker::checkCdiv(const Expr &call) {
  if (!checkArgCount(call, 2))
    return Type::invalid();
  bool ok = true;
  for (size_t i = 0; i < 2; ++i)
    ok &= requireIntScalar(checkValue(call.operand(i)), argument(call, i, 2), call.operand(i).loc);
  return ok ? Type::scalar(ElemType::I32) : Type::invalid();
}

} // namespace tkc::sema
