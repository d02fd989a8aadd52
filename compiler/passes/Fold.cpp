// fold: constant folding, boolean and integer identities, fusion of
// `add(x, mma(a, b, 0))` into an accumulating `mma(a, b, x)`, and dead-code
// elimination, repeated until nothing changes.
//
// An element of an elementwise result is padding (grammar/reference.md:
// reductions skip it) where any of its tile operands is, including the
// operands a constant condition or a deciding constant leaves unchosen. A
// rewrite that drops operands therefore keeps only to the padding of what
// replaces the op: it is made only where the dropped operands can hold no
// padding that the replacement does not hold too.
#include "passes/Pass.h"
#include "passes/IndexBounds.h"
#include "passes/PassUtils.h"
#include "runtime/tkc_int.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <set>

namespace tkc {
namespace {

using namespace ir;
using namespace passes;

int64_t attrAsInt(const Attr &attr) {
  if (auto *d = std::get_if<double>(&attr))
    return static_cast<int64_t>(*d);
  return std::get<int64_t>(attr);
}

/// Integer results wrap like 32-bit two's complement, as they do on the GPU.
int64_t wrapToI32(int64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(v)); }

/// Float results are rounded to f32, as the GPU computes them.
Attr f32Attr(double v) { return Attr(static_cast<double>(static_cast<float>(v))); }

/// Division, remainder, cdiv, min and max as tkc_int.h defines them for the
/// GPU (a divisor of zero never gets here: the folder reports it).
std::optional<Attr> foldIntBinary(OpKind kind, int64_t a, int64_t b) {
  auto a32 = static_cast<int32_t>(wrapToI32(a)), b32 = static_cast<int32_t>(wrapToI32(b));
  switch (kind) {
  case OpKind::Add: return Attr(wrapToI32(a + b));
  case OpKind::Sub: return Attr(wrapToI32(a - b));
  case OpKind::Mul: return Attr(wrapToI32(a * b));
  case OpKind::Div:
  case OpKind::Rem:
  case OpKind::CDiv:
    if (b32 == 0)
      return std::nullopt; // reported by reportConstantErrors
    return Attr(int64_t(kind == OpKind::Div ? tkc::div(a32, b32) : kind == OpKind::Rem ? tkc::rem(a32, b32)
                                                                                         : tkc::cdiv(a32, b32)));
  case OpKind::Max: return Attr(int64_t(tkc::max(a32, b32)));
  case OpKind::Min: return Attr(int64_t(tkc::min(a32, b32)));
  case OpKind::Lt: return Attr(int64_t(a < b));
  case OpKind::Le: return Attr(int64_t(a <= b));
  case OpKind::Gt: return Attr(int64_t(a > b));
  case OpKind::Ge: return Attr(int64_t(a >= b));
  case OpKind::Eq: return Attr(int64_t(a == b));
  case OpKind::Ne: return Attr(int64_t(a != b));
  case OpKind::And: return Attr(int64_t(a != 0 && b != 0));
  case OpKind::Or: return Attr(int64_t(a != 0 || b != 0));
  default: return std::nullopt;
  }
}

std::optional<Attr> foldFloatBinary(OpKind kind, float a, float b) {
  switch (kind) {
  case OpKind::Add: return f32Attr(a + b);
  case OpKind::Sub: return f32Attr(a - b);
  case OpKind::Mul: return f32Attr(a * b);
  case OpKind::Div: return f32Attr(a / b);
  case OpKind::Rem: return f32Attr(std::fmod(a, b));
  case OpKind::Max: return f32Attr(std::fmax(a, b));
  case OpKind::Min: return f32Attr(std::fmin(a, b));
  case OpKind::Lt: return Attr(int64_t(a < b));
  case OpKind::Le: return Attr(int64_t(a <= b));
  case OpKind::Gt: return Attr(int64_t(a > b));
  case OpKind::Ge: return Attr(int64_t(a >= b));
  case OpKind::Eq: return Attr(int64_t(a == b));
  case OpKind::Ne: return Attr(int64_t(a != b));
  default: return std::nullopt;
  }
}

std::optional<Attr> foldUnary(const Op &op, DType from, const Attr &x) {
  DType to = op.result()->type.dtype;
  if (op.kind == OpKind::Neg) {
    if (from == DType::I32)
      return Attr(wrapToI32(-attrAsInt(x)));
    if (from == DType::F32)
      return f32Attr(-attrAsDouble(x));
    return std::nullopt;
  }
  if (op.kind != OpKind::Cast)
    return std::nullopt;
  if (from == to && (from == DType::I32 || from == DType::F32))
    return x;
  if (from == DType::I32 && to == DType::F32)
    return f32Attr(static_cast<double>(attrAsInt(x)));
  if (from == DType::F32 && to == DType::I32) {
    // Float-to-int conversion truncates toward zero; out-of-range values have
    // no portable result, so they are left for the GPU.
    double v = std::trunc(static_cast<float>(attrAsDouble(x)));
    if (!std::isfinite(v) || v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
      return std::nullopt;
    return Attr(static_cast<int64_t>(v));
  }
  return std::nullopt;
}

/// The folded value of a scalar op whose operands are all `const`.
std::optional<Attr> foldConstantScalar(const Op &op) {
  if (op.results.size() != 1 || !op.result()->type.isScalar() || op.operands.empty())
    return std::nullopt;
  std::vector<Attr> values;
  for (Value *operand : op.operands) {
    auto value = constantOf(operand);
    if (!value || !operand->type.isScalar())
      return std::nullopt;
    values.push_back(*value);
  }
  DType dtype = op.operands[0]->type.dtype;
  if (values.size() == 1)
    return foldUnary(op, dtype, values[0]);
  if (values.size() != 2 || op.operands[1]->type.dtype != dtype)
    return std::nullopt;
  if (dtype == DType::I32 || dtype == DType::I1)
    return foldIntBinary(op.kind, attrAsInt(values[0]), attrAsInt(values[1]));
  if (dtype == DType::F32)
    return foldFloatBinary(op.kind, static_cast<float>(attrAsDouble(values[0])),
                           static_cast<float>(attrAsDouble(values[1])));
  return std::nullopt;
}

/// A `const` scalar or a `fill` tile: the constant it holds in every element.
std::optional<Attr> uniformConstantOf(const Value *v) {
  if (auto value = constantOf(v))
    return value;
  return fillValueOf(v);
}

bool isTrue(const Attr &attr) { return !attrIsZero(attr); }

/// One way an element of a tile may be padding: its index along `axis` is
/// outside the dim `dim` of a slice starting at `offset` (a load's), or,
/// for `opaque`, whatever padding that value holds (one the analysis does
/// not follow: a loop's carried values, shared memory). An element is
/// padding where any of its tile's reasons holds.
struct PaddingReason {
  const Dim *dim = nullptr;
  const Value *offset = nullptr;
  const Value *opaque = nullptr;
  int64_t axis = -1;
  bool sameAs(const PaddingReason &other) const {
    if (opaque || other.opaque)
      return opaque == other.opaque;
    return axis == other.axis && *dim == *other.dim && sameScalar(offset, other.offset);
  }
};
using PaddingReasons = std::vector<PaddingReason>;

void addReason(PaddingReasons &into, const PaddingReason &reason) {
  for (const PaddingReason &existing : into)
    if (existing.sameAs(reason))
      return;
  into.push_back(reason);
}

/// The reasons a tile may hold padding, following its computation as the
/// tail pass and the interpreter do.
class PaddingOrigins {
public:
  explicit PaddingOrigins(const Kernel &kernel) : kernel_(kernel) {}

  const PaddingReasons &of(const Value *v) {
    if (auto it = memo_.find(v); it != memo_.end())
      return it->second;
    PaddingReasons reasons = compute(v);
    return memo_[v] = std::move(reasons);
  }

  /// Whether every element that is padding in `dropped` is padding in `kept`.
  bool covers(const Value *kept, const Value *dropped) {
    if (!dropped->type.isTile())
      return true;
    const PaddingReasons &droppedReasons = of(dropped);
    if (droppedReasons.empty())
      return true;
    if (!kept->type.isTile())
      return false;
    PaddingReasons keptReasons = of(kept);
    for (const PaddingReason &reason : droppedReasons)
      if (std::none_of(keptReasons.begin(), keptReasons.end(),
                       [&](const PaddingReason &k) { return k.sameAs(reason); }))
        return false;
    return true;
  }

private:
  PaddingReasons compute(const Value *v) {
    if (!v->type.isTile())
      return {};
    PaddingReasons opaque = {PaddingReason{.opaque = v}};
    const Op *def = v->definingOp;
    if (!def)
      return opaque; // a loop's iter arg
    auto anyOpaque = [](const PaddingReasons &reasons) {
      return std::any_of(reasons.begin(), reasons.end(), [](const PaddingReason &r) { return r.opaque; });
    };
    switch (def->kind) {
    case OpKind::Const:
    case OpKind::Fill:
    case OpKind::Iota:
    case OpKind::Undef: return {};
    case OpKind::Load: {
      PaddingReasons result;
      const Value *global = def->operands[0];
      std::vector<int64_t> sizes = def->listAttr("sizes");
      int64_t axis = 0;
      for (size_t d = 0; d < sizes.size() && d < global->type.dims.size() && 1 + d < def->operands.size(); ++d) {
        if (sizes[d] == 0)
          continue; // a dropped dim has no tile axis
        const Dim &dim = global->type.dims[d];
        const Value *offset = def->operands[1 + d];
        if (!provablyInBounds(kernel_, dim, sizes[d], offset) || !provablyNonNegative(kernel_, offset))
          addReason(result, {.dim = &dim, .offset = offset, .axis = axis});
        ++axis;
      }
      return result;
    }
    case OpKind::Cast:
    case OpKind::Convert: return of(def->operands[0]);
    case OpKind::Reduce: {
      // Rows (or columns) that are padding stay padding; shared partial
      // results of a column reduction keep the columns as their second axis.
      const PaddingReasons &input = of(def->operands[0]);
      if (anyOpaque(input) || def->operands[0]->type.shape.size() != 2)
        return opaque;
      int64_t keptIn = 1 - def->intAttr("axis");
      int64_t keptOut = v->type.shape.size() == 2 ? 1 : 0;
      PaddingReasons result;
      for (PaddingReason reason : input)
        if (reason.axis == keptIn) {
          reason.axis = keptOut;
          addReason(result, reason);
        }
      return result;
    }
    case OpKind::Broadcast: {
      const PaddingReasons &input = of(def->operands[0]);
      if (anyOpaque(input))
        return opaque;
      PaddingReasons result;
      for (PaddingReason reason : input) {
        reason.axis = 1 - def->intAttr("axis");
        addReason(result, reason);
      }
      return result;
    }
    case OpKind::Mma: {
      const PaddingReasons &a = of(def->operands[0]), &b = of(def->operands[1]), &c = of(def->operands[2]);
      if (anyOpaque(a) || anyOpaque(b))
        return opaque;
      int64_t aRows = def->intAttr("trans_a") ? 1 : 0, bCols = def->intAttr("trans_b") ? 0 : 1;
      PaddingReasons result = c;
      for (PaddingReason reason : a)
        if (reason.axis == aRows) {
          reason.axis = 0;
          addReason(result, reason);
        }
      for (PaddingReason reason : b)
        if (reason.axis == bCols) {
          reason.axis = 1;
          addReason(result, reason);
        }
      return result;
    }
    default: break;
    }
    bool elementwise = (def->kind >= OpKind::Add && def->kind <= OpKind::Silu) || def->kind == OpKind::Cast;
    if (!elementwise || def->results.size() != 1)
      return opaque;
    PaddingReasons result;
    for (const Value *operand : def->operands)
      for (const PaddingReason &reason : of(operand))
        addReason(result, reason);
    return result;
  }

  const Kernel &kernel_;
  std::map<const Value *, PaddingReasons> memo_;
};

class Folder {
public:
  Folder(const Kernel &kernel, Block &root) : root_(root), uses_(countUses(root)), padding_(kernel) {}

  /// One sweep over every op; true if anything changed.
  bool foldBlock(Block &block) {
    bool changed = false;
    for (auto &op : block.ops) {
      if (op->body)
        changed |= foldBlock(*op->body);
      changed |= foldOp(*op);
    }
    return changed;
  }

private:
  bool foldOp(Op &op) {
    if (auto folded = foldConstantScalar(op)) {
      becomeConstant(op, *folded);
      return true;
    }
    switch (op.kind) {
    case OpKind::Select: return foldSelect(op);
    case OpKind::And:
    case OpKind::Or: return foldLogic(op);
    case OpKind::Add: return foldIntIdentity(op) || fuseMmaAccumulate(op);
    case OpKind::Sub:
    case OpKind::Mul: return foldIntIdentity(op);
    default: return false;
    }
  }

  /// Rewrites `op` in place into a `const` (scalar result) or a `fill` (tile
  /// result) holding `value`; its users need not change.
  void becomeConstant(Op &op, const Attr &value) {
    const Type &type = op.result()->type;
    Attr typed = isFloat(type.dtype) ? Attr(attrAsDouble(value)) : Attr(attrAsInt(value));
    for (Value *operand : op.operands)
      --uses_[operand];
    op.kind = type.isScalar() ? OpKind::Const : OpKind::Fill;
    op.operands.clear();
    op.attrs = {{"value", typed}};
  }

  /// Makes `op`'s result stand for `replacement`. A scalar constant may stand
  /// for a tile result: the op then becomes a `fill`. Returns false (and
  /// changes nothing) when the types do not allow it.
  bool replaceWith(Op &op, Value *replacement) {
    Value *result = op.result();
    if (replacement->type == result->type) {
      uses_[replacement] += uses_[result];
      uses_[result] = 0;
      replaceAllUsesIn(root_, result, replacement);
      return true;
    }
    if (result->type.isTile() && replacement->type.isScalar())
      if (auto value = constantOf(replacement)) {
        becomeConstant(op, *value);
        return true;
      }
    return false;
  }

  /// select(c, a, b) with a constant condition (scalar or uniform tile),
  /// where the operand not chosen holds no padding that the chosen one
  /// does not (`where(0, x, 1.0)` on a loaded x keeps x's padding).
  bool foldSelect(Op &op) {
    auto condition = uniformConstantOf(op.operands[0]);
    if (!condition)
      return false;
    Value *chosen = isTrue(*condition) ? op.operands[1] : op.operands[2];
    Value *other = isTrue(*condition) ? op.operands[2] : op.operands[1];
    if (!padding_.covers(chosen, other) || !padding_.covers(chosen, op.operands[0]))
      return false;
    return replaceWith(op, chosen);
  }

  /// or/and with one constant operand: the constant either decides the result
  /// or drops out.
  bool foldLogic(Op &op) {
    for (int constantSide : {0, 1}) {
      auto constant = uniformConstantOf(op.operands[constantSide]);
      if (!constant)
        continue;
      Value *other = op.operands[1 - constantSide];
      bool decides = op.kind == OpKind::Or ? isTrue(*constant) : !isTrue(*constant);
      if (decides) {
        // A tile `fill` holds no padding: the other operand must hold none.
        if (op.result()->type.isTile() && !padding_.covers(op.operands[constantSide], other))
          continue;
        becomeConstant(op, Attr(int64_t(op.kind == OpKind::Or)));
        return true;
      }
      if (padding_.covers(other, op.operands[constantSide]) && replaceWith(op, other))
        return true;
    }
    return false;
  }

  /// x + 0, 0 + x, x - 0, x * 1, 1 * x, x * 0, 0 * x on i32 scalars.
  bool foldIntIdentity(Op &op) {
    const Type &type = op.result()->type;
    if (!type.isScalar() || type.dtype != DType::I32)
      return false;
    for (int constantSide : {1, 0}) {
      if (constantSide == 0 && op.kind == OpKind::Sub)
        continue;
      auto constant = constantOf(op.operands[constantSide]);
      if (!constant)
        continue;
      int64_t c = attrAsInt(*constant);
      Value *other = op.operands[1 - constantSide];
      if (op.kind == OpKind::Mul && c == 0) {
        becomeConstant(op, Attr(int64_t(0)));
        return true;
      }
      bool neutral = op.kind == OpKind::Mul ? c == 1 : c == 0;
      if (neutral && replaceWith(op, other))
        return true;
    }
    return false;
  }

  /// add(x, mma(a, b, 0)) -> mma(a, b, x) when the product has no other use.
  /// The add itself becomes the mma, so that x (often computed after the
  /// product) is defined before its new user.
  bool fuseMmaAccumulate(Op &op) {
    for (int productSide : {1, 0}) {
      Value *product = op.operands[productSide];
      Value *addend = op.operands[1 - productSide];
      Op *mma = product->definingOp;
      if (!mma || mma->kind != OpKind::Mma || mma->parent != op.parent || uses_[product] != 1)
        continue;
      auto initial = fillValueOf(mma->operands[2]);
      if (!initial || !attrIsZero(*initial) || addend->type != product->type || op.result()->type != product->type)
        continue;
      --uses_[product];
      ++uses_[mma->operands[0]];
      ++uses_[mma->operands[1]];
      op.kind = OpKind::Mma;
      op.operands = {mma->operands[0], mma->operands[1], addend};
      op.attrs = mma->attrs;
      return true;
    }
    return false;
  }

  Block &root_;
  UseCounts uses_;
  PaddingOrigins padding_;
};

/// Integer divisions by a divisor that folded to zero, and grid extents that
/// folded to zero or less: errors in the source, whose location each
/// specialisation reports only once.
bool reportConstantErrors(Kernel &kernel, std::set<std::pair<unsigned, unsigned>> &reported,
                          DiagnosticEngine &diags) {
  bool ok = true;
  auto report = [&](SourceLocation loc, auto id, auto &&...args) {
    ok = false;
    if (reported.insert({loc.file, loc.line * 4096u + loc.column}).second)
      diags.report(loc, id, args...);
  };
  for (Block *block : {&kernel.launch, &kernel.body})
    walk(*block, [&](Op &op) {
      bool divides = op.kind == OpKind::Div || op.kind == OpKind::Rem || op.kind == OpKind::CDiv;
      if (divides && op.operands.size() == 2 && !isFloat(op.operands[1]->type.dtype))
        if (auto divisor = uniformConstantOf(op.operands[1]); divisor && attrAsInt(*divisor) == 0)
          report(op.loc, DiagId::DivisorIsZero, mnemonicOf(op.kind));
      if (op.kind == OpKind::Grid)
        for (size_t i = 0; i < op.operands.size() && i < 3; ++i)
          if (auto extent = constantOf(op.operands[i]); extent && attrAsInt(*extent) <= 0) {
            const Op *def = op.operands[i]->definingOp;
            report(def && def->loc.isValid() ? def->loc : op.loc, DiagId::NonPositiveSize,
                   fmt::format("the grid's {} extent", "xyz"[i]), attrAsInt(*extent));
          }
    });
  return ok;
}

class FoldPass : public Pass {
public:
  const char *name() const override { return "fold"; }
  const char *description() const override {
    return "fold constants, fuse add(x, mma(a, b, 0)) into mma(a, b, x), remove dead code";
  }
  bool run(Module &module, const Target &, DiagnosticEngine &diags) override {
    forEachKernelBlock(module, [](Kernel &kernel, Block &root) {
      bool changed = true;
      while (changed) {
        changed = Folder(kernel, root).foldBlock(root);
        changed |= eliminateDeadCode(root);
      }
    });
    bool ok = true;
    std::set<std::pair<unsigned, unsigned>> reported;
    for (auto &kernel : module.kernels)
      ok &= reportConstantErrors(*kernel, reported, diags);
    return ok;
  }
};

} // namespace

std::unique_ptr<Pass> createFoldPass() { return std::make_unique<FoldPass>(); }

} // namespace tkc
