// tail: dims that are not a multiple of the tile.
//
// A load past the end of a tensor reads zeros and a store past it writes
// nothing; the code generator needs bounds checks exactly where an access may
// run past the end, which `checked` records. The zeros (or whatever
// elementwise ops turned them into) must not reach a reduction or an mma
// contraction, so this pass tracks, for every tile, the axes that may hold
// such padding and masks them right before the consumers that would see them.
#include "passes/Pass.h"
#include "passes/PassUtils.h"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

namespace tkc {
namespace {

using namespace ir;
using namespace passes;

// --- checked ----------------------------------------------------------------

/// offset is `mul(x, c)` or `mul(c, x)` with c a multiple of `size`.
bool isScaledByMultipleOf(const Value *offset, int64_t size) {
  const Op *def = offset->definingOp;
  if (!def || def->kind != OpKind::Mul)
    return false;
  for (const Value *factor : def->operands)
    if (auto c = constantIntOf(factor); c && *c % size == 0)
      return true;
  return false;
}

/// True when `index` is the block's coordinate along a grid axis whose
/// extent is the kernel parameter that sizes `dim` (`grid(..., H, B)`
/// indexing `[block.z, block.y, ...]`): the host launches exactly that many
/// blocks along the axis, and a persistent kernel's tiles cover the same
/// range.
bool isBlockIndexOfExactGrid(const Kernel &kernel, const Dim &dim, const Value *index) {
  const Op *def = index->definingOp;
  if (dim.isStatic() || !def || def->kind != OpKind::BlockId || kernel.launch.ops.empty())
    return false;
  const Op &grid = *kernel.launch.ops.back();
  int64_t axis = def->intAttr("axis");
  if (grid.kind != OpKind::Grid || axis < 0 || axis >= static_cast<int64_t>(grid.operands.size()))
    return false;
  const Value *extent = grid.operands[axis];
  return !extent->definingOp && extent->nameHint == dim.symbol;
}

/// True when the slice [offset, offset + size) (or the single index `offset`
/// when size is 0) provably lies inside a dim.
bool provablyInBounds(const Kernel &kernel, const Dim &dim, int64_t size, const Value *offset) {
  if (size == 0 && isBlockIndexOfExactGrid(kernel, dim, offset))
    return true;
  if (!dim.isStatic())
    return false;
  auto c = constantIntOf(offset);
  if (size == 0)
    return c && *c >= 0 && *c < dim.size;
  if (size == dim.size && c && *c == 0)
    return true;
  if (dim.size % size != 0)
    return false;
  if (c)
    return *c >= 0 && *c % size == 0 && *c + size <= dim.size;
  // A tile-aligned offset into a dim that tiles exactly: the launch grid is
  // assumed to cover the tensor, not to run past it.
  return isScaledByMultipleOf(offset, size);
}

/// Index of the first offset operand of a global access.
unsigned firstOffsetOperand(const Op &op) {
  switch (op.kind) {
  case OpKind::Load: return 1;     // global, offsets
  case OpKind::Store: return 2;    // global, tile, offsets
  case OpKind::AsyncLoad: return 4; // buffer, stage, pred, global, offsets
  default: return 0;
  }
}

unsigned globalOperand(const Op &op) { return op.kind == OpKind::AsyncLoad ? 3 : 0; }

void setChecked(const Kernel &kernel, Op &op) {
  const Type &global = op.operands[globalOperand(op)]->type;
  std::vector<int64_t> sizes = op.listAttr("sizes");
  std::vector<int64_t> checked, checkedLow;
  for (size_t d = 0; d < global.dims.size(); ++d) {
    const Value *offset = op.operands[firstOffsetOperand(op) + d];
    int64_t size = d < sizes.size() ? sizes[d] : 0;
    checked.push_back(provablyInBounds(kernel, global.dims[d], size, offset) ? 0 : 1);
    checkedLow.push_back(provablyNonNegative(offset) ? 0 : 1);
  }
  op.attrs["checked"] = Attr(checked);
  // Slices that may start before the tensor: most kernels have none, and
  // their IR does not mention it.
  if (std::count(checkedLow.begin(), checkedLow.end(), 1))
    op.attrs["checked_low"] = Attr(checkedLow);
}

// --- padding analysis -------------------------------------------------------

/// The number of valid elements along an axis: dim - offset of one global
/// dim of one load. Materialised only when a mask needs it.
struct BoundSource {
  Op *load = nullptr;
  unsigned globalDim = 0;
  auto operator<=>(const BoundSource &) const = default;
};

struct AxisPadding {
  BoundSource bound;
  bool knownZero = false; ///< the padding holds zeros, as a load leaves it
  bool operator==(const AxisPadding &) const = default;
};

/// Tile axis -> its padding; absent axes have none.
using Padding = std::map<int64_t, AxisPadding>;

/// Adds `from`'s axes to `into`. Where both are padded along an axis the
/// bound already in `into` is kept; padding is zero only if both are.
void unite(Padding &into, const Padding &from) {
  for (auto &[axis, padding] : from) {
    auto [it, inserted] = into.emplace(axis, padding);
    if (!inserted)
      it->second.knownZero = it->second.knownZero && padding.knownZero;
  }
}

Padding withoutZeroKnowledge(Padding padding) {
  for (auto &entry : padding)
    entry.second.knownZero = false;
  return padding;
}

bool isElementwise(OpKind kind) {
  return (kind >= OpKind::Add && kind <= OpKind::Tanh) || kind == OpKind::Cast;
}

class TailRewriter {
public:
  explicit TailRewriter(Kernel &kernel) : kernel_(kernel) {}

  void run() {
    walk(kernel_.body, [&](Op &op) {
      if (firstOffsetOperand(op) != 0)
        setChecked(kernel_, op);
    });
    analyzeBlock(kernel_.body);
    maskBlock(kernel_.body);
  }

private:
  const Padding &paddingOf(const Value *v) {
    static const Padding none;
    auto it = padding_.find(v);
    return it == padding_.end() ? none : it->second;
  }

  void analyzeBlock(Block &block) {
    for (auto &op : block.ops) {
      if (op->kind == OpKind::For)
        analyzeLoop(*op);
      else if (op->results.size() == 1)
        padding_[op->result()] = transfer(*op);
    }
  }

  /// Iter args carry the union of their initial and yielded padding; the body
  /// is re-analysed until that union stops growing.
  void analyzeLoop(Op &loop) {
    constexpr unsigned kFirstInit = 3; // operands: lo, hi, step, inits...
    Block &body = *loop.body;
    std::vector<Padding> carried;
    for (size_t i = 0; i < loop.results.size(); ++i)
      carried.push_back(paddingOf(loop.operands[kFirstInit + i]));
    for (;;) {
      for (size_t i = 0; i < carried.size(); ++i)
        padding_[body.args[i + 1].get()] = carried[i];
      analyzeBlock(body);
      const Op &yield = *body.ops.back();
      bool grew = false;
      for (size_t i = 0; i < carried.size(); ++i) {
        Padding next = carried[i];
        for (auto &[axis, padding] : paddingOf(yield.operands[i]))
          // A bound computed inside the loop does not exist where the block
          // argument is used at the top of the next iteration, so only
          // loop-invariant bounds are carried.
          if (!isInside(*padding.bound.load, loop))
            unite(next, {{axis, padding}});
        grew |= next != carried[i];
        carried[i] = std::move(next);
      }
      if (!grew)
        break;
    }
    for (size_t i = 0; i < carried.size(); ++i)
      padding_[loop.result(i)] = carried[i];
  }

  Padding transfer(const Op &op) {
    switch (op.kind) {
    case OpKind::Load: {
      Padding result;
      std::vector<int64_t> sizes = op.listAttr("sizes"), checked = op.listAttr("checked"),
                           checkedLow = op.listAttr("checked_low");
      int64_t tileAxis = 0;
      for (unsigned d = 0; d < sizes.size(); ++d) {
        if (sizes[d] == 0)
          continue; // a dropped dim has no tile axis
        if ((d < checked.size() && checked[d]) || (d < checkedLow.size() && checkedLow[d]))
          result[tileAxis] = {{const_cast<Op *>(&op), d}, true};
        ++tileAxis;
      }
      return result;
    }
    case OpKind::Convert:
    case OpKind::Cast: return paddingOf(op.operands[0]);
    case OpKind::Mask: {
      Padding result = paddingOf(op.operands[0]);
      result.erase(op.intAttr("axis"));
      return result;
    }
    case OpKind::Broadcast: {
      // The vector's axis becomes the tile axis other than the new one.
      Padding result;
      if (auto it = paddingOf(op.operands[0]).find(0); it != paddingOf(op.operands[0]).end())
        result[1 - op.intAttr("axis")] = {it->second.bound, false};
      return result;
    }
    case OpKind::Reduce: {
      Padding result;
      const Padding &input = paddingOf(op.operands[0]);
      // Shared partial results of a column reduction keep the columns as
      // their second axis (their rows are warp rows, never padding).
      size_t kept = op.result()->type.shape.size() == 2 ? 1 : 0;
      if (auto it = input.find(1 - op.intAttr("axis")); it != input.end())
        result[kept] = {it->second.bound, false};
      return result;
    }
    case OpKind::Mma: {
      // Rows come from a's M axis, columns from b's N axis, and c adds in
      // elementwise.
      Padding result;
      const Padding &a = paddingOf(op.operands[0]), &b = paddingOf(op.operands[1]);
      if (auto it = a.find(op.intAttr("trans_a") ? 1 : 0); it != a.end())
        result[0] = {it->second.bound, false};
      if (auto it = b.find(op.intAttr("trans_b") ? 0 : 1); it != b.end())
        result[1] = {it->second.bound, false};
      unite(result, withoutZeroKnowledge(paddingOf(op.operands[2])));
      return result;
    }
    default:
      break;
    }
    if (!isElementwise(op.kind))
      return {};
    Padding result;
    for (const Value *operand : op.operands)
      if (operand->type.isTile())
        unite(result, paddingOf(operand));
    return withoutZeroKnowledge(std::move(result));
  }

  // --- masks ----------------------------------------------------------------

  void maskBlock(Block &block) {
    for (auto &op : block.ops) {
      if (op->body)
        maskBlock(*op->body);
      if (op->kind == OpKind::Reduce)
        maskReduceInput(*op);
      else if (op->kind == OpKind::Mma)
        maskContraction(*op);
    }
  }

  void maskReduceInput(Op &reduce) {
    int64_t axis = reduce.intAttr("axis");
    const Padding &input = paddingOf(reduce.operands[0]);
    auto it = input.find(axis);
    if (it == input.end())
      return;
    std::string kind = reduce.strAttr("kind");
    if (kind == "sum" && it->second.knownZero)
      return; // zeros do not change a sum
    constexpr double kInf = std::numeric_limits<double>::infinity();
    double fill = kind == "max" ? -kInf : kind == "min" ? kInf : 0.0;
    reduce.operands[0] = masked(reduce, reduce.operands[0], axis, it->second.bound, fill);
  }

  /// Padding along K is multiplied into every product, so any that is not
  /// known to be zero is replaced by zeros.
  void maskContraction(Op &mma) {
    int64_t aAxisK = mma.intAttr("trans_a") ? 0 : 1, bAxisK = mma.intAttr("trans_b") ? 1 : 0;
    for (auto [operand, axisK] : {std::pair<unsigned, int64_t>{0, aAxisK}, {1, bAxisK}}) {
      const Padding &padding = paddingOf(mma.operands[operand]);
      auto it = padding.find(axisK);
      if (it == padding.end() || it->second.knownZero)
        continue;
      // A cast used only here whose input is already masked the same way
      // before it (attention's probabilities, summed and then multiplied)
      // reads that mask instead (a zero casts to zero): one mask, not two.
      Value *value = mma.operands[operand];
      if (Value *input = maskedCastInput(value, axisK)) {
        value->definingOp->operands[0] = input;
        continue;
      }
      mma.operands[operand] = masked(mma, value, axisK, it->second.bound, 0.0);
    }
  }

  /// The existing zero mask along `axis` of the input of the single-use
  /// cast `value`, where it comes before the cast; null otherwise.
  Value *maskedCastInput(Value *value, int64_t axis) {
    Op *cast = value->definingOp;
    if (!cast || cast->kind != OpKind::Cast || countUses(*cast->parent)[value] != 1)
      return nullptr;
    auto it = masks_.find(std::make_tuple(cast->operands[0], axis, 0.0, cast->parent));
    if (it == masks_.end())
      return nullptr;
    for (auto &op : cast->parent->ops) {
      if (op.get() == cast)
        return nullptr;
      if (op.get() == it->second->definingOp)
        return it->second;
    }
    return nullptr;
  }

  /// `value` masked along `axis`, created right before `consumer` unless the
  /// same mask already exists in that block: past the tensor's end and,
  /// where the slice may start before the tensor, before its start.
  Value *masked(Op &consumer, Value *value, int64_t axis, const BoundSource &bound, double fill) {
    auto key = std::make_tuple(value, axis, fill, consumer.parent);
    if (auto it = masks_.find(key); it != masks_.end())
      return it->second;
    Value *boundValue = materialize(bound);
    if (!boundValue)
      return value;
    Builder builder(*consumer.parent, positionOf(consumer));
    builder.setLoc(consumer.loc);
    Value *result =
        builder.value(OpKind::Mask, {value, boundValue}, value->type, {{"axis", Attr(axis)}, {"fill", Attr(fill)}});
    if (mayStartBeforeTensor(bound)) {
      // Rare enough that plain elementwise ops do: index + offset >= 0.
      const Op &load = *bound.load;
      Value *offset = load.operands[firstOffsetOperand(load) + bound.globalDim];
      Value *index = builder.value(OpKind::Iota, {}, value->type.withDType(DType::I32), {{"axis", Attr(axis)}});
      Value *position = builder.value(OpKind::Add, {index, offset}, index->type);
      Value *inside = builder.value(OpKind::Ge, {position, builder.constInt(0)}, index->type.withDType(DType::I1));
      result = builder.value(OpKind::Select, {inside, result, builder.constFloat(fill, value->type.dtype)}, value->type);
    }
    masks_[key] = result;
    return result;
  }

  static bool mayStartBeforeTensor(const BoundSource &bound) {
    std::vector<int64_t> checkedLow = bound.load->listAttr("checked_low");
    return bound.globalDim < checkedLow.size() && checkedLow[bound.globalDim];
  }

  /// dim - offset as an i32, computed right after the load.
  Value *materialize(const BoundSource &bound) {
    if (auto it = bounds_.find(bound); it != bounds_.end())
      return it->second;
    Op &load = *bound.load;
    const Dim &dim = load.operands[0]->type.dims[bound.globalDim];
    Value *offset = load.operands[firstOffsetOperand(load) + bound.globalDim];
    Builder builder(*load.parent, std::next(positionOf(load)));
    builder.setLoc(load.loc);
    Value *result = nullptr;
    if (dim.isStatic()) {
      auto constantOffset = constantIntOf(offset);
      result = constantOffset ? builder.constInt(dim.size - *constantOffset)
                              : builder.value(OpKind::Sub, {builder.constInt(dim.size), offset}, Type::scalar(DType::I32));
    } else if (Value *extent = parameterNamed(dim.symbol)) {
      result = builder.value(OpKind::Sub, {extent, offset}, Type::scalar(DType::I32));
    }
    // The verifier guarantees that every dim symbol names a parameter, so a
    // null result is not expected.
    bounds_[bound] = result;
    return result;
  }

  Value *parameterNamed(const std::string &name) {
    for (auto &arg : kernel_.body.args)
      if (arg->nameHint == name && arg->type.isScalar())
        return arg.get();
    return nullptr;
  }

  Kernel &kernel_;
  std::map<const Value *, Padding> padding_;
  std::map<BoundSource, Value *> bounds_;
  std::map<std::tuple<Value *, int64_t, double, Block *>, Value *> masks_;
};

class TailPass : public Pass {
public:
  const char *name() const override { return "tail"; }
  const char *description() const override {
    return "mark accesses that may run past a tensor's end and mask padding before reductions and mma";
  }
  bool run(Module &module, const Target &, DiagnosticEngine &) override {
    for (auto &kernel : module.kernels)
      TailRewriter(*kernel).run();
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> createTailPass() { return std::make_unique<TailPass>(); }

} // namespace tkc
