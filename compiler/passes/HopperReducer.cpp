// hopper-reducer (sm_90a and newer; a no-op for older targets): gives a
// product that only feeds a bulk addition a warpgroup of its own, so that
// the consumers no longer wait for it.
//
// In the one-pass attention backward the consumers stage dS in shared
// memory for dQ's product (dS^T K, read transposed), wait for both
// warpgroups' halves, run the product split by columns, wait for it and
// add it to an f32 buffer (an `atomic_add` that hopper-epilogue turns into
// staged reducing bulk copies): a chain of waits inside every iteration
// that costs more than the product (on the H200, 2026-12-03, 45% of that
// kernel's time). Here the consumers only stage dS into its two slots and
// arrive on `staged_full`; a `reducer` warpgroup waits for each slot, runs
// the whole product from it, releases the slot on `staged_empty` and makes
// the addition, while the consumers go on with the next tile. On the H200
// (2026-12-04) that kernel at D = 64 ran 1.31-1.38x as fast from 2k, and
// 1.06-1.09x the two-kernel backward that recomputes S and dP for dQ.
//
//   consumer loop:                          consumer loop:
//     smem_store %view, %ds                   mbarrier_wait %staged_empty, %it {release = 1}
//     fence_proxy_async                       smem_store %view, %ds
//     warpgroup_barrier {all = 1}             fence_proxy_async
//     %p = wgmma %view, %k, %zero ...         mbarrier_arrive %staged_full, %it
//     wgmma_wait %p                         reducer loop:
//     store %dQacc, %p {accumulate,           mbarrier_wait %staged_full, %it
//                       epilogue = "tma"}     %p = wgmma %view, %k, %zero ...; wgmma_wait %p
//                                             mbarrier_arrive %staged_empty, %it
//                                             store %dQacc, %p {accumulate, epilogue = "tma"}
//
// It runs before hopper-epilogue, which stages the moved store in the
// reducer as it would in the consumers. The reducer holds the whole product
// (one warpgroup, 64 rows) and gives the consumers the registers it does
// not need; the pass applies only where the consumers' loop still fits what
// is left (passes::kRegisterHeadroom to spare), and only to a consumers'
// loop at the top of the kernel (not inside a persistent tile loop).
// The consumers' accumulating products are waited for at the end of each
// iteration: left in flight into the next, ptxas (CUDA 13.0) ran every
// product of the one-pass kernel one at a time (C7514).
#include "passes/Pass.h"
#include "passes/PassUtils.h"

#include <algorithm>
#include <map>
#include <optional>

namespace tkc {
namespace {

using namespace ir;

/// The reducer's registers beyond its accumulator: descriptors, addresses,
/// the staging tile's indices.
constexpr int64_t kReducerOverhead = 56;

int64_t roundDownTo8(int64_t n) { return n / 8 * 8; }

/// The product the pass moves and what goes with it.
struct Reduction {
  Op *loop = nullptr;         ///< the consumers' loop
  Value *iteration = nullptr; ///< its iteration number (hopper-pipeline's)
  Op *stageStore = nullptr;   ///< smem_store of the staged operand into its slot
  Op *stageFence = nullptr;   ///< the fence_proxy_async after it
  Op *crossBarrier = nullptr; ///< warpgroup_barrier {all = 1}: both halves staged
  Op *product = nullptr;      ///< wgmma reading the slot, transposed
  Op *addition = nullptr;     ///< store {accumulate, epilogue = "tma"} of the product
};

/// Where the reducer goes in the kernel: beside the producer and consumer
/// roles, its barriers initialised before the block's first barrier.
struct Anchors {
  Op *producer = nullptr;
  Op *consumer = nullptr;
  Op *firstBarrier = nullptr;
  Op *rolesEnd = nullptr; ///< warpgroup_role_end
};

std::optional<Anchors> anchorsOf(Kernel &kernel) {
  Anchors a;
  for (auto &op : kernel.body.ops) {
    if (op->kind == OpKind::WarpgroupRole) {
      const std::string &role = op->strAttr("role");
      if (role == "producer")
        a.producer = op.get();
      else if (role == "consumer")
        a.consumer = op.get();
      else
        return std::nullopt; // a reducer already, or roles this pass does not know
    }
    if (op->kind == OpKind::Barrier && !a.firstBarrier)
      a.firstBarrier = op.get();
    if (op->kind == OpKind::WarpgroupRoleEnd)
      a.rolesEnd = op.get();
  }
  if (!a.producer || !a.consumer || !a.firstBarrier || !a.rolesEnd)
    return std::nullopt;
  return a;
}

/// The consumers' loop at the top level of the kernel (not a persistent
/// kernel's tile loop) and, in its body, the product that only an
/// accumulating bulk store reads.
std::optional<Reduction> match(Kernel &kernel) {
  Reduction r;
  for (auto &op : kernel.body.ops)
    if (op->kind == OpKind::For && op->strAttr("role") == "consumer")
      r.loop = op.get();
  if (!r.loop || !passes::constantIntOf(r.loop->operands[2]) || *passes::constantIntOf(r.loop->operands[2]) != 1)
    return std::nullopt;
  r.iteration = passes::pipelineIteration(*r.loop);
  if (!r.iteration)
    return std::nullopt;
  Block &body = *r.loop->body;
  passes::UseCounts uses = passes::countUses(kernel.body);
  for (auto &candidate : body.ops) {
    Op &op = *candidate;
    if (op.kind != OpKind::Store || !op.hasAttr("accumulate") || op.strAttr("epilogue") != "tma")
      continue;
    Op *product = op.operands[1]->definingOp;
    if (!product || product->kind != OpKind::Wgmma || product->parent != &body || !product->intAttr("trans_a"))
      continue;
    // Read by the store and by waits for it alone.
    int waits = 0;
    bool others = false;
    for (auto &other : body.ops) {
      if (other.get() == &op || !passes::reads(*other, product->result()))
        continue;
      if (other->kind == OpKind::WgmmaWait && other->operands.size() == 1)
        ++waits;
      else
        others = true;
    }
    if (others || uses[product->result()] != waits + 1)
      continue;
    // A: a slot of a two-slot buffer the consumers wrote in this iteration;
    // B: a tile loaded once, before the loop.
    Value *view = product->operands[0];
    Op *viewOp = view->definingOp;
    Value *b = product->operands[1];
    if (!viewOp || viewOp->kind != OpKind::StageView || viewOp->parent != &body ||
        viewOp->operands[0]->type.stages != 2 || !b->definingOp || b->definingOp->parent != &kernel.body)
      continue;
    Op *fill = product->operands[2]->definingOp;
    if (!fill || fill->kind != OpKind::Fill || !passes::fillValueOf(product->operands[2]) ||
        !passes::attrIsZero(*passes::fillValueOf(product->operands[2])))
      continue;
    // The consumers' staging: smem_store, fence, the barrier across them.
    for (auto &other : body.ops)
      if (other->kind == OpKind::SmemStore && other->operands[0] == view)
        r.stageStore = other.get();
    if (!r.stageStore)
      continue;
    auto next = std::next(passes::positionOf(*r.stageStore));
    if (next == body.ops.end() || (*next)->kind != OpKind::FenceProxyAsync)
      continue;
    r.stageFence = next->get();
    ++next;
    if (next == body.ops.end() || (*next)->kind != OpKind::WarpgroupBarrier || !(*next)->intAttr("all"))
      continue;
    r.crossBarrier = next->get();
    r.product = product;
    r.addition = &op;
    return r;
  }
  return std::nullopt;
}

/// Registers per thread the consumers' loop needs: the tiles it carries,
/// the products it computes afresh in each iteration (the moved one
/// excepted) and the operand fragments kept in registers across it.
int64_t consumerLoopRegisters(Kernel &kernel, const Reduction &r, const Op &consumers) {
  int64_t registers = passes::loopRegisters(*r.loop, r.product);
  for (auto &op : kernel.body.ops)
    if (op->kind == OpKind::Convert && op->result()->type.layout.kind == LayoutKind::OperandA &&
        passes::roleOf(kernel, *op) == &consumers)
      registers += passes::threadRegisters(op->result()->type);
  return registers;
}

class Reducer {
public:
  Reducer(Kernel &kernel, Reduction r, Anchors a, const Target &target)
      : kernel_(kernel), r_(r), a_(a), target_(target) {}

  bool run() {
    int64_t consumerThreads = Target::kWarpgroupThreads * a_.consumer->intAttr("warpgroups", 1);
    int64_t producerRegisters =
        Target::kWarpgroupThreads * a_.producer->intAttr("warpgroups", 1) * a_.producer->intAttr("regs");
    // A block that shares the multiprocessor with another keeps its
    // registers: the reducer would take the second block's.
    if (2 * (producerRegisters + consumerThreads * a_.consumer->intAttr("regs")) <= target_.registersPerSm)
      return false;
    const Type &acc = r_.product->result()->type;
    if (acc.shape[0] != 64)
      return false;
    // The reducer's one warpgroup holds all of the product's columns.
    whole_ = acc.withLayout(MemSpace::Register, {LayoutKind::Acc, 4, 1});
    int64_t reducerRegs = (passes::threadRegisters(whole_) + kReducerOverhead + 7) / 8 * 8;
    int64_t left = target_.registersPerSm - producerRegisters - Target::kWarpgroupThreads * reducerRegs;
    int64_t consumerRegs = std::min<int64_t>(a_.consumer->intAttr("regs"), roundDownTo8(left / consumerThreads));
    if (consumerLoopRegisters(kernel_, r_, *a_.consumer) + passes::kRegisterHeadroom > consumerRegs)
      return false;

    hoistAllocation(passes::sharedRoot(r_.product->operands[0]));
    Value *full, *empty;
    declareBarriers(consumerThreads, full, empty);
    rewriteConsumers(full, empty);
    buildReducer(reducerRegs, full, empty);
    a_.consumer->attrs["regs"] = Attr(consumerRegs);
    kernel_.warps += 4;
    // The zero accumulator and the scalar arithmetic that only the moved
    // product and addition used.
    passes::eliminateDeadCode(*r_.loop->body);
    return true;
  }

private:
  /// An allocation both roles use goes before the first role.
  void hoistAllocation(Value *buffer) {
    Op *alloc = buffer->definingOp;
    auto from = passes::positionOf(*alloc);
    kernel_.body.ops.splice(passes::positionOf(*a_.producer), alloc->parent->ops, from);
    alloc->parent = &kernel_.body;
  }

  /// Two-slot barriers beside the others, initialised before the block's
  /// first barrier: `staged_full` counts every consumer thread (each
  /// arrives after its own part of the slot), `staged_empty` every
  /// reducer thread (each after the product has read the slot).
  void declareBarriers(int64_t consumerThreads, Value *&full, Value *&empty) {
    Builder b(kernel_.body, passes::positionOf(*a_.firstBarrier));
    b.setLoc(r_.product->loc);
    Type bars = Type::tile(DType::I32, {2, 2}, MemSpace::Shared, {LayoutKind::Mbarrier, 1, 1});
    full = b.value(OpKind::SmemAlloc, {}, bars);
    full->nameHint = "staged_full";
    empty = b.value(OpKind::SmemAlloc, {}, bars);
    empty->nameHint = "staged_empty";
    b.create(OpKind::MbarrierInit, {full}, {}, {{"count", Attr(consumerThreads)}});
    b.create(OpKind::MbarrierInit, {empty}, {}, {{"count", Attr(int64_t(128))}});
  }

  void rewriteConsumers(Value *full, Value *empty) {
    Block &body = *r_.loop->body;
    Builder before(body, passes::positionOf(*r_.stageStore));
    before.setLoc(r_.stageStore->loc);
    before.create(OpKind::MbarrierWait, {empty, r_.iteration}, {}, {{"release", Attr(int64_t(1))}});
    Builder after(body, std::next(passes::positionOf(*r_.stageFence)));
    after.setLoc(r_.stageStore->loc);
    Value *always = after.value(OpKind::Const, {}, Type::scalar(DType::I1), {{"value", Attr(int64_t(1))}});
    after.create(OpKind::MbarrierArrive, {full, r_.iteration, always}, {}, {{"all_lanes", Attr(int64_t(1))}});
    // The product (with its fence and commit, and the waits for it alone)
    // and its addition leave, as does the barrier across the consumers
    // that only the product needed; the reducer remakes them from what is
    // kept here. Work the consumers issued among them (another product)
    // stays, and so do the scalars they used, for the reducer to clone
    // (dead code afterwards).
    product_ = Moved{r_.product->operands, r_.product->attrs, r_.product->loc};
    addition_ = Moved{r_.addition->operands, r_.addition->attrs, r_.addition->loc};
    auto productAt = passes::positionOf(*r_.product);
    std::vector<Op *> leaving{r_.crossBarrier, r_.product, r_.addition};
    if (productAt != body.ops.begin() && (*std::prev(productAt))->kind == OpKind::WgmmaFence)
      leaving.push_back(std::prev(productAt)->get());
    if (std::next(productAt) != body.ops.end() && (*std::next(productAt))->kind == OpKind::WgmmaCommit)
      leaving.push_back(std::next(productAt)->get());
    for (auto &op : body.ops)
      if (op->kind == OpKind::WgmmaWait && op->operands.size() == 1 && op->operands[0] == r_.product->result())
        leaving.push_back(op.get());
    for (Op *op : leaving)
      body.ops.erase(passes::positionOf(*op));
    r_.product = r_.addition = nullptr;
  }

  void buildReducer(int64_t regs, Value *full, Value *empty) {
    Builder b(kernel_.body, passes::positionOf(*a_.rolesEnd));
    b.setLoc(product_.loc);
    b.create(OpKind::WarpgroupRole, {}, {},
             {{"role", Attr(std::string("reducer"))}, {"warpgroups", Attr(int64_t(1))}, {"regs", Attr(regs)}});
    // The resident operand: wait for its copy, view its slot.
    Value *resident = product_.operands[1];
    Op *residentView = resident->definingOp;
    std::map<Value *, Value *> outer;
    if (residentView->kind == OpKind::StageView) {
      // The consumers wait for its copy (the `once` barrier) just before.
      // (Constants of the consumers' region are made again: each role's
      // region has its own.)
      std::map<Value *, Value *> remade;
      auto own = [&](Value *v) {
        Op *def = v->definingOp;
        if (!def || def->kind != OpKind::Const || def->parent != &kernel_.body)
          return v;
        Value *&copy = remade[v];
        if (!copy)
          copy = b.value(OpKind::Const, {}, v->type, def->attrs);
        return copy;
      };
      for (auto at = std::make_reverse_iterator(passes::positionOf(*residentView)); at != kernel_.body.ops.rend(); ++at)
        if ((*at)->kind == OpKind::MbarrierWait) {
          std::vector<Value *> operands;
          for (Value *v : (*at)->operands)
            operands.push_back(own(v));
          b.create(OpKind::MbarrierWait, operands, {}, (*at)->attrs);
          break;
        }
      std::vector<Value *> viewOperands;
      for (Value *v : residentView->operands)
        viewOperands.push_back(own(v));
      Value *view = b.value(OpKind::StageView, viewOperands, resident->type, residentView->attrs);
      view->nameHint = resident->nameHint;
      outer[resident] = view;
    }
    Op &consumers = *r_.loop;
    Op *loop = b.create(OpKind::For, {consumers.operands[0], consumers.operands[1], consumers.operands[2]}, {},
                        {{"role", Attr(std::string("reducer"))}});
    loop->body = std::make_unique<Block>();
    loop->body->parentOp = loop;
    Value *k = loop->body->addArg(Type::scalar(DType::I32), consumers.body->args[0]->nameHint);
    Builder lb(*loop->body);
    lb.setLoc(product_.loc);
    std::map<Value *, Value *> cloned = outer;
    auto local = [&](Value *v) {
      auto found = cloned.find(v);
      if (found != cloned.end())
        return found->second;
      return passes::cloneForIteration(lb, consumers, v, k, cloned);
    };
    Value *it = local(r_.iteration);
    lb.create(OpKind::MbarrierWait, {full, it}, {}, {{"release", Attr(int64_t(0))}});
    Value *slot = local(product_.operands[0]);
    Value *zero = lb.value(OpKind::Fill, {}, whole_, {{"value", Attr(0.0)}});
    lb.create(OpKind::WgmmaFence, {}, {});
    Value *product = lb.value(OpKind::Wgmma, {slot, local(resident), zero}, whole_, product_.attrs);
    lb.create(OpKind::WgmmaCommit, {}, {});
    lb.create(OpKind::WgmmaWait, {product}, {}, {{"pending", Attr(int64_t(0))}});
    Value *always = lb.value(OpKind::Const, {}, Type::scalar(DType::I1), {{"value", Attr(int64_t(1))}});
    lb.create(OpKind::MbarrierArrive, {empty, it, always}, {}, {{"all_lanes", Attr(int64_t(1))}});
    // The addition, of the whole product.
    lb.setLoc(addition_.loc);
    std::vector<Value *> operands{addition_.operands[0], product};
    for (size_t i = 2; i < addition_.operands.size(); ++i)
      operands.push_back(local(addition_.operands[i]));
    lb.create(OpKind::Store, operands, {}, addition_.attrs);
    lb.create(OpKind::Yield, {}, {});
  }

  /// What the reducer needs of an op that left the consumers.
  struct Moved {
    std::vector<Value *> operands;
    std::map<std::string, Attr> attrs;
    SourceLocation loc;
  };

  Kernel &kernel_;
  Reduction r_;
  Anchors a_;
  const Target &target_;
  Moved product_, addition_;
  Type whole_; ///< the moved product's type in the reducer
};

class HopperReducerPass : public Pass {
public:
  const char *name() const override { return "hopper-reducer"; }
  const char *description() const override {
    return "sm_90a: run a product that only feeds a bulk addition in a warpgroup of its own";
  }
  bool run(Module &module, const Target &target, DiagnosticEngine &) override {
    if (!target.hasRegisterReallocation())
      return true;
    for (auto &kernel : module.kernels) {
      auto anchors = anchorsOf(*kernel);
      auto r = anchors ? match(*kernel) : std::nullopt;
      if (r)
        Reducer(*kernel, *r, *anchors, target).run();
    }
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> createHopperReducerPass() { return std::make_unique<HopperReducerPass>(); }

} // namespace tkc
