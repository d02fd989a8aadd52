// The bytes of shared memory. Values know only their own data; one array
// over the block's shared memory (once smem-plan has given buffers their
// offsets) records per byte which write put it there and when the threads
// last wrote and read it, relative to `barrier`s. That finds buffers that
// share bytes while both are in use, and ordinary accesses by different
// threads that no barrier orders (Options::checkBarriers).
#include "interp/Machine.h"

#include <fmt/format.h>

namespace tkc::interp::detail {

using namespace ir;

bool Machine::bytesOf(RValue &r, int64_t &offset, int64_t &bytes) {
  if (r.smemWrite) {
    offset = r.smemOffset;
    bytes = r.smemBytes;
    return true;
  }
  if (!r.buffer || r.buffer->offset < 0)
    return false;
  SharedBuffer &b = *r.buffer;
  if (!b.bars.empty()) {
    offset = b.offset;
    bytes = static_cast<int64_t>(b.bars.size()) * 8;
    return true;
  }
  offset = b.offset + (r.stage >= 0 ? r.stage : 0) * b.slotBytes;
  bytes = b.slotBytes;
  return true;
}

namespace {
bool isMbarrierOp(OpKind kind) {
  return kind == OpKind::MbarrierInit || kind == OpKind::MbarrierExpectTx || kind == OpKind::MbarrierWait ||
         kind == OpKind::MbarrierArrive;
}
} // namespace

/// Whether an access now by `ctx` is ordered after the access `stamp`
/// records: a `barrier` since, a `warpgroup_barrier` of the same role, or
/// an mbarrier phase `ctx` waited for that the access's threads released
/// (directly or through other roles' waits and arrivals).
bool Machine::ordered(const Context &ctx, const Stamp &stamp) const {
  if (!stamp.op || stamp.generation != static_cast<int64_t>(barrierGeneration_) ||
      (stamp.ctx == &ctx && stamp.warpgroupEpoch != ctx.warpgroupEpoch))
    return true;
  auto released = ctx.seen.find(stamp.ctx);
  return released != ctx.seen.end() && stamp.releases < released->second;
}

Machine::Stamp Machine::stampOf(const Context &ctx, const Op &op) const {
  return Stamp{&op, &ctx, static_cast<int64_t>(barrierGeneration_), ctx.warpgroupEpoch, ctx.releases};
}

Machine::Status Machine::genericRead(Context &ctx, const Op &op, const Value *v, RValue &r) {
  int64_t offset, bytes;
  if (!options_.checkBarriers || !bytesOf(r, offset, bytes))
    return Status::Next;
  for (int64_t at = offset; at < offset + bytes && static_cast<size_t>(at) < lastWrite_.size(); ++at)
    if (!ordered(ctx, lastWrite_[at]))
      return fail(op, DiagId::InterpMissingBarrier, mnemonicOf(op.kind), "reads", nameOf(v), at,
                  mnemonicOf(lastWrite_[at].op->kind), "wrote");
  // An mbarrier is updated atomically: using one is no read to order.
  if (isMbarrierOp(op.kind))
    return Status::Next;
  if (lastRead_.size() < static_cast<size_t>(offset + bytes))
    lastRead_.resize(offset + bytes);
  std::fill(lastRead_.begin() + offset, lastRead_.begin() + offset + bytes, stampOf(ctx, op));
  return Status::Next;
}

/// `landed`: the bytes hold the new data now (not only may change from now
/// on, as with a cp.async just issued).
Machine::Status Machine::genericWrite(Context &ctx, const Op &op, const Value *v, int64_t offset, int64_t bytes,
                                      bool landed) {
  if (!options_.checkBarriers || offset < 0 || bytes <= 0)
    return Status::Next;
  for (int64_t at = offset; at < offset + bytes; ++at) {
    if (static_cast<size_t>(at) < lastRead_.size() && !ordered(ctx, lastRead_[at]))
      return fail(op, DiagId::InterpMissingBarrier, mnemonicOf(op.kind), "writes", nameOf(v), at,
                  mnemonicOf(lastRead_[at].op->kind), "read");
    if (static_cast<size_t>(at) >= lastWrite_.size())
      continue;
    // A cp.async retired by its async_wait lands on bytes it owns already.
    const Stamp &write = lastWrite_[at];
    bool sameCopy = landed && write.op == &op && op.kind == OpKind::AsyncLoad;
    if (!sameCopy && !ordered(ctx, write))
      return fail(op, DiagId::InterpMissingBarrier, mnemonicOf(op.kind), "writes", nameOf(v), at,
                  mnemonicOf(write.op->kind), "wrote");
  }
  if (lastWrite_.size() < static_cast<size_t>(offset + bytes))
    lastWrite_.resize(offset + bytes);
  std::fill(lastWrite_.begin() + offset, lastWrite_.begin() + offset + bytes, stampOf(ctx, op));
  return Status::Next;
}

uint64_t Machine::writeShared(const Op &op, int64_t offset, int64_t bytes) {
  if (offset < 0 || bytes <= 0)
    return 0;
  if (smemTags_.size() < static_cast<size_t>(offset + bytes))
    smemTags_.resize(offset + bytes, 0);
  smemWriters_.push_back(&op);
  uint64_t id = smemWriters_.size();
  std::fill(smemTags_.begin() + offset, smemTags_.begin() + offset + bytes, id);
  return id;
}

Machine::Status Machine::checkSharedRead(const Op &reader, const Value *v, RValue &r) {
  if (r.smemWrite)
    return checkShared(reader, v, r.smemOffset, r.smemBytes, r.smemWrite);
  if (!r.buffer || r.buffer->offset < 0)
    return Status::Next;
  SharedBuffer &b = *r.buffer;
  if (!b.bars.empty())
    return b.barsWrite ? checkShared(reader, v, b.offset, static_cast<int64_t>(b.bars.size()) * 8, b.barsWrite)
                       : Status::Next;
  int64_t slot = r.stage >= 0 ? r.stage : 0;
  if (!b.slotWrite[slot])
    return Status::Next;
  return checkShared(reader, v, b.offset + slot * b.slotBytes, b.slotBytes, b.slotWrite[slot]);
}

Machine::Status Machine::checkShared(const Op &reader, const Value *v, int64_t offset, int64_t bytes,
                                     uint64_t write) {
  for (int64_t at = offset; at < offset + bytes; ++at) {
    uint64_t found = static_cast<size_t>(at) < smemTags_.size() ? smemTags_[at] : 0;
    if (found == write || found == 0 || found > smemWriters_.size())
      continue;
    const Op *writer = smemWriters_[found - 1];
    diags_.report(reader.loc, DiagId::InterpSharedOverwritten, mnemonicOf(reader.kind), nameOf(v), offset,
                  offset + bytes, mnemonicOf(writer->kind), at);
    diags_.report(writer->loc, DiagId::InterpOverwrittenHere, mnemonicOf(writer->kind));
    return Status::Failed;
  }
  return Status::Next;
}

} // namespace tkc::interp::detail
