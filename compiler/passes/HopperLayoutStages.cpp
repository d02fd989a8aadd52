// hopper-layout's choice of pipeline depth: how much shared memory the
// stages of a loop laid out for wgmma take beside everything else the kernel
// keeps there, how deep a pipeline fits (against what the source asks), and
// how wide the GEMM epilogue's staging tiles can be beside it. Apart from
// the analyses: these are the pass's tuning decisions, taken on loops
// already known to qualify.
#include "passes/HopperLayout.h"
#include "passes/PassUtils.h"

#include <algorithm>

namespace tkc::passes::hopper_layout {

namespace {

constexpr int kMaxStages = 8;
/// Pipeline depth worth a narrower epilogue staging tile: with fewer stages
/// a slot is refilled too late behind the one wgmma group kept in flight
/// (on the H200, 4 stages and a half-width staging tile ran the 128 x 256
/// GEMM 4-5% faster than 3 stages and a whole one).
constexpr int64_t kPreferredStages = 4;

/// Bytes of the shared buffers the kernel defines besides `loads` (the
/// loop's operand tiles, which become the pipeline's slots), each aligned as
/// smem-plan aligns it.
int64_t otherSharedBytes(Kernel &kernel, const std::vector<Op *> &loads) {
  int64_t end = 0;
  walk(kernel.body, [&](Op &op) {
    if (passes::definesSharedBuffer(op) && std::find(loads.begin(), loads.end(), &op) == loads.end())
      end = passes::alignUp(end, passes::sharedAlignmentOf(op.result()->type)) +
            passes::sharedBufferBytes(op.result()->type);
  });
  return end;
}

} // namespace

FusedBudget budgetOf(const FusedLoop &f, const Target &target) {
  FusedBudget b;
  for (Op *load : f.resident)
    b.fixedBytes += passes::sharedBufferBytes(load->result()->type);
  for (Op *convert : f.staged)
    b.fixedBytes += 2 * passes::sharedBufferBytes(convert->result()->type);
  for (Op *store : f.adds) {
    const Type &tile = store->operands[1]->type;
    b.fixedBytes += tile.numElements() * dtypeBytes(tile.dtype);
  }
  std::vector<Op *> late = passes::tilesReadAnIterationLate(*f.loop);
  for (Op *load : f.streamed) {
    int64_t bytes = passes::sharedBufferBytes(load->result()->type);
    b.stageBytes += bytes;
    if (std::find(late.begin(), late.end(), load) != late.end())
      b.lateBytes += bytes;
  }
  b.roomBytes = target.sharedMemoryPerBlock(intendedBlocksPerSm(f.warps)) - Target::kReservedSharedBytes - b.fixedBytes;
  return b;
}

std::optional<GemmPipeline> planGemmPipeline(Kernel &kernel, const GemmLoop &m, const Target &target,
                                             DiagnosticEngine &diags) {
  int64_t stageBytes = 0;
  for (Op *load : m.loads)
    stageBytes += passes::sharedBufferBytes(load->result()->type);
  int64_t asked = m.loop->intAttr("stages", 2);
  // Beside the stages: the mbarriers (in the reserve) and whatever else
  // the kernel keeps in shared memory.
  int64_t fixed = Target::kReservedSharedBytes + otherSharedBytes(kernel, m.loads);
  int64_t free = target.sharedMemoryBytes - fixed;
  // With no staging tiles at all, as many stages fit; the source's depth
  // gives way to shared memory, down to kMinStages.
  int64_t deepest = free / stageBytes;
  if (deepest < kMinStages) {
    diags.report(m.loop->loc, DiagId::PipelineStagesDoNotFit, kMinStages * stageBytes + fixed, kMinStages,
                 target.sharedMemoryBytes);
    return std::nullopt;
  }
  int64_t depth = std::min(asked, deepest);
  GemmPipeline p;
  std::vector<Op *> stores = matchTmaStores(kernel, m);
  if (!stores.empty()) {
    // The widest staging tiles (the whole tile, else a half, a
    // quarter..., never under one panel; the same width for every store)
    // that leave room for the preferred depth, or failing that for the
    // depth the source asks (or the deepest that fits, if shallower).
    const Type &tile = m.accumulator();
    // Bytes of one staging column of all the stores, and the widest
    // element's panel, which no staging tile may be narrower than.
    int64_t columnBytes = 0, minCols = 1;
    for (Op *store : stores) {
      int64_t elem = dtypeBytes(store->operands[1]->type.dtype);
      columnBytes += tile.shape[0] * elem;
      minCols = std::max<int64_t>(minCols, kSwizzle128RowBytes / elem);
    }
    auto widestFitting = [&](int64_t stages) -> int64_t {
      for (int64_t cols = tile.shape[1]; cols >= minCols && tile.shape[1] % cols == 0; cols /= 2)
        if ((free - columnBytes * cols) / stageBytes >= stages)
          return cols;
      return 0;
    };
    int64_t cols = widestFitting(std::max(asked, kPreferredStages));
    if (cols == 0)
      cols = widestFitting(depth);
    if (cols > 0) {
      p.epilogueStores = stores;
      p.stagingCols = cols;
      free -= columnBytes * cols;
    }
  }
  int64_t fit = free / stageBytes;
  int64_t stages = fit >= asked ? std::max<int64_t>(asked, std::min<int64_t>(fit, kMaxStages)) : fit;
  if (stages < asked)
    diags.report(m.loop->loc, DiagId::PipelineStagesLowered, asked, stages, asked, asked * stageBytes + fixed,
                 target.sharedMemoryBytes);
  p.stages = stages;
  return p;
}

FusedPipeline planFusedPipeline(const Kernel &kernel, const FusedLoop &f, const FusedBudget &budget,
                                const Target &target, DiagnosticEngine &diags) {
  // A tile that only the product issued an iteration late reads stays
  // taken an iteration longer than the others (see the rings below).
  std::vector<Op *> late = passes::tilesReadAnIterationLate(*f.loop);
  int64_t stageBytes = budget.stageBytes, lateBytes = budget.lateBytes, room = budget.roomBytes;
  int64_t asked = f.loop->intAttr("stages", 2);
  // A persistent kernel with resident tiles (the attention forward's
  // query tile) runs below the preferred depth on rings of its own for
  // the late tiles, a slot deeper than the others: the tiles the first
  // product reads are released as soon as it is done, so that S + 1
  // slots of the late tiles and S of the others run as far ahead as
  // S + 1 shared slots, in a slot's less room, which warp-specialize
  // gives the resident tiles (a second slot, the next tile's copy).
  bool rings = kernel.persistent == 1 && !f.resident.empty() && !late.empty();
  int64_t fit = (room - (rings ? lateBytes : 0)) / stageBytes;
  int64_t stages = std::max<int64_t>({kMinStages, asked, std::min<int64_t>(fit, kPreferredStages)});
  // Deeper than fits the two blocks a multiprocessor `room` is sized for,
  // the source's depth runs in one block's shared memory, as deep as that
  // holds.
  int64_t fixed = Target::kReservedSharedBytes + budget.fixedBytes;
  int64_t deepest = (target.sharedMemoryBytes - fixed) / stageBytes;
  if (stages > deepest) {
    diags.report(f.loop->loc, DiagId::PipelineStagesLowered, asked, deepest, asked, asked * stageBytes + fixed,
                 target.sharedMemoryBytes);
    stages = deepest;
  }
  FusedPipeline p;
  p.stages = stages;
  if (rings && stages < kPreferredStages && stages * stageBytes + lateBytes <= room)
    p.ringed = late;
  return p;
}

} // namespace tkc::passes::hopper_layout
