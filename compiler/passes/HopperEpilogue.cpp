// hopper-epilogue (sm_90a and newer; a no-op for older targets): sends the
// stores that hopper-layout marked `epilogue = "tma"` through a shared
// staging tile and bulk tensor copies.
//
// A consumer warpgroup writes its 64 rows of the tile to shared memory (fast,
// conflict-free in the 128-byte swizzle), and one of its threads hands them
// to the copy engine; the warpgroup goes straight on to the next tile's
// products while the copy drains. Before it overwrites the staging tile on
// the next tile, that thread waits until the previous copy has read it.
//
//   store %C, %x, %row, %col {epilogue = "tma"}
// becomes
//   tma_store_wait {pending = S - 1, read = 1} // the slot's last copy has read it
//   warpgroup_barrier
//   smem_store %slot, %x
//   fence_proxy_async                          // the writes, visible to the copy
//   warpgroup_barrier
//   tma_store %slot, %C, %row, %col
// and after the tile loop, `tma_store_wait {pending = 0, read = 0}` so that
// no copy is in flight when the block exits (after the consumers' loop over
// K for a store in it, right after the store when the consumers own a single
// tile). An accumulating store (atomic_add of an f32 tile) goes the same way
// with `tma_store {reduce = "add"}`: the copy engine adds the slot to the
// tensor.
//
// Several stores of one epilogue (an output and its pre-activation) each get
// a staging tile of their own; a warpgroup's copies for all of them are one
// sequence of bulk groups, so the wait before a slot's first rewrite in a
// tile leaves the other stores' copies of the tile in flight too.
//
// The staging tile is a buffer of its own, allocated with the pipeline's:
// `staging_cols` columns as a ring of one-panel slots. The sequence above
// runs once per panel-wide window of the tile (`first_col`), each through
// the next slot and to its own columns, waiting only for the copy that last
// read that slot. A tile split by columns between the warpgroups whose
// staging holds all of it runs the sequence once instead: each warpgroup
// writes its own columns and copies its own panels (`column_split`), so
// that it meets its barriers and fences once, not once per window of every
// warpgroup.
#include "passes/Pass.h"
#include "passes/PassUtils.h"

namespace tkc {
namespace {

using namespace ir;

/// Where the copies of `store` are drained: after the op of the kernel body
/// that holds it (a persistent tile loop, the consumers' loop over K, the
/// reducer's loop) or after the store itself, when that sits in a consumer
/// or reducer role (warpgroups that hold accumulators); else null.
Op *drainPoint(Kernel &kernel, Op &store) {
  Op &top = passes::topLevelOp(store);
  if (top.parent != &kernel.body)
    return nullptr;
  const Op *role = passes::roleOf(kernel, top);
  bool holdsAccumulators = role && (role->strAttr("role") == "consumer" || role->strAttr("role") == "reducer");
  return holdsAccumulators ? &top : nullptr;
}

/// After `last`, every copy has written its tile: none is in flight when
/// the block exits.
void drainAfter(Op &last) {
  Builder drain(*last.parent, std::next(passes::positionOf(last)));
  drain.setLoc(last.loc);
  drain.create(OpKind::TmaStoreWait, {}, {}, {{"pending", Attr(int64_t(0))}, {"read", Attr(int64_t(0))}});
}

/// Where the staging tile goes: with the other buffers, before the roles
/// begin.
std::list<std::unique_ptr<Op>>::iterator stagingPosition(Kernel &kernel) {
  auto at = kernel.body.ops.begin();
  for (auto it = kernel.body.ops.begin(); it != kernel.body.ops.end(); ++it)
    if ((*it)->kind == OpKind::SmemAlloc)
      at = std::next(it);
  return at;
}

/// The copy's box: `rows` x `cols` in the last two dims of the tensor.
std::vector<int64_t> boxOf(const Op &store, int64_t rows, int64_t cols) {
  std::vector<int64_t> box = store.listAttr("sizes");
  box[box.size() - 2] = rows;
  box[box.size() - 1] = cols;
  return box;
}

/// A tile split by columns whose staging holds all of it: one staging tile
/// of the tile's shape, written by every warpgroup at once (each its own
/// columns) and copied by each warpgroup's thread, its own panels.
void rewriteColumnSplit(Kernel &kernel, Op &store, Op &last) {
  Value *global = store.operands[0];
  Value *value = store.operands[1];
  Builder alloc(kernel.body, stagingPosition(kernel));
  alloc.setLoc(store.loc);
  Type stagingType = Type::tile(value->type.dtype, value->type.shape, MemSpace::Shared, {LayoutKind::Swizzle128, 1, 1});
  Value *staging = alloc.value(OpKind::SmemAlloc, {}, stagingType);
  staging->nameHint = "c_stage";

  Builder b(*store.parent, passes::positionOf(store));
  b.setLoc(store.loc);
  // A warpgroup makes one copy group per store: its last has been read once
  // none is pending.
  b.create(OpKind::TmaStoreWait, {}, {}, {{"pending", Attr(int64_t(0))}, {"read", Attr(int64_t(1))}});
  b.create(OpKind::WarpgroupBarrier, {}, {});
  b.create(OpKind::SmemStore, {staging, value}, {});
  b.create(OpKind::FenceProxyAsync, {}, {});
  b.create(OpKind::WarpgroupBarrier, {}, {});
  std::vector<Value *> operands{staging, global};
  operands.insert(operands.end(), store.operands.begin() + 2, store.operands.end());
  std::map<std::string, Attr> attrs{{"sizes", Attr(boxOf(store, value->type.shape[0], value->type.shape[1]))},
                                    {"column_split", Attr(int64_t(value->type.layout.warpsN))}};
  if (store.hasAttr("accumulate"))
    attrs["reduce"] = Attr(std::string("add"));
  b.create(OpKind::TmaStore, operands, {}, attrs);
  drainAfter(last); // before the store goes: `last` may be the store
  store.parent->ops.erase(passes::positionOf(store));
}

/// Windows of a marked store: its copies, one per 128-byte panel of columns.
int64_t windowsOf(const Op &store) {
  const Type &value = store.operands[1]->type;
  return value.shape[1] / (kSwizzle128RowBytes / dtypeBytes(value.dtype));
}

/// Rewrites `store`; the drain goes after `last` (see drainPoint).
/// `otherCopies` is how many copies each warpgroup issues for the other
/// stores of the block, every time the block runs (see the pass's run).
void rewrite(Kernel &kernel, Op &store, Op &last, int64_t otherCopies) {
  Value *global = store.operands[0];
  Value *value = store.operands[1];
  std::vector<Value *> offsets(store.operands.begin() + 2, store.operands.end());
  int64_t panel = kSwizzle128RowBytes / dtypeBytes(value->type.dtype);
  int64_t cols = store.intAttr("staging_cols", value->type.shape[1]);
  int64_t slots = std::max<int64_t>(1, cols / panel);
  int64_t windows = value->type.shape[1] / panel;
  const Layout &layout = value->type.layout;
  if (layout.warpsN > 1 && slots == windows)
    return rewriteColumnSplit(kernel, store, last);

  Builder alloc(kernel.body, stagingPosition(kernel));
  alloc.setLoc(store.loc);
  // The staging tile is a ring of one-panel slots: window w of the tile
  // goes through slot w % slots, so writing one window overlaps the copy
  // engine reading the ones before; a slot is rewritten once the copy that
  // last read it is done (the `slots - 1` copies issued since may still be).
  Type slotType = Type::tile(value->type.dtype, {value->type.shape[0], panel}, MemSpace::Shared,
                             {LayoutKind::Swizzle128, 1, 1});
  Type stagingType = slotType;
  if (slots > 1)
    stagingType.stages = static_cast<int>(slots);
  Value *staging = alloc.value(OpKind::SmemAlloc, {}, stagingType);
  staging->nameHint = "c_stage";

  // Before rewriting a slot, a warpgroup waits until the copy that last
  // read it is done: the `slots - 1` issued since may still be in flight,
  // and for a slot last read in the block's previous run, the other
  // stores' copies issued since too.
  int64_t pending = slots - 1;
  std::vector<int64_t> box = boxOf(store, slotType.shape[0], slotType.shape[1]);
  Builder b(*store.parent, passes::positionOf(store));
  b.setLoc(store.loc);
  for (int64_t first = 0, window = 0; first < value->type.shape[1]; first += panel, ++window) {
    Value *slot = staging;
    if (slots > 1) {
      slot = b.value(OpKind::StageView, {staging, b.constInt(window % slots)}, slotType);
      slot->nameHint = "c_slot";
    }
    int64_t since = window < slots ? pending + otherCopies : pending;
    b.create(OpKind::TmaStoreWait, {}, {}, {{"pending", Attr(since)}, {"read", Attr(int64_t(1))}});
    b.create(OpKind::WarpgroupBarrier, {}, {});
    b.create(OpKind::SmemStore, {slot, value}, {}, {{"first_col", Attr(first)}});
    b.create(OpKind::FenceProxyAsync, {}, {});
    b.create(OpKind::WarpgroupBarrier, {}, {});
    std::vector<Value *> operands{slot, global};
    operands.insert(operands.end(), offsets.begin(), offsets.end());
    if (first > 0)
      operands.back() = b.value(OpKind::Add, {offsets.back(), b.constInt(first)}, offsets.back()->type);
    std::map<std::string, Attr> attrs{{"sizes", Attr(box)}};
    if (store.hasAttr("accumulate"))
      attrs["reduce"] = Attr(std::string("add"));
    // Split by columns (#acc<4xW>), the window is one warpgroup's to copy.
    if (layout.warpsN > 1)
      attrs["warpgroup"] = Attr(first / (value->type.shape[1] / layout.warpsN));
    b.create(OpKind::TmaStore, operands, {}, attrs);
  }
  drainAfter(last); // before the store goes: `last` may be the store
  store.parent->ops.erase(passes::positionOf(store));
}

/// The copies each warpgroup issues for the stores of `store`'s block other
/// than `store`, each time the block runs: where every such store runs
/// once a run (straight-line, in one block) with its rows split between the
/// warpgroups (each warpgroup copies every window of its rows), the waits
/// before a slot's first rewrite in a run may leave that many more copies
/// in flight. Elsewhere 0, which waits for more copies than needed.
int64_t otherCopies(const std::vector<Op *> &stores, const Op &store) {
  int64_t copies = 0;
  for (const Op *other : stores) {
    if (other == &store || other->parent != store.parent)
      continue;
    if (other->operands[1]->type.layout.warpsN != 1 || store.operands[1]->type.layout.warpsN != 1)
      return 0;
    copies += windowsOf(*other);
  }
  return copies;
}

class HopperEpiloguePass : public Pass {
public:
  const char *name() const override { return "hopper-epilogue"; }
  const char *description() const override {
    return "sm_90a: store marked accumulator tiles through shared memory with bulk tensor copies";
  }
  bool run(Module &module, const Target &target, DiagnosticEngine &) override {
    if (!target.hasTensorMemoryAccelerator())
      return true;
    for (auto &kernel : module.kernels) {
      std::vector<Op *> marked;
      walk(kernel->body, [&](Op &op) {
        if (op.kind == OpKind::Store && op.strAttr("epilogue") == "tma")
          marked.push_back(&op);
      });
      std::vector<Op *> kept;
      for (Op *store : marked) {
        if (drainPoint(*kernel, *store))
          kept.push_back(store);
        else
          store->attrs.erase("epilogue"); // not warp-specialized: an ordinary store
      }
      // Counted before any store is rewritten (and erased).
      std::vector<std::pair<Op *, int64_t>> counted;
      for (Op *store : kept)
        counted.emplace_back(drainPoint(*kernel, *store), otherCopies(kept, *store));
      for (size_t i = 0; i < kept.size(); ++i)
        rewrite(*kernel, *kept[i], *counted[i].first, counted[i].second);
    }
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> createHopperEpiloguePass() { return std::make_unique<HopperEpiloguePass>(); }

} // namespace tkc
