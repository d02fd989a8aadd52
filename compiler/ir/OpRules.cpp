// checkOpRules (OpRules.h): which family's rules check each op. The rules
// themselves live in one file per op family (OpRuleChecks.h lists them).
#include "ir/OpRules.h"
#include "ir/OpRuleChecks.h"

namespace tkc::ir {

std::string checkOpRules(const Op &op) {
  using namespace rules;
  if (op.body && op.kind != OpKind::For)
    return "cannot have a body";
  switch (op.kind) {
  case OpKind::Const: return checkConst(op);
  case OpKind::BlockId: return checkBlockId(op);
  case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Div: case OpKind::Rem:
  case OpKind::Max: case OpKind::Min: case OpKind::Lt: case OpKind::Le: case OpKind::Gt:
  case OpKind::Ge: case OpKind::Eq: case OpKind::Ne: case OpKind::And: case OpKind::Or:
    return checkBinary(op);
  case OpKind::CDiv: return checkCDiv(op);
  case OpKind::Select: return checkSelect(op);
  case OpKind::Neg: case OpKind::Exp: case OpKind::Exp2: case OpKind::Log: case OpKind::Log2:
  case OpKind::Sqrt: case OpKind::Rsqrt: case OpKind::Abs: case OpKind::Tanh:
  case OpKind::Erf: case OpKind::Sigmoid: case OpKind::Silu:
    return checkUnary(op);
  case OpKind::Cast: return checkCast(op);
  case OpKind::Fill: return checkFill(op);
  case OpKind::Undef: return checkUndef(op);
  case OpKind::Iota: return checkIota(op);
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
  case OpKind::Yield: return checkYield(op);
  case OpKind::Grid: return checkGrid(op);
  case OpKind::VariantGuard: return checkVariantGuard(op);
  case OpKind::SmemAlloc: return checkSmemAlloc(op);
  case OpKind::StageView: return checkStageView(op);
  case OpKind::AsyncLoad: return checkAsyncLoad(op);
  case OpKind::WarpCopy: return checkWarpCopy(op);
  case OpKind::AsyncWait: return checkAsyncWait(op);
  case OpKind::AsyncCommit:
  case OpKind::Barrier:
  case OpKind::FenceProxyAsync:
    return checkCounts(op, 0, 0);
  case OpKind::WarpgroupBarrier: return checkWarpgroupBarrier(op);
  case OpKind::SmemStore: return checkSmemStore(op);
  case OpKind::TmaStore: return checkTmaStore(op);
  case OpKind::TmaStoreWait: return checkTmaStoreWait(op);
  case OpKind::TurnWait:
  case OpKind::TurnPass: return checkTurn(op);
  default:
    // Ops without a row in README.md's table have no rules here yet; the
    // structural checks (dominance, placement, types) still apply to them.
    return "";
  }
}

} // namespace tkc::ir
