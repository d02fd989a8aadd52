// barriers: inserts `barrier` (__syncthreads) so that shared memory written
// by some threads is read by others only after a barrier (RAW), and is
// overwritten only after every thread has finished reading it (WAR) or
// writing it (WAW).
//
// The pass walks the ops in order, tracking which buffers were read and
// written since the last barrier; a barrier goes right before the first op
// that conflicts with that state, which is as late as it can be.
//
// A loop is analysed by walking its body from several entry states, and a
// nested loop's analysis is part of each such walk. The walks are
// remembered per block and entry state, so that each body is walked once
// per distinct state rather than once per walk of every loop around it
// (exponential in the depth of nesting).
//
// Warp-specialized roles never meet at a __syncthreads: the hopper passes
// order their shared memory with mbarriers and warpgroup barriers. The one
// exchange of their warps through ordinary accesses, a column reduction's
// partial results, is ordered the same way within each role, with
// `warpgroup_barrier {all = 1}` (every warp of the role).
#include "passes/Pass.h"
#include "passes/PassUtils.h"

#include <map>
#include <optional>
#include <set>

namespace tkc {
namespace {

using namespace ir;
using namespace passes;

/// A staged buffer's slot as `(base + offset) mod stages`, where base names
/// the non-constant part of the index: two slots of one buffer with the
/// same base and offsets that differ modulo the stage count are different
/// bytes. The pipeline pass indexes slots this way.
struct SlotIndex {
  std::string base;
  int64_t offset = 0;
  int64_t stages = 0;
};

std::optional<int64_t> constantOf(const Value *v) {
  if (v->definingOp && v->definingOp->kind == OpKind::Const)
    return v->definingOp->intAttr("value");
  return std::nullopt;
}

/// `v` as a symbolic base plus a constant.
std::pair<std::string, int64_t> affineParts(const Value *v) {
  const Op *def = v->definingOp;
  if (def && (def->kind == OpKind::Add || def->kind == OpKind::Sub)) {
    auto lhs = affineParts(def->operands[0]);
    if (auto c = constantOf(def->operands[1]))
      return {lhs.first, def->kind == OpKind::Add ? lhs.second + *c : lhs.second - *c};
    if (def->kind == OpKind::Add)
      if (auto c = constantOf(def->operands[0])) {
        auto rhs = affineParts(def->operands[1]);
        return {rhs.first, rhs.second + *c};
      }
    auto rhs = affineParts(def->operands[1]);
    return {lhs.first + (def->kind == OpKind::Add ? "+(" : "-(") + rhs.first + ")",
            lhs.second + (def->kind == OpKind::Add ? rhs.second : -rhs.second)};
  }
  return {std::to_string(reinterpret_cast<uintptr_t>(v)), 0};
}

std::optional<SlotIndex> slotIndexOf(const Value *slot) {
  if (!slot)
    return std::nullopt;
  if (auto c = constantOf(slot))
    return SlotIndex{"", *c, 0};
  const Op *def = slot->definingOp;
  if (!def || def->kind != OpKind::Rem)
    return std::nullopt;
  auto stages = constantOf(def->operands[1]);
  if (!stages || *stages <= 0)
    return std::nullopt;
  auto [base, offset] = affineParts(def->operands[0]);
  return SlotIndex{base, offset, *stages};
}

/// True when two slot indices name different slots of a buffer.
bool distinctSlots(const Value *a, const Value *b) {
  auto sa = slotIndexOf(a), sb = slotIndexOf(b);
  if (!sa || !sb || sa->base != sb->base || sa->stages != sb->stages)
    return false;
  if (sa->stages == 0)
    return sa->offset != sb->offset;
  return ((sa->offset - sb->offset) % sa->stages + sa->stages) % sa->stages != 0;
}

/// A shared buffer and, for one slot of a staged buffer, the slot index.
struct BufferUse {
  Value *buffer;
  Value *slot = nullptr;
  auto operator<=>(const BufferUse &) const = default;
};

/// Buffers (root shared values) touched since the last barrier.
struct SyncState {
  std::set<Value *> written;  ///< completed writes, not yet visible to other threads
  std::set<BufferUse> read;   ///< reads other threads may still be doing
  std::set<Value *> pending;  ///< async copies issued, complete at the next async_wait

  auto operator<=>(const SyncState &) const = default;

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
  std::vector<BufferUse> reads, asyncIssues;
  std::vector<Value *> writes;
};

Accesses accessesOf(const Op &op) {
  Accesses accesses;
  if (op.kind == OpKind::StageView || op.kind == OpKind::Yield)
    return accesses; // naming a slot or passing a value on touches no memory
  for (size_t i = 0; i < op.operands.size(); ++i) {
    Value *operand = op.operands[i];
    if (!operand->type.isShared())
      continue;
    Value *root = sharedRoot(operand);
    if (op.kind == OpKind::AsyncLoad && i == 0) {
      accesses.asyncIssues.push_back({root, op.operands[1]});
      continue;
    }
    Value *slot = nullptr;
    if (operand->definingOp && operand->definingOp->kind == OpKind::StageView)
      slot = operand->definingOp->operands[1];
    accesses.reads.push_back({root, slot});
  }
  bool writesResult = op.kind == OpKind::Load || op.kind == OpKind::Convert || op.kind == OpKind::Reduce;
  if (writesResult && op.results.size() == 1 && op.result()->type.isShared())
    accesses.writes.push_back(op.result());
  return accesses;
}

/// A column reduction's shared partial results: written by one `reduce`,
/// read by another.
bool accessesPartials(const Op &op) {
  return op.kind == OpKind::Reduce && (op.result()->type.isShared() || op.operands[0]->type.isShared());
}

class BarrierPlacer {
public:
  void run(Block &body) { simulate(body, SyncState{}, /*insert=*/true); }

private:
  /// A walk of a block without inserting: the state at its end and the ops
  /// that a barrier goes before.
  struct Walk {
    SyncState exit;
    std::vector<Op *> placed;
  };
  /// Per block, the walks made so far by entry state.
  std::map<const Block *, std::map<SyncState, Walk>> walks_;

  /// Walks `block` from `state`, returning the state at its end. Where a
  /// barrier is needed the state is cleared and the op it goes before is
  /// recorded in `placed`; with `insert` the barrier op is also created.
  SyncState simulate(Block &block, const SyncState &state, bool insert, std::vector<Op *> *placed = nullptr) {
    if (insert)
      return walk(block, state, /*insert=*/true, placed);
    std::map<SyncState, Walk> &known = walks_[&block];
    auto found = known.find(state);
    if (found == known.end()) {
      Walk result;
      result.exit = walk(block, state, /*insert=*/false, &result.placed);
      found = known.emplace(state, std::move(result)).first;
    }
    if (placed)
      placed->insert(placed->end(), found->second.placed.begin(), found->second.placed.end());
    return found->second.exit;
  }

  SyncState walk(Block &block, SyncState state, bool insert, std::vector<Op *> *placed) {
    for (auto it = block.ops.begin(); it != block.ops.end(); ++it) {
      Op &op = **it;
      switch (op.kind) {
      case OpKind::Barrier: state.passBarrier(); continue;
      case OpKind::WarpgroupRole:
      case OpKind::WarpgroupRoleEnd:
        // From here on, each region runs in its own warpgroups.
        inRoles_ = true;
        state = SyncState{};
        continue;
      case OpKind::WarpgroupBarrier:
        if (op.intAttr("all"))
          state.passBarrier();
        continue;
      case OpKind::For: state = simulateLoop(block, it, state, insert, placed); continue;
      case OpKind::AsyncWait:
        // Conservatively, every copy issued so far has landed.
        state.written.insert(state.pending.begin(), state.pending.end());
        state.pending.clear();
        continue;
      default: break;
      }
      Accesses accesses = !inRoles_ || accessesPartials(op) ? accessesOf(op) : Accesses{};
      if (hasHazard(state, accesses)) {
        placeBarrier(block, it, insert, placed);
        state.passBarrier();
      }
      state.read.insert(accesses.reads.begin(), accesses.reads.end());
      state.written.insert(accesses.writes.begin(), accesses.writes.end());
      for (const BufferUse &issue : accesses.asyncIssues)
        state.pending.insert(issue.buffer);
    }
    return state;
  }

  void placeBarrier(Block &block, OpIterator before, bool insert, std::vector<Op *> *placed) {
    if (placed)
      placed->push_back(before->get());
    if (!insert)
      return;
    Builder builder(block, before);
    builder.setLoc((*before)->loc);
    if (inRoles_)
      builder.create(OpKind::WarpgroupBarrier, {}, {}, {{"all", Attr(int64_t(1))}});
    else
      builder.create(OpKind::Barrier, {}, {});
    // The walks remembered for this block and those around it no longer
    // describe them.
    for (Block *changed = &block; changed; changed = changed->parentOp ? changed->parentOp->parent : nullptr)
      walks_.erase(changed);
  }

  /// The body is entered from before the loop or from the end of the
  /// previous iteration, so its entry state is the union of both, grown until
  /// stable; that state also holds after the loop (which may run zero
  /// times). Hazards that only the state before the loop causes are fixed by
  /// one barrier in front of the loop rather than one in every iteration.
  SyncState simulateLoop(Block &block, OpIterator loopIt, const SyncState &before, bool insert,
                         std::vector<Op *> *placed) {
    Op &loop = **loopIt;
    SyncState afterBarrier = before;
    afterBarrier.passBarrier();
    SyncState entry = loopEntryState(loop, before);
    SyncState carriedEntry = loopEntryState(loop, afterBarrier);
    if (!(entry == carriedEntry) && barriersIn(loop, entry) != barriersIn(loop, carriedEntry)) {
      placeBarrier(block, loopIt, insert, placed);
      entry = carriedEntry;
    }
    simulate(*loop.body, entry, insert, placed);
    return entry;
  }

  /// Slot indices name different slots in different iterations: what one
  /// iteration read may be what the next one writes.
  static SyncState forgetSlots(const SyncState &state) {
    SyncState result = state;
    result.read.clear();
    for (const BufferUse &use : state.read)
      result.read.insert({use.buffer, nullptr});
    return result;
  }

  SyncState loopEntryState(Op &loop, const SyncState &before) {
    SyncState entry = forgetSlots(before);
    for (;;) {
      SyncState next = entry;
      next.unite(forgetSlots(simulate(*loop.body, entry, /*insert=*/false)));
      if (next == entry)
        return entry;
      entry = std::move(next);
    }
  }

  std::vector<Op *> barriersIn(Op &loop, const SyncState &entry) {
    std::vector<Op *> placed;
    simulate(*loop.body, entry, /*insert=*/false, &placed);
    return placed;
  }

  bool hasHazard(const SyncState &state, const Accesses &accesses) {
    for (const BufferUse &use : accesses.reads)
      if (touchesAny(state.written, use.buffer))
        return true; // read after write
    for (Value *buffer : accesses.writes)
      if (readsAny(state.read, {buffer}) || touchesAny(state.written, buffer))
        return true; // write after read or write
    for (const BufferUse &issue : accesses.asyncIssues)
      if (readsAny(state.read, issue) || touchesAny(state.written, issue.buffer))
        return true;
    return false;
  }

  bool touchesAny(const std::set<Value *> &buffers, Value *buffer) {
    for (Value *other : buffers)
      if (sameBytes(other, buffer))
        return true;
    return false;
  }

  /// A write into one slot of a staged buffer does not disturb readers of
  /// another slot of it.
  bool readsAny(const std::set<BufferUse> &reads, const BufferUse &write) {
    for (const BufferUse &read : reads) {
      if (!sameBytes(read.buffer, write.buffer))
        continue;
      if (read.buffer == write.buffer && read.slot && write.slot && distinctSlots(read.slot, write.slot))
        continue;
      return true;
    }
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

  bool inRoles_ = false; ///< past the first warpgroup_role: only partial results are ordered, by role barriers
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
