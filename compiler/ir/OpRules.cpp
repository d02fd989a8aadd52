#include "ir/OpRules.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace tkc::ir {

namespace {

std::string shapeText(const std::vector<int64_t> &shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

bool isScalarOf(const Type &type, DType dtype) { return type.isScalar() && type.dtype == dtype; }

std::string countMismatch(const char *what, size_t expected, size_t actual) {
  return fmt::format("expects {} {}(s) but has {}", expected, what, actual);
}

std::string checkCounts(const Op &op, size_t operands, size_t results) {
  if (op.operands.size() != operands)
    return countMismatch("operand", operands, op.operands.size());
  if (op.results.size() != results)
    return countMismatch("result", results, op.results.size());
  return "";
}

const Type &operandType(const Op &op, size_t i) { return op.operands[i]->type; }
const Type &resultType(const Op &op, size_t i = 0) { return op.results[i]->type; }

// --- attributes -------------------------------------------------------------

enum class Presence { Required, Optional };

std::string checkIntAttr(const Op &op, const std::string &name, Presence presence, int64_t lo, int64_t hi) {
  auto it = op.attrs.find(name);
  if (it == op.attrs.end())
    return presence == Presence::Required ? fmt::format("requires attribute `{}`", name) : "";
  auto *value = std::get_if<int64_t>(&it->second);
  if (!value)
    return fmt::format("attribute `{}` must be an integer", name);
  if (*value < lo || *value > hi)
    return fmt::format("attribute `{}` must be between {} and {}, but is {}", name, lo, hi, *value);
  return "";
}

/// `value` of const and fill, `fill` of mask: a number that suits the dtype.
std::string checkNumberAttr(const Op &op, const std::string &name, DType dtype) {
  auto it = op.attrs.find(name);
  if (it == op.attrs.end())
    return fmt::format("requires attribute `{}`", name);
  if (std::holds_alternative<double>(it->second)) {
    if (!isFloat(dtype))
      return fmt::format("attribute `{}` must be an integer because the result is {}", name, dtypeName(dtype));
    return "";
  }
  auto *value = std::get_if<int64_t>(&it->second);
  if (!value)
    return fmt::format("attribute `{}` must be a number", name);
  if (dtype == DType::I1 && *value != 0 && *value != 1)
    return fmt::format("attribute `{}` must be 0 or 1 for an i1 result, but is {}", name, *value);
  if (dtype == DType::I32 && (*value < INT32_MIN || *value > INT32_MAX))
    return fmt::format("attribute `{}` does not fit in i32: {}", name, *value);
  return "";
}

// --- elementwise ops --------------------------------------------------------

/// Checks that the operands are scalars or tiles of one shape, and that the
/// result is a scalar of `resultDType` if all operands are, or else the type
/// of one tile operand with `resultDType`.
std::string checkElementwiseShapes(const Op &op, DType resultDType) {
  const Type *tile = nullptr;
  size_t tileIndex = 0;
  for (size_t i = 0; i < op.operands.size(); ++i) {
    const Type &type = operandType(op, i);
    if (type.isGlobal())
      return fmt::format("operand #{} must be a scalar or a tile, but is {}", i, type.str());
    if (!type.isTile())
      continue;
    if (tile && tile->shape != type.shape)
      return fmt::format("operands #{} and #{} have different shapes {} and {}", tileIndex, i,
                         shapeText(tile->shape), shapeText(type.shape));
    if (!tile) {
      tile = &type;
      tileIndex = i;
    }
  }
  const Type &result = resultType(op);
  if (!tile) {
    if (result != Type::scalar(resultDType))
      return fmt::format("result must be {} but is {}", dtypeName(resultDType), result.str());
    return "";
  }
  for (size_t i = 0; i < op.operands.size(); ++i)
    if (operandType(op, i).isTile() && result == operandType(op, i).withDType(resultDType))
      return "";
  return fmt::format("result must be {} but is {}", tile->withDType(resultDType).str(), result.str());
}

/// Elementwise ops compute on scalars and tiles; a global tensor must be
/// loaded first.
std::string checkNoGlobalOperands(const Op &op) {
  for (size_t i = 0; i < op.operands.size(); ++i)
    if (operandType(op, i).isGlobal())
      return fmt::format("operand #{} must be a scalar or a tile, but is {}", i, operandType(op, i).str());
  return "";
}

std::string checkSameDType(const Op &op, size_t first, size_t last) {
  for (size_t i = first + 1; i <= last; ++i)
    if (operandType(op, i).dtype != operandType(op, first).dtype)
      return fmt::format("operands #{} and #{} have different element types {} and {}", first, i,
                         dtypeName(operandType(op, first).dtype), dtypeName(operandType(op, i).dtype));
  return "";
}

/// 8-bit floats are loaded, converted and multiplied by mma, nothing else.
std::string checkNotF8(const Op &op) {
  for (size_t i = 0; i < op.operands.size(); ++i)
    if (isF8(operandType(op, i).dtype))
      return fmt::format("operand #{} is {}, which takes no arithmetic", i, dtypeName(operandType(op, i).dtype));
  for (size_t i = 0; i < op.results.size(); ++i)
    if (isF8(op.results[i]->type.dtype))
      return fmt::format("result #{} is {}, which only loads make", i, dtypeName(op.results[i]->type.dtype));
  return "";
}

bool isArithmetic(OpKind kind) {
  switch (kind) {
  case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Div:
  case OpKind::Rem: case OpKind::Max: case OpKind::Min:
    return true;
  default:
    return false;
  }
}

bool isComparison(OpKind kind) {
  switch (kind) {
  case OpKind::Lt: case OpKind::Le: case OpKind::Gt: case OpKind::Ge: case OpKind::Eq: case OpKind::Ne:
    return true;
  default:
    return false;
  }
}

std::string checkBinary(const Op &op) {
  if (auto error = checkCounts(op, 2, 1); !error.empty())
    return error;
  if (auto error = checkNoGlobalOperands(op); !error.empty())
    return error;
  if (auto error = checkSameDType(op, 0, 1); !error.empty())
    return error;
  if (auto error = checkNotF8(op); !error.empty())
    return error;
  DType dtype = operandType(op, 0).dtype;
  bool logical = op.kind == OpKind::And || op.kind == OpKind::Or;
  if (logical && dtype != DType::I1)
    return fmt::format("operands must be i1, but are {}", dtypeName(dtype));
  if (isArithmetic(op.kind) && dtype == DType::I1)
    return "operands must be numbers, but are i1";
  return checkElementwiseShapes(op, isComparison(op.kind) ? DType::I1 : dtype);
}

std::string checkUnary(const Op &op) {
  if (auto error = checkCounts(op, 1, 1); !error.empty())
    return error;
  if (auto error = checkNoGlobalOperands(op); !error.empty())
    return error;
  if (auto error = checkNotF8(op); !error.empty())
    return error;
  DType dtype = operandType(op, 0).dtype;
  bool integerAllowed = op.kind == OpKind::Neg || op.kind == OpKind::Abs;
  if (!integerAllowed && !isFloat(dtype))
    return fmt::format("operand must be a float, but is {}", dtypeName(dtype));
  if (dtype == DType::I1)
    return "operand must be a number, but is i1";
  return checkElementwiseShapes(op, dtype);
}

// --- memory accesses --------------------------------------------------------

/// Operand `globalIndex` is a global tensor and the operands from
/// `firstOffset` on are its i32 offsets, one per dim.
std::string checkGlobalAccess(const Op &op, size_t globalIndex, size_t firstOffset) {
  if (op.operands.size() <= globalIndex)
    return fmt::format("expects a global tensor as operand #{}", globalIndex);
  const Type &global = operandType(op, globalIndex);
  if (!global.isGlobal())
    return fmt::format("operand #{} must be a global tensor, but is {}", globalIndex, global.str());
  size_t offsets = op.operands.size() > firstOffset ? op.operands.size() - firstOffset : 0;
  if (op.operands.size() < firstOffset || offsets != global.dims.size())
    return fmt::format("expects {} offset(s) for a {}-d global tensor, but has {}", global.dims.size(),
                       global.dims.size(), offsets);
  for (size_t i = firstOffset; i < op.operands.size(); ++i)
    if (!isScalarOf(operandType(op, i), DType::I32))
      return fmt::format("offset operand #{} must be i32, but is {}", i, operandType(op, i).str());
  return "";
}

/// `sizes` (and the optional `checked`) of load, store and async_load: one
/// entry per global dim; the non-zero sizes are the tile's shape.
std::string checkAccessSizes(const Op &op, const Type &global, const Type &tile) {
  auto it = op.attrs.find("sizes");
  if (it == op.attrs.end())
    return "requires attribute `sizes`";
  auto *sizes = std::get_if<std::vector<int64_t>>(&it->second);
  if (!sizes)
    return "attribute `sizes` must be an integer list";
  if (sizes->size() != global.dims.size())
    return fmt::format("attribute `sizes` has {} entries but the global tensor has {} dims", sizes->size(),
                       global.dims.size());
  std::vector<int64_t> kept;
  for (int64_t size : *sizes) {
    if (size < 0)
      return fmt::format("attribute `sizes` must not be negative: {}", shapeText(*sizes));
    if (size != 0)
      kept.push_back(size);
  }
  if (kept != tile.shape)
    return fmt::format("attribute `sizes` {} does not match the tile shape {}", shapeText(*sizes),
                       shapeText(tile.shape));
  for (const char *name : {"checked", "checked_low"}) {
    auto checkedIt = op.attrs.find(name);
    if (checkedIt == op.attrs.end())
      continue;
    auto *checked = std::get_if<std::vector<int64_t>>(&checkedIt->second);
    if (!checked)
      return fmt::format("attribute `{}` must be an integer list", name);
    if (checked->size() != global.dims.size())
      return fmt::format("attribute `{}` has {} entries but the global tensor has {} dims", name, checked->size(),
                         global.dims.size());
    if (std::any_of(checked->begin(), checked->end(), [](int64_t v) { return v != 0 && v != 1; }))
      return fmt::format("attribute `{}` entries must be 0 or 1: {}", name, shapeText(*checked));
  }
  if (tile.dtype != global.dtype)
    return fmt::format("tile element type {} differs from the global tensor's {}", dtypeName(tile.dtype),
                       dtypeName(global.dtype));
  return "";
}

std::string checkLoad(const Op &op) {
  if (op.results.size() != 1)
    return countMismatch("result", 1, op.results.size());
  if (auto error = checkGlobalAccess(op, 0, 1); !error.empty())
    return error;
  if (!resultType(op).isTile())
    return fmt::format("result must be a tile, but is {}", resultType(op).str());
  return checkAccessSizes(op, operandType(op, 0), resultType(op));
}

/// gather: a global tensor (not `out`), then one operand per dim: i32
/// scalars, except a 1-d i32 tile of indices at dim `axis`. At most one
/// other dim is sliced, as long as the index tile; the result is a vector of
/// that length, placed as the index tile is.
std::string checkGather(const Op &op) {
  if (op.results.size() != 1)
    return countMismatch("result", 1, op.results.size());
  if (op.operands.empty() || !operandType(op, 0).isGlobal())
    return "expects a global tensor as operand #0";
  const Type &global = operandType(op, 0);
  if (global.isOutput)
    return fmt::format("reads {}, which is declared `out`", global.str());
  size_t rank = global.dims.size();
  if (op.operands.size() != rank + 1)
    return fmt::format("expects {} index operand(s) for a {}-d global tensor, but has {}", rank, rank,
                       op.operands.size() - 1);
  if (auto error = checkIntAttr(op, "axis", Presence::Required, 0, int64_t(rank) - 1); !error.empty())
    return error;
  size_t axis = static_cast<size_t>(op.intAttr("axis"));
  const Type &index = operandType(op, 1 + axis);
  if (!index.isTile() || index.dtype != DType::I32 || index.shape.size() != 1)
    return fmt::format("operand #{} (the indices) must be a 1-d i32 tile, but is {}", 1 + axis, index.str());
  for (size_t d = 0; d < rank; ++d)
    if (d != axis && !isScalarOf(operandType(op, 1 + d), DType::I32))
      return fmt::format("offset operand #{} must be i32, but is {}", 1 + d, operandType(op, 1 + d).str());
  const Type &result = resultType(op);
  if (!result.isTile() || result.shape != index.shape || result.dtype != global.dtype)
    return fmt::format("result must be a {}{} tile, but is {}", dtypeName(global.dtype), shapeText(index.shape),
                       result.str());
  if (result.space != index.space || result.layout != index.layout)
    return fmt::format("result {} must be placed as the indices {} are", result.str(), index.str());
  std::vector<int64_t> sizes = op.listAttr("sizes");
  if (sizes.size() != rank)
    return fmt::format("attribute `sizes` has {} entries but the global tensor has {} dims", sizes.size(), rank);
  if (sizes[axis] != 0)
    return "attribute `sizes` must be 0 at the gathered dim";
  int sliced = 0;
  for (int64_t size : sizes) {
    if (size != 0 && size != index.shape[0])
      return fmt::format("attribute `sizes` {} does not match the {} indices", shapeText(sizes), index.shape[0]);
    sliced += size != 0;
  }
  if (sliced > 1)
    return "slices at most one dim besides the gathered one";
  for (const char *name : {"checked", "checked_low"})
    if (op.hasAttr(name)) {
      std::vector<int64_t> checked = op.listAttr(name);
      if (checked.size() != rank ||
          std::any_of(checked.begin(), checked.end(), [](int64_t v) { return v != 0 && v != 1; }))
        return fmt::format("attribute `{}` must hold 0 or 1 per global dim", name);
    }
  return "";
}

std::string checkStore(const Op &op) {
  if (!op.results.empty())
    return countMismatch("result", 0, op.results.size());
  if (op.operands.size() < 2 || !operandType(op, 1).isTile())
    return "expects a global tensor, the tile to store and offsets";
  if (auto error = checkGlobalAccess(op, 0, 2); !error.empty())
    return error;
  const Type &global = operandType(op, 0);
  if (!global.isOutput)
    return fmt::format("stores to {}, which is not declared `out`", global.str());
  // `accumulate`: adds the tile to memory (atomic_add), which the GPU does in f32.
  if (op.hasAttr("accumulate") && (global.dtype != DType::F32 || operandType(op, 1).dtype != DType::F32))
    return fmt::format("adds to {} ({}), but accumulating stores add f32 tiles to f32 tensors", global.str(),
                       operandType(op, 1).str());
  return checkAccessSizes(op, global, operandType(op, 1));
}

std::string checkAsyncLoad(const Op &op) {
  if (!op.results.empty())
    return countMismatch("result", 0, op.results.size());
  if (op.operands.size() < 4)
    return "expects a buffer, a stage, a predicate, a global tensor and offsets";
  const Type &buffer = operandType(op, 0);
  if (!buffer.isShared())
    return fmt::format("operand #0 must be a shared-memory buffer, but is {}", buffer.str());
  if (!isScalarOf(operandType(op, 1), DType::I32))
    return fmt::format("stage operand must be i32, but is {}", operandType(op, 1).str());
  if (!isScalarOf(operandType(op, 2), DType::I1))
    return fmt::format("predicate operand must be i1, but is {}", operandType(op, 2).str());
  if (auto error = checkGlobalAccess(op, 3, 4); !error.empty())
    return error;
  return checkAccessSizes(op, operandType(op, 3), buffer);
}

std::string checkWarpCopy(const Op &op) {
  if (!op.results.empty())
    return countMismatch("result", 0, op.results.size());
  if (op.operands.size() < 4)
    return "expects a buffer, an iteration, mbarriers, a global tensor and offsets";
  const Type &buffer = operandType(op, 0);
  if (!buffer.isSharedVector() || buffer.stages == 0 || dtypeBytes(buffer.dtype) != 4)
    return fmt::format("operand #0 must be a staged shared vector of 4-byte elements, but is {}", buffer.str());
  if (!isScalarOf(operandType(op, 1), DType::I32))
    return fmt::format("iteration operand must be i32, but is {}", operandType(op, 1).str());
  if (!operandType(op, 2).isShared() || operandType(op, 2).layout.kind != LayoutKind::Mbarrier)
    return fmt::format("operand #2 must be #mbarrier shared memory, but is {}", operandType(op, 2).str());
  if (auto error = checkGlobalAccess(op, 3, 4); !error.empty())
    return error;
  return checkAccessSizes(op, operandType(op, 3), buffer);
}

/// A shared tile in the 128-byte-swizzled panels that bulk tensor copies use.
std::string checkSwizzledPanel(const Op &op, size_t index) {
  const Type &tile = operandType(op, index);
  if (!tile.isShared() || tile.layout.kind != LayoutKind::Swizzle128 || tile.stages != 0)
    return fmt::format("operand #{} must be an unstaged #swizzle128 shared tile, but is {}", index, tile.str());
  return "";
}

std::string checkSmemStore(const Op &op) {
  if (auto error = checkCounts(op, 2, 0); !error.empty())
    return error;
  if (auto error = checkSwizzledPanel(op, 0); !error.empty())
    return error;
  const Type &buffer = operandType(op, 0), &value = operandType(op, 1);
  if (!value.isRegister() || value.layout.kind != LayoutKind::Acc)
    return fmt::format("stored value must be an #acc register tile, but is {}", value.str());
  if (auto error = checkIntAttr(op, "first_col", Presence::Optional, 0, value.shape.size() == 2 ? value.shape[1] - 1 : 0);
      !error.empty())
    return error;
  int64_t first = op.intAttr("first_col", 0);
  if (value.shape.size() != 2 || buffer.shape.size() != 2 || value.shape[0] != buffer.shape[0] ||
      first + buffer.shape[1] > value.shape[1] || first % 8 != 0 || value.dtype != buffer.dtype)
    return fmt::format("cannot store columns {}.. of {} into {}: rows, element type and an 8-aligned column "
                       "window must fit",
                       first, value.str(), buffer.str());
  return "";
}

std::string checkTmaStore(const Op &op) {
  if (!op.results.empty())
    return countMismatch("result", 0, op.results.size());
  if (op.operands.size() < 2)
    return "expects a shared buffer, a global tensor and offsets";
  if (auto error = checkSwizzledPanel(op, 0); !error.empty())
    return error;
  if (auto error = checkGlobalAccess(op, 1, 2); !error.empty())
    return error;
  const Type &global = operandType(op, 1);
  if (!global.isOutput)
    return fmt::format("stores to {}, which is not declared `out`", global.str());
  if (auto error = checkIntAttr(op, "warpgroup", Presence::Optional, 0, 3); !error.empty())
    return error;
  if (auto error = checkIntAttr(op, "column_split", Presence::Optional, 2, 4); !error.empty())
    return error;
  if (op.hasAttr("column_split")) {
    const Type &buffer = operandType(op, 0);
    int64_t panels = buffer.shape.size() == 2 ? buffer.shape[1] * dtypeBytes(buffer.dtype) / kSwizzle128RowBytes : 0;
    if (op.hasAttr("warpgroup") || panels % op.intAttr("column_split") != 0)
      return fmt::format("`column_split = {}` needs a whole number of 128-byte panels per warpgroup (and no "
                         "`warpgroup`), but the buffer is {}",
                         op.intAttr("column_split"), buffer.str());
  }
  if (op.hasAttr("reduce")) {
    std::string reduce = op.strAttr("reduce");
    if (reduce != "add")
      return fmt::format("attribute `reduce` must be \"add\", not \"{}\"", reduce);
    if (global.dtype != DType::F32)
      return fmt::format("adds into {}, but bulk additions here are of f32 elements", global.str());
  }
  return checkAccessSizes(op, global, operandType(op, 0));
}

// --- tile ops ---------------------------------------------------------------

/// What `mma` and `wgmma` share: a, b and the accumulator (operands 0-2)
/// multiply as their shapes and `trans_*` flags say, the result is the
/// accumulator's type.
std::string checkProduct(const Op &op) {
  const char *names[] = {"a", "b", "accumulator"};
  for (size_t i = 0; i < 3; ++i)
    if (!operandType(op, i).isTile() || operandType(op, i).shape.size() != 2)
      return fmt::format("{} operand must be a 2-d tile, but is {}", names[i], operandType(op, i).str());
  for (const char *flag : {"trans_a", "trans_b"})
    if (auto error = checkIntAttr(op, flag, Presence::Optional, 0, 1); !error.empty())
      return error;
  const Type &a = operandType(op, 0), &b = operandType(op, 1), &c = operandType(op, 2);
  if (isF8(a.dtype) || isF8(b.dtype)) {
    // wgmma pairs e4m3 and e5m2 freely, both operands K-major.
    if (!isF8(a.dtype) || !isF8(b.dtype))
      return fmt::format("an 8-bit float operand needs an 8-bit float partner, but a is {} and b is {}",
                         dtypeName(a.dtype), dtypeName(b.dtype));
    if (op.intAttr("trans_a") == 1 || op.intAttr("trans_b") != 1)
      return "8-bit float operands are read K-major: a untransposed, b transposed (`trans_b = 1`)";
    if (a.shape[1] % 32 != 0)
      return fmt::format("8-bit float operands take k in steps of 32, but k is {}", a.shape[1]);
  } else if (a.dtype != DType::BF16 && a.dtype != DType::F16) {
    return fmt::format("a operand must be bf16, f16, f8e4m3 or f8e5m2, but is {}", dtypeName(a.dtype));
  } else if (b.dtype != a.dtype) {
    return fmt::format("b operand must be {} like a, but is {}", dtypeName(a.dtype), dtypeName(b.dtype));
  }
  if (c.dtype != DType::F32)
    return fmt::format("accumulator must be f32, but is {}", dtypeName(c.dtype));
  bool transA = op.intAttr("trans_a") == 1, transB = op.intAttr("trans_b") == 1;
  int64_t m = transA ? a.shape[1] : a.shape[0], k = transA ? a.shape[0] : a.shape[1];
  int64_t bk = transB ? b.shape[1] : b.shape[0], n = transB ? b.shape[0] : b.shape[1];
  if (bk != k)
    return fmt::format("b operand {}{} does not match a operand {}{}", shapeText(b.shape),
                       transB ? " (transposed)" : "", shapeText(a.shape), transA ? " (transposed)" : "");
  if (c.shape != std::vector<int64_t>{m, n})
    return fmt::format("accumulator shape {} must be {}", shapeText(c.shape), shapeText({m, n}));
  if (resultType(op) != c)
    return fmt::format("result must be {} like the accumulator, but is {}", c.str(), resultType(op).str());
  return "";
}

std::string checkMma(const Op &op) {
  if (auto error = checkCounts(op, 3, 1); !error.empty())
    return error;
  return checkProduct(op);
}

/// A product on the tensor cores (wgmma.mma_async): B, and A unless it is
/// an A fragment in registers, in 128-byte-swizzled shared panels; the
/// accumulator in registers, 16 rows per warp; k in steps of 16; n per
/// warpgroup a multiple of 8 up to 256 (the instruction's widths).
std::string checkWgmma(const Op &op) {
  if (op.operands.size() != 3 && op.operands.size() != 4)
    return fmt::format("expects a, b, an accumulator and an optional predicate, but has {} operands",
                       op.operands.size());
  if (op.results.size() != 1)
    return countMismatch("result", 1, op.results.size());
  if (auto error = checkProduct(op); !error.empty())
    return error;
  const Type &a = operandType(op, 0), &c = operandType(op, 2);
  if (a.isRegister()) {
    if (isF8(a.dtype))
      return "an 8-bit float a operand must be in shared memory";
    if (a.layout.kind != LayoutKind::OperandA)
      return fmt::format("a operand in registers must be in #opa, but is {}", a.str());
    if (op.intAttr("trans_a") == 1)
      return "a operand in registers cannot be read transposed (`trans_a`)";
  } else if (!a.isShared() || a.layout.kind != LayoutKind::Swizzle128 || a.stages != 0) {
    return fmt::format("a operand must be an unstaged #swizzle128 shared tile or registers in #opa, but is {}",
                       a.str());
  }
  if (auto error = checkSwizzledPanel(op, 1); !error.empty())
    return error;
  if (!c.isRegister() || c.layout.kind != LayoutKind::Acc)
    return fmt::format("accumulator must be registers in #acc, but is {}", c.str());
  if (c.shape[0] != 16 * c.layout.warpsM)
    return fmt::format("accumulator {} must have 16 rows per warp of {}", shapeText(c.shape), c.str());
  int64_t k = op.intAttr("trans_a") == 1 ? a.shape[0] : a.shape[1];
  if (k % 16 != 0)
    return fmt::format("the product's k extent {} must be a multiple of 16", k);
  int64_t n = c.shape[1] / c.layout.warpsN;
  if (n % 8 != 0 || n > 256)
    return fmt::format("each warpgroup's {} columns must be a multiple of 8 up to 256", n);
  if (op.operands.size() == 4 && !isScalarOf(operandType(op, 3), DType::I1))
    return fmt::format("predicate must be i1, but is {}", operandType(op, 3).str());
  return "";
}

std::string checkReduce(const Op &op) {
  if (auto error = checkCounts(op, 1, 1); !error.empty())
    return error;
  const Type &x = operandType(op, 0), &result = resultType(op);
  if (!x.isTile() || x.shape.size() != 2)
    return fmt::format("operand must be a 2-d tile, but is {}", x.str());
  if (auto error = checkNotF8(op); !error.empty())
    return error;
  if (auto error = checkIntAttr(op, "axis", Presence::Required, 0, 1); !error.empty())
    return error;
  std::string kind = op.strAttr("kind");
  if (kind != "sum" && kind != "max" && kind != "min")
    return "requires attribute `kind` = \"sum\", \"max\" or \"min\"";
  int64_t kept = x.shape[op.intAttr("axis") == 1 ? 0 : 1];
  // A column reduction over several warp rows goes through shared memory:
  // each warp row's partial results, then their reduction.
  bool partials = result.isShared(), ofPartials = x.isShared();
  if ((partials || ofPartials) && op.intAttr("axis") != 0)
    return "only a column reduction (axis 0) goes through shared partial results";
  if (partials) {
    bool tiled = x.isRegister() && (x.layout.kind == LayoutKind::Acc || x.layout.kind == LayoutKind::Strip);
    if (!tiled)
      return fmt::format("operand of a reduction into shared partial results must be an #acc or #strip register "
                         "tile, but is {}",
                         x.str());
    std::vector<int64_t> shape{x.layout.warpsM, kept};
    if (result.shape != shape || result.dtype != DType::F32 || result.layout.kind != LayoutKind::None ||
        result.stages != 0)
      return fmt::format("shared partial results must be smem<f32{}> (one row per warp row), but are {}",
                         shapeText(shape), result.str());
    return "";
  }
  if (ofPartials) {
    if (x.dtype != DType::F32 || x.layout.kind != LayoutKind::None || x.stages != 0)
      return fmt::format("shared partial results must be an f32 tile without a layout, but are {}", x.str());
    if (!result.isRegister() || result.shape != std::vector<int64_t>{kept} || !isFloat(result.dtype))
      return fmt::format("result must be a register tile of {} float elements, but is {}", kept, result.str());
    return "";
  }
  if (!result.isTile() || result.shape != std::vector<int64_t>{kept} || result.dtype != x.dtype)
    return fmt::format("result must be a tile of {} elements of type {}, but is {}", kept, dtypeName(x.dtype),
                       result.str());
  return "";
}

std::string checkBroadcast(const Op &op) {
  if (auto error = checkCounts(op, 1, 1); !error.empty())
    return error;
  const Type &x = operandType(op, 0), &result = resultType(op);
  if (!x.isTile() || x.shape.size() != 1)
    return fmt::format("operand must be a 1-d tile, but is {}", x.str());
  if (auto error = checkIntAttr(op, "axis", Presence::Required, 0, 1); !error.empty())
    return error;
  if (!result.isTile() || result.shape.size() != 2 || result.dtype != x.dtype)
    return fmt::format("result must be a 2-d tile of type {}, but is {}", dtypeName(x.dtype), result.str());
  size_t kept = op.intAttr("axis") == 1 ? 0 : 1;
  if (result.shape[kept] != x.shape[0])
    return fmt::format("result dim {} is {} but the operand has {} elements", kept, result.shape[kept], x.shape[0]);
  return "";
}

std::string checkConvert(const Op &op) {
  if (auto error = checkCounts(op, 1, 1); !error.empty())
    return error;
  const Type &x = operandType(op, 0), &result = resultType(op);
  if (!x.isTile() || !result.isTile())
    return fmt::format("converts tiles, not {} to {}", x.str(), result.str());
  if (x.shape != result.shape || x.dtype != result.dtype)
    return fmt::format("result {} must keep the operand's element type and shape ({})", result.str(), x.str());
  return "";
}

std::string checkMask(const Op &op) {
  if (auto error = checkCounts(op, 2, 1); !error.empty())
    return error;
  const Type &x = operandType(op, 0);
  if (!x.isTile())
    return fmt::format("operand #0 must be a tile, but is {}", x.str());
  if (!isScalarOf(operandType(op, 1), DType::I32))
    return fmt::format("bound must be i32, but is {}", operandType(op, 1).str());
  if (auto error = checkIntAttr(op, "axis", Presence::Required, 0, int64_t(x.shape.size()) - 1); !error.empty())
    return error;
  // Any number: a float fill such as -inf stands for the dtype's extreme.
  auto fill = op.attrs.find("fill");
  if (fill == op.attrs.end())
    return "requires attribute `fill`";
  if (!std::holds_alternative<double>(fill->second) && !std::holds_alternative<int64_t>(fill->second))
    return "attribute `fill` must be a number";
  if (resultType(op) != x)
    return fmt::format("result must be {} like the operand, but is {}", x.str(), resultType(op).str());
  return "";
}

std::string checkFor(const Op &op) {
  if (op.operands.size() < 3)
    return "expects lower bound, upper bound and step operands";
  for (size_t i = 0; i < 3; ++i)
    if (!isScalarOf(operandType(op, i), DType::I32))
      return fmt::format("{} must be i32, but is {}", i == 0 ? "lower bound" : i == 1 ? "upper bound" : "step",
                         operandType(op, i).str());
  size_t carried = op.operands.size() - 3;
  if (op.results.size() != carried)
    return fmt::format("has {} iter_args but {} result(s)", carried, op.results.size());
  for (size_t i = 0; i < carried; ++i) {
    const Type &init = operandType(op, 3 + i);
    if (init.isGlobal())
      return fmt::format("cannot carry a global tensor (iter_args #{})", i);
    if (resultType(op, i) != init)
      return fmt::format("result #{} is {} but its initial value is {}", i, resultType(op, i).str(), init.str());
  }
  if (auto error = checkIntAttr(op, "stages", Presence::Optional, 1, 8); !error.empty())
    return error;
  if (!op.body)
    return "has no body";
  const Block &body = *op.body;
  if (body.args.size() != carried + 1)
    return fmt::format("body has {} argument(s) but needs {} (induction variable and iter_args)", body.args.size(),
                       carried + 1);
  if (!isScalarOf(body.args[0]->type, DType::I32))
    return fmt::format("induction variable must be i32, but is {}", body.args[0]->type.str());
  for (size_t i = 0; i < carried; ++i)
    if (body.args[i + 1]->type != operandType(op, 3 + i))
      return fmt::format("body argument #{} is {} but its initial value is {}", i + 1, body.args[i + 1]->type.str(),
                         operandType(op, 3 + i).str());
  if (body.ops.empty() || body.ops.back()->kind != OpKind::Yield)
    return "body must end with `yield`";
  const Op &yield = *body.ops.back();
  if (yield.operands.size() != carried)
    return fmt::format("yields {} value(s) but has {} iter_args", yield.operands.size(), carried);
  for (size_t i = 0; i < carried; ++i)
    if (yield.operands[i] && yield.operands[i]->type != resultType(op, i))
      return fmt::format("yields {} as value #{} but the loop carries {}", yield.operands[i]->type.str(), i,
                         resultType(op, i).str());
  return "";
}

} // namespace

std::string checkOpRules(const Op &op) {
  if (op.body && op.kind != OpKind::For)
    return "cannot have a body";
  switch (op.kind) {
  case OpKind::Const: {
    if (auto error = checkCounts(op, 0, 1); !error.empty())
      return error;
    if (!resultType(op).isScalar())
      return fmt::format("result must be a scalar, but is {}", resultType(op).str());
    return checkNumberAttr(op, "value", resultType(op).dtype);
  }
  case OpKind::BlockId:
    if (auto error = checkCounts(op, 0, 1); !error.empty())
      return error;
    if (!isScalarOf(resultType(op), DType::I32))
      return fmt::format("result must be i32, but is {}", resultType(op).str());
    return checkIntAttr(op, "axis", Presence::Required, 0, 2);
  case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Div: case OpKind::Rem:
  case OpKind::Max: case OpKind::Min: case OpKind::Lt: case OpKind::Le: case OpKind::Gt:
  case OpKind::Ge: case OpKind::Eq: case OpKind::Ne: case OpKind::And: case OpKind::Or:
    return checkBinary(op);
  case OpKind::CDiv:
    if (auto error = checkCounts(op, 2, 1); !error.empty())
      return error;
    for (size_t i = 0; i < 2; ++i)
      if (!isScalarOf(operandType(op, i), DType::I32))
        return fmt::format("operand #{} must be i32, but is {}", i, operandType(op, i).str());
    if (!isScalarOf(resultType(op), DType::I32))
      return fmt::format("result must be i32, but is {}", resultType(op).str());
    return "";
  case OpKind::Select:
    if (auto error = checkCounts(op, 3, 1); !error.empty())
      return error;
    if (auto error = checkNoGlobalOperands(op); !error.empty())
      return error;
    if (operandType(op, 0).dtype != DType::I1)
      return fmt::format("condition must be i1, but is {}", operandType(op, 0).str());
    if (auto error = checkSameDType(op, 1, 2); !error.empty())
      return error;
    if (auto error = checkNotF8(op); !error.empty())
      return error;
    return checkElementwiseShapes(op, operandType(op, 1).dtype);
  case OpKind::Neg: case OpKind::Exp: case OpKind::Exp2: case OpKind::Log: case OpKind::Log2:
  case OpKind::Sqrt: case OpKind::Rsqrt: case OpKind::Abs: case OpKind::Tanh:
  case OpKind::Erf: case OpKind::Sigmoid: case OpKind::Silu:
    return checkUnary(op);
  case OpKind::Cast:
    if (auto error = checkCounts(op, 1, 1); !error.empty())
      return error;
    if (isF8(resultType(op).dtype) || (isF8(operandType(op, 0).dtype) && !isFloat(resultType(op).dtype)))
      return fmt::format("an 8-bit float converts only to f32, bf16 or f16: {} to {}", dtypeName(operandType(op, 0).dtype),
                         dtypeName(resultType(op).dtype));
    return checkElementwiseShapes(op, resultType(op).dtype);
  case OpKind::Fill:
    if (auto error = checkCounts(op, 0, 1); !error.empty())
      return error;
    if (!resultType(op).isTile())
      return fmt::format("result must be a tile, but is {}", resultType(op).str());
    if (auto error = checkNotF8(op); !error.empty())
      return error;
    return checkNumberAttr(op, "value", resultType(op).dtype);
  case OpKind::Undef:
    if (auto error = checkCounts(op, 0, 1); !error.empty())
      return error;
    // The interpreter fills it with NaN, which only floats can hold.
    if (!resultType(op).isRegister() || !isFloat(resultType(op).dtype) || isF8(resultType(op).dtype))
      return fmt::format("result must be a float tile in registers, but is {}", resultType(op).str());
    return "";
  case OpKind::Iota: {
    if (auto error = checkCounts(op, 0, 1); !error.empty())
      return error;
    const Type &result = resultType(op);
    if (!result.isTile() || result.dtype != DType::I32)
      return fmt::format("result must be an i32 tile, but is {}", result.str());
    return checkIntAttr(op, "axis", Presence::Required, 0, int64_t(result.shape.size()) - 1);
  }
  case OpKind::Load: return checkLoad(op);
  case OpKind::Gather: return checkGather(op);
  case OpKind::Store: return checkStore(op);
  case OpKind::Mma: return checkMma(op);
  case OpKind::Wgmma: return checkWgmma(op);
  case OpKind::Reduce: return checkReduce(op);
  case OpKind::Broadcast: return checkBroadcast(op);
  case OpKind::Convert: return checkConvert(op);
  case OpKind::Mask: return checkMask(op);
  case OpKind::For: return checkFor(op);
  case OpKind::Yield:
    return op.results.empty() ? "" : countMismatch("result", 0, op.results.size());
  case OpKind::Grid:
    if (auto error = checkCounts(op, 3, 0); !error.empty())
      return error;
    for (size_t i = 0; i < 3; ++i)
      if (!isScalarOf(operandType(op, i), DType::I32))
        return fmt::format("operand #{} must be i32, but is {}", i, operandType(op, i).str());
    return "";
  case OpKind::SmemAlloc:
    if (auto error = checkCounts(op, 0, 1); !error.empty())
      return error;
    if (!resultType(op).isShared())
      return fmt::format("result must be in shared memory, but is {}", resultType(op).str());
    return checkIntAttr(op, "offset", Presence::Optional, 0, INT32_MAX);
  case OpKind::StageView: {
    if (auto error = checkCounts(op, 2, 1); !error.empty())
      return error;
    const Type &buffer = operandType(op, 0);
    if (!buffer.isShared() || buffer.stages == 0)
      return fmt::format("operand #0 must be a staged shared buffer, but is {}", buffer.str());
    if (!isScalarOf(operandType(op, 1), DType::I32))
      return fmt::format("stage operand must be i32, but is {}", operandType(op, 1).str());
    Type slot = buffer;
    slot.stages = 0;
    if (resultType(op) != slot)
      return fmt::format("result must be one slot of the buffer, {}, but is {}", slot.str(), resultType(op).str());
    return "";
  }
  case OpKind::AsyncLoad: return checkAsyncLoad(op);
  case OpKind::WarpCopy: return checkWarpCopy(op);
  case OpKind::AsyncWait:
    if (auto error = checkCounts(op, 0, 0); !error.empty())
      return error;
    return checkIntAttr(op, "pending", Presence::Required, 0, 64);
  case OpKind::AsyncCommit:
  case OpKind::Barrier:
  case OpKind::FenceProxyAsync:
    return checkCounts(op, 0, 0);
  case OpKind::WarpgroupBarrier:
    if (auto error = checkCounts(op, 0, 0); !error.empty())
      return error;
    return checkIntAttr(op, "all", Presence::Optional, 0, 1);
  case OpKind::SmemStore: return checkSmemStore(op);
  case OpKind::TmaStore: return checkTmaStore(op);
  case OpKind::TmaStoreWait:
    if (auto error = checkCounts(op, 0, 0); !error.empty())
      return error;
    if (auto error = checkIntAttr(op, "read", Presence::Required, 0, 1); !error.empty())
      return error;
    return checkIntAttr(op, "pending", Presence::Required, 0, 8);
  case OpKind::TurnWait:
  case OpKind::TurnPass: {
    if (auto error = checkCounts(op, 0, 0); !error.empty())
      return error;
    std::string only = op.strAttr("only", "all");
    if (only != "all" && only != "first" && only != "last")
      return fmt::format("attribute `only` must be \"first\" or \"last\", not \"{}\"", only);
    return "";
  }
  default:
    // Ops without a row in README.md's table have no rules here yet; the
    // structural checks (dominance, placement, types) still apply to them.
    return "";
  }
}

std::string checkTypeRules(const Type &type, int warps) {
  switch (type.kind) {
  case TypeKind::Scalar:
    if (!type.dims.empty() || !type.shape.empty() || type.layout.kind != LayoutKind::None || type.stages != 0 ||
        type.isOutput)
      return fmt::format("scalar type {} carries tensor fields", type.str());
    return "";
  case TypeKind::Global:
    if (type.dims.empty())
      return fmt::format("global tensor {} has no dims", type.str());
    for (const Dim &dim : type.dims)
      if (dim.isStatic() && dim.size <= 0)
        return fmt::format("global tensor {} has a non-positive dim", type.str());
    if (!type.shape.empty() || type.layout.kind != LayoutKind::None || type.stages != 0)
      return fmt::format("global type {} carries tile fields", type.str());
    return "";
  case TypeKind::Tile:
    break;
  }
  if (type.shape.empty())
    return fmt::format("tile {} has no dims", type.str());
  if (std::any_of(type.shape.begin(), type.shape.end(), [](int64_t extent) { return extent <= 0; }))
    return fmt::format("tile {} has a non-positive extent", type.str());
  if (!type.dims.empty() || type.isOutput)
    return fmt::format("tile type {} carries global-tensor fields", type.str());
  if (type.stages < 0 || (type.stages > 0 && type.space != MemSpace::Shared))
    return fmt::format("only shared buffers have stages: {}", type.str());

  const Layout &layout = type.layout;
  bool warpGrid = layout.kind == LayoutKind::Acc || layout.kind == LayoutKind::OperandA ||
                  layout.kind == LayoutKind::AccRow || layout.kind == LayoutKind::AccCol;
  bool warpList = layout.kind == LayoutKind::Strip || layout.kind == LayoutKind::StripRow ||
                  layout.kind == LayoutKind::StripCol;
  bool lone = layout.kind == LayoutKind::Vec;
  switch (type.space) {
  case MemSpace::Unplaced:
    if (layout.kind != LayoutKind::None)
      return fmt::format("an unplaced tile has no layout: {}", type.str());
    break;
  case MemSpace::Shared:
    if (warpGrid || warpList || lone)
      return fmt::format("a shared-memory tile takes no register layout: {}", type.str());
    break;
  case MemSpace::Register:
    if (!warpGrid && !warpList && !lone)
      return fmt::format("a register tile needs a register layout: {}", type.str());
    break;
  }
  // The text form writes only the warp counts a layout uses; others stay 1.
  if (layout.warpsM < 1 || layout.warpsN < 1 || (!warpGrid && layout.warpsN != 1) ||
      (!warpGrid && !warpList && layout.warpsM != 1))
    return fmt::format("layout of {} has invalid warp counts {}x{}", type.str(), layout.warpsM, layout.warpsN);
  if (layout.lanes != 32 && (!warpList || layout.lanes < 1 || layout.lanes > 32 || (layout.lanes & (layout.lanes - 1))))
    return fmt::format("layout of {} has an invalid lane count {}", type.str(), layout.lanes);
  if (layout.chunk != 8 && (!warpList || (layout.chunk != 4 && layout.chunk != 2)))
    return fmt::format("layout of {} has an invalid chunk length {}", type.str(), layout.chunk);
  // With warp specialization a layout may cover only the consumer warps.
  // The counts come from the text as any int: their product needs 64 bits.
  int64_t layoutWarps = int64_t(layout.warpsM) * layout.warpsN;
  if ((warpGrid || warpList) && layoutWarps > warps)
    return fmt::format("layout of {} spreads over {} warps but the kernel has {}", type.str(), layoutWarps, warps);
  if (layout.kind == LayoutKind::Mbarrier && (type.dtype != DType::I32 || type.shape.size() != 2 || type.shape[1] != 2))
    return fmt::format("#mbarrier holds one barrier per row of an i32[S, 2] tile, not {}", type.str());

  size_t rank = type.shape.size();
  size_t wantRank = layout.kind == LayoutKind::AccRow || layout.kind == LayoutKind::AccCol ||
                            layout.kind == LayoutKind::StripRow ||
                            layout.kind == LayoutKind::StripCol || lone
                        ? 1
                    : layout.kind == LayoutKind::None ? rank
                                                      : 2;
  if (rank != wantRank)
    return fmt::format("layout {} needs a {}-d tile, but the shape is {}", layout.str(), wantRank,
                       shapeText(type.shape));
  // mma.sync m16n8k16: each warp's share of an accumulator is a whole number
  // of 16x8 fragments, and A fragments are 16x16.
  int64_t rowQuantum = 16 * layout.warpsM;
  if (layout.kind == LayoutKind::Acc && (type.shape[0] % rowQuantum || type.shape[1] % (8 * layout.warpsN)))
    return fmt::format("{} needs a shape divisible by [{}, {}], but it is {}", layout.str(), rowQuantum,
                       8 * layout.warpsN, shapeText(type.shape));
  if (layout.kind == LayoutKind::OperandA && (type.shape[0] % rowQuantum || type.shape[1] % 16))
    return fmt::format("{} needs a shape divisible by [{}, 16], but it is {}", layout.str(), rowQuantum,
                       shapeText(type.shape));
  if (layout.kind == LayoutKind::AccRow && type.shape[0] % rowQuantum)
    return fmt::format("{} needs a length divisible by {}, but it is {}", layout.str(), rowQuantum,
                       type.shape[0]);
  if (layout.kind == LayoutKind::AccCol && type.shape[0] % (8 * layout.warpsN))
    return fmt::format("{} needs a length divisible by {}, but it is {}", layout.str(), 8 * layout.warpsN,
                       type.shape[0]);
  // A narrow strip is exactly `lanes` chunks wide; a wide one a whole
  // number of 32 chunks.
  int64_t stripWidth = layout.chunk * layout.lanes;
  if ((layout.kind == LayoutKind::Strip || layout.kind == LayoutKind::StripCol) && layout.lanes != 32 &&
      type.shape.back() != stripWidth)
    return fmt::format("{} needs {} {}, but the shape is {}", layout.str(), stripWidth,
                       layout.kind == LayoutKind::Strip ? "columns" : "elements", shapeText(type.shape));
  if ((layout.kind == LayoutKind::Strip || layout.kind == LayoutKind::StripCol) && layout.lanes == 32 &&
      type.shape.back() % stripWidth)
    return fmt::format("{} needs {} divisible by {}, but the shape is {}", layout.str(),
                       layout.kind == LayoutKind::Strip ? "columns" : "a length", stripWidth, shapeText(type.shape));
  return "";
}

} // namespace tkc::ir
