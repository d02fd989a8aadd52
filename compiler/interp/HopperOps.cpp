// sm_90a: mbarriers, bulk tensor copies (TMA) and wgmma, modelled as the
// hardware behaves rather than as the passes intend, so that the
// interpreter judges the passes:
//
//  * an mbarrier counts arrivals and transaction bytes per phase exactly as
//    PTX says, and mbarrier_wait tests the phase *parity* as try_wait.parity
//    does (waiting two phases ahead passes at once, as on the GPU);
//  * tma_load only queues the copy: the data and its complete-tx reach the
//    slot and the mbarrier when the scheduler lands it;
//  * wgmma reads its shared operands when wgmma_wait retires it, and its
//    result may not be read before.
// Starting a copy into a slot that a copy or a wgmma still uses, or reading a
// slot with a copy in flight, is a data race and is reported as one.
#include "interp/Machine.h"

#include <fmt/format.h>

namespace tkc::interp::detail {

using namespace ir;

namespace {
constexpr int64_t kMaxCount = (int64_t(1) << 20) - 1; // PTX: arrival and tx counts

/// The slot of a shared operand that a wgmma reads, or -1 for registers.
int64_t slotOf(const RValue &r) {
  if (!r.buffer)
    return -1;
  return r.stage >= 0 ? r.stage : 0;
}
} // namespace

// --- mbarriers ---------------------------------------------------------------

Mbarrier *Machine::barrierOf(Context &ctx, const Op &op, size_t operand, int64_t it, std::string &name) {
  RValue &r = get(ctx, op.operands[operand]);
  if (!r.buffer || r.buffer->bars.empty()) {
    fail(op, DiagId::InterpMalformedOp, mnemonicOf(op.kind),
         fmt::format("operand #{} is not an #mbarrier buffer", operand));
    return nullptr;
  }
  if (it < 0) {
    fail(op, DiagId::InterpMalformedOp, mnemonicOf(op.kind), fmt::format("iteration {} is negative", it));
    return nullptr;
  }
  int64_t index = it % static_cast<int64_t>(r.buffer->bars.size());
  name = fmt::format("`{}`[{}]", nameOf(op.operands[operand]), index);
  Mbarrier &bar = r.buffer->bars[index];
  if (!bar.initialised) {
    fail(op, DiagId::InterpBarrierNotInitialised, mnemonicOf(op.kind), name);
    return nullptr;
  }
  return &bar;
}

namespace {
void completeIfDone(Mbarrier &bar) {
  if (bar.pending == 0 && bar.tx == 0) {
    bar.completed[bar.phase % 2] = std::move(bar.arriving);
    bar.arriving.clear();
    ++bar.phase;
    bar.pending = bar.count;
  }
}

void merge(Released &into, const Released &from) {
  for (auto &[ctx, upTo] : from)
    into[ctx] = std::max(into[ctx], upTo);
}
} // namespace

Machine::Status Machine::arrive(const Op &op, Mbarrier &bar, const std::string &name, int64_t arrivals) {
  for (int64_t i = 0; i < arrivals; ++i) {
    // A phase whose arrivals are all in but whose bytes are not cannot take
    // another arrival (PTX leaves it undefined).
    if (bar.pending == 0)
      return fail(op, DiagId::InterpArrivalCount, name, bar.phase, bar.tx);
    --bar.pending;
    completeIfDone(bar);
  }
  return Status::Next;
}

Machine::Status Machine::addTx(const Op &op, Mbarrier &bar, const std::string &name, int64_t bytes) {
  int64_t tx = bar.tx + bytes;
  if (tx > kMaxCount || tx < -kMaxCount)
    return fail(op, DiagId::InterpTxCountRange, name, tx);
  bar.tx = tx;
  completeIfDone(bar);
  return Status::Next;
}

Machine::Status Machine::execMbarrierInit(Context &ctx, const Op &op) {
  int64_t count = op.intAttr("count");
  RValue *r = op.operands.size() == 1 ? &get(ctx, op.operands[0]) : nullptr;
  if (!r || !r->buffer || r->buffer->bars.empty() || count < 1 || count > kMaxCount)
    return fail(op, DiagId::InterpMalformedOp, "mbarrier_init",
                "it needs an #mbarrier buffer and a `count` between 1 and 2^20 - 1");
  for (Mbarrier &bar : r->buffer->bars)
    bar = Mbarrier{true, count, count, 0, 0, {}, {}};
  SharedBuffer &b = *r->buffer;
  if (b.offset >= 0) {
    // One thread sets them up; the others may use them after a barrier.
    int64_t bytes = static_cast<int64_t>(b.bars.size()) * 8;
    if (genericWrite(ctx, op, op.operands[0], b.offset, bytes, true) == Status::Failed)
      return Status::Failed;
    b.barsWrite = writeShared(op, b.offset, bytes);
  }
  return Status::Next;
}

Machine::Status Machine::execMbarrierExpectTx(Context &ctx, const Op &op) {
  if (op.operands.size() != 2)
    return fail(op, DiagId::InterpMalformedOp, "mbarrier_expect_tx", "it takes an #mbarrier buffer and an iteration");
  if (!ctx.oneThread)
    return fail(op, DiagId::InterpNeedsOneThread, "mbarrier_expect_tx", ctx.what());
  std::string name;
  Mbarrier *bar = barrierOf(ctx, op, 0, static_cast<int64_t>(get(ctx, op.operands[1]).scalar), name);
  if (!bar)
    return Status::Failed;
  // mbarrier.arrive.expect_tx: expect-tx first, then the arrival.
  if (addTx(op, *bar, name, op.intAttr("bytes")) == Status::Failed)
    return Status::Failed;
  return arrive(op, *bar, name, 1);
}

Machine::Status Machine::execMbarrierWait(Context &ctx, const Op &op) {
  if (op.operands.size() != 2 && op.operands.size() != 3)
    return fail(op, DiagId::InterpMalformedOp, "mbarrier_wait",
                "it takes an #mbarrier buffer, an iteration and an optional predicate");
  if (op.operands.size() == 3 && get(ctx, op.operands[2]).scalar == 0)
    return Status::Next;
  int64_t it = static_cast<int64_t>(get(ctx, op.operands[1]).scalar);
  std::string name;
  Mbarrier *bar = barrierOf(ctx, op, 0, it, name);
  if (!bar)
    return Status::Failed;
  int64_t stages = static_cast<int64_t>(get(ctx, op.operands[0]).buffer->bars.size());
  int64_t parity = (it / stages + op.intAttr("release")) % 2;
  // try_wait.parity: done once the phase of that parity has completed, that
  // is while the current phase has the other parity.
  if (bar->phase % 2 == parity)
    return Status::Blocked;
  merge(ctx.seen, bar->completed[parity]);
  return Status::Next;
}

Machine::Status Machine::execMbarrierArrive(Context &ctx, const Op &op) {
  if (op.operands.size() != 3)
    return fail(op, DiagId::InterpMalformedOp, "mbarrier_arrive",
                "it takes an #mbarrier buffer, an iteration and a predicate");
  if (get(ctx, op.operands[2]).scalar == 0)
    return Status::Next;
  std::string name;
  Mbarrier *bar = barrierOf(ctx, op, 0, static_cast<int64_t>(get(ctx, op.operands[1]).scalar), name);
  if (!bar)
    return Status::Failed;
  // Each thread arriving after its own accesses releases them (lane 0 of a
  // warp arriving for the others does not release theirs).
  if (op.intAttr("all_lanes") || ctx.oneThread) {
    ++ctx.releases;
    merge(bar->arriving, ctx.seen);
    bar->arriving[&ctx] = std::max(bar->arriving[&ctx], ctx.releases);
  }
  // all_lanes: every lane of each warp arrives.
  return arrive(op, *bar, name, ctx.arrivingWarps() * (op.intAttr("all_lanes") ? kWarpLanes : 1));
}

std::string Machine::waitDescription(Context &ctx, const Op &op) {
  if (op.kind == OpKind::Barrier)
    return "the other roles at a `barrier`";
  if (op.kind != OpKind::MbarrierWait)
    return fmt::format("`{}`", mnemonicOf(op.kind));
  RValue &r = get(ctx, op.operands[0]);
  int64_t it = static_cast<int64_t>(get(ctx, op.operands[1]).scalar);
  int64_t stages = static_cast<int64_t>(r.buffer->bars.size());
  const Mbarrier &bar = r.buffer->bars[it % stages];
  return fmt::format("a phase of parity {} of mbarrier `{}`[{}] to complete (iteration {}); it is in phase {} with {} "
                     "of {} arrivals and {} bytes still to come",
                     (it / stages + op.intAttr("release")) % 2, nameOf(op.operands[0]), it % stages, it, bar.phase,
                     bar.pending, bar.count, bar.tx);
}

// --- bulk tensor copies -----------------------------------------------------------

Machine::Status Machine::execTmaLoad(Context &ctx, const Op &op) {
  if (op.operands.size() < 5)
    return fail(op, DiagId::InterpMalformedOp, "tma_load", "it takes a buffer, an iteration, mbarriers, a tensor and offsets");
  RValue &buffer = get(ctx, op.operands[0]);
  RValue &global = get(ctx, op.operands[3]);
  const Type &tile = op.operands[0]->type;
  if (!buffer.buffer || buffer.buffer->slots.empty() || global.global < 0)
    return fail(op, DiagId::InterpMalformedOp, "tma_load", "operand #0 must be a shared buffer and #3 a global tensor");
  const Tensor &t = tensors_[global.global];
  // Dims of size 0 are indexed by their offset alone (a 2-d box of a 4-d tensor).
  std::vector<int64_t> sizes = op.listAttr("sizes"), box;
  for (int64_t size : sizes)
    if (size > 0)
      box.push_back(size);
  if (op.operands.size() != 4 + t.dims.size() || sizes.size() != t.dims.size() || box != tile.shape)
    return fail(op, DiagId::InterpMalformedOp, "tma_load",
                "it needs one offset and one size per tensor dim, the sizes giving the slot's shape");
  if (!ctx.oneThread)
    return fail(op, DiagId::InterpNeedsOneThread, "tma_load", ctx.what());
  if (checkTmaStrides(op, t, op.operands[3]) == Status::Failed)
    return Status::Failed;
  std::vector<int64_t> base;
  for (size_t d = 0; d < t.dims.size(); ++d)
    base.push_back(static_cast<int64_t>(get(ctx, op.operands[4 + d]).scalar));
  return startCopy(ctx, op, global.global, std::move(base), "bulk copy", 0);
}

/// Starts the copy of `op` (tma_load, warp_copy: buffer, iteration and
/// mbarriers as its first operands) into slot `it % S`, in flight until it
/// lands: then it completes its bytes on barrier `it % S` or, with
/// `arrivals`, arrives on it that many times. Starting it while a `wgmma`
/// or another copy still uses the slot is a data race.
Machine::Status Machine::startCopy(Context &ctx, const Op &op, int global, std::vector<int64_t> base,
                                   const char *noun, int64_t arrivals) {
  RValue &buffer = get(ctx, op.operands[0]);
  int64_t it = static_cast<int64_t>(get(ctx, op.operands[1]).scalar);
  std::string barName;
  if (!barrierOf(ctx, op, 2, it, barName))
    return Status::Failed;
  SharedBuffer &slots = *buffer.buffer;
  int64_t slot = it % static_cast<int64_t>(slots.slots.size());
  std::string bufferName = nameOf(op.operands[0]);
  const char *what = mnemonicOf(op.kind);
  if (slots.readers[slot] > 0)
    return fail(op, DiagId::InterpDataRace, slot, bufferName,
                fmt::format("`{}` starts a {} into it while a `wgmma` still reads it", what, noun));
  if (slots.copiesInFlight[slot] > 0)
    return fail(op, DiagId::InterpDataRace, slot, bufferName,
                fmt::format("`{}` starts a {} into it while an earlier copy is in flight", what, noun));
  BulkCopy copy;
  copy.op = &op;
  copy.buffer = buffer.buffer;
  copy.slot = slot;
  RValue &bars = get(ctx, op.operands[2]);
  copy.bars = bars.buffer;
  copy.bar = it % static_cast<int64_t>(bars.buffer->bars.size());
  copy.global = global;
  copy.base = std::move(base);
  copy.arrivals = arrivals;
  ++slots.copiesInFlight[slot];
  copies_.push_back(std::move(copy));
  return Status::Next;
}

/// The producer warp's cp.async copy of a vector into a slot: in flight
/// (landing as late as it may, like a bulk copy) until its lanes arrive on
/// the barrier, one arrival each.
Machine::Status Machine::execWarpCopy(Context &ctx, const Op &op) {
  if (op.operands.size() < 4)
    return fail(op, DiagId::InterpMalformedOp, "warp_copy", "it takes a buffer, an iteration, mbarriers, a tensor and offsets");
  RValue &buffer = get(ctx, op.operands[0]);
  RValue &global = get(ctx, op.operands[3]);
  if (!buffer.buffer || buffer.buffer->slots.empty() || global.global < 0)
    return fail(op, DiagId::InterpMalformedOp, "warp_copy", "operand #0 must be a shared buffer and #3 a global tensor");
  if (!ctx.oneThread)
    return fail(op, DiagId::InterpNeedsOneThread, "warp_copy", ctx.what());
  const Tensor &t = tensors_[global.global];
  if (op.operands.size() != 4 + t.dims.size())
    return fail(op, DiagId::InterpMalformedOp, "warp_copy", "it needs one offset per tensor dim");
  std::vector<int64_t> base = sliceBase(ctx, op, 4, t);
  if (checkUntestedBounds(op, t, base) == Status::Failed)
    return Status::Failed;
  return startCopy(ctx, op, global.global, base, "copy", kWarpLanes);
}

Machine::Status Machine::checkTmaStrides(const Op &op, const Tensor &t, const Value *global) {
  int64_t pitch = dtypeBytes(t.dtype);
  for (size_t d = t.dims.size(); d-- > 1;) {
    pitch *= t.dims[d];
    if (pitch % 16)
      return fail(op, DiagId::InterpTmaStride, nameOf(global), pitch);
  }
  return Status::Next;
}

// --- the epilogue: staging tiles stored with bulk copies -------------------------

namespace {
/// The warpgroup of a role whose threads hold element (row, col) of a
/// register tile, as the code generator numbers the warps in a role
/// (codegen/Fragments.cpp): a grid of four warp rows and several columns
/// by columns, warpgroup w holding column w; otherwise warp rows first, four
/// warps a warpgroup. -1 where the layout does not say.
int warpgroupOf(const Type &tile, int64_t row, int64_t col) {
  const Layout &l = tile.layout;
  if (l.kind != LayoutKind::Acc || tile.shape.size() != 2 || l.warpsM <= 0 || l.warpsN <= 0)
    return -1;
  int64_t rowsPerWarp = tile.shape[0] / l.warpsM, colsPerWarp = tile.shape[1] / l.warpsN;
  if (rowsPerWarp == 0 || colsPerWarp == 0)
    return -1;
  int64_t wm = row / rowsPerWarp, wn = col / colsPerWarp;
  if (l.warpsM == 4 && l.warpsN > 1)
    return static_cast<int>(wn);
  return static_cast<int>((wm * l.warpsN + wn) / 4);
}
} // namespace

Machine::Status Machine::execSmemStore(Context &ctx, const Op &op) {
  RValue &buffer = get(ctx, op.operands[0]);
  RValue &x = get(ctx, op.operands[1]);
  if (!buffer.buffer || buffer.buffer->slots.empty() || !x.tile)
    return fail(op, DiagId::InterpMalformedOp, "smem_store", "it stores a register tile into a shared buffer");
  SharedBuffer &b = *buffer.buffer;
  int64_t slot = slotOf(buffer);
  SharedBuffer::Staging &staging = b.staging[slot];
  std::string name = nameOf(op.operands[0]);
  if (staging.storeReaders > 0)
    return fail(op, DiagId::InterpDataRace, slot, name, "`smem_store` writes it while a bulk store still reads it");
  if (b.copiesInFlight[slot] > 0)
    return fail(op, DiagId::InterpDataRace, slot, name, "`smem_store` writes it while a copy into it is in flight");
  // The issuing thread saw the store's read end; the others learn it at the
  // next warpgroup_barrier.
  if (staging.readEndCtx == &ctx && staging.readEndEpoch == ctx.warpgroupEpoch)
    return fail(op, DiagId::InterpMissingWarpgroupBarrier, "smem_store", "writes", name, "tma_store", "read");
  const Type &bufferType = op.operands[0]->type, &xType = op.operands[1]->type;
  int64_t rows = bufferType.shape[0], cols = bufferType.shape[1], xCols = xType.shape[1];
  int64_t first = op.intAttr("first_col", 0);
  const char *xPad = padOf(x);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      b.slots[slot][r * cols + c] = roundTo(bufferType.dtype, (*x.tile)[r * xCols + first + c]);
      b.pads[slot][r * cols + c] = xPad ? xPad[r * xCols + first + c] : 0;
    }
  staging.writer = &op;
  staging.writerCtx = &ctx;
  staging.writtenAt = clock_;
  staging.writtenEpoch = ctx.warpgroupEpoch;
  staging.writtenRoleEpoch = ctx.roleEpoch;
  staging.writerGroup.assign(rows * cols, -1);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      staging.writerGroup[r * cols + c] = warpgroupOf(xType, r, first + c);
  if (b.offset >= 0) {
    if (genericWrite(ctx, op, op.operands[0], b.offset + slot * b.slotBytes, b.slotBytes, true) == Status::Failed)
      return Status::Failed;
    b.slotWrite[slot] = writeShared(op, b.offset + slot * b.slotBytes, b.slotBytes);
  }
  return Status::Next;
}

Machine::Status Machine::execFenceProxyAsync(Context &ctx, const Op &op) {
  ctx.lastProxyFence = clock_ + 1;
  return Status::Next;
}

Machine::Status Machine::execWarpgroupBarrier(Context &ctx, const Op &op) {
  // The role's warps run together here: the barrier orders their accesses
  // (each warpgroup's own, and with `all` every warpgroup's, which
  // checkWarpgroupsMet tells apart).
  ++ctx.warpgroupEpoch;
  if (op.intAttr("all"))
    ++ctx.roleEpoch;
  return Status::Next;
}


/// A tile the role's threads wrote to shared memory and a `wgmma` reads:
/// each warpgroup's share of the product reads all of the tile (split by
/// columns) or its 64 rows of M, and where it reads what another
/// warpgroup wrote a `warpgroup_barrier {all = 1}` must lie between.
Machine::Status Machine::checkWarpgroupsMet(Context &ctx, const Op &wgmma, const Value *operand, RValue &r,
                                            bool transposed) {
  int64_t slot = slotOf(r);
  if (slot < 0 || ctx.warpgroups() < 2)
    return Status::Next;
  SharedBuffer::Staging &staging = r.buffer->staging[slot];
  if (staging.writerCtx != &ctx || staging.writerGroup.empty() || staging.writtenRoleEpoch != ctx.roleEpoch)
    return Status::Next;
  const Type &acc = wgmma.result()->type;
  bool wholeTile = acc.layout.warpsN > 1 && acc.layout.warpsN == ctx.warpgroups();
  if (operand->type.shape.size() != 2)
    return Status::Next;
  int64_t rows = operand->type.shape[0], cols = operand->type.shape[1];
  if (static_cast<int64_t>(staging.writerGroup.size()) != rows * cols)
    return Status::Next;
  for (int g = 0; g < ctx.warpgroups(); ++g)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        int64_t m = transposed ? j : i; // the row of the product
        if (!wholeTile && m / 64 != g)
          continue;
        int writer = staging.writerGroup[i * cols + j];
        if (writer != g)
          return fail(wgmma, DiagId::InterpMissingRoleBarrier, g + 1, nameOf(r.buffer->value), i, j,
                      writer < 0 ? std::string("another") : std::to_string(writer + 1));
      }
  return Status::Next;
}

Machine::Status Machine::execTmaStore(Context &ctx, const Op &op) {
  RValue &buffer = get(ctx, op.operands[0]);
  RValue &global = get(ctx, op.operands[1]);
  if (!buffer.buffer || buffer.buffer->slots.empty() || global.global < 0)
    return fail(op, DiagId::InterpMalformedOp, "tma_store", "operand #0 must be a shared buffer and #1 a global tensor");
  if (checkTmaStrides(op, tensors_[global.global], op.operands[1]) == Status::Failed)
    return Status::Failed;
  SharedBuffer &b = *buffer.buffer;
  int64_t slot = slotOf(buffer);
  SharedBuffer::Staging &staging = b.staging[slot];
  std::string name = nameOf(op.operands[0]);
  if (b.copiesInFlight[slot] > 0)
    return fail(op, DiagId::InterpDataRace, slot, name, "`tma_store` reads it while a copy into it is in flight");
  if (staging.writer && staging.writerCtx == &ctx) {
    // Every thread wrote its part; one thread issues the copy.
    if (staging.writtenEpoch == ctx.warpgroupEpoch)
      return fail(op, DiagId::InterpMissingWarpgroupBarrier, "tma_store", "reads", name,
                  mnemonicOf(staging.writer->kind), "wrote");
    // The async proxy sees ordinary writes only after fence.proxy.async.
    if (staging.writtenAt >= ctx.lastProxyFence)
      return fail(op, DiagId::InterpMissingProxyFence, "tma_store", name, mnemonicOf(staging.writer->kind));
  }
  PendingStore store;
  store.op = &op;
  store.buffer = buffer.buffer;
  store.slot = slot;
  store.global = global.global;
  store.base = sliceBase(ctx, op, 2, tensors_[global.global]);
  ++staging.storeReaders;
  ctx.stores.push_back(std::move(store));
  return Status::Next;
}

Machine::Status Machine::execTmaStoreWait(Context &ctx, const Op &op) {
  // Bulk groups belong to the thread that commits them: one thread of each
  // warpgroup issues the warpgroup's copies (a store with `warpgroup = w`,
  // only warpgroup w's) and waits for all but its newest `pending`. A store
  // is waited out once every warpgroup that issued it has.
  size_t pending = static_cast<size_t>(std::max<int64_t>(op.intAttr("pending"), 0));
  std::vector<int> waiters(ctx.stores.size(), 0), issuers(ctx.stores.size(), 0);
  for (int64_t group = 0; group < ctx.warpgroups(); ++group) {
    std::vector<size_t> own;
    for (size_t i = 0; i < ctx.stores.size(); ++i)
      if (!ctx.stores[i].op->hasAttr("warpgroup") || ctx.stores[i].op->intAttr("warpgroup") == group)
        own.push_back(i);
    for (size_t i : own)
      ++issuers[i];
    for (size_t n = 0; n + pending < own.size(); ++n)
      ++waiters[own[n]];
  }
  std::deque<PendingStore> left;
  for (size_t i = 0; i < ctx.stores.size(); ++i) {
    PendingStore &store = ctx.stores[i];
    bool done = waiters[i] == issuers[i];
    if (done && !store.readDone && finishStoreRead(ctx, op, store) == Status::Failed)
      return Status::Failed;
    if (done && op.intAttr("read") == 0)
      writeStore(store);
    else
      left.push_back(std::move(store));
  }
  ctx.stores = std::move(left);
  return Status::Next;
}

/// The store reads its slot as late as it may: when a wait needs it done.
Machine::Status Machine::finishStoreRead(Context &ctx, const Op &at, PendingStore &store) {
  SharedBuffer &b = *store.buffer;
  RValue view;
  view.buffer = store.buffer;
  view.stage = store.slot;
  if (checkSharedRead(*store.op, store.op->operands[0], view) == Status::Failed)
    return Status::Failed;
  store.data = b.slots[store.slot];
  store.readDone = true;
  SharedBuffer::Staging &staging = b.staging[store.slot];
  --staging.storeReaders;
  staging.readEndCtx = &ctx;
  staging.readEndEpoch = ctx.warpgroupEpoch;
  (void)at;
  return Status::Next;
}

void Machine::writeStore(PendingStore &store) {
  Tensor &t = tensors_[store.global];
  // Nothing is written past the tensor's end; a reducing copy adds to what
  // is there (in f32, as L2 does).
  bool adds = store.op->hasAttr("reduce");
  forSlice(*store.op, t, store.base, static_cast<int64_t>(store.data.size()), [&](int64_t i, int64_t at) {
    if (at >= 0)
      t.data[at] = roundTo(t.dtype, adds ? t.data[at] + store.data[i] : store.data[i]);
  });
}

// --- wgmma -------------------------------------------------------------------

Machine::Status Machine::execWgmma(Context &ctx, const Op &op) {
  if ((op.operands.size() != 3 && op.operands.size() != 4) || op.results.size() != 1)
    return fail(op, DiagId::InterpMalformedOp, "wgmma",
                "it takes a, b, an accumulator and an optional predicate and gives one result");
  // Not issued: the result is the accumulator as it was.
  if (op.operands.size() == 4 && get(ctx, op.operands[3]).scalar == 0) {
    ctx.values[op.result()] = get(ctx, op.operands[2]);
    return Status::Next;
  }
  const Type &type = op.result()->type;
  bool transA = op.intAttr("trans_a") != 0, transB = op.intAttr("trans_b") != 0;
  const std::vector<int64_t> &aShape = op.operands[0]->type.shape, &bShape = op.operands[1]->type.shape;
  bool shapesFit = type.shape.size() == 2 && aShape.size() == 2 && bShape.size() == 2 &&
                   op.operands[2]->type.shape == type.shape && aShape[transA ? 1 : 0] == type.shape[0];
  if (shapesFit) {
    int64_t k = aShape[transA ? 0 : 1];
    shapesFit = bShape == (transB ? std::vector<int64_t>{type.shape[1], k} : std::vector<int64_t>{k, type.shape[1]});
  }
  for (size_t i = 0; i < 3 && shapesFit; ++i) {
    RValue &r = get(ctx, op.operands[i]);
    shapesFit = r.buffer ? !r.buffer->slots.empty() : r.tile != nullptr;
  }
  if (!shapesFit)
    return fail(op, DiagId::InterpMalformedOp, "wgmma",
                "it needs tiles a [M, K] (or [K, M] with `trans_a`), b [K, N] (or [N, K] with `trans_b`) and an "
                "accumulator [M, N]");
  // Each warpgroup of the role computes 64 rows, or all 64 rows and a
  // share of the columns (#acc<4xG> over G warpgroups).
  int64_t rowBlocks = type.layout.warpsN > 1 && type.layout.warpsN == ctx.warpgroups() ? 1 : ctx.warpgroups();
  if (type.shape[0] != 64 * rowBlocks)
    return fail(op, DiagId::InterpWgmmaRows, type.shape[0], ctx.what(), ctx.warpgroups());
  // wgmma.fence orders earlier register writes before the asynchronous
  // reads; only a chain of wgmma on one accumulator needs none.
  for (size_t i : {size_t(0), size_t(2)}) {
    RValue &r = get(ctx, op.operands[i]);
    if (r.buffer)
      continue;
    if (ctx.lastFence == 0 || r.writtenAt >= ctx.lastFence)
      return fail(op, DiagId::InterpMissingWgmmaFence, nameOf(op.operands[i]));
  }
  // A shared tile the threads wrote (a staged operand): wgmma reads it
  // through the async proxy, after a fence, and after a barrier since every
  // thread's writes.
  for (size_t i : {size_t(0), size_t(1)}) {
    RValue &r = get(ctx, op.operands[i]);
    if (!r.smemWrite)
      continue;
    if (r.writtenAt >= ctx.lastProxyFence)
      return fail(op, DiagId::InterpMissingProxyFence, "wgmma", nameOf(op.operands[i]),
                  mnemonicOf(op.operands[i]->definingOp->kind));
    if (genericRead(ctx, op, op.operands[i], r) == Status::Failed)
      return Status::Failed;
  }
  if (checkWarpgroupsMet(ctx, op, op.operands[0], get(ctx, op.operands[0]), transA) == Status::Failed)
    return Status::Failed;
  PendingWgmma w;
  w.op = &op;
  w.a = get(ctx, op.operands[0]);
  w.b = get(ctx, op.operands[1]);
  w.c = get(ctx, op.operands[2]);
  for (RValue *operand : {&w.a, &w.b}) {
    int64_t slot = slotOf(*operand);
    if (slot < 0)
      continue;
    if (operand->buffer->copiesInFlight[slot] > 0)
      return fail(op, DiagId::InterpDataRace, slot, nameOf(operand->buffer->value),
                  "`wgmma` reads it while a copy into it is in flight");
  }
  for (RValue *operand : {&w.a, &w.b})
    if (int64_t slot = slotOf(*operand); slot >= 0)
      ++operand->buffer->readers[slot];
  w.result = newTile(type);
  w.result.writtenAt = 0;
  w.result.pad = std::make_shared<std::vector<char>>(w.result.tile->size(), 0);
  w.result.inFlight = std::make_shared<bool>(true);
  ctx.values[op.result()] = w.result;
  ctx.open.push_back(std::move(w));
  return Status::Next;
}

Machine::Status Machine::execWgmmaFence(Context &ctx, const Op &op) {
  (void)op;
  ctx.lastFence = clock_ + 1;
  return Status::Next;
}

Machine::Status Machine::execWgmmaCommit(Context &ctx, const Op &op) {
  (void)op;
  // A commit with nothing open still makes an (empty) group, as in PTX.
  ctx.groups.push_back(std::move(ctx.open));
  ctx.open.clear();
  return Status::Next;
}

Machine::Status Machine::execWgmmaWait(Context &ctx, const Op &op) {
  size_t pending = static_cast<size_t>(std::max<int64_t>(op.intAttr("pending"), 0));
  while (ctx.groups.size() > pending) {
    for (PendingWgmma &w : ctx.groups.front())
      if (retire(op, w) == Status::Failed)
        return Status::Failed;
    ctx.groups.pop_front();
  }
  for (const Value *v : op.operands) {
    RValue &r = get(ctx, v);
    if (r.inFlight && *r.inFlight)
      return fail(op, DiagId::InterpResultInFlight, "wgmma_wait", nameOf(v));
  }
  return Status::Next;
}

Machine::Status Machine::retire(const Op &at, PendingWgmma &w) {
  if (w.c.inFlight && *w.c.inFlight)
    return fail(at, DiagId::InterpResultInFlight, "wgmma", nameOf(w.op->operands[2]));
  for (RValue *operand : {&w.a, &w.b})
    if (int64_t slot = slotOf(*operand); slot >= 0)
      --operand->buffer->readers[slot];
  for (size_t i : {size_t(0), size_t(1)})
    if (checkSharedRead(*w.op, w.op->operands[i], i == 0 ? w.a : w.b) == Status::Failed)
      return Status::Failed;
  const Type &type = w.op->result()->type;
  bool transA = w.op->intAttr("trans_a") != 0;
  int64_t k = w.op->operands[0]->type.shape[transA ? 0 : 1];
  multiply(w.a, w.b, w.c, transA, w.op->intAttr("trans_b") != 0, type.shape[0], type.shape[1], k, w.result);
  *w.result.inFlight = false;
  return Status::Next;
}

// --- persistent grids ------------------------------------------------------------

Machine::Status Machine::execGridSize(Context &ctx, const Op &op) {
  if (op.results.size() != 1 || !op.operands.empty())
    return fail(op, DiagId::InterpMalformedOp, "grid_size", "it takes no operands and gives one i32");
  RValue r;
  r.scalar = static_cast<double>(gridX_);
  ctx.values[op.result()] = r;
  return Status::Next;
}

Machine::Status Machine::execNumSms(Context &ctx, const Op &op) {
  if (op.results.size() != 1 || !op.operands.empty())
    return fail(op, DiagId::InterpMalformedOp, "num_sms", "it takes no operands and gives one i32");
  RValue r;
  r.scalar = static_cast<double>(options_.numSms);
  ctx.values[op.result()] = r;
  return Status::Next;
}

} // namespace tkc::interp::detail
