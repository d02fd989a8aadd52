// hopper-layout's rewriting: the layouts, warp counts and marks that carry
// the pass's decisions into the IR, for hopper-pipeline, hopper-epilogue and
// warp-specialize to act on. Apart from the analyses and the depth choice,
// which only read the IR: everything here changes it.
#include "passes/HopperLayout.h"
#include "passes/PassUtils.h"

namespace tkc::passes::hopper_layout {

void layOutGemm(Kernel &kernel, const GemmLoop &m) {
  const Type &acc = m.accumulator();
  int consumerWarps = static_cast<int>(acc.shape[0] / 16);
  auto split = [&](Type &type) {
    if (type.isRegister() && isAccumulatorFamily(type.layout.kind))
      type.layout = {type.layout.kind, consumerWarps, 1};
  };
  walk(kernel.body, [&](Op &op) {
    for (auto &r : op.results)
      split(r->type);
    if (op.body)
      for (auto &a : op.body->args)
        split(a->type);
  });
  // A column reduction's shared partial results hold a row per warp row:
  // as many as the consumer warps now (their operand, defined before
  // them, has been split above).
  walk(kernel.body, [&](Op &op) {
    if (op.kind == OpKind::Reduce && op.result()->type.isShared() && op.operands[0]->type.isRegister())
      op.result()->type.shape[0] = op.operands[0]->type.layout.warpsM;
  });
  for (Op *load : m.loads)
    load->result()->type.layout = {LayoutKind::Swizzle128, 1, 1};
  kernel.warps = consumerWarps + 4;
}

void markGemmPipeline(const GemmLoop &m, const GemmPipeline &p) {
  for (Op *store : p.epilogueStores) {
    store->attrs["epilogue"] = Attr(std::string("tma"));
    store->attrs["staging_cols"] = Attr(p.stagingCols);
  }
  m.loop->attrs.erase("stages");
  m.loop->attrs["hopper_stages"] = Attr(p.stages);
}

void layOutFused(Kernel &kernel, const FusedLoop &f) {
  for (Op *load : f.streamed)
    load->result()->type.layout = {LayoutKind::Swizzle128, 1, 1};
  for (Op *load : f.resident)
    load->result()->type.layout = {LayoutKind::Swizzle128, 1, 1};
  // wgmma reads resident A tiles from shared memory: the conversions to
  // registers go.
  for (Op *mma : f.mmas) {
    Op *convert = mma->operands[0]->definingOp;
    if (convert && convert->kind == OpKind::Convert && convert->operands[0]->type.isShared())
      mma->operands[0] = convert->operands[0];
  }
  // (Erasing an unused conversion changes no other conversion's uses.)
  passes::UseCounts uses = passes::countUses(kernel.body);
  for (Op *load : f.resident)
    for (auto it = kernel.body.ops.begin(); it != kernel.body.ops.end();) {
      Op &op = **it;
      if (op.kind == OpKind::Convert && op.operands[0] == load->result() && uses[op.result()] == 0)
        it = kernel.body.ops.erase(it);
      else
        ++it;
    }
  // 64-row tiles and their row vectors go to the consumer warpgroups by
  // columns.
  for (Value *v : f.split)
    v->type.layout = {v->type.layout.kind, 4, f.warps / 4};
  // Staged tiles: written by the consumers, read by wgmma as M-major
  // panels, in two slots (hopper-pipeline alternates them).
  for (Op *convert : f.staged)
    convert->result()->type.layout = {LayoutKind::Swizzle128, 1, 1};
  // Each addition goes out through a staging tile of its own, whole.
  for (Op *store : f.adds) {
    store->attrs["epilogue"] = Attr(std::string("tma"));
    store->attrs["staging_cols"] = Attr(store->operands[1]->type.shape[1]);
  }
  kernel.warps = f.warps + 4;
}

void markFusedPipeline(const FusedLoop &f, const FusedPipeline &p) {
  // The late tiles' rings: a slot more than the others (see
  // planFusedPipeline).
  for (Op *load : p.ringed)
    load->attrs["hopper_slots"] = Attr(p.stages + 1);
  f.loop->attrs.erase("stages");
  f.loop->attrs["hopper_stages"] = Attr(p.stages);
}

} // namespace tkc::passes::hopper_layout
