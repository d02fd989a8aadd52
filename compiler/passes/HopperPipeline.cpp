// hopper-pipeline (sm_90a and newer; a no-op for older targets): turns a
// loop marked `hopper_stages = S` by hopper-layout into an mbarrier pipeline
// between a producer loop and a consumer loop.
//
// The operand tiles get S-slot #swizzle128 buffers; two arrays of S
// mbarriers track each slot: `full` (the bulk copies into the slot have
// landed) and `empty` (every consumer warp is done reading it). Iteration
// `it` of either loop uses slot it % S.
//
//   before                          after
//   for k {                         full, empty = smem_alloc #mbarrier; init; barrier
//     a = load A[..]                for k {role = "producer"}:  wait empty[it] released
//     b = load B[..]                    expect_tx full[it]; tma_load a_buf[it], b_buf[it]
//     acc = mma a, b, acc           for k {role = "consumer"}:  wait full[it]
//   }                                   wgmma_fence; acc = wgmma a_buf[it], b_buf[it], acc
//                                       wgmma_commit; wgmma_wait 1; arrive empty[it - 1]
//                                   wgmma_wait 0; arrive empty[last]
//
// That is the schedule of a loop with one accumulating product (a GEMM).
// A loop of several products with work between them (attention) keeps its
// body; each product there is waited for right after it is issued, except
// one that only feeds the next iteration (the output accumulator): it stays
// in flight until the next iteration first reads it, after issuing that
// iteration's first product, and the slot it read is released there. Tiles
// that the products read but that were loaded once before the loop
// (resident: the query tile) are copied by the producer first, on a
// barrier of their own (`once`), and the consumer waits for them once.
//
// The two loops only work when they run in different warps at once:
// warp-specialize places them. The iteration number is `k - lo + base`
// with `base` a constant 0 (named `it_base`) that warp-specialize replaces
// when it repeats the loops over several output tiles.
#include "passes/Pass.h"
#include "passes/PassUtils.h"

#include <algorithm>
#include <map>

namespace tkc {
namespace {

using namespace ir;

Type scalarI32() { return Type::scalar(DType::I32); }

class HopperPipeliner {
public:
  HopperPipeliner(Kernel &kernel, Op &loop) : kernel_(kernel), loop_(loop) {}

  void run() {
    stages_ = loop_.intAttr("hopper_stages");
    Block &body = *loop_.body;
    std::vector<Op *> mmas, streamed;
    for (auto &op : body.ops) {
      if (op->kind == OpKind::Mma)
        mmas.push_back(op.get());
      if (op->kind == OpKind::Load)
        streamed.push_back(op.get());
    }
    // Shared tiles loaded once before the loop for its products.
    std::vector<Op *> resident;
    for (Op *mma : mmas)
      for (Value *operand : {mma->operands[0], mma->operands[1]})
        if (Op *def = operand->definingOp; def && def->kind == OpKind::Load && def->parent != &body &&
                                            std::find(resident.begin(), resident.end(), def) == resident.end())
          resident.push_back(def);
    // One accumulating product and nothing else: keep a wgmma group in flight
    // across iterations. Otherwise each product completes before its result
    // is used, and the slot is released at the end of the iteration.
    Op &yield = *body.ops.back();
    bool chain = mmas.size() == 1 && resident.empty() && mmas[0]->operands[2] == body.args[1].get() &&
                 yield.operands.size() == 1 && yield.operands[0] == mmas[0]->result();
    int consumerWarps = mmas.front()->result()->type.layout.warpsM;

    Block &outer = *loop_.parent;
    Builder b(outer, passes::positionOf(loop_));
    b.setLoc(loop_.loc);
    std::vector<Value *> buffers;
    for (Op *load : streamed)
      buffers.push_back(staged(b, load, stages_, buffers.empty() ? "a_buf" : "b_buf"));
    std::vector<Value *> residentBuffers;
    for (Op *load : resident)
      residentBuffers.push_back(staged(b, load, 1, "once_buf"));
    Type barType = Type::tile(DType::I32, {stages_, 2}, MemSpace::Shared, {LayoutKind::Mbarrier, 1, 1});
    Value *full = b.value(OpKind::SmemAlloc, {}, barType);
    full->nameHint = "full";
    Value *empty = b.value(OpKind::SmemAlloc, {}, barType);
    empty->nameHint = "empty";
    Value *once = nullptr;
    if (!resident.empty()) {
      once = b.value(OpKind::SmemAlloc, {},
                     Type::tile(DType::I32, {1, 2}, MemSpace::Shared, {LayoutKind::Mbarrier, 1, 1}));
      once->nameHint = "once";
    }
    b.create(OpKind::MbarrierInit, {full}, {}, {{"count", Attr(int64_t(1))}});
    b.create(OpKind::MbarrierInit, {empty}, {}, {{"count", Attr(int64_t(consumerWarps))}});
    if (once)
      b.create(OpKind::MbarrierInit, {once}, {}, {{"count", Attr(int64_t(1))}});
    b.create(OpKind::Barrier, {}, {});
    Value *base = b.constInt(0);
    base->nameHint = "it_base";
    Value *lo = loop_.operands[0];
    Value *hi = loop_.operands[1];
    Value *step = loop_.operands[2];
    int64_t stageBytes = 0;
    for (Op *load : streamed)
      stageBytes += passes::sharedBufferBytes(load->result()->type);

    // Resident tiles: the producer copies them first, on their own barrier.
    if (once) {
      Value *zero = b.constInt(0);
      int64_t bytes = 0;
      for (Op *load : resident)
        bytes += passes::sharedBufferBytes(load->result()->type);
      b.create(OpKind::MbarrierExpectTx, {once, zero}, {}, {{"bytes", Attr(bytes)}, {"role", Attr(std::string("producer"))}});
      for (size_t i = 0; i < resident.size(); ++i) {
        std::vector<Value *> operands{residentBuffers[i], zero, once};
        operands.insert(operands.end(), resident[i]->operands.begin(), resident[i]->operands.end());
        b.setLoc(resident[i]->loc);
        b.create(OpKind::TmaLoad, operands, {},
                 {{"sizes", resident[i]->attrs.at("sizes")}, {"role", Attr(std::string("producer"))}});
      }
      b.setLoc(loop_.loc);
    }

    // The producer: a clone of the loop's address arithmetic and its loads.
    Op *producer = b.create(OpKind::For, {lo, hi, step}, {}, {{"role", Attr(std::string("producer"))}});
    producer->body = std::make_unique<Block>();
    producer->body->parentOp = producer;
    Value *pk = producer->body->addArg(scalarI32(), loop_.body->args[0]->nameHint);
    {
      Builder pb(*producer->body);
      pb.setLoc(loop_.loc);
      Value *it = iteration(pb, pk, lo, base);
      pb.create(OpKind::MbarrierWait, {empty, it}, {}, {{"release", Attr(int64_t(1))}});
      pb.create(OpKind::MbarrierExpectTx, {full, it}, {}, {{"bytes", Attr(stageBytes)}});
      std::map<Value *, Value *> cloned;
      for (size_t i = 0; i < streamed.size(); ++i) {
        Op *load = streamed[i];
        std::vector<Value *> operands{buffers[i], it, full, load->operands[0]};
        for (size_t j = 1; j < load->operands.size(); ++j)
          operands.push_back(passes::cloneForIteration(pb, loop_, load->operands[j], pk, cloned));
        std::map<std::string, Attr> attrs{{"sizes", load->attrs.at("sizes")}};
        pb.setLoc(load->loc);
        pb.create(OpKind::TmaLoad, operands, {}, attrs);
      }
      pb.create(OpKind::Yield, {}, {});
    }

    // The consumer: the original loop, reading the slots.
    if (once) {
      Builder wb(outer, passes::positionOf(loop_));
      wb.setLoc(loop_.loc);
      Value *zero = wb.constInt(0);
      wb.create(OpKind::MbarrierWait, {once, zero}, {}, {{"release", Attr(int64_t(0))}});
      for (size_t i = 0; i < resident.size(); ++i) {
        Value *view = wb.value(OpKind::StageView, {residentBuffers[i], zero}, resident[i]->result()->type);
        view->nameHint = resident[i]->result()->nameHint;
        replaceAllUsesIn(body, resident[i]->result(), view);
      }
    }
    loop_.attrs.erase("hopper_stages");
    loop_.attrs["role"] = Attr(std::string("consumer"));
    Value *ck = body.args[0].get();
    Builder cb(body, body.ops.begin());
    cb.setLoc(loop_.loc);
    Value *it = iteration(cb, ck, lo, base);
    cb.create(OpKind::MbarrierWait, {full, it}, {}, {{"release", Attr(int64_t(0))}});
    Value *slot = cb.value(OpKind::Rem, {it, cb.constInt(stages_)}, scalarI32());
    slot->nameHint = "slot";
    for (size_t i = 0; i < streamed.size(); ++i) {
      Value *view = cb.value(OpKind::StageView, {buffers[i], slot}, streamed[i]->result()->type);
      view->nameHint = streamed[i]->result()->nameHint;
      replaceAllUsesIn(body, streamed[i]->result(), view);
    }
    // A product that only feeds the next iteration (an accumulator) stays in
    // flight across the end of the iteration: it is waited for where the
    // next iteration first reads the accumulator, after that iteration's
    // first products have been issued, and its slot is released there.
    Value *deferredArg = nullptr, *deferredResult = nullptr;
    if (!chain)
      for (Op *mma : mmas)
        for (size_t i = 0; i < yield.operands.size(); ++i)
          if (yield.operands[i] == mma->result() && passes::countUses(body)[mma->result()] == 1 && !deferredArg) {
            deferredArg = body.args[1 + i].get();
            deferredResult = loop_.results[i].get();
          }
    for (Op *mma : mmas) {
      // mma -> fence, wgmma, commit, and a wait: for the previous group
      // (chain) or for this one.
      Builder at(body, passes::positionOf(*mma));
      at.setLoc(mma->loc);
      at.create(OpKind::WgmmaFence, {}, {});
      std::map<std::string, Attr> attrs;
      if (mma->hasAttr("trans_b"))
        attrs["trans_b"] = mma->attrs.at("trans_b");
      Value *next = at.value(OpKind::Wgmma, mma->operands, mma->result()->type, attrs);
      next->nameHint = mma->result()->nameHint;
      at.create(OpKind::WgmmaCommit, {}, {});
      if (chain) {
        at.create(OpKind::WgmmaWait, {}, {}, {{"pending", Attr(int64_t(1))}});
        Value *prev = at.value(OpKind::Sub, {it, at.constInt(1)}, scalarI32());
        Value *hasPrev = at.value(OpKind::Gt, {it, base}, Type::scalar(DType::I1));
        at.create(OpKind::MbarrierArrive, {empty, prev, hasPrev}, {});
      } else if (!isDeferred(yield, body, mma->result(), deferredArg)) {
        at.create(OpKind::WgmmaWait, {next}, {}, {{"pending", Attr(int64_t(0))}});
      }
      replaceAllUsesIn(body, mma->result(), next);
      passes::eraseOp(*mma);
    }
    if (deferredArg) {
      Op *firstUse = nullptr;
      for (auto &op : body.ops) {
        for (Value *operand : op->operands)
          if (operand == deferredArg)
            firstUse = op.get();
        if (firstUse)
          break;
      }
      Builder at(body, firstUse ? passes::positionOf(*firstUse) : std::prev(body.ops.end()));
      at.setLoc(loop_.loc);
      at.create(OpKind::WgmmaWait, {deferredArg}, {}, {{"pending", Attr(int64_t(0))}});
      Value *prev = at.value(OpKind::Sub, {it, at.constInt(1)}, scalarI32());
      Value *hasPrev = at.value(OpKind::Gt, {it, base}, Type::scalar(DType::I1));
      at.create(OpKind::MbarrierArrive, {empty, prev, hasPrev}, {});
    } else if (!chain) {
      Builder end(body, std::prev(body.ops.end()));
      end.setLoc(loop_.loc);
      Value *always = end.value(OpKind::Const, {}, Type::scalar(DType::I1), {{"value", Attr(int64_t(1))}});
      end.create(OpKind::MbarrierArrive, {empty, it, always}, {});
    }
    // Loads (and the scalar arithmetic only they used) leave the consumer.
    for (Op *load : streamed)
      passes::eraseOp(*load);
    for (Op *load : resident)
      passes::eraseOp(*load);
    removeDeadScalars(body);
    removeDeadScalars(outer);
    if (!chain && !deferredArg)
      return;

    // After the loop: the last group, then release the last slot.
    Builder after(outer, std::next(passes::positionOf(loop_)));
    after.setLoc(loop_.loc);
    after.create(OpKind::WgmmaWait, {chain ? loop_.result() : deferredResult}, {}, {{"pending", Attr(int64_t(0))}});
    Value *count = after.value(OpKind::Sub, {hi, lo}, scalarI32());
    Value *lastRel = after.value(OpKind::Sub, {count, after.constInt(1)}, scalarI32());
    Value *last = after.value(OpKind::Add, {lastRel, base}, scalarI32());
    last->nameHint = "it_last";
    Value *any = after.value(OpKind::Gt, {count, after.constInt(0)}, Type::scalar(DType::I1));
    after.create(OpKind::MbarrierArrive, {empty, last, any}, {});
  }

private:
  /// Whether `v` is the product left in flight: the one yielded for the
  /// loop-carried value `deferredArg`.
  static bool isDeferred(const Op &yield, const Block &body, const Value *v, const Value *deferredArg) {
    for (size_t i = 0; i < yield.operands.size(); ++i)
      if (yield.operands[i] == v)
        return deferredArg && body.args[1 + i].get() == deferredArg;
    return false;
  }

  Value *staged(Builder &b, Op *load, int64_t stages, const std::string &fallback) {
    Type t = load->result()->type;
    t.stages = static_cast<int>(stages);
    Value *buf = b.value(OpKind::SmemAlloc, {}, t);
    buf->nameHint = load->result()->nameHint.empty() ? fallback : load->result()->nameHint + "_buf";
    return buf;
  }

  Value *iteration(Builder &b, Value *k, Value *lo, Value *base) {
    Value *rel = b.value(OpKind::Sub, {k, lo}, scalarI32());
    Value *it = b.value(OpKind::Add, {rel, base}, scalarI32());
    it->nameHint = "it";
    return it;
  }

  static void removeDeadScalars(Block &body) {
    bool changed = true;
    while (changed) {
      changed = false;
      passes::UseCounts uses = passes::countUses(body);
      for (auto it = body.ops.begin(); it != body.ops.end();) {
        Op &op = **it;
        bool dead = op.results.size() == 1 && op.result()->type.isScalar() && !op.body && uses[op.result()] == 0;
        if (dead) {
          it = body.ops.erase(it);
          changed = true;
        } else {
          ++it;
        }
      }
    }
  }

  Kernel &kernel_;
  Op &loop_;
  int64_t stages_ = 2;
};

class HopperPipelinePass : public Pass {
public:
  const char *name() const override { return "hopper-pipeline"; }
  const char *description() const override {
    return "sm_90a: split a wgmma loop into a TMA producer and a wgmma consumer joined by mbarriers";
  }
  bool run(Module &module, const Target &target, DiagnosticEngine &diags) override {
    if (target.computeCapability < 90)
      return true;
    for (auto &kernel : module.kernels) {
      std::vector<Op *> loops;
      for (auto &op : kernel->body.ops)
        if (op->kind == OpKind::For && op->hasAttr("hopper_stages"))
          loops.push_back(op.get());
      for (Op *loop : loops)
        HopperPipeliner(*kernel, *loop).run();
    }
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> createHopperPipelinePass() { return std::make_unique<HopperPipelinePass>(); }

} // namespace tkc
