// Rules of the sm_90a ops around asynchronous copies: the warp copy that
// completes on mbarriers, the swizzled shared panels that bulk tensor copies
// read, smem_store and tma_store into them, and the waits and barriers that
// order them.
#include "ir/OpRuleChecks.h"

namespace tkc::ir::rules {

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

std::string checkTmaStoreWait(const Op &op) {
  if (auto error = checkCounts(op, 0, 0); !error.empty())
    return error;
  if (auto error = checkIntAttr(op, "read", Presence::Required, 0, 1); !error.empty())
    return error;
  return checkIntAttr(op, "pending", Presence::Required, 0, 8);
}

std::string checkWarpgroupBarrier(const Op &op) {
  if (auto error = checkCounts(op, 0, 0); !error.empty())
    return error;
  return checkIntAttr(op, "all", Presence::Optional, 0, 1);
}

} // namespace tkc::ir::rules
