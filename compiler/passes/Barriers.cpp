// barriers: inserts `barrier` (__syncthreads) so that shared memory written
// by some threads is read by others only after a barrier (RAW), and is
// overwritten only after every thread has finished reading it (WAR) or
// writing it (WAW).
//
// The pass walks the ops in order, tracking which buffers were read and
// written since the last barrier; a barrier goes right before the first op
// that conflicts with that state, which is as late as it can be.
#include "passes/Pass.h"
#include "passes/PassUtils.h"

#include <optional>
#include <set>

namespace tkc {
namespace {

using namespace ir;
using namespace passes;

/// Buffers (root shared values) touched since the last barrier.
struct SyncState {
  std::set<Value *> written; ///< completed writes, not yet visible to other threads
  std::set<Value *> read;    ///< reads other threads may still be doing
  std::set<Value *> pending; ///< async copies issued, complete at the next async_wait

  bool operator==(const SyncState &) const = default;

  void passBarrier() {
    written.clear();
    read.clear();
  }
  void unite(const SyncState &other) {
    written.insert(other.written.begin(), other.written.end());
    read.insert(other.read.begin(), other.read.end());
    pending.insert(other.pending.begin(), other.pending.end());
  }
};

/// The shared buffers one op reads, writes, and starts async copies into.
struct Accesses {
  std::vector<Value *> reads, writes, asyncIssues;
};

Accesses accessesOf(const Op &op) {
  Accesses accesses;
  if (op.kind == OpKind::StageView || op.kind == OpKind::Yield)
    return accesses; // naming a slot or passing a value on touches no memory
  for (size_t i = 0; i < op.operands.size(); ++i) {
    if (!op.operands[i]->type.isShared())
      continue;
    Value *root = sharedRoot(op.operands[i]);
    if (op.kind == OpKind::AsyncLoad && i == 0)
      accesses.asyncIssues.push_back(root);
    else
      accesses.reads.push_back(root);
  }
  bool writesResult = op.kind == OpKind::Load || op.kind == OpKind::Convert;
  if (writesResult && op.results.size() == 1 && op.result()->type.isShared())
    accesses.writes.push_back(op.result());
  return accesses;
}

class BarrierPlacer {
public:
  void run(Block &body) { simulate(body, SyncState{}, /*insert=*/true); }

private:
  /// Walks `block` from `state`, returning the state at its end. Where a
  /// barrier is needed the state is cleared; with `insert` the barrier op is
  /// also created.
  SyncState simulate(Block &block, SyncState state, bool insert) {
    for (auto it = block.ops.begin(); it != block.ops.end(); ++it) {
      Op &op = **it;
      switch (op.kind) {
      case OpKind::Barrier: state.passBarrier(); continue;
      case OpKind::For: state = simulateLoop(op, state, insert); continue;
      case OpKind::AsyncWait:
        // Conservatively, every copy issued so far has landed.
        state.written.insert(state.pending.begin(), state.pending.end());
        state.pending.clear();
        continue;
      default: break;
      }
      Accesses accesses = accessesOf(op);
      if (hasHazard(state, accesses)) {
        if (insert) {
          Builder builder(block, it);
          builder.setLoc(op.loc);
          builder.create(OpKind::Barrier, {}, {});
        }
        state.passBarrier();
      }
      state.read.insert(accesses.reads.begin(), accesses.reads.end());
      state.written.insert(accesses.writes.begin(), accesses.writes.end());
      state.pending.insert(accesses.asyncIssues.begin(), accesses.asyncIssues.end());
    }
    return state;
  }

  /// The body is entered from before the loop or from the end of the
  /// previous iteration, so its entry state is the union of both, grown until
  /// stable. That state also holds after the loop (which may run zero times).
  SyncState simulateLoop(Op &loop, const SyncState &before, bool insert) {
    SyncState entry = before;
    for (;;) {
      SyncState next = entry;
      next.unite(simulate(*loop.body, entry, /*insert=*/false));
      if (next == entry)
        break;
      entry = std::move(next);
    }
    if (insert)
      simulate(*loop.body, entry, /*insert=*/true);
    return entry;
  }

  bool hasHazard(const SyncState &state, const Accesses &accesses) {
    for (Value *buffer : accesses.reads)
      if (touchesAny(state.written, buffer))
        return true; // read after write
    for (const auto *writes : {&accesses.writes, &accesses.asyncIssues})
      for (Value *buffer : *writes)
        if (touchesAny(state.read, buffer) || touchesAny(state.written, buffer))
          return true; // write after read or write
    return false;
  }

  bool touchesAny(const std::set<Value *> &buffers, Value *buffer) {
    for (Value *other : buffers)
      if (sameBytes(other, buffer))
        return true;
    return false;
  }

  /// Two buffers conflict if they are the same buffer or, once smem-plan has
  /// given them offsets, if their bytes overlap.
  static bool sameBytes(Value *a, Value *b) {
    if (a == b)
      return true;
    auto rangeA = byteRange(a), rangeB = byteRange(b);
    return rangeA && rangeB && rangeA->first < rangeB->second && rangeB->first < rangeA->second;
  }

  static std::optional<std::pair<int64_t, int64_t>> byteRange(const Value *buffer) {
    const Op *definer = buffer->definingOp;
    if (!definer || !definer->hasAttr("offset"))
      return std::nullopt;
    int64_t offset = definer->intAttr("offset");
    return std::make_pair(offset, offset + sharedBufferBytes(buffer->type));
  }
};

class BarriersPass : public Pass {
public:
  const char *name() const override { return "barriers"; }
  const char *description() const override {
    return "insert __syncthreads() between shared-memory writes and reads by other threads";
  }
  bool run(Module &module, const Target &, DiagnosticEngine &) override {
    for (auto &kernel : module.kernels)
      BarrierPlacer().run(kernel->body);
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> createBarriersPass() { return std::make_unique<BarriersPass>(); }

} // namespace tkc
