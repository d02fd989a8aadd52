// Register-tile computation: elementwise maps, reductions, broadcasts and
// layout conversions. Every tile is a flat per-thread array; loops over it
// are fully unrolled, so the array lives in registers.
#include "codegen/Expressions.h"
#include "codegen/KernelEmitter.h"

namespace tkc::codegen {

using namespace ir;

namespace {
/// A mask's fill value as a C++ literal.
std::string fillLiteral(const Op &mask) { return floatLiteral(mask.floatAttr("fill")); }

/// The tile index (row or column of fragment `f`) that a mask compares
/// with its bound.
std::string maskedIndex(const Op &mask, const Fragment &f) {
  return mask.result()->type.shape.size() == 1 || mask.intAttr("axis") == 0 ? f.row : f.col;
}
/// `acc` combined with `v` by a reduction of `kind` ("sum", "max", "min").
CExpr reductionStep(const std::string &kind, const CExpr &acc, const CExpr &v) {
  return kind == "sum" ? acc + v : call(kind == "max" ? "fmaxf" : "fminf", {acc, v});
}
} // namespace

void KernelEmitter::declareTile(const Value *v) {
  if (v->type.layout.kind == LayoutKind::OperandA) {
    out_.line("uint32_t {}[{}];", name(v), operandACount(v->type));
    return;
  }
  out_.line("{} {}[{}];", cType(v->type.dtype), name(v), fragment(v->type).count());
}

CExpr KernelEmitter::element(const Value *v, const std::string &flat, bool asFloat) {
  // A 16-bit scalar beside float operands would make C++ choose between
  // the 16-bit and the float operator.
  bool narrow = v->type.dtype == DType::I32 || v->type.dtype == DType::BF16 || v->type.dtype == DType::F16 ||
                isF8(v->type.dtype);
  CExpr e = v->type.isScalar() ? scalarExpr(v) : subscript(CExpr::text(name(v)), CExpr::text(flat));
  return asFloat && narrow ? call("float", {e}) : e;
}

/// The smallest and largest value of an index expression over a tile: sums
/// and differences of scalars and `iota`s. The scalars it reads are added
/// to `leaves` when given.
std::optional<std::pair<CExpr, CExpr>> KernelEmitter::indexRange(const Value *v, std::vector<const Value *> *leaves) {
  if (v->type.isScalar() && v->type.dtype == DType::I32) {
    if (leaves)
      leaves->push_back(v);
    return std::make_pair(scalarExpr(v), scalarExpr(v));
  }
  const Op *def = v->definingOp;
  if (!def || v->type.dtype != DType::I32)
    return std::nullopt;
  if (def->kind == OpKind::Iota) {
    int64_t extent = v->type.shape[def->intAttr("axis")];
    return std::make_pair(CExpr::integer(0), CExpr::integer(extent - 1));
  }
  if (def->kind != OpKind::Add && def->kind != OpKind::Sub)
    return std::nullopt;
  auto a = indexRange(def->operands[0], leaves), b = indexRange(def->operands[1], leaves);
  if (!a || !b)
    return std::nullopt;
  if (def->kind == OpKind::Add)
    return std::make_pair(a->first + b->first, a->second + b->second);
  return std::make_pair(a->first - b->second, a->second - b->first);
}

/// A block-uniform condition under which every element of the i1 tile `cond`
/// is true, when `cond` compares index expressions.
std::optional<CExpr> KernelEmitter::wholeTileCondition(const Value *cond, std::vector<const Value *> *leaves) {
  const Op *def = cond->definingOp;
  if (!def || def->operands.size() != 2)
    return std::nullopt;
  auto a = indexRange(def->operands[0], leaves), b = indexRange(def->operands[1], leaves);
  if (!a || !b)
    return std::nullopt;
  switch (def->kind) {
  case OpKind::Ge: return binary(BinaryOperator::Ge, a->first, b->second);
  case OpKind::Gt: return binary(BinaryOperator::Gt, a->first, b->second);
  case OpKind::Le: return binary(BinaryOperator::Le, a->second, b->first);
  case OpKind::Lt: return binary(BinaryOperator::Lt, a->second, b->first);
  default: return std::nullopt;
  }
}

void KernelEmitter::emitElementwise(const Op &op) {
  const Value *result = op.result();
  DType dtype = result->type.dtype;
  // Arithmetic on 16-bit floats happens in f32; the result is rounded once.
  bool computeInFloat = false;
  for (const Value *operand : op.operands)
    if (isFloat(operand->type.dtype))
      computeInFloat = true;
  bool isFloatOp = computeInFloat && op.kind != OpKind::Select && op.kind != OpKind::Cast;
  std::optional<CExpr> mapped;
  if (op.kind == OpKind::Select) {
    bool f = isFloat(dtype);
    mapped = operatorExpression(op.kind,
                                {element(op.operands[0], "x", false), element(op.operands[1], "x", f),
                                 element(op.operands[2], "x", f)},
                                {f, MathPrecision::Fast, false});
  } else if (op.kind == OpKind::Cast) {
    mapped = element(op.operands[0], "x", isFloat(dtype) && isFloat(op.operands[0]->type.dtype));
  } else {
    std::vector<CExpr> args;
    for (const Value *operand : op.operands)
      args.push_back(element(operand, "x", isFloatOp));
    mapped = operatorExpression(op.kind, args, {isFloatOp, MathPrecision::Fast, false});
  }
  if (!mapped) {
    unsupported(op, fmt::format("tile operation `{}`", mnemonicOf(op.kind)));
    return;
  }
  declareName(result);
  declareTile(result);
  int count = fragment(result->type).count();
  const char *rounding = dtype == DType::BF16 ? "__float2bfloat16" : dtype == DType::F16 ? "__float2half" : nullptr;
  std::string expr = call(rounding ? rounding : cType(dtype), {*mapped}).str();
  // A select on an index comparison that holds for the whole tile (a causal
  // mask on a block below the diagonal) is decided once for the block.
  std::optional<CExpr> always =
      op.kind == OpKind::Select && op.operands[0]->type.isTile() ? wholeTileCondition(op.operands[0]) : std::nullopt;
  // Under `condition` the result is a copy of `same`; otherwise computed.
  auto copyIf = [&](const std::string &condition, const Value *same) {
    out_.open(fmt::format("if ({})", condition));
    out_.line("TKC_UNROLL for (int x = 0; x < {}; ++x) {}[x] = {}[x];", count, name(result), name(same));
    out_.dedent();
    out_.open("} else");
    out_.line("TKC_UNROLL for (int x = 0; x < {}; ++x) {}[x] = {};", count, name(result), expr);
    out_.close();
  };
  if (always && op.operands[1]->type == result->type)
    return copyIf(always->str(), op.operands[1]);
  if (std::optional<RowRescale> rescale = carriedRowRescale(op)) {
    // A loop-carried accumulator scaled row by row (online softmax's
    // correction): when every factor the warp holds is 1, as it is once the
    // running maximum stops growing, the tile is left as it is. x * 1 is x
    // for every float, so the result is the same.
    std::string ones = nameTable_.fresh(name(result) + "_ones");
    out_.line("bool {} = true;", ones);
    out_.line("TKC_UNROLL for (int x = 0; x < {}; ++x) {} = {} && {}[x] == 1.0f;",
              fragment(rescale->factors->type).count(), ones, ones, name(rescale->factors));
    return copyIf(fmt::format("__all_sync(0xffffffffu, {})", ones), rescale->tile);
  }
  out_.line("TKC_UNROLL for (int x = 0; x < {}; ++x) {}[x] = {};", count, name(result), expr);
}

/// `mul(acc, broadcast(v))` (either order), where acc is an f32 tile carried
/// by the enclosing loop (or a wgmma's in-place update of one) and v a
/// vector with one factor per row, and skipping pays: in a warp-specialized
/// consumer the rescale sits between the wait for the previous product and
/// the next issue, so skipping it always shortens that path; on the mma.sync
/// path only where a thread holds at least kSkippedRescaleMinimum values (the
/// warp's test and branch cost more than fewer multiplies; measured with
/// attention at 64 and 128 values per thread).
std::optional<KernelEmitter::RowRescale> KernelEmitter::carriedRowRescale(const Op &op) {
  constexpr int kSkippedRescaleMinimum = 128;
  if (op.kind != OpKind::Mul || op.result()->type.dtype != DType::F32)
    return std::nullopt;
  if (roleWarpgroups_ == 0 && fragment(op.result()->type).count() < kSkippedRescaleMinimum)
    return std::nullopt;
  for (int side : {0, 1}) {
    const Value *tile = op.operands[side], *scale = op.operands[1 - side];
    const Op *broadcast = scale->definingOp;
    if (!broadcast || broadcast->kind != OpKind::Broadcast || broadcast->intAttr("axis") != 1)
      continue;
    const Value *factors = broadcast->operands[0];
    // The carried tile itself, or a wgmma's update of it in place.
    const Value *carriedTile = tile->definingOp && tile->definingOp->kind == OpKind::Wgmma
                                   ? tile->definingOp->operands[2]
                                   : tile;
    bool carried = carriedTile->ownerBlock && carriedTile->ownerBlock->parentOp &&
                   carriedTile->ownerBlock->parentOp->kind == OpKind::For;
    if (carried && tile->type == op.result()->type && factors->type.dtype == DType::F32 &&
        factors->type.layout.kind == LayoutKind::AccRow)
      return RowRescale{tile, factors};
  }
  return std::nullopt;
}

void KernelEmitter::emitFill(const Op &op) {
  const Value *result = op.result();
  declareName(result);
  declareTile(result);
  if (freshAccumulators_.count(&op))
    return;
  double value = op.floatAttr("value");
  std::string literal = floatLiteral(value);
  if (result->type.layout.kind == LayoutKind::OperandA) {
    // Operand registers hold two 16-bit values each.
    const char *pack = result->type.dtype == DType::F16 ? "pack_f16" : "pack_bf16";
    out_.line("TKC_UNROLL for (int x = 0; x < {}; ++x) {}[x] = tkc::{}({}, {});", operandACount(result->type),
              name(result), pack, literal, literal);
    return;
  }
  if (result->type.dtype == DType::I32 || result->type.dtype == DType::I1)
    literal = CExpr::integer(static_cast<int64_t>(value)).str();
  out_.line("TKC_UNROLL for (int x = 0; x < {}; ++x) {}[x] = {}({});", fragment(result->type).count(), name(result),
            cType(result->type.dtype), literal);
}

void KernelEmitter::emitIota(const Op &op) {
  const Value *result = op.result();
  declareName(result);
  declareTile(result);
  Fragment f = fragment(result->type);
  std::string index = op.intAttr("axis") == 0 ? f.row : f.col;
  out_.open(fmt::format("TKC_UNROLL for (int x = 0; x < {}; ++x)", f.count()));
  out_.line("{}", f.decompose("x", index));
  out_.line("{}[x] = {};", name(result), index);
  out_.close();
}

/// Padding past `bound` is replaced by the fill value; the check runs only
/// for tiles that actually reach past the end.
void KernelEmitter::emitMask(const Op &op) {
  const Value *result = op.result();
  const Value *source = op.operands[0];
  declareName(result);
  declareTile(result);
  Fragment f = fragment(result->type);
  int axis = static_cast<int>(op.intAttr("axis"));
  int64_t extent = result->type.shape[axis];
  std::string bound = scalar(op.operands[1]);
  out_.line("TKC_UNROLL for (int x = 0; x < {}; ++x) {}[x] = {}[x];", f.count(), name(result), name(source));
  out_.open(fmt::format("if ({} < {})", bound, extent));
  out_.open(fmt::format("TKC_UNROLL for (int x = 0; x < {}; ++x)", f.count()));
  std::string index = maskedIndex(op, f);
  out_.line("{}", f.decompose("x", index));
  // An integer tile (a gather's indices) takes an integer fill.
  std::string fill = isFloat(result->type.dtype) ? fmt::format("{}({})", cType(result->type.dtype), fillLiteral(op))
                                                 : CExpr::integer(int64_t(op.floatAttr("fill"))).str();
  out_.line("if ({} >= {}) {}[x] = {};", index, bound, name(result), fill);
  out_.close();
  out_.close();
}

bool KernelEmitter::emitReduce(const Op &op) {
  const Value *src = op.operands[0];
  const Value *result = op.result();
  std::string kind = op.strAttr("kind");
  int axis = static_cast<int>(op.intAttr("axis"));
  std::string identity = kind == "sum" ? "0.0f" : kind == "max" ? "-INFINITY" : "INFINITY";
  auto combine = [&](const CExpr &acc, const CExpr &v) { return reductionStep(kind, acc, v); };
  if (src->type.isShared())
    return emitPartialsReduce(op);
  // Into shared partial results, the tile's warp rows each reduce their own
  // rows into a column vector first.
  bool intoPartials = result->type.isShared();
  const Layout &tile = src->type.layout;
  LayoutKind from = tile.kind, to = result->type.layout.kind;
  Type vector = result->type;
  if (intoPartials && from == LayoutKind::Acc)
    vector = Type::tile(DType::F32, {src->type.shape[1]}, MemSpace::Register,
                        {LayoutKind::AccCol, tile.warpsM, tile.warpsN});
  else if (intoPartials && from == LayoutKind::Strip)
    vector = Type::tile(DType::F32, {src->type.shape[1]}, MemSpace::Register,
                        {LayoutKind::StripCol, tile.warpsM, 1, tile.lanes, tile.chunk});
  Fragment fs = fragment(src->type), fr = fragment(vector);
  std::vector<int> shuffles;
  std::string target;
  if (from == LayoutKind::Acc && to == LayoutKind::AccRow && axis == 1) {
    if (src->type.layout.warpsN != 1)
      return unsupported(op, "row reductions over accumulators split across warp columns");
    target = "i * 2 + e / 2";
    shuffles = {1, 2};
  } else if (from == LayoutKind::Strip && to == LayoutKind::StripRow && axis == 1) {
    target = "r";
    for (int s = src->type.layout.lanes / 2; s >= 1; s /= 2)
      shuffles.push_back(s);
  } else if (from == LayoutKind::Acc && (to == LayoutKind::AccCol || intoPartials) && axis == 0) {
    // The eight lanes of a column pair (lane % 4) hold its 16-row groups.
    target = "j * 2 + e % 2";
    shuffles = {4, 8, 16};
  } else if (from == LayoutKind::Strip && (to == LayoutKind::StripCol || intoPartials) && axis == 0) {
    // A warp's rows at a time lie on lanes `lanes` apart.
    target = fmt::format("c * {} + e", tile.chunk);
    for (int s = tile.lanes; s < 32; s *= 2)
      shuffles.push_back(s);
  } else {
    return unsupported(op, "this reduction");
  }
  std::string partials = intoPartials ? declareSharedTile(op) : "";
  // (`parts` is a reserved local name: no value of the kernel takes it.)
  std::string sums = intoPartials ? "parts" : declareName(result);
  if (intoPartials)
    out_.open("");
  out_.line("float {}[{}];", sums, fr.count());
  out_.line("TKC_UNROLL for (int x = 0; x < {}; ++x) {}[x] = {};", fr.count(), sums, identity);
  CExpr slot = subscript(CExpr::text(sums), CExpr::text(target));
  // Reads `input`, or, where `outside` holds, the fill value `fill`.
  auto accumulate = [&](const Value *input, std::optional<CExpr> outside = std::nullopt,
                        std::optional<CExpr> fill = std::nullopt) {
    out_.open(fmt::format("TKC_UNROLL for (int x = 0; x < {}; ++x)", fs.count()));
    out_.line("{}", fs.decompose("x", target + " " + (outside ? outside->str() : "")));
    CExpr value = element(input, "x", true);
    if (outside)
      value = conditional(*outside, *fill, value);
    out_.line("{} = {};", slot.str(), combine(slot, value).str());
    out_.close();
  };
  const Op *mask = src->definingOp;
  if (!mask || mask->kind != OpKind::Mask || !absorbed_.count(mask)) {
    accumulate(src);
  } else if (identityOps_.count(mask)) {
    accumulate(mask->operands[0]); // the absorbed mask on an interior tile
  } else {
    CExpr bound = scalarExpr(mask->operands[1]);
    out_.open(fmt::format("if ({})", binary(BinaryOperator::Lt, bound,
                                            CExpr::integer(src->type.shape[mask->intAttr("axis")])).str()));
    accumulate(mask->operands[0], binary(BinaryOperator::Ge, CExpr::text(maskedIndex(*mask, fs)), bound),
               call("float", {CExpr::floating(mask->floatAttr("fill"))}));
    out_.dedent();
    out_.open("} else");
    accumulate(mask->operands[0]);
    out_.close();
  }
  // Lanes that hold parts of the same row (column) combine through shuffles.
  out_.open(fmt::format("TKC_UNROLL for (int x = 0; x < {}; ++x)", fr.count()));
  for (int s : shuffles) {
    CExpr v = subscript(CExpr::text(sums), CExpr::text("x"));
    out_.line("{} = {};", v.str(), combine(v, call("tkc::shfl_xor", {v, CExpr::integer(s)})).str());
  }
  out_.close();
  if (!intoPartials)
    return true;
  // The first lanes of each column hold its warp row's result: each writes
  // its pairs of columns into the warp row's row of partial results.
  std::string warpRow = from == LayoutKind::Acc ? warpCoords(tile).row : "warp";
  std::string writers = from == LayoutKind::Acc ? "lane < 4" : fmt::format("lane < {}", tile.lanes);
  out_.open(fmt::format("if ({})", writers));
  out_.open(fmt::format("TKC_UNROLL for (int x = 0; x < {}; x += 2)", fr.count()));
  out_.line("{}", fr.decompose("x", fr.row));
  out_.line("tkc::st_shared_v2_b32({} + (({}) * {} + {}) * 4, __float_as_uint({}[x]), __float_as_uint({}[x + 1]));",
            partials, warpRow, src->type.shape[1], fr.row, sums, sums);
  out_.close();
  out_.close();
  out_.close();
  return true;
}

/// The second half of a column reduction across warp rows: every thread
/// combines the partial results of the columns its vector holds, so the
/// vector is whole (replicated) in every warp.
bool KernelEmitter::emitPartialsReduce(const Op &op) {
  const Value *partials = op.operands[0];
  const Value *result = op.result();
  LayoutKind to = result->type.layout.kind;
  if (to != LayoutKind::AccCol && to != LayoutKind::StripCol)
    return unsupported(op, fmt::format("a reduction of partial results into {}", result->type.str()));
  std::string kind = op.strAttr("kind");
  auto combine = [&](const CExpr &acc, const CExpr &v) { return reductionStep(kind, acc, v); };
  int64_t warpRows = partials->type.shape[0], cols = partials->type.shape[1];
  Fragment f = fragment(result->type);
  declareName(result);
  out_.line("float {}[{}];", name(result), f.count());
  out_.open(fmt::format("TKC_UNROLL for (int x = 0; x < {}; x += 2)", f.count()));
  out_.line("{}", f.decompose("x", f.row));
  out_.line("tkc::ld_shared_f32x2({} + ({}) * 4, {}[x], {}[x + 1]);", name(partials), f.row, name(result),
            name(result));
  out_.open(fmt::format("TKC_UNROLL for (int it = 1; it < {}; ++it)", warpRows));
  for (int half : {0, 1}) {
    CExpr element = subscript(CExpr::text(name(result)), CExpr::text(fmt::format("x + {}", half)));
    CExpr partial = CExpr::text(fmt::format("tkc::ld_shared_f32({} + (it * {} + {} + {}) * 4)", name(partials), cols, f.row, half));
    out_.line("{} = {};", element.str(), combine(element, partial).str());
  }
  out_.close();
  out_.close();
  return true;
}

bool KernelEmitter::emitBroadcast(const Op &op) {
  const Value *src = op.operands[0];
  const Value *result = op.result();
  LayoutKind from = src->type.layout.kind, to = result->type.layout.kind;
  std::string index;
  if (from == LayoutKind::AccRow && to == LayoutKind::Acc)
    index = "i * 2 + e / 2";
  else if (from == LayoutKind::AccCol && to == LayoutKind::Acc)
    index = "j * 2 + e % 2";
  else if (from == LayoutKind::StripRow && to == LayoutKind::Strip)
    index = "r";
  else if (from == LayoutKind::StripCol && to == LayoutKind::Strip)
    index = fmt::format("c * {} + e", src->type.layout.chunk);
  else
    return unsupported(op, "this broadcast");
  declareName(result);
  declareTile(result);
  Fragment f = fragment(result->type);
  out_.open(fmt::format("TKC_UNROLL for (int x = 0; x < {}; ++x)", f.count()));
  out_.line("{}", f.decompose("x", index));
  out_.line("{}[x] = {}[{}];", name(result), name(src), index);
  out_.close();
  return true;
}

/// Each thread reads the elements of a shared vector that its registers
/// hold; a column vector's pairs of adjacent columns in one 8-byte read.
bool KernelEmitter::emitSharedVectorRead(const Op &op) {
  const Value *src = op.operands[0];
  const Value *result = op.result();
  LayoutKind kind = result->type.layout.kind;
  if (src->type.dtype != DType::F32 || (kind != LayoutKind::AccCol && kind != LayoutKind::AccRow))
    return emitVectorFromShared(op);
  declareName(result);
  declareTile(result);
  Fragment f = fragment(result->type);
  bool pairs = kind == LayoutKind::AccCol;
  out_.open(fmt::format("TKC_UNROLL for (int x = 0; x < {}; x += {})", f.count(), pairs ? 2 : 1));
  out_.line("{}", f.decompose("x", f.row));
  if (pairs)
    out_.line("tkc::ld_shared_f32x2({} + ({}) * 4, {}[x], {}[x + 1]);", name(src), f.row, name(result), name(result));
  else
    out_.line("{}[x] = tkc::ld_shared_f32({} + ({}) * 4);", name(result), name(src), f.row);
  out_.close();
  return true;
}

/// A vector written to a shared slot by the threads that own its elements,
/// to be read back in another layout (after a barrier).
bool KernelEmitter::emitVectorToShared(const Op &op) {
  const Value *src = op.operands[0];
  std::string slot = declareSharedTile(op);
  std::string elem = cType(src->type.dtype);
  Fragment f = fragment(src->type);
  out_.open(fmt::format("TKC_UNROLL for (int x = 0; x < {}; ++x)", f.count()));
  out_.line("{}", f.decompose("x", f.row + " " + f.owner));
  out_.line("if ({}) static_cast<{} *>(__cvta_shared_to_generic({}))[{}] = {}[x];", f.owner, elem, slot, f.row,
            name(src));
  out_.close();
  return true;
}

/// Every thread reads the elements its registers hold of a shared vector.
bool KernelEmitter::emitVectorFromShared(const Op &op) {
  const Value *src = op.operands[0];
  const Value *result = op.result();
  if (!result->type.isRegister() || result->type.shape.size() != 1)
    return unsupported(op, fmt::format("conversion from {} to {}", src->type.str(), result->type.str()));
  declareName(result);
  declareTile(result);
  std::string elem = cType(result->type.dtype);
  Fragment f = fragment(result->type);
  out_.open(fmt::format("TKC_UNROLL for (int x = 0; x < {}; ++x)", f.count()));
  out_.line("{}", f.decompose("x", f.row));
  // A padding slot of a #vec vector (past the length) reads a copy of element 0.
  std::string index = result->type.layout.kind == LayoutKind::Vec && result->type.shape[0] % 32
                          ? fmt::format("({}) < {} ? ({}) : 0", f.row, result->type.shape[0], f.row)
                          : f.row;
  out_.line("{}[x] = static_cast<const {} *>(__cvta_shared_to_generic({}))[{}];", name(result), elem, name(src),
            index);
  out_.close();
  return true;
}

bool KernelEmitter::emitConvert(const Op &op) {
  const Value *src = op.operands[0];
  const Value *result = op.result();
  if (result->type.isSharedVector() && src->type.isRegister())
    return emitVectorToShared(op);
  if (result->type.isShared())
    return emitStageToShared(op);
  if (src->type.isSharedVector())
    return emitSharedVectorRead(op);
  if (result->type.layout.kind != LayoutKind::OperandA)
    return unsupported(op, fmt::format("conversion from {} to {}", src->type.str(), result->type.str()));
  declareName(result);
  declareTile(result);
  if (src->type.isShared()) {
    emitLoadOperandA(src, result->type, name(result));
    return true;
  }
  if (src->type.layout.kind != LayoutKind::Acc || src->type.layout.warpsN != 1)
    return unsupported(op, fmt::format("conversion from {} to {}", src->type.str(), result->type.str()));
  // The accumulator of m16n8k16 holds, per 16x16 block, exactly the
  // elements the A operand needs: pair them up into registers.
  int64_t wm = src->type.shape[0] / src->type.layout.warpsM;
  int mt = static_cast<int>(wm / 16), kt = static_cast<int>(src->type.shape[1] / 16);
  int nt = kt * 2;
  // Pack straight from f32 when the source is a rounding of an f32 tile,
  // possibly with its tail columns zeroed: one cvt per pair, no bf16 copy.
  const Value *packed = src;
  const Op *columnMask = nullptr;
  if (const Op *def = src->definingOp; def && def->kind == OpKind::Mask && def->intAttr("axis") == 1 &&
                                       def->floatAttr("fill") == 0.0) {
    columnMask = def;
    packed = def->operands[0];
  }
  // Only when the rounding (and mask) were absorbed, that is, nothing else
  // reads them: otherwise they are emitted anyway and the packing reads them.
  bool fromFloat = false;
  if (const Op *def = packed->definingOp; def && def->kind == OpKind::Cast && absorbed_.count(def) &&
                                          def->operands[0]->type.dtype == DType::F32 &&
                                          def->operands[0]->type.isRegister() &&
                                          def->operands[0]->type.layout == src->type.layout) {
    packed = def->operands[0];
    fromFloat = true;
  }
  if (!fromFloat) {
    packed = src;
    columnMask = nullptr;
  }
  if (identityOps_.count(columnMask)) // an interior tile
    columnMask = nullptr;
  std::string pack = fromFloat ? (src->type.dtype == DType::BF16 ? "tkc::pack_bf16" : "tkc::pack_f16") : "tkc::pack2";
  out_.open(fmt::format("TKC_UNROLL for (int x = 0; x < {}; ++x)", mt * kt * 4));
  out_.line("const int i = x / {}, kk = x / 4 % {}, r = x % 4;", kt * 4, kt);
  out_.line("const int at = (i * {} + kk * 2 + r / 2) * 4 + r % 2 * 2;", nt);
  if (columnMask) {
    std::string bound = scalar(columnMask->operands[1]);
    out_.line("float lo = {}[at], hi = {}[at + 1];", name(packed), name(packed));
    out_.open(fmt::format("if ({} < {})", bound, src->type.shape[1]));
    out_.line("const int col = (kk * 2 + r / 2) * 8 + lane % 4 * 2;");
    out_.line("if (col >= {}) lo = 0.0f;", bound);
    out_.line("if (col + 1 >= {}) hi = 0.0f;", bound);
    out_.close();
    out_.line("{}[x] = {}(lo, hi);", name(result), pack);
  } else {
    out_.line("(void)i;");
    out_.line("{}[x] = {}({}[at], {}[at + 1]);", name(result), pack, name(packed), name(packed));
  }
  out_.close();
  return true;
}

} // namespace tkc::codegen
