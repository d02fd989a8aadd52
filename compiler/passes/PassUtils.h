#pragma once
// Small queries and edits on the tile IR that several passes share.
#include "ir/IR.h"

#include <algorithm>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

namespace tkc::passes {

using OpIterator = std::list<std::unique_ptr<ir::Op>>::iterator;

/// True for ops that must stay even when nothing uses their results: stores,
/// asynchronous copies and products, barriers and fences, role markers,
/// terminators, and loops that contain any of these.
bool hasSideEffects(const ir::Op &op);

/// Number of operand slots that refer to each value, counted over `block`
/// and every nested body.
using UseCounts = std::unordered_map<const ir::Value *, int>;
UseCounts countUses(ir::Block &block);

/// The `value` attribute of a `const` op defining `v`, if any.
std::optional<ir::Attr> constantOf(const ir::Value *v);
/// The `value` attribute of a `fill` op defining `v`, if any.
std::optional<ir::Attr> fillValueOf(const ir::Value *v);
/// An integer or float attribute read as a number.
double attrAsDouble(const ir::Attr &attr);
bool attrIsZero(const ir::Attr &attr);

/// True if `op` takes `v` as an operand.
inline bool reads(const ir::Op &op, const ir::Value *v) {
  return std::find(op.operands.begin(), op.operands.end(), v) != op.operands.end();
}

/// Where `op` sits in its parent block (for inserting before it or erasing it).
OpIterator positionOf(ir::Op &op);
/// Removes `op` from its block. Its results must be unused.
void eraseOp(ir::Op &op);

/// The buffer a shared-memory value belongs to: `stage_view` results alias
/// the buffer they view; anything else is its own buffer.
ir::Value *sharedRoot(ir::Value *value);

/// Bytes a shared-memory tile occupies: one slot per pipeline stage.
int64_t sharedBufferBytes(const ir::Type &type);
/// Where a shared buffer of this type may start: 1024-byte boundaries for
/// 128-byte-swizzled panels (bulk copies and wgmma descriptors assume their
/// pattern, which repeats every 1024 bytes, starts at the buffer), 128
/// bytes for the rest (16-byte vector accesses and the other swizzles,
/// which repeat every 8 rows of 16 bytes).
int64_t sharedAlignmentOf(const ir::Type &type);
int64_t alignUp(int64_t bytes, int64_t alignment);
/// Whether `op` makes a shared buffer of its own (one smem-plan places):
/// an allocation, or a load, conversion or column reduction (its partial
/// results) into shared memory.
bool definesSharedBuffer(const ir::Op &op);
/// Bytes of the staging tile hopper-epilogue makes for a store marked
/// `epilogue = "tma"`: the tile's rows by `staging_cols` columns (all of
/// them where unset), as a ring of one-panel slots.
int64_t epilogueStagingBytes(const ir::Op &store);

/// Whether hopper-pipeline issues the second of a loop's products an
/// iteration late, behind the next iteration's first (the attention
/// forward's output product behind the next scores): the body has exactly
/// two products, the second feeds only the next iteration, the first does
/// not.
bool issuesSecondProductLate(ir::Op &loop);
/// The shared tiles such a loop loads that only its late product reads (the
/// attention forward's value tiles): each stays taken an iteration longer
/// than the tiles the first product reads. Empty for any other loop, and
/// for one that also loads register vectors (those share one release per
/// slot with the tiles).
std::vector<ir::Op *> tilesReadAnIterationLate(ir::Op &loop);

/// Clones, at `b`, the computation of `v` that lies in `loop`'s body, with
/// its induction variable replaced by `k` (values from outside the body
/// are used as they are), memoised in `cloned`: how a pipeline computes a
/// copy's addresses for another iteration.
ir::Value *cloneForIteration(ir::Builder &b, ir::Op &loop, ir::Value *v, ir::Value *k,
                             std::map<ir::Value *, ir::Value *> &cloned);

/// The iteration number hopper-pipeline computes in a pipelined loop's body
/// (`k - lo + base`, shared by the roles' loops and their barriers' phases),
/// or null where the body has none.
ir::Value *pipelineIteration(ir::Op &loop);

/// True if `op` is nested (at any depth) inside the body of `loop`.
bool isInside(const ir::Op &op, const ir::Op &loop);

/// The op of the kernel body that holds `op` (`op` itself at the top level).
ir::Op &topLevelOp(ir::Op &op);

/// The `warpgroup_role` whose region holds `op` (after warp-specialize), or
/// null where no role's region does.
const ir::Op *roleOf(const ir::Kernel &kernel, ir::Op &op);

/// The integer held by a `const` op defining `v`, if any.
std::optional<int64_t> constantIntOf(const ir::Value *v);

/// True when two scalars are computed the same way from the same values
/// (lowering recomputes `block.x * 64` at every use).
bool sameScalar(const ir::Value *a, const ir::Value *b);

/// An f32 register vector with a value per row or column of an accumulator
/// (attention backward's L and Delta), which the pipelining passes copy
/// through staged shared vectors like the tiles.
bool isStageableVector(const ir::Type &type);

/// The type of the `stages`-slot shared buffer that a pipeline copies the
/// tile or vector of `load` into (a vector loses its register layout).
ir::Type ringBufferType(const ir::Op &load, int64_t stages);
/// A shared buffer of `stages` slots for the vector that `load` loads,
/// named after its tensor (`L_buf`).
ir::Value *stagedVectorBuffer(ir::Builder &b, ir::Op &load, int64_t stages);

/// The vector that `load` loads, read from slot `slot` of its staged
/// `buffer`: a `stage_view` (`L_slot`) and a `convert` to the load's
/// registers.
ir::Value *readStagedVector(ir::Builder &b, ir::Value *buffer, ir::Value *slot, ir::Op &load);

/// Removes ops whose results are unused and that have no side effects,
/// loops included, and iter_args whose result is unused and whose block
/// argument only feeds its own yield slot; repeats until nothing changes.
/// Returns true if anything was removed.
bool eliminateDeadCode(ir::Block &root);

/// Registers per thread that a consumer loop's tiles and fragments leave to
/// everything else (addresses, indices, the elementwise work's temporaries).
/// On the H200 (2026-12-03), 192 of 240 ran the attention backward's
/// products concurrently, and 192 of 232 or 224 of 240 did not.
constexpr int64_t kRegisterHeadroom = 48;

/// ir::threadRegisters of a 2-d register tile (0 for anything else).
int64_t threadRegisters(const ir::Type &type);

/// Registers per thread a loop needs whatever else it holds: the tiles it
/// carries and the products it computes afresh in each iteration (`except`
/// left out).
int64_t loopRegisters(const ir::Op &loop, const ir::Op *except = nullptr);

/// Calls `fn(block)` on the kernel's launch and body blocks.
template <typename Fn> void forEachKernelBlock(ir::Module &module, Fn &&fn) {
  for (auto &kernel : module.kernels) {
    fn(*kernel, kernel->launch);
    fn(*kernel, kernel->body);
  }
}

} // namespace tkc::passes
