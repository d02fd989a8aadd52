#include "interp/Interpreter.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <memory>

namespace tkc::interp {

using namespace ir;

double roundTo(DType dtype, double value) {
  switch (dtype) {
  case DType::I1: return value != 0 ? 1 : 0;
  case DType::I32: return static_cast<double>(static_cast<int32_t>(static_cast<int64_t>(value)));
  case DType::F32: return static_cast<double>(static_cast<float>(value));
  case DType::BF16:
  case DType::F16: {
    float f = static_cast<float>(value);
    if (std::isnan(f) || std::isinf(f))
      return f;
    if (dtype == DType::F16) // 10 explicit mantissa bits: round through the scale of the value
      return std::ldexp(std::nearbyint(std::ldexp(static_cast<double>(f), 10 - std::ilogb(f))), std::ilogb(f) - 10);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    bits += 0x7fff + ((bits >> 16) & 1); // round to nearest even on the upper 16 bits
    bits &= 0xffff0000u;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  }
  return value;
}

namespace {

/// A runtime value: a scalar, a dense tile, or a view of one slot of a
/// staged shared buffer (read when used, since copies may land later).
struct Slot;
struct RValue {
  double scalar = 0;
  std::vector<int64_t> shape;
  std::shared_ptr<std::vector<double>> tile;
  std::shared_ptr<std::vector<char>> pad; ///< per element: padding (past a tensor's end), or null for none
  std::shared_ptr<std::vector<std::vector<double>>> buffer; ///< smem_alloc: one vector per stage
  std::shared_ptr<std::vector<std::vector<char>>> bufferPad;
  int64_t stage = -1;                                          ///< stage_view
  int global = -1;                                             ///< index of a global tensor
};

bool isElementwise(OpKind kind) {
  switch (kind) {
  case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Div: case OpKind::Rem:
  case OpKind::Max: case OpKind::Min: case OpKind::CDiv: case OpKind::Lt: case OpKind::Le:
  case OpKind::Gt: case OpKind::Ge: case OpKind::Eq: case OpKind::Ne: case OpKind::And:
  case OpKind::Or: case OpKind::Select: case OpKind::Neg: case OpKind::Exp: case OpKind::Exp2:
  case OpKind::Log: case OpKind::Log2: case OpKind::Sqrt: case OpKind::Rsqrt: case OpKind::Abs:
  case OpKind::Tanh: case OpKind::Cast:
    return true;
  default:
    return false;
  }
}

int64_t count(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}

class Frame {
public:
  Frame(std::vector<Tensor> &tensors, const Kernel &kernel) : tensors_(tensors), kernel_(kernel) {}

  std::optional<std::string> runBody(int64_t bx, int64_t by, int64_t bz) {
    block_[0] = bx;
    block_[1] = by;
    block_[2] = bz;
    values_.clear();
    bindParams(kernel_.body);
    return runBlock(kernel_.body);
  }

  std::optional<std::string> grid(int64_t (&extent)[3]) {
    values_.clear();
    bindParams(kernel_.launch);
    if (auto error = runBlock(kernel_.launch))
      return error;
    const Op &last = *kernel_.launch.ops.back();
    if (last.kind != OpKind::Grid)
      return "launch block does not end in grid";
    for (int i = 0; i < 3; ++i)
      extent[i] = static_cast<int64_t>(get(last.operands[i]).scalar);
    return std::nullopt;
  }

private:
  void bindParams(const Block &block) {
    int tensor = 0;
    for (auto &arg : block.args) {
      RValue v;
      if (arg->type.isGlobal()) {
        v.global = tensor++;
      } else {
        v.scalar = symbolValue(arg->nameHint);
      }
      values_[arg.get()] = v;
    }
  }

  double symbolValue(const std::string &symbol) {
    for (auto &arg : kernel_.body.args)
      if (arg->type.isGlobal()) {
        int index = 0;
        for (auto &other : kernel_.body.args) {
          if (other.get() == arg.get())
            break;
          index += other->type.isGlobal();
        }
        for (size_t d = 0; d < arg->type.dims.size(); ++d)
          if (arg->type.dims[d].symbol == symbol)
            return static_cast<double>(tensors_[index].dims[d]);
      }
    return 0;
  }

  RValue &get(const Value *v) { return values_[v]; }

  /// Element `i` of a tile operand, or the scalar broadcast.
  double element(const Value *v, int64_t i) {
    RValue &r = get(v);
    if (v->type.isScalar())
      return r.scalar;
    return materialize(r)[i];
  }

  std::vector<double> &materialize(RValue &r) {
    if (r.buffer && r.stage >= 0)
      return (*r.buffer)[r.stage];
    return *r.tile;
  }

  /// Whether element `i` of a tile operand is padding.
  bool padded(const Value *v, int64_t i) {
    if (v->type.isScalar())
      return false;
    RValue &r = get(v);
    if (r.buffer && r.stage >= 0)
      return (*r.bufferPad)[r.stage][i] != 0;
    return r.pad && (*r.pad)[i] != 0;
  }

  static void markPad(RValue &r, int64_t i) {
    if (!r.pad)
      r.pad = std::make_shared<std::vector<char>>(r.tile->size(), 0);
    (*r.pad)[i] = 1;
  }

  RValue newTile(const Type &type) {
    RValue r;
    r.shape = type.shape;
    r.tile = std::make_shared<std::vector<double>>(count(type.shape), 0.0);
    return r;
  }

  std::optional<std::string> runBlock(const Block &block) {
    for (auto &op : block.ops)
      if (auto error = runOp(*op))
        return error;
    return std::nullopt;
  }

  static double apply(OpKind kind, double a, double b, bool isFloat) {
    switch (kind) {
    case OpKind::Add: return a + b;
    case OpKind::Sub: return a - b;
    case OpKind::Mul: return a * b;
    case OpKind::Div: return isFloat ? a / b : (b == 0 ? 0 : std::trunc(a / b));
    case OpKind::Rem: return isFloat ? std::fmod(a, b) : (b == 0 ? 0 : std::fmod(a, b));
    case OpKind::Max: return std::max(a, b);
    case OpKind::Min: return std::min(a, b);
    case OpKind::CDiv: return b == 0 ? 0 : std::floor((a + b - 1) / b);
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
    default: return a;
    }
  }

  /// The flat offset of a global element, or -1 past the end.
  int64_t globalOffset(const Tensor &t, const std::vector<int64_t> &index) {
    int64_t offset = 0;
    for (size_t d = 0; d < t.dims.size(); ++d) {
      if (index[d] < 0 || index[d] >= t.dims[d])
        return -1;
      offset = offset * t.dims[d] + index[d];
    }
    return offset;
  }

  /// Visits every element of a slice: `fn(tile index, global index)`.
  template <typename Fn>
  void forSlice(const Op &op, size_t firstOffset, const Tensor &t, int64_t tileCount, Fn &&fn) {
    std::vector<int64_t> sizes = op.listAttr("sizes");
    std::vector<int64_t> base(t.dims.size());
    std::vector<int64_t> extents;
    for (size_t d = 0; d < t.dims.size(); ++d) {
      base[d] = static_cast<int64_t>(get(op.operands[firstOffset + d]).scalar);
      if (sizes[d] > 0)
        extents.push_back(sizes[d]);
    }
    for (int64_t i = 0; i < tileCount; ++i) {
      std::vector<int64_t> index = base;
      int64_t rest = i;
      size_t tileDim = extents.size();
      for (size_t d = t.dims.size(); d-- > 0;) {
        if (sizes[d] == 0)
          continue;
        --tileDim;
        index[d] += rest % extents[tileDim];
        rest /= extents[tileDim];
      }
      fn(i, globalOffset(t, index));
    }
  }

  std::optional<std::string> runOp(const Op &op) {
    const Type *resultType = op.results.empty() ? nullptr : &op.result()->type;
    switch (op.kind) {
    case OpKind::Const: {
      RValue r;
      r.scalar = op.floatAttr("value");
      values_[op.result()] = r;
      return std::nullopt;
    }
    case OpKind::BlockId: {
      RValue r;
      r.scalar = static_cast<double>(block_[op.intAttr("axis") % 3]);
      values_[op.result()] = r;
      return std::nullopt;
    }
    case OpKind::Grid:
    case OpKind::Yield:
    case OpKind::AsyncCommit:
    case OpKind::AsyncWait:
    case OpKind::Barrier:
      return std::nullopt;
    case OpKind::Fill: {
      RValue r = newTile(*resultType);
      std::fill(r.tile->begin(), r.tile->end(), roundTo(resultType->dtype, op.floatAttr("value")));
      values_[op.result()] = r;
      return std::nullopt;
    }
    case OpKind::Iota: {
      RValue r = newTile(*resultType);
      int64_t axis = op.intAttr("axis");
      int64_t cols = resultType->shape.size() == 2 ? resultType->shape[1] : 1;
      for (int64_t i = 0; i < count(resultType->shape); ++i)
        (*r.tile)[i] = axis == 0 && resultType->shape.size() == 2 ? i / cols : i % (resultType->shape.back());
      values_[op.result()] = r;
      return std::nullopt;
    }
    case OpKind::Convert:
    case OpKind::StageView: {
      if (op.kind == OpKind::StageView) {
        RValue r = get(op.operands[0]);
        r.stage = static_cast<int64_t>(get(op.operands[1]).scalar);
        values_[op.result()] = r;
      } else {
        RValue r = newTile(*resultType);
        *r.tile = materialize(get(op.operands[0]));
        for (int64_t i = 0; i < count(resultType->shape); ++i)
          if (padded(op.operands[0], i))
            markPad(r, i);
        values_[op.result()] = r;
      }
      return std::nullopt;
    }
    case OpKind::SmemAlloc: {
      RValue r;
      r.shape = resultType->shape;
      r.buffer = std::make_shared<std::vector<std::vector<double>>>(
          std::max(resultType->stages, 1), std::vector<double>(count(resultType->shape), 0.0));
      r.bufferPad = std::make_shared<std::vector<std::vector<char>>>(std::max(resultType->stages, 1),
                                                                     std::vector<char>(count(resultType->shape), 0));
      values_[op.result()] = r;
      return std::nullopt;
    }
    case OpKind::Load: {
      RValue r = newTile(*resultType);
      const Tensor &t = tensors_[get(op.operands[0]).global];
      forSlice(op, 1, t, count(resultType->shape), [&](int64_t i, int64_t at) {
        (*r.tile)[i] = at < 0 ? 0.0 : t.data[at];
        if (at < 0)
          markPad(r, i);
      });
      values_[op.result()] = r;
      return std::nullopt;
    }
    case OpKind::AsyncLoad: {
      RValue &buffer = get(op.operands[0]);
      int64_t stage = static_cast<int64_t>(get(op.operands[1]).scalar);
      bool pred = get(op.operands[2]).scalar != 0;
      const Tensor &t = tensors_[get(op.operands[3]).global];
      std::vector<double> &slot = (*buffer.buffer)[stage];
      std::vector<char> &slotPad = (*buffer.bufferPad)[stage];
      forSlice(op, 4, t, static_cast<int64_t>(slot.size()), [&](int64_t i, int64_t at) {
        slot[i] = (!pred || at < 0) ? 0.0 : t.data[at];
        slotPad[i] = at < 0;
      });
      return std::nullopt;
    }
    case OpKind::Store: {
      Tensor &t = tensors_[get(op.operands[0]).global];
      const Value *tile = op.operands[1];
      std::vector<double> values = materialize(get(tile));
      forSlice(op, 2, t, count(tile->type.shape), [&](int64_t i, int64_t at) {
        if (at >= 0)
          t.data[at] = roundTo(t.dtype, values[i]);
      });
      return std::nullopt;
    }
    case OpKind::Mma: {
      const std::vector<double> a = materialize(get(op.operands[0]));
      const std::vector<double> b = materialize(get(op.operands[1]));
      const std::vector<double> c = materialize(get(op.operands[2]));
      int64_t m = resultType->shape[0], n = resultType->shape[1], k = op.operands[0]->type.shape[1];
      bool transB = op.intAttr("trans_b") != 0;
      RValue r = newTile(*resultType);
      // Padding takes no part in a contraction; an element all of whose
      // terms are padding (a padded row of a or column of b) is padding.
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double sum = c[i * n + j];
          bool anyTerm = false;
          for (int64_t x = 0; x < k; ++x) {
            int64_t bAt = transB ? j * k + x : x * n + j;
            if (padded(op.operands[0], i * k + x) || padded(op.operands[1], bAt))
              continue;
            anyTerm = true;
            sum += a[i * k + x] * b[bAt];
          }
          (*r.tile)[i * n + j] = roundTo(DType::F32, sum);
          if ((!anyTerm && k > 0 && rowOrColumnPadded(op, i, j, k, n, transB)) || padded(op.operands[2], i * n + j))
            markPad(r, i * n + j);
        }
      values_[op.result()] = r;
      return std::nullopt;
    }
    case OpKind::Reduce: {
      const std::vector<double> x = materialize(get(op.operands[0]));
      int64_t rows = op.operands[0]->type.shape[0], cols = op.operands[0]->type.shape[1];
      int64_t axis = op.intAttr("axis");
      std::string kind = op.strAttr("kind");
      RValue r = newTile(*resultType);
      double init = kind == "sum" ? 0.0 : kind == "max" ? -INFINITY : INFINITY;
      std::fill(r.tile->begin(), r.tile->end(), init);
      std::vector<char> seen(r.tile->size(), 0);
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          if (padded(op.operands[0], i * cols + j))
            continue; // reductions do not see padding
          int64_t at = axis == 1 ? i : j;
          double &acc = (*r.tile)[at];
          double v = x[i * cols + j];
          acc = kind == "sum" ? acc + v : kind == "max" ? std::max(acc, v) : std::min(acc, v);
          seen[at] = 1;
        }
      for (size_t i = 0; i < seen.size(); ++i)
        if (!seen[i])
          markPad(r, static_cast<int64_t>(i));
      for (double &v : *r.tile)
        v = roundTo(resultType->dtype, v);
      values_[op.result()] = r;
      return std::nullopt;
    }
    case OpKind::Broadcast: {
      const std::vector<double> x = materialize(get(op.operands[0]));
      int64_t axis = op.intAttr("axis");
      int64_t cols = resultType->shape[1];
      RValue r = newTile(*resultType);
      for (int64_t i = 0; i < count(resultType->shape); ++i) {
        int64_t from = axis == 1 ? i / cols : i % cols;
        (*r.tile)[i] = x[from];
        if (padded(op.operands[0], from))
          markPad(r, i);
      }
      values_[op.result()] = r;
      return std::nullopt;
    }
    case OpKind::Mask: {
      RValue r = newTile(*resultType);
      *r.tile = materialize(get(op.operands[0]));
      int64_t bound = static_cast<int64_t>(get(op.operands[1]).scalar);
      int64_t axis = op.intAttr("axis");
      int64_t cols = resultType->shape.size() == 2 ? resultType->shape[1] : 1;
      for (int64_t i = 0; i < count(resultType->shape); ++i) {
        int64_t index = resultType->shape.size() == 1 ? i : (axis == 0 ? i / cols : i % cols);
        if (index >= bound)
          (*r.tile)[i] = roundTo(resultType->dtype, op.floatAttr("fill"));
        else if (padded(op.operands[0], i))
          markPad(r, i);
      }
      values_[op.result()] = r;
      return std::nullopt;
    }
    case OpKind::For: return runFor(op);
    default: break;
    }
    if (!resultType || !isElementwise(op.kind))
      return fmt::format("the interpreter does not model `{}`", mnemonicOf(op.kind));
    // Scalars and elementwise maps.
    bool floatOp = false;
    for (const Value *operand : op.operands)
      floatOp = floatOp || isFloat(operand->type.dtype);
    int64_t n = resultType->isScalar() ? 1 : count(resultType->shape);
    RValue r = resultType->isScalar() ? RValue{} : newTile(*resultType);
    for (int64_t i = 0; i < n; ++i) {
      double v;
      if (op.kind == OpKind::Select)
        v = element(op.operands[0], i) != 0 ? element(op.operands[1], i) : element(op.operands[2], i);
      else if (op.kind == OpKind::Cast)
        v = element(op.operands[0], i);
      else
        v = apply(op.kind, element(op.operands[0], i), op.operands.size() > 1 ? element(op.operands[1], i) : 0,
                  floatOp);
      v = roundTo(resultType->dtype, v);
      if (resultType->isScalar()) {
        r.scalar = v;
        continue;
      }
      (*r.tile)[i] = v;
      for (const Value *operand : op.operands)
        if (padded(operand, i)) {
          markPad(r, i);
          break;
        }
    }
    values_[op.result()] = r;
    return std::nullopt;
  }

  std::optional<std::string> runFor(const Op &op) {
    int64_t lo = static_cast<int64_t>(get(op.operands[0]).scalar);
    int64_t hi = static_cast<int64_t>(get(op.operands[1]).scalar);
    int64_t step = static_cast<int64_t>(get(op.operands[2]).scalar);
    if (step <= 0)
      return std::string("a loop with a non-positive step");
    const Block &body = *op.body;
    std::vector<RValue> carried;
    for (size_t i = 3; i < op.operands.size(); ++i)
      carried.push_back(copyOf(get(op.operands[i])));
    for (int64_t k = lo; k < hi; k += step) {
      RValue iv;
      iv.scalar = static_cast<double>(k);
      values_[body.args[0].get()] = iv;
      for (size_t i = 0; i < carried.size(); ++i)
        values_[body.args[1 + i].get()] = carried[i];
      if (auto error = runBlock(body))
        return error;
      const Op &yield = *body.ops.back();
      for (size_t i = 0; i < carried.size(); ++i)
        carried[i] = copyOf(get(yield.operands[i]));
    }
    for (size_t i = 0; i < carried.size(); ++i)
      values_[op.result(i)] = carried[i];
    return std::nullopt;
  }

  RValue copyOf(RValue &v) {
    if (!v.tile && !(v.buffer && v.stage >= 0))
      return v;
    RValue r = v;
    r.tile = std::make_shared<std::vector<double>>(materialize(v));
    if (v.buffer && v.stage >= 0)
      r.pad = std::make_shared<std::vector<char>>((*v.bufferPad)[v.stage]);
    else if (v.pad)
      r.pad = std::make_shared<std::vector<char>>(*v.pad);
    r.buffer.reset();
    r.bufferPad.reset();
    r.stage = -1;
    return r;
  }

  /// A product element is padding when its whole row of a or column of b is.
  bool rowOrColumnPadded(const Op &op, int64_t i, int64_t j, int64_t k, int64_t n, bool transB) {
    bool rowPadded = true, columnPadded = true;
    for (int64_t x = 0; x < k; ++x) {
      rowPadded = rowPadded && padded(op.operands[0], i * k + x);
      columnPadded = columnPadded && padded(op.operands[1], transB ? j * k + x : x * n + j);
    }
    return rowPadded || columnPadded;
  }

  std::vector<Tensor> &tensors_;
  const Kernel &kernel_;
  std::map<const Value *, RValue> values_;
  int64_t block_[3] = {0, 0, 0};
};

} // namespace

std::optional<std::string> Interpreter::run(const Kernel &kernel, std::vector<Tensor> &tensors) {
  Frame frame(tensors, kernel);
  int64_t extent[3];
  if (auto error = frame.grid(extent))
    return error;
  for (int64_t z = 0; z < extent[2]; ++z)
    for (int64_t y = 0; y < extent[1]; ++y)
      for (int64_t x = 0; x < extent[0]; ++x)
        if (auto error = frame.runBody(x, y, z))
          return error;
  return std::nullopt;
}

} // namespace tkc::interp
