// hopper-reducer (sm_90a and newer; a no-op for older targets): gives a
// product that only feeds a bulk addition a warpgroup of its own, so that
// the consumers no longer wait for it.
//
// In the one-pass attention backward the consumers stage dS in shared
// memory for dQ's product (dS^T K, read transposed), wait for both
// warpgroups' halves, run the product split by columns, wait for it, stage
// dQ and add it to an f32 buffer with reducing bulk copies: a chain of
// waits inside every iteration that costs more than the product (on the
// H200, 2026-12-03, 45% of that kernel's time). Here the consumers only
// stage dS into its two slots and arrive on `staged_full`; a `reducer`
// warpgroup waits for each slot, runs the whole product from it, releases
// the slot on `staged_empty` and makes the additions, while the consumers
// go on with the next tile. On the H200 (2026-12-04) that kernel at D = 64
// ran 1.31-1.38x as fast from 2k, and 1.06-1.09x the two-kernel backward
// that recomputes S and dP for dQ.
//
//   consumer loop:                          consumer loop:
//     smem_store %view, %ds                   mbarrier_wait %staged_empty, %it {release = 1}
//     fence_proxy_async                       smem_store %view, %ds
//     warpgroup_barrier {all = 1}             fence_proxy_async
//     %p = wgmma %view, %k, %zero ...         mbarrier_arrive %staged_full, %it
//     ... tma_store %c_stage {reduce}       reducer loop:
//                                             mbarrier_wait %staged_full, %it
//                                             %p = wgmma %view, %k, %zero ...; wgmma_wait %p
//                                             mbarrier_arrive %staged_empty, %it
//                                             ... tma_store %c_stage {reduce}
//
// The reducer holds the whole product (one warpgroup, 64 rows) and gives
// the consumers the registers it does not need; the pass applies only where
// the consumers' loop still fits what is left (passes::kRegisterHeadroom to
// spare).
// The consumers' accumulating products are waited for at the end of each
// iteration: left in flight into the next, ptxas (CUDA 13.0) ran every
// product of the one-pass kernel one at a time (C7514).
#include "passes/Pass.h"
#include "passes/PassUtils.h"

#include <algorithm>

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
  Op *stageStore = nullptr;   ///< smem_store of the staged operand into its slot
  Op *stageFence = nullptr;   ///< the fence_proxy_async after it
  Op *crossBarrier = nullptr; ///< warpgroup_barrier {all = 1}: both halves staged
  Op *product = nullptr;      ///< wgmma reading the slot, transposed
  Op *addition = nullptr;     ///< tma_store {reduce = "add"} of the product
  Op *drain = nullptr;        ///< tma_store_wait after the loop
};

Op *roleMarker(Kernel &kernel, const std::string &role) {
  for (auto &op : kernel.body.ops)
    if (op->kind == OpKind::WarpgroupRole && op->strAttr("role") == role)
      return op.get();
  return nullptr;
}

/// The consumers' loop at the top level of the kernel (not a persistent
/// kernel's tile loop) and, in its body, the product that only a bulk
/// addition reads.
std::optional<Reduction> match(Kernel &kernel) {
  Reduction r;
  for (auto &op : kernel.body.ops)
    if (op->kind == OpKind::For && op->strAttr("role") == "consumer")
      r.loop = op.get();
  if (!r.loop || !passes::constantIntOf(r.loop->operands[2]) || *passes::constantIntOf(r.loop->operands[2]) != 1)
    return std::nullopt;
  Block &body = *r.loop->body;
  passes::UseCounts uses = passes::countUses(kernel.body);
  for (auto it = body.ops.begin(); it != body.ops.end(); ++it) {
    Op &op = **it;
    if (op.kind != OpKind::TmaStore || op.strAttr("reduce") != "add")
      continue;
    Value *staging = op.operands[0];
    // The staging tile holds the product: the smem_store before the store.
    Op *product = nullptr;
    for (auto back = std::make_reverse_iterator(it); back != body.ops.rend(); ++back)
      if ((*back)->kind == OpKind::SmemStore && (*back)->operands[0] == staging) {
        Value *p = (*back)->operands[1];
        product = p->definingOp && p->definingOp->kind == OpKind::Wgmma ? p->definingOp : nullptr;
        break;
      }
    if (!product || product->parent != &body || !product->intAttr("trans_a"))
      continue;
    // Read by its waits and the staging copy alone.
    int readers = 0;
    for (auto &other : body.ops)
      if (passes::reads(*other, product->result()) && other->kind != OpKind::WgmmaWait)
        ++readers;
    if (readers != 1 || uses[product->result()] != readers + 1)
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
    break;
  }
  if (!r.addition)
    return std::nullopt;
  for (auto it = std::next(passes::positionOf(*r.loop)); it != kernel.body.ops.end(); ++it)
    if ((*it)->kind == OpKind::TmaStoreWait) {
      r.drain = it->get();
      break;
    }
  if (!r.drain)
    return std::nullopt;
  return r;
}

/// Registers per thread the consumers' loop needs: the tiles it carries,
/// the products it computes afresh in each iteration (the moved one
/// excepted) and the operand fragments kept in registers across it.
int64_t consumerLoopRegisters(Kernel &kernel, const Reduction &r) {
  int64_t registers = passes::loopRegisters(*r.loop, r.product);
  for (auto &op : kernel.body.ops)
    if (op->kind == OpKind::Convert && op->result()->type.layout.kind == LayoutKind::OperandA &&
        passes::roleOf(kernel, *op) && passes::roleOf(kernel, *op)->strAttr("role") == "consumer")
      registers += passes::threadRegisters(op->result()->type);
  return registers;
}

class Reducer {
public:
  Reducer(Kernel &kernel, Reduction r, const Target &target) : kernel_(kernel), r_(r), target_(target) {}

  bool run() {
    Op *producer = roleMarker(kernel_, "producer");
    Op *consumer = roleMarker(kernel_, "consumer");
    bool initBarrier = std::any_of(kernel_.body.ops.begin(), kernel_.body.ops.end(),
                                   [](const std::unique_ptr<Op> &op) { return op->kind == OpKind::Barrier; });
    if (!producer || !consumer || roleMarker(kernel_, "reducer") || !initBarrier || !iterationOf(*r_.loop) ||
        !std::any_of(kernel_.body.ops.begin(), kernel_.body.ops.end(),
                     [](const std::unique_ptr<Op> &op) { return op->kind == OpKind::WarpgroupRoleEnd; }))
      return false;
    int64_t consumerThreads = 128 * consumer->intAttr("warpgroups", 1);
    const Type &acc = r_.product->result()->type;
    if (acc.shape[0] != 64)
      return false;
    Type whole = acc.withLayout(MemSpace::Register, {LayoutKind::Acc, 4, 1});
    int64_t reducerRegs = (passes::threadRegisters(whole) + kReducerOverhead + 7) / 8 * 8;
    int64_t left = target_.registersPerSm - 128 * producer->intAttr("warpgroups", 1) * producer->intAttr("regs") -
                   128 * reducerRegs;
    int64_t consumerRegs = std::min<int64_t>(consumer->intAttr("regs"), roundDownTo8(left / consumerThreads));
    if (consumerLoopRegisters(kernel_, r_) + passes::kRegisterHeadroom > consumerRegs)
      return false;

    Value *slots = passes::sharedRoot(r_.product->operands[0]);
    Value *staging = r_.addition->operands[0];
    hoistAllocation(slots);
    hoistAllocation(staging);
    Value *full, *empty;
    declareBarriers(consumerThreads, full, empty);
    rewriteConsumers(full, empty);
    buildReducer(reducerRegs, full, empty);
    consumer->attrs["regs"] = Attr(consumerRegs);
    kernel_.warps += 4;
    removeUnusedValues(*r_.loop->body);
    return true;
  }

private:
  /// The zero accumulator and the scalar arithmetic that only the moved
  /// product and addition used. (fold's dead-code sweep does not know the
  /// role and barrier ops of these kernels.)
  static void removeUnusedValues(Block &body) {
    auto pure = [](const Op &op) {
      switch (op.kind) {
      case OpKind::Fill: case OpKind::Const: case OpKind::BlockId: case OpKind::Add: case OpKind::Sub:
      case OpKind::Mul: case OpKind::Rem: case OpKind::StageView: case OpKind::Mask:
        return op.results.size() == 1;
      default:
        return false;
      }
    };
    for (bool changed = true; changed;) {
      changed = false;
      passes::UseCounts uses = passes::countUses(body);
      for (auto it = body.ops.begin(); it != body.ops.end();) {
        if (pure(**it) && uses[(*it)->result()] == 0) {
          it = body.ops.erase(it);
          changed = true;
        } else {
          ++it;
        }
      }
    }
  }

  /// An allocation both roles use goes before the first role.
  void hoistAllocation(Value *buffer) {
    Op *alloc = buffer->definingOp;
    Op *first = roleMarker(kernel_, "producer");
    auto from = passes::positionOf(*alloc);
    kernel_.body.ops.splice(passes::positionOf(*first), alloc->parent->ops, from);
    alloc->parent = &kernel_.body;
  }

  /// Two-slot barriers beside the others, initialised before the block's
  /// first barrier: `staged_full` counts every consumer thread (each
  /// arrives after its own part of the slot), `staged_empty` every
  /// reducer thread (each after the product has read the slot).
  void declareBarriers(int64_t consumerThreads, Value *&full, Value *&empty) {
    auto barrier = std::find_if(kernel_.body.ops.begin(), kernel_.body.ops.end(),
                                [](const std::unique_ptr<Op> &op) { return op->kind == OpKind::Barrier; });
    Builder b(kernel_.body, barrier);
    b.setLoc(r_.product->loc);
    Type bars = Type::tile(DType::I32, {2, 2}, MemSpace::Shared, {LayoutKind::Mbarrier, 1, 1});
    full = b.value(OpKind::SmemAlloc, {}, bars);
    full->nameHint = "staged_full";
    empty = b.value(OpKind::SmemAlloc, {}, bars);
    empty->nameHint = "staged_empty";
    b.create(OpKind::MbarrierInit, {full}, {}, {{"count", Attr(consumerThreads)}});
    b.create(OpKind::MbarrierInit, {empty}, {}, {{"count", Attr(int64_t(128))}});
  }

  /// The iteration number the loops share: `i - lo + it_base`.
  Value *iterationOf(Op &loop) {
    for (auto &op : loop.body->ops)
      if (op->kind == OpKind::Add && op->result()->nameHint.rfind("it", 0) == 0)
        return op->result();
    return nullptr;
  }

  void rewriteConsumers(Value *full, Value *empty) {
    Block &body = *r_.loop->body;
    Value *it = iterationOf(*r_.loop);
    Builder before(body, passes::positionOf(*r_.stageStore));
    before.setLoc(r_.stageStore->loc);
    before.create(OpKind::MbarrierWait, {empty, it}, {}, {{"release", Attr(int64_t(1))}});
    Builder after(body, std::next(passes::positionOf(*r_.stageFence)));
    after.setLoc(r_.stageStore->loc);
    Value *always = after.value(OpKind::Const, {}, Type::scalar(DType::I1), {{"value", Attr(int64_t(1))}});
    after.create(OpKind::MbarrierArrive, {full, it, always}, {}, {{"all_lanes", Attr(int64_t(1))}});
    // The product and its addition leave; the scalars they used stay for
    // the reducer to clone (dead code afterwards).
    auto stop = std::next(passes::positionOf(*r_.addition));
    for (auto op = passes::positionOf(*r_.crossBarrier); op != stop;) {
      Op &o = **op;
      if (o.results.size() == 1 && o.result()->type.isScalar()) {
        ++op;
        continue;
      }
      if (&o == r_.product) {
        productOperands_ = o.operands;
        productAttrs_ = o.attrs;
        productLoc_ = o.loc;
      }
      if (&o == r_.addition) {
        additionOperands_ = o.operands;
        additionAttrs_ = o.attrs;
        additionLoc_ = o.loc;
      }
      op = body.ops.erase(op);
    }
    // Each iteration's accumulating products retire before the next.
    Op &yield = *body.ops.back();
    std::vector<Value *> accumulators;
    for (Value *v : yield.operands)
      if (v->definingOp && v->definingOp->kind == OpKind::Wgmma)
        accumulators.push_back(v);
    if (!accumulators.empty()) {
      Builder end(body, std::prev(body.ops.end()));
      end.setLoc(r_.loop->loc);
      end.create(OpKind::WgmmaWait, accumulators, {}, {{"pending", Attr(int64_t(0))}});
    }
    // The additions' drain moves to the reducer.
    Op *drain = r_.drain;
    drainAttrs_ = drain->attrs;
    kernel_.body.ops.erase(passes::positionOf(*drain));
  }

  void buildReducer(int64_t regs, Value *full, Value *empty) {
    auto end = std::find_if(kernel_.body.ops.begin(), kernel_.body.ops.end(),
                            [](const std::unique_ptr<Op> &op) { return op->kind == OpKind::WarpgroupRoleEnd; });
    Builder b(kernel_.body, end);
    // (The product's op is gone: rewriteConsumers kept what it needs.)
    b.setLoc(productLoc_);
    b.create(OpKind::WarpgroupRole, {}, {},
             {{"role", Attr(std::string("reducer"))}, {"warpgroups", Attr(int64_t(1))}, {"regs", Attr(regs)}});
    // The resident operand: wait for its copy, view its slot.
    Value *resident = productOperands_[1];
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
    lb.setLoc(productLoc_);
    std::map<Value *, Value *> cloned = outer;
    auto local = [&](Value *v) {
      auto found = cloned.find(v);
      if (found != cloned.end())
        return found->second;
      return passes::cloneForIteration(lb, consumers, v, k, cloned);
    };
    Value *it = local(iterationOf(consumers));
    lb.create(OpKind::MbarrierWait, {full, it}, {}, {{"release", Attr(int64_t(0))}});
    Value *slot = local(productOperands_[0]);
    const Type &accType = productOperands_[2]->type;
    Type whole = accType.withLayout(MemSpace::Register, {LayoutKind::Acc, 4, 1});
    Value *zero = lb.value(OpKind::Fill, {}, whole, {{"value", Attr(0.0)}});
    lb.create(OpKind::WgmmaFence, {}, {});
    Value *product = lb.value(OpKind::Wgmma, {slot, local(resident), zero}, whole, productAttrs_);
    lb.create(OpKind::WgmmaCommit, {}, {});
    lb.create(OpKind::WgmmaWait, {product}, {}, {{"pending", Attr(int64_t(0))}});
    Value *always = lb.value(OpKind::Const, {}, Type::scalar(DType::I1), {{"value", Attr(int64_t(1))}});
    lb.create(OpKind::MbarrierArrive, {empty, it, always}, {}, {{"all_lanes", Attr(int64_t(1))}});
    // The addition, as hopper-epilogue wrote it, for the whole product.
    Value *staging = additionOperands_[0];
    lb.setLoc(additionLoc_);
    lb.create(OpKind::TmaStoreWait, {}, {}, {{"pending", Attr(int64_t(0))}, {"read", Attr(int64_t(1))}});
    lb.create(OpKind::WarpgroupBarrier, {}, {});
    lb.create(OpKind::SmemStore, {staging, product}, {});
    lb.create(OpKind::FenceProxyAsync, {}, {});
    lb.create(OpKind::WarpgroupBarrier, {}, {});
    std::vector<Value *> operands{staging, additionOperands_[1]};
    for (size_t i = 2; i < additionOperands_.size(); ++i)
      operands.push_back(local(additionOperands_[i]));
    // One warpgroup holds every column: its thread copies all the panels.
    std::map<std::string, Attr> attrs = additionAttrs_;
    attrs.erase("column_split");
    lb.create(OpKind::TmaStore, operands, {}, attrs);
    lb.create(OpKind::Yield, {}, {});
    b.setLoc(additionLoc_);
    b.create(OpKind::TmaStoreWait, {}, {}, drainAttrs_);
  }

  Kernel &kernel_;
  Reduction r_;
  const Target &target_;
  std::vector<Value *> productOperands_, additionOperands_;
  std::map<std::string, Attr> productAttrs_, additionAttrs_, drainAttrs_;
  SourceLocation productLoc_, additionLoc_;
};

class HopperReducerPass : public Pass {
public:
  const char *name() const override { return "hopper-reducer"; }
  const char *description() const override {
    return "sm_90a: run a product that only feeds a bulk addition in a warpgroup of its own";
  }
  bool run(Module &module, const Target &target, DiagnosticEngine &) override {
    if (target.computeCapability < 90)
      return true;
    for (auto &kernel : module.kernels)
      if (auto r = match(*kernel))
        Reducer(*kernel, *r, target).run();
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> createHopperReducerPass() { return std::make_unique<HopperReducerPass>(); }

} // namespace tkc
