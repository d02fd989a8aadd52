// Scalars, tiles, global and shared memory, and the cp.async pipeline of
// sm_80, with the padding rule: elements past a tensor's end are padding,
// which reductions and contractions skip, so that a pass that masks them
// explicitly and one that relies on zero fill give the same results.
#include "interp/Machine.h"
#include "support/Numeric.h"
#include "runtime/tkc_int.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace tkc::interp::detail {

using namespace ir;

namespace {
int64_t count(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}

/// i32 arithmetic as the GPU does it, on operands held as doubles: `+ - *`
/// wrap to 32 bits, and division, remainder, cdiv, min and max are
/// tkc_int.h's. The product is formed in 64 bits, since a double holds only
/// 53 and would lose the low bits that the wrapped result keeps.
std::optional<double> applyInt(OpKind kind, double a, double b) {
  auto x = static_cast<int32_t>(static_cast<int64_t>(a)), y = static_cast<int32_t>(static_cast<int64_t>(b));
  auto wrap = [](int64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(v)); };
  switch (kind) {
  case OpKind::Add: return wrap(int64_t(x) + y);
  case OpKind::Sub: return wrap(int64_t(x) - y);
  case OpKind::Mul: return wrap(int64_t(x) * y);
  case OpKind::Div: return tkc::div(x, y);
  case OpKind::Rem: return tkc::rem(x, y);
  case OpKind::CDiv: return tkc::cdiv(x, y);
  case OpKind::Max: return tkc::max(x, y);
  case OpKind::Min: return tkc::min(x, y);
  case OpKind::Abs: return tkc::abs(x);
  default: return std::nullopt;
  }
}

double apply(OpKind kind, double a, double b, bool isFloat) {
  if (!isFloat)
    if (std::optional<double> v = applyInt(kind, a, b))
      return *v;
  switch (kind) {
  case OpKind::Add: return a + b;
  case OpKind::Sub: return a - b;
  case OpKind::Mul: return a * b;
  case OpKind::Div: return a / b;
  case OpKind::Rem: return std::fmod(a, b);
  case OpKind::Max: return std::fmax(a, b);
  case OpKind::Min: return std::fmin(a, b);
  case OpKind::CDiv: return std::ceil(a / b);
  case OpKind::Lt: return a < b;
  case OpKind::Le: return a <= b;
  case OpKind::Gt: return a > b;
  case OpKind::Ge: return a >= b;
  case OpKind::Eq: return a == b;
  case OpKind::Ne: return a != b;
  case OpKind::And: return (a != 0) && (b != 0);
  case OpKind::Or: return (a != 0) || (b != 0);
  case OpKind::Neg: return -a;
  case OpKind::Exp: return std::exp(a);
  case OpKind::Exp2: return std::exp2(a);
  case OpKind::Log: return std::log(a);
  case OpKind::Log2: return std::log2(a);
  case OpKind::Sqrt: return std::sqrt(a);
  case OpKind::Rsqrt: return 1 / std::sqrt(a);
  case OpKind::Abs: return std::fabs(a);
  case OpKind::Tanh: return std::tanh(a);
  case OpKind::Erf: return std::erf(a);
  case OpKind::Sigmoid: return 1 / (1 + std::exp(-a));
  case OpKind::Silu: return a / (1 + std::exp(-a));
  default: return a;
  }
}

} // namespace

// --- helpers -----------------------------------------------------------------

RValue Machine::newTile(const Type &type) {
  RValue r;
  r.shape = type.shape;
  r.tile = std::make_shared<std::vector<double>>(count(type.shape), 0.0);
  r.writtenAt = clock_;
  return r;
}

std::vector<double> &Machine::data(RValue &r) {
  if (r.buffer)
    return r.buffer->slots[r.stage >= 0 ? r.stage : 0];
  return *r.tile;
}

const char *Machine::padOf(RValue &r) {
  if (r.buffer)
    return r.buffer->pads[r.stage >= 0 ? r.stage : 0].data();
  return r.pad ? r.pad->data() : nullptr;
}

void Machine::markPad(RValue &r, int64_t i) {
  if (!r.pad)
    r.pad = std::make_shared<std::vector<char>>(r.tile->size(), 0);
  (*r.pad)[i] = 1;
}

/// Loop-carried values and yields: a slot view is read now (the slot will be
/// overwritten); anything else is immutable and shared, which keeps a
/// wgmma result in flight the same value through a loop.
RValue Machine::copyOf(RValue &v) {
  if (!v.buffer || v.stage < 0)
    return v;
  RValue r;
  r.shape = v.shape;
  r.tile = std::make_shared<std::vector<double>>(data(v));
  r.pad = std::make_shared<std::vector<char>>(v.buffer->pads[v.stage]);
  r.writtenAt = clock_;
  return r;
}

std::vector<int64_t> Machine::sliceBase(Context &ctx, const Op &op, size_t firstOffset, const Tensor &t) {
  std::vector<int64_t> base(t.dims.size());
  for (size_t d = 0; d < t.dims.size(); ++d)
    base[d] = static_cast<int64_t>(get(ctx, op.operands[firstOffset + d]).scalar);
  return base;
}

/// The code generator tests an access's bounds only along the dims the tail
/// pass flags (`checked` for the high end, `checked_low` for the low one; a
/// gather tests its indices itself). An element is accessed where every
/// tested dim holds it inside; if such an element lies outside an untested
/// dim, the GPU would read or write memory outside the tensor, which the
/// interpreter's own bounds handling would hide.
Machine::Status Machine::checkUntestedBounds(const Op &op, const Tensor &t, const std::vector<int64_t> &base) {
  if (!op.hasAttr("checked"))
    return Status::Next;
  std::vector<int64_t> sizes = op.listAttr("sizes"), checked = op.listAttr("checked");
  std::vector<int64_t> checkedLow = op.hasAttr("checked_low") ? op.listAttr("checked_low") : std::vector<int64_t>{};
  int64_t gathered = op.kind == OpKind::Gather ? op.intAttr("axis") : -1;
  size_t dims = std::min({t.dims.size(), base.size(), sizes.size(), checked.size()});
  // The part of each dim's range that passes the tests.
  std::vector<std::pair<int64_t, int64_t>> passing(dims);
  for (size_t d = 0; d < dims; ++d) {
    int64_t lo = base[d], hi = base[d] + std::max<int64_t>(sizes[d], 1);
    if (int64_t(d) == gathered)
      lo = 0, hi = 1;
    if (checked[d])
      hi = std::min(hi, t.dims[d]);
    if (d < checkedLow.size() && checkedLow[d])
      lo = std::max<int64_t>(lo, 0);
    if (lo >= hi)
      return Status::Next; // every element fails a test
    passing[d] = {lo, hi};
  }
  for (size_t d = 0; d < dims; ++d) {
    auto [lo, hi] = passing[d];
    if (lo < 0 || hi > t.dims[d]) {
      bool high = hi > t.dims[d];
      return fail(op, DiagId::InterpUncheckedOutside, ir::mnemonicOf(op.kind), high ? hi - 1 : lo, d,
                  nameOf(op.operands[op.kind == OpKind::AsyncLoad || op.kind == OpKind::WarpCopy ? 3 : 0]), t.dims[d],
                  high ? "checked" : "checked_low");
    }
  }
  return Status::Next;
}

void Machine::multiply(RValue &a, RValue &b, RValue &c, bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                       RValue &out) {
  const std::vector<double> &av = data(a), &bv = data(b), &cv = data(c);
  const char *aPad = padOf(a), *bPad = padOf(b), *cPad = padOf(c);
  auto aAt = [&](int64_t i, int64_t x) { return transA ? x * m + i : i * k + x; };
  auto bAt = [&](int64_t x, int64_t j) { return transB ? j * k + x : x * n + j; };
  // A product element is padding when its whole row of a or column of b is.
  std::vector<char> rowPadded(m, 0), colPadded(n, 0);
  if (aPad)
    for (int64_t i = 0; i < m; ++i) {
      rowPadded[i] = k > 0;
      for (int64_t x = 0; x < k && rowPadded[i]; ++x)
        rowPadded[i] = aPad[aAt(i, x)] != 0;
    }
  if (bPad)
    for (int64_t j = 0; j < n; ++j) {
      colPadded[j] = k > 0;
      for (int64_t x = 0; x < k && colPadded[j]; ++x)
        colPadded[j] = bPad[bAt(x, j)] != 0;
    }
  std::vector<double> &result = *out.tile;
  std::vector<double> bColumn(k);
  std::vector<char> bColumnPad(k, 0);
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t x = 0; x < k; ++x) {
      bColumn[x] = bv[bAt(x, j)];
      bColumnPad[x] = bPad ? bPad[bAt(x, j)] : 0;
    }
    for (int64_t i = 0; i < m; ++i) {
      // Padding takes no part in a contraction.
      double sum = cv[i * n + j];
      for (int64_t x = 0; x < k; ++x)
        if (!(aPad && aPad[aAt(i, x)]) && !bColumnPad[x])
          sum += av[aAt(i, x)] * bColumn[x];
      result[i * n + j] = roundTo(DType::F32, sum);
      if (rowPadded[i] || colPadded[j] || (cPad && cPad[i * n + j]))
        markPad(out, i * n + j);
    }
  }
}

// --- ops ---------------------------------------------------------------------

Machine::Status Machine::execConst(Context &ctx, const Op &op) {
  RValue r;
  r.scalar = op.floatAttr("value");
  ctx.values[op.result()] = r;
  return Status::Next;
}

Machine::Status Machine::execBlockId(Context &ctx, const Op &op) {
  RValue r;
  r.scalar = static_cast<double>(block_[op.intAttr("axis") % 3]);
  ctx.values[op.result()] = r;
  return Status::Next;
}

Machine::Status Machine::execElementwise(Context &ctx, const Op &op) {
  const Type &type = op.result()->type;
  bool floatOp = false;
  for (const Value *operand : op.operands)
    floatOp = floatOp || isFloat(operand->type.dtype);
  // Each operand once: its data, or its scalar broadcast.
  struct Operand {
    const double *data = nullptr;
    const char *pad = nullptr;
    double scalar = 0;
    double at(int64_t i) const { return data ? data[i] : scalar; }
  };
  std::vector<Operand> in;
  for (const Value *operand : op.operands) {
    RValue &r = get(ctx, operand);
    Operand o;
    if (operand->type.isScalar()) {
      o.scalar = r.scalar;
    } else {
      o.data = data(r).data();
      o.pad = padOf(r);
    }
    in.push_back(o);
  }
  int64_t n = type.isScalar() ? 1 : count(type.shape);
  RValue r = type.isScalar() ? RValue{} : newTile(type);
  bool carriedSelect = op.kind == OpKind::Select && op.hasAttr("carried");
  for (int64_t i = 0; i < n; ++i) {
    double v;
    if (op.kind == OpKind::Select)
      v = in[0].at(i) != 0 ? in[1].at(i) : in[2].at(i);
    else if (op.kind == OpKind::Cast && type.dtype == DType::I32 && isFloat(op.operands[0]->type.dtype))
      v = saturatingToI32(in[0].at(i));
    else if (op.kind == OpKind::Cast)
      v = in[0].at(i);
    else
      v = apply(op.kind, in[0].at(i), in.size() > 1 ? in[1].at(i) : 0, floatOp);
    v = roundTo(type.dtype, v);
    if (type.isScalar()) {
      r.scalar = v;
      continue;
    }
    (*r.tile)[i] = v;
    if (carriedSelect) {
      // The tail pass's select for a carried tile: padding where the
      // element it takes is.
      const Operand &chosen = in[0].at(i) != 0 ? in[1] : in[2];
      if (chosen.pad && chosen.pad[i])
        markPad(r, i);
      continue;
    }
    for (const Operand &o : in)
      if (o.pad && o.pad[i]) {
        markPad(r, i);
        break;
      }
  }
  ctx.values[op.result()] = r;
  return Status::Next;
}

Machine::Status Machine::execFill(Context &ctx, const Op &op) {
  const Type &type = op.result()->type;
  RValue r = newTile(type);
  std::fill(r.tile->begin(), r.tile->end(), roundTo(type.dtype, op.floatAttr("value")));
  ctx.values[op.result()] = r;
  return Status::Next;
}

/// NaN, so that an undefined value that reaches a result shows as a
/// difference from the reference.
Machine::Status Machine::execUndef(Context &ctx, const Op &op) {
  RValue r = newTile(op.result()->type);
  std::fill(r.tile->begin(), r.tile->end(), std::numeric_limits<double>::quiet_NaN());
  ctx.values[op.result()] = r;
  return Status::Next;
}

Machine::Status Machine::execIota(Context &ctx, const Op &op) {
  const Type &type = op.result()->type;
  RValue r = newTile(type);
  int64_t axis = op.intAttr("axis");
  int64_t cols = type.shape.size() == 2 ? type.shape[1] : 1;
  for (int64_t i = 0; i < count(type.shape); ++i)
    (*r.tile)[i] = axis == 0 && type.shape.size() == 2 ? i / cols : i % (type.shape.back());
  ctx.values[op.result()] = r;
  return Status::Next;
}

Machine::Status Machine::execLoad(Context &ctx, const Op &op) {
  const Type &type = op.result()->type;
  RValue r = newTile(type);
  const Tensor &t = tensors_[get(ctx, op.operands[0]).global];
  std::vector<int64_t> base = sliceBase(ctx, op, 1, t);
  if (checkUntestedBounds(op, t, base) == Status::Failed)
    return Status::Failed;
  forSlice(op, t, base, count(type.shape), [&](int64_t i, int64_t at) {
    (*r.tile)[i] = at < 0 ? 0.0 : t.data[at];
    if (at < 0)
      markPad(r, i);
  });
  ctx.values[op.result()] = r;
  return Status::Next;
}

/// Element i reads the index tile's i-th value at the gathered dim and
/// position i of the sliced dim (if any). It is padding where the sliced
/// position or a scalar index lies outside the tensor, or the index element
/// is padding; an index outside its dim reads as zero without being padding.
Machine::Status Machine::execGather(Context &ctx, const Op &op) {
  const Type &type = op.result()->type;
  RValue r = newTile(type);
  const Tensor &t = tensors_[get(ctx, op.operands[0]).global];
  size_t axis = static_cast<size_t>(op.intAttr("axis"));
  std::vector<int64_t> sizes = op.listAttr("sizes");
  RValue &indexValue = get(ctx, op.operands[1 + axis]);
  const std::vector<double> &indices = data(indexValue);
  const char *indexPad = padOf(indexValue);
  std::vector<int64_t> base(t.dims.size());
  for (size_t d = 0; d < t.dims.size(); ++d)
    if (d != axis)
      base[d] = static_cast<int64_t>(get(ctx, op.operands[1 + d]).scalar);
  if (checkUntestedBounds(op, t, base) == Status::Failed)
    return Status::Failed;
  for (int64_t i = 0; i < type.shape[0]; ++i) {
    std::vector<int64_t> at = base;
    bool padded = indexPad && indexPad[i];
    for (size_t d = 0; d < t.dims.size(); ++d) {
      if (d == axis)
        continue;
      at[d] += sizes[d] > 0 ? i : 0;
      padded = padded || at[d] < 0 || at[d] >= t.dims[d];
    }
    // i32 values are integers; anything else (hand-written IR) is outside.
    double index = indices[i];
    at[axis] = index >= 0 && index < double(t.dims[axis]) ? static_cast<int64_t>(index) : -1;
    int64_t offset = padded ? -1 : globalOffset(t, at);
    (*r.tile)[i] = offset < 0 ? 0.0 : t.data[offset];
    if (padded)
      markPad(r, i);
  }
  ctx.values[op.result()] = r;
  return Status::Next;
}

Machine::Status Machine::execStore(Context &ctx, const Op &op) {
  Tensor &t = tensors_[get(ctx, op.operands[0]).global];
  const Value *tile = op.operands[1];
  const std::vector<double> &values = data(get(ctx, tile));
  bool accumulate = op.hasAttr("accumulate");
  std::vector<int64_t> base = sliceBase(ctx, op, 2, t);
  if (checkUntestedBounds(op, t, base) == Status::Failed)
    return Status::Failed;
  forSlice(op, t, base, count(tile->type.shape), [&](int64_t i, int64_t at) {
    if (at >= 0)
      t.data[at] = roundTo(t.dtype, accumulate ? t.data[at] + values[i] : values[i]);
  });
  return Status::Next;
}

Machine::Status Machine::execMma(Context &ctx, const Op &op) {
  const Type &type = op.result()->type;
  RValue r = newTile(type);
  bool transA = op.intAttr("trans_a") != 0;
  multiply(get(ctx, op.operands[0]), get(ctx, op.operands[1]), get(ctx, op.operands[2]), transA,
           op.intAttr("trans_b") != 0, type.shape[0], type.shape[1], op.operands[0]->type.shape[transA ? 0 : 1], r);
  ctx.values[op.result()] = r;
  return Status::Next;
}

namespace {
/// The warp row of a register tile that holds row `row` (what a column
/// reduction's shared partial results are indexed by).
int64_t warpRowOf(const Type &tile, int64_t row) {
  const Layout &l = tile.layout;
  if (l.kind == LayoutKind::Acc)
    return row / (tile.shape[0] / l.warpsM);
  // A strip gives each warp 32 / lanes consecutive rows at a time, round robin.
  return row / (32 / l.lanes) % l.warpsM;
}
} // namespace

Machine::Status Machine::execReduce(Context &ctx, const Op &op) {
  const Type &type = op.result()->type;
  RValue &in = get(ctx, op.operands[0]);
  const std::vector<double> &x = data(in);
  const char *pad = padOf(in);
  int64_t rows = op.operands[0]->type.shape[0], cols = op.operands[0]->type.shape[1];
  int64_t axis = op.intAttr("axis");
  std::string kind = op.strAttr("kind");
  // Shared partial results: one row of column reductions per warp row.
  bool partials = type.isShared();
  RValue r = newTile(type);
  double init = kind == "sum" ? 0.0 : kind == "max" ? -INFINITY : INFINITY;
  std::fill(r.tile->begin(), r.tile->end(), init);
  std::vector<char> seen(r.tile->size(), 0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      if (pad && pad[i * cols + j])
        continue; // reductions do not see padding
      int64_t at = partials ? warpRowOf(op.operands[0]->type, i) * cols + j : axis == 1 ? i : j;
      double &acc = (*r.tile)[at];
      double v = x[i * cols + j];
      acc = kind == "sum" ? acc + v : kind == "max" ? std::max(acc, v) : std::min(acc, v);
      seen[at] = 1;
    }
  for (size_t i = 0; i < seen.size(); ++i)
    if (!seen[i])
      markPad(r, static_cast<int64_t>(i));
  for (double &v : *r.tile)
    v = roundTo(type.dtype, v);
  ctx.values[op.result()] = r;
  return Status::Next;
}

Machine::Status Machine::execBroadcast(Context &ctx, const Op &op) {
  const Type &type = op.result()->type;
  RValue &in = get(ctx, op.operands[0]);
  const std::vector<double> &x = data(in);
  const char *pad = padOf(in);
  int64_t axis = op.intAttr("axis");
  int64_t cols = type.shape[1];
  RValue r = newTile(type);
  for (int64_t i = 0; i < count(type.shape); ++i) {
    int64_t from = axis == 1 ? i / cols : i % cols;
    (*r.tile)[i] = x[from];
    if (pad && pad[from])
      markPad(r, i);
  }
  ctx.values[op.result()] = r;
  return Status::Next;
}

Machine::Status Machine::execConvert(Context &ctx, const Op &op) {
  const Type &type = op.result()->type;
  RValue &in = get(ctx, op.operands[0]);
  RValue r = newTile(type);
  *r.tile = data(in);
  if (const char *pad = padOf(in))
    for (int64_t i = 0; i < count(type.shape); ++i)
      if (pad[i])
        markPad(r, i);
  ctx.values[op.result()] = r;
  return Status::Next;
}

Machine::Status Machine::execMask(Context &ctx, const Op &op) {
  const Type &type = op.result()->type;
  RValue &in = get(ctx, op.operands[0]);
  const char *pad = padOf(in);
  RValue r = newTile(type);
  *r.tile = data(in);
  int64_t bound = static_cast<int64_t>(get(ctx, op.operands[1]).scalar);
  int64_t axis = op.intAttr("axis");
  int64_t cols = type.shape.size() == 2 ? type.shape[1] : 1;
  for (int64_t i = 0; i < count(type.shape); ++i) {
    int64_t index = type.shape.size() == 1 ? i : (axis == 0 ? i / cols : i % cols);
    if (index >= bound)
      (*r.tile)[i] = roundTo(type.dtype, op.floatAttr("fill"));
    else if (pad && pad[i])
      markPad(r, i);
  }
  ctx.values[op.result()] = r;
  return Status::Next;
}

Machine::Status Machine::execSmemAlloc(Context &ctx, const Op &op) {
  const Type &type = op.result()->type;
  auto buffer = std::make_shared<SharedBuffer>();
  buffer->value = op.result();
  if (type.layout.kind == LayoutKind::Mbarrier) {
    buffer->bars.resize(type.shape.empty() ? 0 : type.shape[0]);
  } else {
    size_t slots = std::max(type.stages, 1);
    buffer->slots.assign(slots, std::vector<double>(count(type.shape), NAN));
    buffer->pads.assign(slots, std::vector<char>(count(type.shape), 0));
    buffer->copiesInFlight.assign(slots, 0);
    buffer->readers.assign(slots, 0);
    buffer->slotWrite.assign(slots, 0);
    buffer->staging.assign(slots, {});
  }
  buffer->offset = op.intAttr("offset", -1);
  buffer->slotBytes = count(type.shape) * dtypeBytes(type.dtype);
  RValue r;
  r.shape = type.shape;
  r.buffer = buffer;
  ctx.values[op.result()] = r;
  return Status::Next;
}

Machine::Status Machine::execStageView(Context &ctx, const Op &op) {
  RValue r = get(ctx, op.operands[0]);
  int64_t stage = static_cast<int64_t>(get(ctx, op.operands[1]).scalar);
  if (!r.buffer || stage < 0 || stage >= static_cast<int64_t>(r.buffer->slots.size()))
    return fail(op, DiagId::InterpMalformedOp, "stage_view",
                fmt::format("slot {} of a buffer with {} slots", stage, r.buffer ? r.buffer->slots.size() : 0));
  r.stage = stage;
  ctx.values[op.result()] = r;
  return Status::Next;
}

Machine::Status Machine::execAsyncLoad(Context &ctx, const Op &op) {
  RValue &buffer = get(ctx, op.operands[0]);
  int64_t stage = static_cast<int64_t>(get(ctx, op.operands[1]).scalar);
  if (!buffer.buffer || stage < 0 || stage >= static_cast<int64_t>(buffer.buffer->slots.size()))
    return fail(op, DiagId::InterpMalformedOp, "async_load", fmt::format("there is no slot {}", stage));
  SharedBuffer &b = *buffer.buffer;
  if (b.copiesInFlight[stage] > 0)
    return fail(op, DiagId::InterpDataRace, stage, nameOf(op.operands[0]),
                "`async_load` starts a copy into it while an earlier copy is in flight");
  // The copy may write from now on.
  if (b.offset >= 0 &&
      genericWrite(ctx, op, op.operands[0], b.offset + stage * b.slotBytes, b.slotBytes, false) == Status::Failed)
    return Status::Failed;
  BulkCopy copy;
  copy.op = &op;
  copy.buffer = buffer.buffer;
  copy.slot = stage;
  copy.global = get(ctx, op.operands[3]).global;
  copy.base = sliceBase(ctx, op, 4, tensors_[copy.global]);
  copy.zeroFill = get(ctx, op.operands[2]).scalar == 0;
  if (!copy.zeroFill && checkUntestedBounds(op, tensors_[copy.global], copy.base) == Status::Failed)
    return Status::Failed;
  ++b.copiesInFlight[stage];
  ctx.asyncOpen.push_back(std::move(copy));
  return Status::Next;
}

Machine::Status Machine::execAsyncCommit(Context &ctx, const Op &op) {
  // As in PTX, a commit with nothing open makes an empty group.
  ctx.asyncGroups.push_back(std::move(ctx.asyncOpen));
  ctx.asyncOpen.clear();
  return Status::Next;
}

Machine::Status Machine::execAsyncWait(Context &ctx, const Op &op) {
  size_t pending = static_cast<size_t>(std::max<int64_t>(op.intAttr("pending"), 0));
  while (ctx.asyncGroups.size() > pending) {
    if (landAsyncGroup(ctx, ctx.asyncGroups.front()) == Status::Failed)
      return Status::Failed;
    ctx.asyncGroups.pop_front();
  }
  return Status::Next;
}

Machine::Status Machine::landAsyncGroup(Context &ctx, std::vector<BulkCopy> &group) {
  for (BulkCopy &copy : group) {
    if (!land(copy))
      return Status::Failed;
    SharedBuffer &b = *copy.buffer;
    // Landed data is the issuing threads' write: others see it after a barrier.
    if (b.offset >= 0 && genericWrite(ctx, *copy.op, copy.op->operands[0], b.offset + copy.slot * b.slotBytes,
                                      b.slotBytes, true) == Status::Failed)
      return Status::Failed;
  }
  return Status::Next;
}

bool Machine::land(BulkCopy &copy) {
  const Op &op = *copy.op;
  const Tensor &t = tensors_[copy.global];
  SharedBuffer &b = *copy.buffer;
  std::vector<double> &slot = b.slots[copy.slot];
  std::vector<char> &pad = b.pads[copy.slot];
  // Zeros past the tensor's bounds (bulk copies: on every side).
  forSlice(op, t, copy.base, static_cast<int64_t>(slot.size()), [&](int64_t i, int64_t at) {
    slot[i] = (copy.zeroFill || at < 0) ? 0.0 : t.data[at];
    pad[i] = at < 0;
  });
  --b.copiesInFlight[copy.slot];
  if (b.offset >= 0)
    b.slotWrite[copy.slot] = writeShared(op, b.offset + copy.slot * b.slotBytes, b.slotBytes);
  if (!copy.bars)
    return true;
  Mbarrier &bar = copy.bars->bars[copy.bar];
  std::string name = fmt::format("`{}`[{}]", nameOf(copy.bars->value), copy.bar);
  if (copy.arrivals > 0)
    return arrive(op, bar, name, copy.arrivals) == Status::Next;
  // complete-tx counts the whole box, zero-filled part included.
  int64_t bytes = b.slotBytes;
  return addTx(op, bar, name, -bytes) == Status::Next;
}

} // namespace tkc::interp::detail
