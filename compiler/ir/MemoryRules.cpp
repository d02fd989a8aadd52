// Rules of the ops that move tiles between global memory, shared memory and
// registers without the Hopper async machinery: load, gather and store
// (offsets per global dim, `sizes` that match the tile, `out` tensors for
// stores), shared buffers and their stage slots, and cp.async copies.
#include "ir/OpRuleChecks.h"

#include <algorithm>

namespace tkc::ir::rules {

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

std::string checkSmemAlloc(const Op &op) {
  if (auto error = checkCounts(op, 0, 1); !error.empty())
    return error;
  if (!resultType(op).isShared())
    return fmt::format("result must be in shared memory, but is {}", resultType(op).str());
  return checkIntAttr(op, "offset", Presence::Optional, 0, INT32_MAX);
}

std::string checkStageView(const Op &op) {
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

std::string checkAsyncWait(const Op &op) {
  if (auto error = checkCounts(op, 0, 0); !error.empty())
    return error;
  return checkIntAttr(op, "pending", Presence::Required, 0, 64);
}

} // namespace tkc::ir::rules
