// pipeline: turns the shared-memory loads of a `for` loop marked with
// `stages = S > 1` into a software pipeline of asynchronous copies.
//
// Each such load gets a buffer with S slots. A prologue starts the copies of
// the first S-1 iterations; iteration k waits for its own copies, computes
// on slot k mod S, then starts the copies of iteration k+S-1 into the slot
// that iteration k-1 has finished with. The copies of the loads' addresses are
// cloned from the loop body with the induction variable replaced.
//
//   before                               after
//   for k {                              buf = smem_alloc {stages = S}
//     a = load A[f(k)]                   for p in 0 .. S-1 { async_load buf[p], A[f(lo+p)] if lo+p < hi; commit }
//     use(a)                             for k {
//   }                                      async_wait {pending = S-2}
//                                          async_load buf[(k-lo+S-1) % S], A[f(k+S-1)] if k+S-1 < hi; commit
//                                          use(stage_view buf[(k-lo) % S])
//                                        }
//                                        async_wait {pending = 0}
//
// The ring is as deep as the loop asks where shared memory holds it beside
// the kernel's other buffers (as smem-plan will place them), else the
// deepest that fits, with a note; a pipeline takes two stages at least, and
// a loop whose two do not fit is an error.
#include "passes/Pass.h"
#include "passes/PassUtils.h"
#include "passes/SmemPlan.h"

#include <map>
#include <set>

namespace tkc {
namespace {

using namespace ir;
using OpIterator = std::list<std::unique_ptr<Op>>::iterator;

bool isPureScalarOp(const Op &op) {
  if (op.results.size() != 1 || !op.result()->type.isScalar())
    return false;
  switch (op.kind) {
  case OpKind::For: case OpKind::Load: case OpKind::Store: case OpKind::AsyncLoad:
    return false;
  default:
    return op.body == nullptr;
  }
}

/// A pipeline needs two stages at least: one slot computed on while the
/// next fills.
constexpr int kMinStages = 2;

class LoopPipeliner {
public:
  LoopPipeliner(Kernel &kernel, Op &loop, const Target &target, DiagnosticEngine &diags)
      : kernel_(kernel), loop_(loop), target_(target), diags_(diags) {}

  bool run() {
    int asked = static_cast<int>(loop_.intAttr("stages", 1));
    if (asked <= 1)
      return true;
    std::vector<Op *> loads = pipelinableLoads();
    if (loads.empty()) {
      diags_.report(loop_.loc, DiagId::PipelineNotApplicable);
      return true;
    }
    int stages = depthThatFits(loads, asked);
    if (stages == 0)
      return false;
    Block &outer = *loop_.parent;
    OpIterator loopPos = find(outer, &loop_);
    Builder before(outer, loopPos);
    before.setLoc(loop_.loc);
    Value *lo = loop_.operands[0];
    Value *hi = loop_.operands[1];
    Value *iv = loop_.body->args[0].get();

    // One staged buffer per load.
    std::vector<Value *> buffers;
    for (Op *load : loads) {
      if (load->result()->type.isRegister()) { // a vector
        buffers.push_back(passes::stagedVectorBuffer(before, *load, stages));
        continue;
      }
      Value *buffer = before.value(OpKind::SmemAlloc, {}, passes::ringBufferType(*load, stages));
      buffer->nameHint = load->result()->nameHint.empty() ? "buf" : load->result()->nameHint + "_buf";
      buffers.push_back(buffer);
    }

    // Prologue: iterations lo .. lo+S-2.
    Value *zero = before.constInt(0);
    Value *one = before.constInt(1);
    Value *prologueCount = before.constInt(stages - 1);
    Op *prologue = before.create(OpKind::For, {zero, prologueCount, one}, {});
    prologue->body = std::make_unique<Block>();
    prologue->body->parentOp = prologue;
    Value *p = prologue->body->addArg(Type::scalar(DType::I32), "p");
    {
      Builder b(*prologue->body);
      b.setLoc(loop_.loc);
      Value *k = b.value(OpKind::Add, {lo, p}, Type::scalar(DType::I32));
      Value *pred = b.value(OpKind::Lt, {k, hi}, Type::scalar(DType::I1));
      issueCopies(b, loads, buffers, k, p, pred);
      b.create(OpKind::Yield, {}, {});
    }

    // Steady state. The wait is at the top of the body. With three or more
    // stages the copies for iteration k+S-1 start at the end of the body, so
    // that the fragment loads and multiplies of iteration k follow the wait
    // directly and the copy issue overlaps the last multiplies; with two
    // stages that would leave no copy in flight during the compute, so they
    // start at the top, right after the wait.
    Block &body = *loop_.body;
    Builder b(body, body.ops.begin()); // keeps inserting before the original first op
    b.setLoc(loop_.loc);
    b.create(OpKind::AsyncWait, {}, {}, {{"pending", Attr(int64_t(stages - 2))}});
    Value *count = b.constInt(stages);
    Value *rel = b.value(OpKind::Sub, {iv, lo}, Type::scalar(DType::I32));
    Value *slot = b.value(OpKind::Rem, {rel, count}, Type::scalar(DType::I32));
    bool issueLate = stages >= 3;
    Builder issue = issueLate ? Builder(body, std::prev(body.ops.end())) : b; // before the yield, or here
    issue.setLoc(loop_.loc);
    Value *ahead = issue.constInt(stages - 1);
    Value *kNext = issue.value(OpKind::Add, {iv, ahead}, Type::scalar(DType::I32));
    Value *pred = issue.value(OpKind::Lt, {kNext, hi}, Type::scalar(DType::I1));
    Value *relNext = issue.value(OpKind::Sub, {kNext, lo}, Type::scalar(DType::I32));
    Value *slotNext = issue.value(OpKind::Rem, {relNext, count}, Type::scalar(DType::I32));
    issueCopies(issue, loads, buffers, kNext, slotNext, pred);

    // The loads become views of the current slot (vectors: read from it).
    for (size_t i = 0; i < loads.size(); ++i) {
      Op *load = loads[i];
      Builder at(body, find(body, load));
      at.setLoc(load->loc);
      Value *view = load->result()->type.isRegister()
                        ? passes::readStagedVector(at, buffers[i], slot, *load)
                        : at.value(OpKind::StageView, {buffers[i], slot}, load->result()->type);
      view->nameHint = load->result()->nameHint;
      replaceAllUsesIn(body, load->result(), view);
      body.ops.erase(find(body, load));
    }

    // Record the depth for readers of the IR; the loop is not pipelined twice.
    loop_.attrs.erase("stages");
    loop_.attrs["pipelined"] = Attr(int64_t(stages));

    // Drain: nothing may still be writing shared memory after the loop.
    Builder after(outer, std::next(find(outer, &loop_)));
    after.setLoc(loop_.loc);
    after.create(OpKind::AsyncWait, {}, {}, {{"pending", Attr(int64_t(0))}});
    return true;
  }

private:
  /// The deepest ring of at most `asked` slots whose buffers fit the
  /// target's shared memory, no shallower than kMinStages; 0, after an
  /// error at the loop, where that many do not fit.
  int depthThatFits(const std::vector<Op *> &loads, int asked) {
    passes::PlannedRing ring{&loop_, {loads.begin(), loads.end()}, asked};
    int64_t limit = target_.sharedMemoryBytes;
    int64_t askedBytes = passes::plannedSharedPeak(kernel_, target_, &ring);
    if (askedBytes <= limit)
      return asked;
    int64_t bytes = askedBytes;
    for (int stages = asked - 1; stages >= kMinStages; --stages) {
      ring.stages = stages;
      bytes = passes::plannedSharedPeak(kernel_, target_, &ring);
      if (bytes <= limit) {
        diags_.report(loop_.loc, DiagId::PipelineStagesLowered, asked, stages, asked, askedBytes, limit);
        return stages;
      }
    }
    diags_.report(loop_.loc, DiagId::PipelineStagesDoNotFit, bytes, kMinStages, limit);
    return 0;
  }

  /// Shared-memory loads, and loads of vectors (passes::isStageableVector),
  /// directly in the body whose addresses depend only on the induction
  /// variable and values from outside the loop.
  std::vector<Op *> pipelinableLoads() {
    std::vector<Op *> loads;
    for (auto &op : loop_.body->ops) {
      if (op->kind != OpKind::Load || !(op->result()->type.isShared() || passes::isStageableVector(op->result()->type)))
        continue;
      bool ok = true;
      for (size_t i = 1; i < op->operands.size() && ok; ++i)
        ok = dependsOnlyOnInductionVariable(op->operands[i]);
      if (ok)
        loads.push_back(op.get());
    }
    return loads;
  }

  bool dependsOnlyOnInductionVariable(Value *v) {
    if (v == loop_.body->args[0].get())
      return true;
    if (v->ownerBlock == loop_.body.get())
      return false; // an iter_arg
    Op *def = v->definingOp;
    if (!def || def->parent != loop_.body.get())
      return true; // defined outside the loop
    if (!isPureScalarOp(*def))
      return false;
    for (Value *operand : def->operands)
      if (!dependsOnlyOnInductionVariable(operand))
        return false;
    return true;
  }

  void issueCopies(Builder &b, const std::vector<Op *> &loads, const std::vector<Value *> &buffers,
                   Value *k, Value *slot, Value *pred) {
    std::map<Value *, Value *> cloned;
    for (size_t i = 0; i < loads.size(); ++i) {
      Op *load = loads[i];
      std::vector<Value *> operands{buffers[i], slot, pred, load->operands[0]};
      for (size_t j = 1; j < load->operands.size(); ++j)
        operands.push_back(passes::cloneForIteration(b, loop_, load->operands[j], k, cloned));
      std::map<std::string, Attr> attrs;
      for (const char *name : {"sizes", "checked", "checked_low"})
        if (load->hasAttr(name))
          attrs[name] = load->attrs.at(name);
      b.setLoc(load->loc);
      b.create(OpKind::AsyncLoad, operands, {}, attrs);
    }
    b.create(OpKind::AsyncCommit, {}, {});
  }

  static OpIterator find(Block &block, Op *op) {
    for (auto it = block.ops.begin(); it != block.ops.end(); ++it)
      if (it->get() == op)
        return it;
    return block.ops.end();
  }

  Kernel &kernel_;
  Op &loop_;
  const Target &target_;
  DiagnosticEngine &diags_;
};

class PipelinePass : public Pass {
public:
  const char *name() const override { return "pipeline"; }
  const char *description() const override {
    return "turn shared-memory loads in pipelined loops into multi-stage asynchronous copies";
  }
  bool run(Module &module, const Target &target, DiagnosticEngine &diags) override {
    for (auto &kernel : module.kernels) {
      std::vector<Op *> loops;
      walk(kernel->body, [&](Op &op) {
        if (op.kind == OpKind::For && op.hasAttr("stages"))
          loops.push_back(&op);
      });
      for (Op *loop : loops)
        if (!LoopPipeliner(*kernel, *loop, target, diags).run())
          return false;
    }
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> createPipelinePass() { return std::make_unique<PipelinePass>(); }

} // namespace tkc
