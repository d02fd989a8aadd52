#pragma once
// The pieces the per-op rules share, split by op family over the *Rules.cpp
// files of this folder: operand and result accessors, count and attribute
// checks, the checks of global accesses and swizzled panels that several
// families make, and each family's entry points, which OpRules.cpp's
// dispatch calls. Only those files include it.
#include "ir/IR.h"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace tkc::ir::rules {

inline std::string shapeText(const std::vector<int64_t> &shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

inline bool isScalarOf(const Type &type, DType dtype) { return type.isScalar() && type.dtype == dtype; }

inline std::string countMismatch(const char *what, size_t expected, size_t actual) {
  return fmt::format("expects {} {}(s) but has {}", expected, what, actual);
}

std::string checkCounts(const Op &op, size_t operands, size_t results);

inline const Type &operandType(const Op &op, size_t i) { return op.operands[i]->type; }
inline const Type &resultType(const Op &op, size_t i = 0) { return op.results[i]->type; }

enum class Presence { Required, Optional };

std::string checkIntAttr(const Op &op, const std::string &name, Presence presence, int64_t lo, int64_t hi);

/// 8-bit floats are loaded, converted and multiplied by mma, nothing else.
std::string checkNotF8(const Op &op);

/// Operand `globalIndex` is a global tensor and the operands from
/// `firstOffset` on are its i32 offsets, one per dim (MemoryRules.cpp).
std::string checkGlobalAccess(const Op &op, size_t globalIndex, size_t firstOffset);

/// `sizes` (and the optional `checked`) of load, store and async_load: one
/// entry per global dim; the non-zero sizes are the tile's shape
/// (MemoryRules.cpp).
std::string checkAccessSizes(const Op &op, const Type &global, const Type &tile);

/// A shared tile in the 128-byte-swizzled panels that bulk tensor copies
/// use (HopperAsyncRules.cpp).
std::string checkSwizzledPanel(const Op &op, size_t index);

// --- each family's entry points -------------------------------------------

// ElementwiseRules.cpp
std::string checkConst(const Op &op);
std::string checkBlockId(const Op &op);
std::string checkBinary(const Op &op);
std::string checkCDiv(const Op &op);
std::string checkSelect(const Op &op);
std::string checkUnary(const Op &op);
std::string checkCast(const Op &op);
std::string checkFill(const Op &op);
std::string checkUndef(const Op &op);
std::string checkIota(const Op &op);

// MemoryRules.cpp
std::string checkLoad(const Op &op);
std::string checkGather(const Op &op);
std::string checkStore(const Op &op);
std::string checkSmemAlloc(const Op &op);
std::string checkStageView(const Op &op);
std::string checkAsyncLoad(const Op &op);
std::string checkAsyncWait(const Op &op);

// MmaRules.cpp
std::string checkMma(const Op &op);
std::string checkWgmma(const Op &op);

// TileOpRules.cpp
std::string checkReduce(const Op &op);
std::string checkBroadcast(const Op &op);
std::string checkConvert(const Op &op);
std::string checkMask(const Op &op);

// HopperAsyncRules.cpp
std::string checkWarpCopy(const Op &op);
std::string checkSmemStore(const Op &op);
std::string checkTmaStore(const Op &op);
std::string checkTmaStoreWait(const Op &op);
std::string checkWarpgroupBarrier(const Op &op);

// ControlRules.cpp
std::string checkFor(const Op &op);
std::string checkYield(const Op &op);
std::string checkGrid(const Op &op);
std::string checkVariantGuard(const Op &op);
std::string checkTurn(const Op &op);

} // namespace tkc::ir::rules
