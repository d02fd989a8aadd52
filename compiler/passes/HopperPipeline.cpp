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
// That is the schedule of a loop with one accumulating product (a GEMM), and
// of several independent ones (each on its own accumulator): all of an
// iteration's products go out after one fence as one group, which one wait
// retires before the slot they read is released.
// A loop of several products with work between them (attention) keeps its
// body, with each product that reads shared memory only moved up to just
// after what it reads (issueEarly; one that reads A from registers stays
// where the source puts it) and waited for right before its result is
// first read, except products that only feed the next iteration
// (accumulators): they stay in flight
// until the next iteration first reads one of them, after issuing that
// iteration's first products, and the slot they read is released there.
// Unless a product is rotated (below), each streamed tile has a `full`
// barrier of its own, waited for right before the tile is first read. With
// exactly two products (scores, then the accumulator), the accumulator's
// product moves one iteration later, behind the next scores, so that the
// softmax between them overlaps it (rotateDeferred, in HopperRotation.cpp).
// The tiles only that late product reads may have a ring of their own, one
// slot deeper (`hopper_slots`, from hopper-layout): then each tile has its own slots
// and `empty` barriers, the other tiles' slots are released as soon as the
// product that reads them is done, and one `full` barrier per iteration,
// as deep as the deepest ring, tracks all the copies (a late tile lands an
// iteration before its product reads it). Tiles
// that the products read but that were loaded once before the loop
// (resident: the query tile) are copied by the producer first, on a
// barrier of their own (`once`), and the consumer waits for them once.
// Vectors that such a loop loads into registers (attention backward's
// per-query L and Delta) go through S-slot shared buffers too: the
// producer warp copies them (`warp_copy`, cp.async; each lane arrives on
// the first tile's `full` barrier once its part has landed), the consumer
// reads its values right after waiting for that tile, and each of its
// lanes releases the slot after its own reads (collectVectors).
//
// The two loops only work when they run in different warps at once:
// warp-specialize places them. The iteration number is `k - lo + base`
// with `base` a constant 0 (named `it_base`) that warp-specialize replaces
// when it repeats the loops over several output tiles.
#include "passes/HopperRotation.h"
#include "passes/Pass.h"
#include "passes/PassUtils.h"

#include <algorithm>
#include <map>

namespace tkc {
namespace {

using namespace ir;

/// The lanes of a warp: those of the producer warp that copies vectors
/// each arrive on the slot's barrier for their part of a copy, and where a
/// slot holds vectors each consumer lane releases it.
constexpr int64_t kWarpLanes = 32;

Type scalarI32() { return Type::scalar(DType::I32); }

class HopperPipeliner {
public:
  explicit HopperPipeliner(Op &loop) : loop_(loop) {}

  void run() {
    stages_ = loop_.intAttr("hopper_stages");
    lo_ = loop_.operands[0];
    hi_ = loop_.operands[1];
    collectOperands();
    // Accumulating products and nothing else (a GEMM, or several sharing
    // the loop, such as a gated MLP's gate and up projections): keep one
    // wgmma group in flight across iterations. Otherwise each product
    // completes before its result is used (or, if it only feeds the next
    // iteration, before that reads it).
    bool chain = resident_.empty() && accumulatesOnly();
    if (!chain)
      collectVectors();
    for (Op *load : streamed_) {
      slots_.push_back(load->intAttr("hopper_slots", stages_));
      late_.push_back(load->hasAttr("hopper_slots"));
    }
    rings_ = !chain && vectors_.empty() && std::find(late_.begin(), late_.end(), true) != late_.end();
    // In a loop of several products each issued in its iteration (the
    // attention backward's), each tile gets a barrier of its own, so that a
    // product waits only for its operands: dP^T for dO, not S^T. A GEMM step
    // reads all its tiles at once; in the attention forward the values are
    // read by the product issued an iteration late, where their wait cost
    // more than the first iteration gained (1-3% on the H200).
    buildProducer(/*barrierPerTile=*/!chain && !rotatesDeferred());
    readSlotsInConsumer();
    if (chain) {
      scheduleChain();
      dropLoads();
      std::vector<Value *> results;
      for (auto &result : loop_.results)
        results.push_back(result.get());
      releaseAfterLoop(results, std::next(passes::positionOf(loop_)));
      return;
    }
    scheduleProducts();
  }

  /// Whether the loop only accumulates: its body holds the tiles' loads,
  /// scalar arithmetic and products, each product adds to a carried value
  /// of its own and yields its result there, and the yield passes nothing
  /// else (hopper-layout's GEMM loops). Nothing but the yield then reads a
  /// product, so that the products may be issued together.
  bool accumulatesOnly() const {
    Block &body = *loop_.body;
    Op &yield = *body.ops.back();
    if (mmas_.empty() || yield.operands.size() != mmas_.size())
      return false;
    for (auto &op : body.ops) {
      bool scalar = !op->body && op->results.size() == 1 && op->result()->type.isScalar();
      bool sharedLoad = op->kind == OpKind::Load && op->result()->type.isShared();
      if (!scalar && !sharedLoad && op->kind != OpKind::Mma && op.get() != &yield)
        return false;
    }
    for (Op *mma : mmas_) {
      auto slot = std::find(yield.operands.begin(), yield.operands.end(), mma->result());
      if (slot == yield.operands.end() || mma->operands[2] != body.args[1 + (slot - yield.operands.begin())].get())
        return false;
    }
    return true;
  }

private:
  /// The loop's products, the shared tiles it loads (streamed), and those
  /// its products read that were loaded once before it (resident).
  void collectOperands() {
    Block &body = *loop_.body;
    for (auto &op : body.ops) {
      if (op->kind == OpKind::Mma)
        mmas_.push_back(op.get());
      if (op->kind == OpKind::Load && op->result()->type.isShared())
        streamed_.push_back(op.get());
    }
    for (Op *mma : mmas_)
      for (Value *operand : {mma->operands[0], mma->operands[1]})
        if (Op *def = operand->definingOp; def && def->kind == OpKind::Load && def->parent != &body &&
                                            std::find(resident_.begin(), resident_.end(), def) == resident_.end())
          resident_.push_back(def);
    // (A product split by columns between the warpgroups spreads over all
    // of them too.)
    const Layout &grid = mmas_.front()->result()->type.layout;
    consumerWarps_ = grid.warpsM * grid.warpsN;
  }

  /// Slot buffers and barriers before the loop, the resident tiles' copies,
  /// and the producer loop: a clone of the loop's address arithmetic and
  /// its loads, as bulk copies into the slots.
  void buildProducer(bool barrierPerTile) {
    Block &outer = *loop_.parent;
    Builder b(outer, passes::positionOf(loop_));
    b.setLoc(loop_.loc);
    for (size_t i = 0; i < streamed_.size(); ++i)
      buffers_.push_back(staged(b, streamed_[i], slotsOf(i), buffers_.empty() ? "a_buf" : "b_buf"));
    for (Op *load : resident_)
      residentBuffers_.push_back(staged(b, load, 1, "once_buf"));
    auto barriers = [&](int64_t slots) {
      return Type::tile(DType::I32, {slots, 2}, MemSpace::Shared, {LayoutKind::Mbarrier, 1, 1});
    };
    for (Op *load : vectors_)
      vectorBuffers_.push_back(passes::stagedVectorBuffer(b, *load, stages_));
    // One `full` barrier for the tiles of an iteration counts as many
    // iterations as the deepest ring: a tile in a shallower ring has been
    // read and its slot released before its iteration's barrier is reused.
    int64_t deepest = *std::max_element(slots_.begin(), slots_.end());
    for (size_t i = 0; i < (barrierPerTile ? streamed_.size() : 1); ++i) {
      Value *full = b.value(OpKind::SmemAlloc, {}, barriers(barrierPerTile ? slotsOf(i) : deepest));
      full->nameHint = barrierPerTile ? streamed_[i]->result()->nameHint + "_full" : "full";
      fulls_.push_back(full);
    }
    for (size_t i = 0; i < (rings_ ? streamed_.size() : 1); ++i) {
      Value *empty = b.value(OpKind::SmemAlloc, {}, barriers(slotsOf(i)));
      empty->nameHint = rings_ ? streamed_[i]->result()->nameHint + "_empty" : "empty";
      empties_.push_back(empty);
    }
    if (!resident_.empty()) {
      once_ = b.value(OpKind::SmemAlloc, {},
                      Type::tile(DType::I32, {1, 2}, MemSpace::Shared, {LayoutKind::Mbarrier, 1, 1}));
      once_->nameHint = "once";
    }
    // The first tile's barrier also counts an arrival of each lane of the
    // producer warp per vector copy (warp_copy).
    for (Value *full : fulls_) {
      int64_t count = 1 + (full == fulls_[0] ? kWarpLanes * static_cast<int64_t>(vectors_.size()) : 0);
      b.create(OpKind::MbarrierInit, {full}, {}, {{"count", Attr(count)}});
    }
    // Consumers release a slot one arrival per warp, or per lane where each
    // lane reads vectors from it itself (releaseSlot).
    int64_t releasers = consumerWarps_ * (vectors_.empty() ? 1 : kWarpLanes);
    for (Value *empty : empties_)
      b.create(OpKind::MbarrierInit, {empty}, {}, {{"count", Attr(releasers)}});
    if (once_)
      b.create(OpKind::MbarrierInit, {once_}, {}, {{"count", Attr(int64_t(1))}});
    b.create(OpKind::Barrier, {}, {});
    base_ = b.constInt(0);
    base_->nameHint = "it_base";

    // Resident tiles: the producer copies them first, on their own barrier.
    if (once_) {
      Value *zero = b.constInt(0);
      int64_t bytes = 0;
      for (Op *load : resident_)
        bytes += passes::sharedBufferBytes(load->result()->type);
      b.create(OpKind::MbarrierExpectTx, {once_, zero}, {},
               {{"bytes", Attr(bytes)}, {"role", Attr(std::string("producer"))}});
      for (size_t i = 0; i < resident_.size(); ++i) {
        std::vector<Value *> operands{residentBuffers_[i], zero, once_};
        operands.insert(operands.end(), resident_[i]->operands.begin(), resident_[i]->operands.end());
        b.setLoc(resident_[i]->loc);
        b.create(OpKind::TmaLoad, operands, {},
                 {{"sizes", resident_[i]->attrs.at("sizes")}, {"role", Attr(std::string("producer"))}});
      }
      b.setLoc(loop_.loc);
    }

    Op *producer = b.create(OpKind::For, {lo_, hi_, loop_.operands[2]}, {}, {{"role", Attr(std::string("producer"))}});
    producer->body = std::make_unique<Block>();
    producer->body->parentOp = producer;
    Value *pk = producer->body->addArg(scalarI32(), loop_.body->args[0]->nameHint);
    Builder pb(*producer->body);
    pb.setLoc(loop_.loc);
    Value *it = iteration(pb, pk);
    if (!rings_)
      pb.create(OpKind::MbarrierWait, {empties_[0], it}, {}, {{"release", Attr(int64_t(1))}});
    // Each barrier expects the bytes of the tiles it tracks.
    std::vector<int64_t> expected(fulls_.size(), 0);
    for (size_t i = 0; i < streamed_.size(); ++i)
      expected[fullIndex(i)] += passes::sharedBufferBytes(streamed_[i]->result()->type);
    // The vectors ride on the first tile's barrier: each lane of the copying
    // warp arrives on it once its part of a copy has landed.
    std::map<Value *, Value *> cloned;
    for (size_t i = 0; i < vectors_.size(); ++i) {
      Op *load = vectors_[i];
      std::vector<Value *> operands{vectorBuffers_[i], it, fulls_[0], load->operands[0]};
      for (size_t j = 1; j < load->operands.size(); ++j)
        operands.push_back(passes::cloneForIteration(pb, loop_, load->operands[j], pk, cloned));
      pb.setLoc(load->loc);
      pb.create(OpKind::WarpCopy, operands, {}, load->attrs);
    }
    for (size_t i = 0; i < streamed_.size(); ++i) {
      Op *load = streamed_[i];
      if (rings_)
        pb.create(OpKind::MbarrierWait, {empties_[i], it}, {}, {{"release", Attr(int64_t(1))}});
      if (fulls_.size() > 1 || i == 0)
        pb.create(OpKind::MbarrierExpectTx, {fulls_[fullIndex(i)], it}, {}, {{"bytes", Attr(expected[fullIndex(i)])}});
      std::vector<Value *> operands{buffers_[i], it, fulls_[fullIndex(i)], load->operands[0]};
      for (size_t j = 1; j < load->operands.size(); ++j)
        operands.push_back(passes::cloneForIteration(pb, loop_, load->operands[j], pk, cloned));
      std::map<std::string, Attr> attrs{{"sizes", load->attrs.at("sizes")}};
      pb.setLoc(load->loc);
      pb.create(OpKind::TmaLoad, operands, {}, attrs);
    }
    pb.create(OpKind::Yield, {}, {});
  }

  /// Vectors loaded into registers in the loop (attention backward's
  /// per-query L and Delta, one value per column of an accumulator) go
  /// through shared slots instead: the producer warp copies them with the
  /// tiles, bounds checks and zero fill included, and each consumer thread
  /// reads the few values its columns need. In registers, each thread loaded
  /// and bounds-checked every value itself: on the H200 those loads were
  /// about a third of the dK/dV loop's instructions at D = 64.
  void collectVectors() {
    for (auto &op : loop_.body->ops) {
      if (op->kind == OpKind::Load && passes::isStageableVector(op->result()->type) &&
          !passes::dependsOnCarried(loop_, op->result()))
        vectors_.push_back(op.get());
    }
  }

  /// The barrier of streamed tile i.
  size_t fullIndex(size_t i) const { return fulls_.size() > 1 ? i : 0; }

  /// The slots of streamed tile i's ring: the loop's stages, or the
  /// `hopper_slots` hopper-layout gave a tile that stays taken longer.
  int64_t slotsOf(size_t i) const { return slots_[i]; }

  /// Whether streamed tile i is read only by the product issued an
  /// iteration late (with rings, released after it; see releaseTiles).
  bool readLate(size_t i) const { return late_[i]; }

  /// The consumers' release of slot `it` (if `pred`). Where the slot holds
  /// vectors, which every lane reads itself, every lane arrives
  /// (`all_lanes`), each after its own reads.
  void releaseSlot(Builder &b, Value *it, Value *pred, Value *empty) {
    std::map<std::string, Attr> attrs;
    if (!vectors_.empty())
      attrs["all_lanes"] = Attr(int64_t(1));
    b.create(OpKind::MbarrierArrive, {empty, it, pred}, {}, attrs);
  }

  /// Releases slot `it` of the tiles that a deferred product reads: with a
  /// ring per tile only the late tiles' rings (the others were released
  /// after their products, releaseEarlyTiles), else the one shared slot.
  void releaseTiles(Builder &b, Value *it, Value *pred) {
    if (!rings_) {
      releaseSlot(b, it, pred, empties_[0]);
      return;
    }
    for (size_t i = 0; i < streamed_.size(); ++i)
      if (readLate(i))
        releaseSlot(b, it, pred, empties_[i]);
  }

  /// With a ring per tile, a tile that a product waited for within the
  /// iteration reads is released right after that wait, before the work
  /// that follows it.
  void releaseEarlyTiles(const std::vector<Value *> &issued) {
    Block &body = *loop_.body;
    for (size_t i = 0; i < streamed_.size(); ++i) {
      if (readLate(i))
        continue;
      auto reader = std::find_if(issued.begin(), issued.end(),
                                 [&](Value *product) { return passes::reads(*product->definingOp, views_[i]); });
      if (reader == issued.end())
        continue;
      auto wait = std::find_if(body.ops.begin(), body.ops.end(), [&](const std::unique_ptr<Op> &op) {
        return op->kind == OpKind::WgmmaWait && passes::reads(*op, *reader);
      });
      Builder at(body, wait == body.ops.end() ? std::prev(body.ops.end()) : std::next(wait));
      at.setLoc(loop_.loc);
      Value *always = at.value(OpKind::Const, {}, Type::scalar(DType::I1), {{"value", Attr(int64_t(1))}});
      releaseSlot(at, it_, always, empties_[i]);
    }
  }

  /// The consumer is the original loop: it waits for the resident tiles
  /// once, and in each iteration for its slot, and reads the tiles there
  /// (at the top of the body; with a barrier per tile, sinkTileWaits later
  /// moves each wait down to the tile's first reader).
  void readSlotsInConsumer() {
    Block &body = *loop_.body;
    if (once_) {
      Builder wb(*loop_.parent, passes::positionOf(loop_));
      wb.setLoc(loop_.loc);
      Value *zero = wb.constInt(0);
      wb.create(OpKind::MbarrierWait, {once_, zero}, {}, {{"release", Attr(int64_t(0))}});
      for (size_t i = 0; i < resident_.size(); ++i) {
        Value *view = wb.value(OpKind::StageView, {residentBuffers_[i], zero}, resident_[i]->result()->type);
        view->nameHint = resident_[i]->result()->nameHint;
        replaceAllUsesIn(body, resident_[i]->result(), view);
      }
    }
    loop_.attrs.erase("hopper_stages");
    loop_.attrs["role"] = Attr(std::string("consumer"));
    Builder cb(body, body.ops.begin());
    cb.setLoc(loop_.loc);
    it_ = iteration(cb, body.args[0].get());
    if (fulls_.size() == 1)
      cb.create(OpKind::MbarrierWait, {fulls_[0], it_}, {}, {{"release", Attr(int64_t(0))}});
    // Slot it % S of each ring (one value per ring size).
    std::map<int64_t, Value *> slots;
    auto slotOf = [&](int64_t ring) {
      Value *&slot = slots[ring];
      if (!slot) {
        slot = cb.value(OpKind::Rem, {it_, cb.constInt(ring)}, scalarI32());
        slot->nameHint = "slot";
      }
      return slot;
    };
    Value *slot = slotOf(stages_);
    for (size_t i = 0; i < streamed_.size(); ++i) {
      if (fulls_.size() > 1)
        tileWaits_.push_back(cb.create(OpKind::MbarrierWait, {fulls_[i], it_}, {}, {{"release", Attr(int64_t(0))}}));
      Value *view = cb.value(OpKind::StageView, {buffers_[i], slotOf(slotsOf(i))}, streamed_[i]->result()->type);
      view->nameHint = streamed_[i]->result()->nameHint;
      replaceAllUsesIn(body, streamed_[i]->result(), view);
      views_.push_back(view);
    }
    for (size_t i = 0; i < vectors_.size(); ++i) {
      Op *load = vectors_[i];
      Builder at(body, passes::positionOf(*load));
      at.setLoc(load->loc);
      Value *read = passes::readStagedVector(at, vectorBuffers_[i], slot, *load);
      replaceAllUsesIn(body, load->result(), read);
      vectorReads_.push_back(read);
      passes::eraseOp(*load);
    }
  }

  /// The vectors are read right after the wait for the barrier they ride
  /// on, once the products have been issued early: before the products
  /// issued next. (On the H200, a barrier of their own waited for between
  /// products in flight ran the dK/dV kernel 3-13% slower at D = 128.)
  void placeVectorReads() {
    if (vectorReads_.empty())
      return;
    Block &body = *loop_.body;
    auto wait = std::find_if(body.ops.begin(), body.ops.end(), [&](const std::unique_ptr<Op> &op) {
      return op->kind == OpKind::MbarrierWait && op->operands[0] == fulls_[0];
    });
    auto at = std::next(wait);
    for (Value *read : vectorReads_) {
      Op &convert = *read->definingOp, &view = *convert.operands[0]->definingOp;
      // The slot index may be computed after the wait by now: sinkTileWaits
      // moves a tile's wait down to its first reader, past the slot's
      // arithmetic. That arithmetic comes up with the view.
      hoistScalarDefinitions(body, at, view);
      body.ops.splice(at, body.ops, passes::positionOf(view));
      body.ops.splice(at, body.ops, passes::positionOf(convert));
    }
  }

  /// Moves the pure scalar ops of `body` that `op` reads, and that sit at
  /// or after `at`, to just before `at` (their own operands first); `at`
  /// steps over one that is already there.
  static void hoistScalarDefinitions(Block &body, passes::OpIterator &at, Op &op) {
    for (Value *operand : op.operands) {
      Op *def = operand->definingOp;
      if (!def || def->parent != &body || !operand->type.isScalar() || passes::hasSideEffects(*def) || def->body)
        continue;
      bool after = std::any_of(at, body.ops.end(), [&](const std::unique_ptr<Op> &o) { return o.get() == def; });
      if (!after)
        continue;
      hoistScalarDefinitions(body, at, *def);
      if (at->get() == def)
        ++at;
      else
        body.ops.splice(at, body.ops, passes::positionOf(*def));
    }
  }

  /// With a barrier per tile, each tile's wait (and view) moves down to
  /// right before the op that first reads the tile, once the products have
  /// been issued early: a product waits only for its own operands.
  void sinkTileWaits() {
    if (fulls_.size() < 2)
      return;
    Block &body = *loop_.body;
    for (size_t i = 0; i < views_.size(); ++i) {
      Op &wait = *tileWaits_[i], &view = *views_[i]->definingOp;
      auto firstRead = std::find_if(std::next(passes::positionOf(view)), body.ops.end(),
                                    [&](const std::unique_ptr<Op> &op) { return passes::reads(*op, views_[i]); });
      body.ops.splice(firstRead, body.ops, passes::positionOf(wait));
      body.ops.splice(firstRead, body.ops, passes::positionOf(view));
    }
  }

  /// Replaces `mma` by fence, wgmma, commit; returns the wgmma's result. An
  /// A operand that the consumers write to shared memory in the loop
  /// (staged) alternates between two slots by iteration, and a barrier after
  /// the writes (and a proxy fence that shows them to wgmma) waits until
  /// the warpgroups that the products read from have written: each its own
  /// warpgroup where every product reads only what its warpgroup wrote, else
  /// the whole consumer role. No barrier is needed before the writes: a
  /// warpgroup writes slot it % 2 only after passing iteration it - 1's
  /// barrier, which every warpgroup that reads its part reaches after
  /// waiting for its product of iteration it - 2, the slot's last reader
  /// (each waits for its product within the iteration or the next).
  Value *issue(Op &mma) {
    Block &body = *loop_.body;
    Op *staged = mma.operands[0]->definingOp;
    if (staged && staged->kind == OpKind::Convert && staged->parent == &body && mma.operands[0]->type.isShared())
      stageInTwoSlots(*staged);
    Builder at(body, passes::positionOf(mma));
    at.setLoc(mma.loc);
    at.create(OpKind::WgmmaFence, {}, {});
    std::map<std::string, Attr> attrs;
    for (const char *flag : {"trans_a", "trans_b"})
      if (mma.hasAttr(flag))
        attrs[flag] = mma.attrs.at(flag);
    Value *next = at.value(OpKind::Wgmma, mma.operands, mma.result()->type, attrs);
    next->nameHint = mma.result()->nameHint;
    at.create(OpKind::WgmmaCommit, {}, {});
    replaceAllUsesIn(body, mma.result(), next);
    passes::eraseOp(mma);
    return next;
  }

  /// The staged tile `convert` writes becomes a store into slot it % 2 of
  /// a two-slot buffer allocated before the loop (see issue()).
  void stageInTwoSlots(Op &convert) {
    Block &body = *loop_.body;
    Value *tile = convert.result();
    Type slots = tile->type;
    slots.stages = 2;
    Builder alloc(*loop_.parent, passes::positionOf(loop_));
    alloc.setLoc(loop_.loc);
    Value *buffer = alloc.value(OpKind::SmemAlloc, {}, slots);
    buffer->nameHint = (tile->nameHint.empty() ? "staged" : tile->nameHint) + "_buf";
    Builder at(body, passes::positionOf(convert));
    at.setLoc(convert.loc);
    Value *parity = at.value(OpKind::Rem, {it_, at.constInt(2)}, scalarI32());
    Value *view = at.value(OpKind::StageView, {buffer, parity}, tile->type);
    view->nameHint = tile->nameHint;
    at.create(OpKind::SmemStore, {view, convert.operands[0]}, {});
    at.create(OpKind::FenceProxyAsync, {}, {});
    bool own = std::all_of(body.ops.begin(), body.ops.end(), [&](const std::unique_ptr<Op> &op) {
      bool reader = (op->kind == OpKind::Mma || op->kind == OpKind::Wgmma) && op->operands[0] == tile;
      return !reader || readsOwnWrites(convert.operands[0]->type, *op);
    });
    if (own)
      at.create(OpKind::WarpgroupBarrier, {}, {});
    else
      at.create(OpKind::WarpgroupBarrier, {}, {}, {{"all", Attr(int64_t(1))}});
    replaceAllUsesIn(body, tile, view);
    passes::eraseOp(convert);
  }

  /// Whether each consumer warpgroup's share of `reader`, a product whose A
  /// operand the warpgroups write from registers of type `written`, reads
  /// only what that warpgroup wrote: its 64 rows of the product are the 64
  /// columns it holds of a tile split by columns (read transposed, as the
  /// attention backward's dV = P^T dO reads P with queries as rows), or the
  /// 64 rows it holds of a tile read as it is.
  static bool readsOwnWrites(const Type &written, const Op &reader) {
    const Layout &from = written.layout, &to = reader.result()->type.layout;
    int groups = from.warpsM * from.warpsN / 4;
    bool rowsPerGroup = to.kind == LayoutKind::Acc && to.warpsN == 1 && to.warpsM == 4 * groups && groups > 1;
    if (from.kind != LayoutKind::Acc || !rowsPerGroup)
      return false;
    if (reader.intAttr("trans_a"))
      return from.warpsM == 4 && from.warpsN == groups && written.shape[1] == 64 * groups;
    return from.warpsN == 1 && written.shape[0] == 64 * groups;
  }

  /// A GEMM step: one group stays in flight; each iteration waits for the
  /// previous one's and then releases the slot it read. Several products
  /// (each on its own accumulator) go out as one group, after one fence,
  /// so that one wait retires the iteration's products together: they read
  /// the same slot, which is released only once all of them are done.
  void scheduleChain() {
    Block &body = *loop_.body;
    // The products read only the slots' views and the carried accumulators,
    // all known at the top of the body: the others move to the last one.
    for (Op *mma : mmas_)
      body.ops.splice(passes::positionOf(*mmas_.back()), body.ops, passes::positionOf(*mma));
    Value *next = issue(*mmas_.front());
    for (size_t i = 1; i < mmas_.size(); ++i) {
      // Out of the group before, into the last one's.
      passes::eraseOp(**std::next(passes::positionOf(*next->definingOp)));
      next = issue(*mmas_[i]);
      passes::eraseOp(**std::prev(passes::positionOf(*next->definingOp)));
    }
    Builder at(body, std::next(passes::positionOf(*next->definingOp), 2));
    at.setLoc(next->definingOp->loc);
    at.create(OpKind::WgmmaWait, {}, {}, {{"pending", Attr(int64_t(1))}});
    Value *prev = at.value(OpKind::Sub, {it_, at.constInt(1)}, scalarI32());
    Value *hasPrev = at.value(OpKind::Gt, {it_, base_}, Type::scalar(DType::I1));
    releaseSlot(at, prev, hasPrev, empties_[0]);
  }

  /// Several products with work between them (attention): each issued as
  /// early as its operands allow and waited for before it is first read;
  /// products that only feed the next iteration stay in flight until the
  /// next iteration first reads one of them, which releases the slot they
  /// read; with two products, the second is rotated (rotateDeferred).
  void scheduleProducts() {
    Block &body = *loop_.body;
    Op &yield = *body.ops.back();
    mmas_ = issueEarly(body);
    sinkTileWaits();
    placeVectorReads();
    std::vector<Value *> deferredArgs, deferredResults;
    passes::UseCounts uses = passes::countUses(body);
    for (Op *mma : mmas_)
      for (size_t i = 0; i < yield.operands.size(); ++i)
        if (yield.operands[i] == mma->result() && onlyFeedsNextIteration(*mma, uses)) {
          deferredArgs.push_back(body.args[1 + i].get());
          deferredResults.push_back(loop_.results[i].get());
        }
    std::vector<Value *> issued, awaited;
    for (Op *mma : mmas_) {
      bool deferred = isDeferred(yield, body, mma->result(), deferredArgs);
      Value *next = issue(*mma);
      if (!deferred)
        awaited.push_back(next);
      issued.push_back(next);
    }
    for (Value *product : awaited)
      waitBeforeFirstUse(product);
    if (rings_)
      releaseEarlyTiles(issued);
    if (deferredArgs.empty()) {
      Builder end(body, std::prev(body.ops.end()));
      end.setLoc(loop_.loc);
      Value *always = end.value(OpKind::Const, {}, Type::scalar(DType::I1), {{"value", Attr(int64_t(1))}});
      releaseTiles(end, it_, always);
      dropLoads();
      return;
    }
    // The groups committed so far in this iteration are newer than the
    // deferred ones and may stay in flight.
    auto firstUse = std::find_if(body.ops.begin(), std::prev(body.ops.end()), [&](const std::unique_ptr<Op> &op) {
      return std::any_of(deferredArgs.begin(), deferredArgs.end(), [&](Value *v) { return passes::reads(*op, v); });
    });
    int64_t newer = std::count_if(body.ops.begin(), firstUse,
                                  [](const std::unique_ptr<Op> &op) { return op->kind == OpKind::WgmmaCommit; });
    Builder at(body, firstUse);
    at.setLoc(loop_.loc);
    Op *deferredWait = at.create(OpKind::WgmmaWait, deferredArgs, {}, {{"pending", Attr(newer)}});
    Value *prev = at.value(OpKind::Sub, {it_, at.constInt(1)}, scalarI32());
    Value *hasPrev = at.value(OpKind::Gt, {it_, base_}, Type::scalar(DType::I1));
    releaseTiles(at, prev, hasPrev);
    dropLoads();

    if (issued.size() == 2 && deferredArgs.size() == 1 && isDeferred(yield, body, issued[1], deferredArgs))
      if (Value *rotated = passes::rotateDeferred(loop_, *issued[0]->definingOp, *issued[1]->definingOp,
                                                  *deferredWait, deferredArgs.front(), deferredResults.front())) {
        if (consumerWarps_ >= 8)
          passes::takeTurns(loop_, *issued[0]->definingOp, *rotated->definingOp);
        // (With a ring of its own, the late tile's slot in this iteration
        // has no reader left.)
        passes::eliminateDeadCode(body);
        // After the last product and its commit.
        releaseAfterLoop({rotated}, std::next(passes::positionOf(*rotated->definingOp), 2));
        return;
      }
    // A loop that waits for a product of its own inside each iteration (one
    // that it adds to a tensor) retires its accumulating products before
    // the next: left in flight across that wait into the next iteration,
    // ptxas (CUDA 13.0) ran every product of the loop one at a time (C7514,
    // C7515).
    bool addsInLoop = std::any_of(body.ops.begin(), body.ops.end(), [](const std::unique_ptr<Op> &op) {
      return op->kind == OpKind::Store && op->hasAttr("accumulate");
    });
    if (addsInLoop) {
      std::vector<Value *> accumulators;
      for (Value *v : yield.operands)
        if (v->definingOp && v->definingOp->kind == OpKind::Wgmma)
          accumulators.push_back(v);
      Builder end(body, std::prev(body.ops.end()));
      end.setLoc(loop_.loc);
      end.create(OpKind::WgmmaWait, accumulators, {}, {{"pending", Attr(int64_t(0))}});
    }
    releaseAfterLoop(deferredResults, std::next(passes::positionOf(loop_)));
  }

  /// The loads leave the consumer, with the scalar arithmetic only they used.
  void dropLoads() {
    for (Op *load : streamed_)
      passes::eraseOp(*load);
    for (Op *load : resident_)
      passes::eraseOp(*load);
    passes::eliminateDeadCode(*loop_.body);
    passes::eliminateDeadCode(*loop_.parent);
  }

  /// After the loop: the products still in flight, then the last slot.
  void releaseAfterLoop(const std::vector<Value *> &last, passes::OpIterator at) {
    Builder after(*loop_.parent, at);
    after.setLoc(loop_.loc);
    after.create(OpKind::WgmmaWait, last, {}, {{"pending", Attr(int64_t(0))}});
    Value *count = after.value(OpKind::Sub, {hi_, lo_}, scalarI32());
    Value *lastRel = after.value(OpKind::Sub, {count, after.constInt(1)}, scalarI32());
    Value *lastIt = after.value(OpKind::Add, {lastRel, base_}, scalarI32());
    lastIt->nameHint = "it_last";
    Value *any = after.value(OpKind::Gt, {count, after.constInt(0)}, Type::scalar(DType::I1));
    releaseTiles(after, lastIt, any);
  }

  /// Whether a product's only reader is the loop's yield: it feeds nothing
  /// but the next iteration, and may stay in flight until then.
  bool onlyFeedsNextIteration(const Op &mma, passes::UseCounts &uses) const {
    const Op &yield = *loop_.body->ops.back();
    return uses[mma.result()] == 1 &&
           std::find(yield.operands.begin(), yield.operands.end(), mma.result()) != yield.operands.end();
  }

  /// Whether scheduleProducts will rotate the second of two products (see
  /// rotateDeferred): the second only feeds the next iteration, the first
  /// does not.
  bool rotatesDeferred() const { return passes::issuesSecondProductLate(loop_); }

  /// Whether `v` is a product left in flight: one yielded for a loop-carried
  /// value in `deferredArgs`.
  static bool isDeferred(const Op &yield, const Block &body, const Value *v, const std::vector<Value *> &deferredArgs) {
    for (size_t i = 0; i < yield.operands.size(); ++i)
      if (yield.operands[i] == v)
        return std::find(deferredArgs.begin(), deferredArgs.end(), body.args[1 + i].get()) != deferredArgs.end();
    return false;
  }

  /// Moves each product of the body up to just after what it reads (with the
  /// zero fill of a fresh accumulator), so that products which do not depend
  /// on the work before them (attention backward's dP = dO V^T beside
  /// S = Q K^T) are issued together and run while that work goes on.
  /// Returns the products in their new order.
  std::vector<Op *> issueEarly(Block &body) {
    std::vector<Op *> products;
    for (auto &op : body.ops)
      if (op->kind == OpKind::Mma)
        products.push_back(op.get());
    for (Op *mma : products) {
      // A product that reads A from registers keeps those registers until
      // it completes; issued early, it holds them across the work that
      // follows, which may need them more (the one-pass attention backward
      // spilled). Where such a product goes is the source's call.
      if (mma->operands[0]->type.isRegister())
        continue;
      auto at = passes::positionOf(*mma);
      std::vector<Op *> fills;
      while (at != body.ops.begin()) {
        Op &before = **std::prev(at);
        bool feeds = std::any_of(before.results.begin(), before.results.end(),
                                 [&](const std::unique_ptr<Value> &r) { return passes::reads(*mma, r.get()); });
        if (feeds && before.kind == OpKind::Fill && before.operands.empty())
          fills.push_back(&before);
        else if (feeds || before.kind == OpKind::MbarrierWait)
          break;
        --at;
      }
      for (Op *fill : fills)
        body.ops.splice(at, body.ops, passes::positionOf(*fill));
      body.ops.splice(at, body.ops, passes::positionOf(*mma));
    }
    std::vector<Op *> ordered;
    for (auto &op : body.ops)
      if (op->kind == OpKind::Mma)
        ordered.push_back(op.get());
    return ordered;
  }

  /// Waits for `product` right before its first reader in the loop body,
  /// leaving the groups committed after it in flight.
  void waitBeforeFirstUse(Value *product) {
    Block &body = *loop_.body;
    auto commit = std::next(passes::positionOf(*product->definingOp));
    int64_t newer = 0;
    auto op = std::next(commit);
    for (; op != body.ops.end(); ++op) {
      if (passes::reads(**op, product))
        break;
      newer += (*op)->kind == OpKind::WgmmaCommit;
    }
    Builder at(body, op == body.ops.end() ? std::prev(body.ops.end()) : op);
    at.setLoc(product->definingOp->loc);
    at.create(OpKind::WgmmaWait, {product}, {}, {{"pending", Attr(newer)}});
  }

  Value *staged(Builder &b, Op *load, int64_t stages, const std::string &fallback) {
    Type t = load->result()->type;
    t.stages = static_cast<int>(stages);
    Value *buf = b.value(OpKind::SmemAlloc, {}, t);
    buf->nameHint = load->result()->nameHint.empty() ? fallback : load->result()->nameHint + "_buf";
    return buf;
  }

  /// The iteration number of induction value `k`: k - lo + base.
  Value *iteration(Builder &b, Value *k) {
    Value *rel = b.value(OpKind::Sub, {k, lo_}, scalarI32());
    Value *it = b.value(OpKind::Add, {rel, base_}, scalarI32());
    it->nameHint = "it";
    return it;
  }

  Op &loop_;
  int64_t stages_ = 2;
  Value *lo_ = nullptr, *hi_ = nullptr;
  std::vector<Op *> mmas_, streamed_, resident_;
  /// Vectors loaded in the loop that go through shared slots
  /// (collectVectors), their slot buffers and their reads in the consumer.
  std::vector<Op *> vectors_;
  std::vector<Value *> vectorBuffers_, vectorReads_;
  int consumerWarps_ = 0;
  /// Slot buffers of the streamed and the resident tiles, in their order.
  std::vector<Value *> buffers_, residentBuffers_;
  /// The slots' barriers (`full`: copies landed, one for all the tiles of
  /// a slot or one per tile; `empty`: consumers done) and the resident
  /// tiles' one.
  std::vector<Value *> fulls_;
  /// `empty`: one for all the tiles of a slot, or with rings_ one per tile.
  std::vector<Value *> empties_;
  Value *once_ = nullptr;
  /// Whether each streamed tile has a ring of its own (`hopper_slots` on a
  /// tile read an iteration late): its own slots and `empty` barriers,
  /// released after the product that reads it (one `full` barrier per
  /// iteration still tracks them all).
  bool rings_ = false;
  /// Per streamed tile (kept after the loads go): its ring's slots, and
  /// whether only the late product reads it.
  std::vector<int64_t> slots_;
  std::vector<bool> late_;
  /// In the consumer: each streamed tile's view of its slot and, with a
  /// barrier per tile, the wait for it.
  std::vector<Value *> views_;
  std::vector<Op *> tileWaits_;
  /// The iteration-number base (see the file comment) and the consumer's
  /// iteration number.
  Value *base_ = nullptr, *it_ = nullptr;
};

class HopperPipelinePass : public Pass {
public:
  const char *name() const override { return "hopper-pipeline"; }
  const char *description() const override {
    return "sm_90a: split a wgmma loop into a TMA producer and a wgmma consumer joined by mbarriers";
  }
  bool run(Module &module, const Target &target, DiagnosticEngine &diags) override {
    if (!target.hasTensorMemoryAccelerator())
      return true;
    for (auto &kernel : module.kernels) {
      std::vector<Op *> loops;
      for (auto &op : kernel->body.ops)
        if (op->kind == OpKind::For && op->hasAttr("hopper_stages"))
          loops.push_back(op.get());
      for (Op *loop : loops)
        HopperPipeliner(*loop).run();
    }
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> createHopperPipelinePass() { return std::make_unique<HopperPipelinePass>(); }

} // namespace tkc
