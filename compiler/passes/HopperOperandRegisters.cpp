// hopper-operand-registers (sm_90a and newer; a no-op for older targets):
// loads a resident A operand into registers once, so that the products of
// the loop read it from there (wgmma's register form) instead of from
// shared memory on every instruction.
//
// A tile the consumers receive once before their loop (a `stage_view` of a
// slot the producer filled) stays in shared memory after hopper-layout, and
// every wgmma of every iteration reads it again: each m64nNk16 reads 64 x 16
// elements of A beside N x 16 of B. Where N is at most 32, A is at least
// two thirds of those bytes, and shared memory, not the tensor cores, paces
// the loop (the attention backward's dK/dV kernel: K Q^T and V dO^T on
// 32-query tiles). Such a tile, read by that one product alone, becomes a
// `convert` to the A-fragment layout right after its `stage_view` (after the
// wait for its copy), which the product reads instead. Codegen keeps the
// fragments live with a read after the wait that retires the product (see
// tkc::keep_fragment): one reader makes that wait the place.
//
// The fragments stay live across the whole loop: a tile qualifies only
// while the loop's carried tiles, the products it computes afresh in each
// iteration and every tile converted for it fit in the consumer role's
// registers with kRegisterHeadroom to spare. Past that, ptxas runs the
// products one at a time (or spills), which costs more than the shared
// reads saved. Candidates are taken in program order.
//
//   %k = stage_view %k_buf, %c0 : smem<bf16[128, 128], #swizzle128>
//   for ... { %st = wgmma %k, %q, %zeros {trans_b = 1} : reg<f32[128, 32], #acc<8x1>> ... }
// becomes
//   %k = stage_view %k_buf, %c0 : smem<bf16[128, 128], #swizzle128>
//   %k.1 = convert %k : reg<bf16[128, 128], #opa<8x1>>
//   for ... { %st = wgmma %k.1, %q, %zeros {trans_b = 1} : ... }
#include "passes/Pass.h"
#include "passes/PassUtils.h"

#include <map>

namespace tkc {
namespace {

using namespace ir;

/// The widest product whose A operand is at least two thirds of what each
/// wgmma reads from shared memory. On the H200 (2026-12-03) the attention
/// backward's dK/dV kernel ran 7-8% faster with K in registers for K Q^T on
/// 32-query tiles, and its dQ kernel 1-9% slower with Q and dO in registers
/// for products of 64 columns (A half of the bytes).
constexpr int64_t kMaxProductColumns = 32;

/// The innermost loop around `op`, or null.
Op *enclosingLoop(const Op &op) {
  for (Op *parent = op.parent ? op.parent->parentOp : nullptr; parent;
       parent = parent->parent ? parent->parent->parentOp : nullptr)
    if (parent->kind == OpKind::For)
      return parent;
  return nullptr;
}

/// Whether `op` is nested somewhere in `block`.
bool isWithin(const Op &op, const Block &block) {
  for (const Block *b = op.parent; b; b = b->parentOp ? b->parentOp->parent : nullptr)
    if (b == &block)
      return true;
  return false;
}

/// The product that alone reads `view`, as its untransposed A operand, with
/// 16 rows a warp and at most kMaxProductColumns columns, inside a loop
/// below the view; or null.
Op *onlyReaderAsA(Kernel &kernel, const Op &view) {
  const Value *tile = view.result();
  Op *reader = nullptr;
  bool qualifies = true;
  walk(kernel.body, [&](Op &op) {
    for (size_t i = 0; i < op.operands.size(); ++i) {
      if (op.operands[i] != tile)
        continue;
      Op *around = op.kind == OpKind::Wgmma ? enclosingLoop(op) : nullptr;
      if (!around || i != 0 || op.intAttr("trans_a") || reader || !isWithin(*around, *view.parent)) {
        qualifies = false;
        continue;
      }
      const Type &acc = op.result()->type;
      if (acc.layout.kind != LayoutKind::Acc || acc.layout.warpsN != 1 || acc.shape[0] != tile->type.shape[0] ||
          acc.shape[0] != 16 * acc.layout.warpsM || acc.shape[1] > kMaxProductColumns)
        qualifies = false;
      reader = &op;
    }
  });
  return qualifies ? reader : nullptr;
}

/// The registers of the consumer role that `op` runs in, or 0 outside one.
int64_t consumerRegisters(const Kernel &kernel, Op &op) {
  const Op *role = passes::roleOf(kernel, op);
  return role && role->strAttr("role") == "consumer" ? role->intAttr("regs") : 0;
}

void convertResidentOperands(Kernel &kernel) {
  std::vector<Op *> views;
  walk(kernel.body, [&](Op &op) {
    if (op.kind != OpKind::StageView || op.results.size() != 1)
      return;
    const Type &t = op.result()->type;
    if (t.isShared() && t.layout.kind == LayoutKind::Swizzle128 && t.shape.size() == 2 && dtypeBytes(t.dtype) == 2)
      views.push_back(&op);
  });
  std::map<const Op *, int64_t> converted; // loop -> registers of its fragments so far
  for (Op *view : views) {
    Value *tile = view->result();
    Op *reader = onlyReaderAsA(kernel, *view);
    Op *loop = reader ? enclosingLoop(*reader) : nullptr;
    int64_t budget = loop ? consumerRegisters(kernel, *view) : 0;
    if (!loop || budget == 0)
      continue;
    Type fragments = tile->type.withLayout(MemSpace::Register, {LayoutKind::OperandA, reader->result()->type.layout.warpsM, 1});
    int64_t registers = passes::threadRegisters(fragments);
    if (passes::loopRegisters(*loop) + converted[loop] + registers + passes::kRegisterHeadroom > budget)
      continue;
    converted[loop] += registers;
    Builder builder(*view->parent, std::next(passes::positionOf(*view)));
    builder.setLoc(view->loc);
    Value *inRegisters = builder.value(OpKind::Convert, {tile}, fragments);
    inRegisters->nameHint = tile->nameHint;
    reader->operands[0] = inRegisters;
  }
}

class HopperOperandRegistersPass : public Pass {
public:
  const char *name() const override { return "hopper-operand-registers"; }
  const char *description() const override {
    return "sm_90a: load a resident A operand of narrow products into registers once";
  }
  bool run(Module &module, const Target &target, DiagnosticEngine &) override {
    if (!target.hasWarpgroupMma())
      return true;
    for (auto &kernel : module.kernels)
      convertResidentOperands(*kernel);
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> createHopperOperandRegistersPass() { return std::make_unique<HopperOperandRegistersPass>(); }

} // namespace tkc
