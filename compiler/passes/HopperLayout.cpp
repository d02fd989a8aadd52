// hopper-layout (sm_90a and newer; a no-op for older targets): picks the
// wgmma schedule for a pipelined matrix-product loop.
//
// A loop qualifies when its body is a pipelined GEMM step: shared loads
// (A [BM, BK], or [BK, BM] with trans_a, and B [BK, BN], or [BN, BK] with
// trans_b) feeding `mma`s, each on an accumulator of its own that the loop
// carries, plus scalar address arithmetic. One product is a GEMM; several
// (a gated MLP's gate and up projections, which share A's tile) are
// independent products of one accumulator shape, run side by side.
// For such a loop the pass
//   * stages the operand tiles as 128-byte-swizzled panels (#swizzle128),
//     the layout that the bulk tensor copy engine writes and wgmma reads;
//   * gives the accumulators (and every tile derived from them) the layout
//     of BM/64 consumer warpgroups, each owning 64 rows: #acc<(BM/16)x1>,
//     whatever warp grid the layout pass chose for mma.sync (the grid is
//     decided here, where the loop is known to go to wgmma: a kernel that
//     stays on mma.sync keeps layout's);
//   * makes the kernel one warpgroup larger for the producer;
//   * marks the stores of 16-bit accumulator tiles after the loop (one or
//     more: an output and its pre-activation), or an addition of the f32
//     accumulator (atomic_add), for an epilogue through shared memory
//     (`epilogue = "tma"`, carried out by hopper-epilogue), each with a
//     staging tile of `staging_cols` columns (the whole tile or a part of
//     it, the same part for all, as fits beside the pipeline stages): the
//     consumers then hand the tiles to the bulk copy engine and go on with
//     the next one;
//   * chooses the pipeline depth: the deepest that fits the target's shared
//     memory, no shallower than the source asks where that many fit, else
//     the deepest that does (with a note; two at least, or an error),
//     recorded as `hopper_stages` in place of `stages` so that `pipeline`
//     leaves the loop to `hopper-pipeline`.
//
// A loop of several products with elementwise work between them (attention)
// qualifies too when its register tiles already give each warp 16 rows, the
// rows of a warp in a wgmma warpgroup: its operand tiles become
// #swizzle128, an A operand loaded once before the loop stays in shared
// memory (no conversion to registers), vectors loaded in the loop go
// straight to the consumers' registers, and the kernel gains the producer
// warpgroup and `hopper_stages`. With a single consumer warpgroup the stages
// are sized so that two blocks share a multiprocessor. Such a loop may also
// stage a register tile in shared memory for a product that reads it
// transposed or as it is (a `convert` to #swizzle128, written by the
// consumers; one copy serves every product that reads it), read a B
// operand loaded before the loop, split 64-row tiles between the consumer
// warpgroups by columns (#acc<4xG>, each warpgroup all 64 rows: the
// attention backward's scores with queries as rows, with their row vectors
// #accrow<4xG> and dQ's share), and add a product's f32 result to a tensor
// in every iteration through the bulk copy engine (marked like the
// epilogue's store). Two pipeline stages at least must fit beside the
// resident and staged tiles; where they do not, the kernel stays on
// mma.sync with a warning that says so. Where hopper-pipeline will issue the
// second of two products an iteration late (the attention forward's output
// product) in a persistent kernel with resident tiles, below the preferred
// depth, the tiles only that product reads get a ring of their own,
// `hopper_slots` = `hopper_stages` + 1, as they stay taken an iteration
// longer.
//
// Kernels with anything else (strips, other layouts, other products) are
// left to the sm_80 path.
//
// HopperLayout.h lists the files that hold the pass's analyses and
// decisions; this file holds the choice between the two schedules, the
// diagnostics of a kernel that gets neither, and the pass.
#include "passes/HopperLayout.h"
#include "passes/Pass.h"

#include <fmt/format.h>

namespace tkc {

namespace passes::hopper_layout {

namespace {

/// The first product of 8-bit floats, which only wgmma can run.
Op *firstF8Product(Kernel &kernel) {
  Op *found = nullptr;
  walk(kernel.body, [&](Op &op) {
    if (!found && op.kind == OpKind::Mma && isF8(op.operands[0]->type.dtype))
      found = &op;
  });
  return found;
}

/// False after reporting a pipeline whose two stages do not fit.
bool runOnKernel(Kernel &kernel, const Target &target, DiagnosticEngine &diags) {
  std::vector<GemmLoop> found;
  ScheduleMismatch gemmMismatch; // a GEMM loop's product that wgmma cannot run
  int mmas = 0;
  walk(kernel.body, [&](Op &op) {
    if (op.kind == OpKind::Mma)
      ++mmas;
    if (op.kind == OpKind::For && op.parent == &kernel.body)
      if (auto m = matchGemmLoop(kernel, op, gemmMismatch))
        found.push_back(*m);
  });
  if (found.size() != 1 || mmas != static_cast<int>(found.front().products.size()) ||
      !onlyAccumulatorLayouts(kernel, found.front())) {
    ScheduleMismatch mismatch;
    auto f = matchFusedLoop(kernel, mismatch);
    FusedBudget budget;
    if (f) {
      budget = budgetOf(*f, target);
      if (budget.roomBytes < kMinStages * budget.stageBytes) {
        mismatch = {f->loop, fmt::format("two stages of its loop's tiles ({} bytes each) do not fit in shared "
                                         "memory beside the {} bytes of its resident, staged and addition tiles",
                                         budget.stageBytes, budget.fixedBytes)};
        f.reset();
      }
    }
    // A loop of the GEMM's form says what kept its product off wgmma;
    // that is the nearer miss than the general schedule's reason.
    if (!f && found.empty() && gemmMismatch.at)
      mismatch = gemmMismatch;
    if (f) {
      layOutFused(kernel, *f);
      markFusedPipeline(*f, planFusedPipeline(kernel, *f, budget, target, diags));
    } else if (Op *f8 = firstF8Product(kernel)) {
      // mma.sync has no 8-bit float form on sm_90a.
      diags.report(gemmMismatch.at ? gemmMismatch.at->loc : f8->loc, DiagId::F8MmaNotWgmma, kernel.name, target.name,
                   gemmMismatch.at ? gemmMismatch.why
                                   : "its loop is not one pipelined GEMM step of loaded tiles, A [BM, BK] and B "
                                     "[BN, BK] read as `b^T` (BM 64 or 128, BN 64, 128 or 256, BK 128 or 256), "
                                     "each product on a carried accumulator of its own");
    } else if (mmas > 0) {
      // Correct code still, at half the tensor cores' rate or less: say
      // where the kernel leaves the shape the Hopper pipeline takes.
      diags.report(mismatch.at ? mismatch.at->loc : kernel.loc, DiagId::MmaSyncOnHopper, kernel.name, target.name,
                   mismatch.why);
    }
    return true;
  }
  GemmLoop &m = found.front();
  layOutGemm(kernel, m);
  std::optional<GemmPipeline> pipeline = planGemmPipeline(kernel, m, target, diags);
  if (!pipeline)
    return false;
  markGemmPipeline(m, *pipeline);
  return true;
}

} // namespace

} // namespace passes::hopper_layout

namespace {

class HopperLayoutPass : public Pass {
public:
  const char *name() const override { return "hopper-layout"; }
  const char *description() const override {
    return "sm_90a: choose wgmma accumulator and 128-byte-swizzled operand layouts and the pipeline depth";
  }
  bool run(ir::Module &module, const Target &target, DiagnosticEngine &diags) override {
    if (!target.hasHopperInstructions())
      return true;
    bool ok = true;
    for (auto &kernel : module.kernels)
      ok &= passes::hopper_layout::runOnKernel(*kernel, target, diags);
    return ok;
  }
};

} // namespace

std::unique_ptr<Pass> createHopperLayoutPass() { return std::make_unique<HopperLayoutPass>(); }

} // namespace tkc
