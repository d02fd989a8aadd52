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

Machine::Status Machine::genericRead(const Op &op, const Value *v, RValue &r) {
  int64_t offset, bytes;
  if (!options_.checkBarriers || !bytesOf(r, offset, bytes))
    return Status::Next;
  int64_t epoch = static_cast<int64_t>(barrierGeneration_);
  for (int64_t at = offset; at < offset + bytes && static_cast<size_t>(at) < writeEpoch_.size(); ++at)
    if (writeEpoch_[at] == epoch)
      return fail(op, DiagId::InterpMissingBarrier, mnemonicOf(op.kind), "reads", nameOf(v), at,
                  mnemonicOf(lastWriter_[at]->kind), "wrote");
  // An mbarrier is updated atomically: using one is no read to order.
  if (isMbarrierOp(op.kind))
    return Status::Next;
  if (readEpoch_.size() < static_cast<size_t>(offset + bytes)) {
    readEpoch_.resize(offset + bytes, -1);
    lastReader_.resize(offset + bytes, nullptr);
  }
  std::fill(readEpoch_.begin() + offset, readEpoch_.begin() + offset + bytes, epoch);
  std::fill(lastReader_.begin() + offset, lastReader_.begin() + offset + bytes, &op);
  return Status::Next;
}

/// `landed`: the bytes hold the new data now (not only may change from now
/// on, as with a cp.async just issued).
Machine::Status Machine::genericWrite(const Op &op, const Value *v, int64_t offset, int64_t bytes, bool landed) {
  if (!options_.checkBarriers || offset < 0 || bytes <= 0)
    return Status::Next;
  int64_t epoch = static_cast<int64_t>(barrierGeneration_);
  for (int64_t at = offset; at < offset + bytes; ++at) {
    if (static_cast<size_t>(at) < readEpoch_.size() && readEpoch_[at] == epoch)
      return fail(op, DiagId::InterpMissingBarrier, mnemonicOf(op.kind), "writes", nameOf(v), at,
                  mnemonicOf(lastReader_[at]->kind), "read");
    // A cp.async retired by its async_wait lands on bytes it owns already.
    bool sameCopy = landed && static_cast<size_t>(at) < lastWriter_.size() && lastWriter_[at] == &op &&
                    op.kind == OpKind::AsyncLoad;
    if (static_cast<size_t>(at) < writeEpoch_.size() && writeEpoch_[at] == epoch && !sameCopy)
      return fail(op, DiagId::InterpMissingBarrier, mnemonicOf(op.kind), "writes", nameOf(v), at,
                  mnemonicOf(lastWriter_[at]->kind), "wrote");
  }
  if (writeEpoch_.size() < static_cast<size_t>(offset + bytes)) {
    writeEpoch_.resize(offset + bytes, -1);
    lastWriter_.resize(offset + bytes, nullptr);
  }
  std::fill(writeEpoch_.begin() + offset, writeEpoch_.begin() + offset + bytes, epoch);
  std::fill(lastWriter_.begin() + offset, lastWriter_.begin() + offset + bytes, &op);
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
