// warp-specialize (sm_90a and newer; a no-op for older targets): gives the
// producer and consumer loops of hopper-pipeline their own warpgroups and
// makes the kernel persistent.
//
//   * Warpgroup 0 is the producer: one thread issues the bulk copies, and
//     the warpgroup gives registers back (`regs`, setmaxnreg.dec).
//     Warpgroups 1.. are the consumers and take the registers it freed. A
//     kernel with a single consumer warpgroup whose shared buffers fit
//     twice shares the multiprocessor with a second block: each block's
//     roles split half the register file (24 + 232 registers per thread),
//     and codegen bounds the kernel for two blocks.
//     `warpgroup_role` ops open each role's region; `warpgroup_role_end`
//     closes the last one.
//   * The grid becomes min(tiles, multiprocessors) blocks; each role walks
//     the output tiles t = block, block + grid, ... in a grouped order (16
//     tile rows at a time, column by column) so that blocks running together
//     share A and B panels in L2. Values computed from `block_id` are
//     recomputed per tile inside each role, and the pipeline's iteration
//     numbers continue from tile to tile (`it_base` = tiles done so far x
//     iterations per tile), so the producer runs ahead across tiles while
//     the consumers store the previous one.
//   * A kernel with tiles copied once per block (attention's query tile),
//     or whose grid uses a third dimension, keeps its grid: the roles run
//     once per block (specializeInPlace), and the register tiles set up
//     before the loops move into the consumer role, whose warps they are
//     laid out over.
#include "passes/Pass.h"
#include "passes/PassUtils.h"

#include <algorithm>
#include <list>
#include <map>
#include <set>

namespace tkc {
namespace {

using namespace ir;

constexpr int kProducerRegisters = 24;
constexpr int kMaxRegisters = 240;
constexpr int64_t kGroupRows = 16;
/// What smem-plan may add to each shared buffer to align it (a 128-byte
/// swizzled slot starts on a 1024-byte boundary).
constexpr int64_t kSharedAlignment = 1024;

Type i32() { return Type::scalar(DType::I32); }

/// Registers per consumer thread when the producer keeps its minimum and
/// `blocks` blocks share the register file.
int consumerRegisters(const Target &target, int consumerWarps, int blocks) {
  return std::min(kMaxRegisters,
                  (target.registersPerSm / blocks - 128 * kProducerRegisters) / (consumerWarps * 32) / 8 * 8);
}

class WarpSpecializer {
public:
  WarpSpecializer(Kernel &kernel, Op &producer, Op &consumer, const Target &target)
      : kernel_(kernel), producer_(producer), consumer_(consumer), target_(target) {}

  /// Whether the kernel's blocks can become a persistent loop over tiles:
  /// a 2-d grid, and no use of the third block index before the loops.
  static bool persistable(Kernel &kernel, Op &producer) {
    Op *grid = kernel.launch.ops.back().get();
    if (grid->kind != OpKind::Grid || !isOne(grid->operands[2]))
      return false;
    for (auto &op : kernel.body.ops) {
      if (op.get() == &producer)
        break;
      if (op->kind == OpKind::BlockId && op->intAttr("axis") == 2)
        return false;
    }
    return true;
  }

  bool run() {
    Block &body = kernel_.body;
    if (producer_.parent != &body || consumer_.parent != &body)
      return false;
    Op *grid = kernel_.launch.ops.back().get();
    if (grid->kind != OpKind::Grid || !isOne(grid->operands[2]))
      return false;
    // The base constant from hopper-pipeline.
    for (auto &op : body.ops)
      if (op->kind == OpKind::Const && op->result()->nameHint == "it_base")
        base_ = op->result();
    if (!base_)
      return false;
    for (auto &op : body.ops) {
      if (op.get() == &producer_)
        break;
      if (op->kind == OpKind::BlockId && op->intAttr("axis") == 2)
        return false;
    }

    // Values that must be recomputed per tile: block ids, what depends on
    // them, and tiles (each role makes its own).
    for (auto &op : body.ops) {
      if (op.get() == &producer_)
        break;
      bool perTile = op->kind == OpKind::BlockId || (op->results.size() == 1 && op->result()->type.isTile() &&
                                                     op->kind != OpKind::SmemAlloc);
      for (Value *operand : op->operands)
        perTile |= perTile_.count(operand) != 0;
      if (perTile && op->results.size() == 1)
        perTile_.insert(op->result());
    }

    Builder b(body, passes::positionOf(producer_));
    b.setLoc(producer_.loc);
    // Tile counts from the launch grid, recomputed in the body.
    std::map<Value *, Value *> launchToBody;
    for (auto &arg : kernel_.launch.args)
      for (auto &param : body.args)
        if (param->nameHint == arg->nameHint)
          launchToBody[arg.get()] = param.get();
    Value *tilesX = cloneLaunch(b, grid->operands[0], launchToBody);
    Value *tilesY = cloneLaunch(b, grid->operands[1], launchToBody);
    tilesX->nameHint = "tiles_x";
    tilesY->nameHint = "tiles_y";
    Value *tiles = b.value(OpKind::Mul, {tilesX, tilesY}, i32());
    tiles->nameHint = "tiles";
    Value *first = b.value(OpKind::BlockId, {}, i32(), {{"axis", Attr(int64_t(0))}});
    Value *stride = b.value(OpKind::GridSize, {}, i32());
    stride->nameHint = "blocks";
    Value *perTileIters = b.value(OpKind::Sub, {consumer_.operands[1], consumer_.operands[0]}, i32());
    perTileIters->nameHint = "k_iters";

    int consumerWarps = kernel_.warps - 4;
    int consumerRegs = consumerRegisters(target_, consumerWarps, 1);
    b.create(OpKind::WarpgroupRole, {}, {},
             {{"role", Attr(std::string("producer"))}, {"warpgroups", Attr(int64_t(1))},
              {"regs", Attr(int64_t(kProducerRegisters))}, {"issuers", Attr(int64_t(1))}});
    Block &producerTiles = tileLoop(b, first, tiles, stride);
    b.create(OpKind::WarpgroupRole, {}, {},
             {{"role", Attr(std::string("consumer"))}, {"warpgroups", Attr(int64_t(consumerWarps / 4))},
              {"regs", Attr(int64_t(consumerRegs))}});
    Block &consumerTiles = tileLoop(b, first, tiles, stride);
    b.create(OpKind::WarpgroupRoleEnd, {}, {});

    // Move the producer loop, and the consumer loop with everything after it.
    // The role markers and tile loops went in before the producer loop, so
    // the consumer loop and everything after it form the consumer's work.
    std::vector<Op *> consumerOps;
    bool seen = false;
    for (auto &op : body.ops) {
      seen |= op.get() == &consumer_;
      if (seen)
        consumerOps.push_back(op.get());
    }
    moveInto(producerTiles, {&producer_}, tilesX, tilesY, first, stride, perTileIters);
    moveInto(consumerTiles, consumerOps, tilesX, tilesY, first, stride, perTileIters);

    // Per-tile prelude values are recomputed inside the roles now.
    for (auto it = body.ops.end(); it != body.ops.begin();) {
      --it;
      Op &op = **it;
      if (op.results.size() == 1 && perTile_.count(op.result()) && passes::countUses(body)[op.result()] == 0)
        it = body.ops.erase(it);
    }

    // Launch: as many blocks as there are tiles, at most one per multiprocessor.
    Builder lb(kernel_.launch, passes::positionOf(*grid));
    Value *launchTiles = lb.value(OpKind::Mul, {grid->operands[0], grid->operands[1]}, i32());
    Value *sms = lb.value(OpKind::NumSms, {}, i32());
    Value *blocks = lb.value(OpKind::Min, {launchTiles, sms}, i32());
    grid->operands[0] = blocks;
    grid->operands[1] = grid->operands[2];
    return true;
  }

private:
  static bool isOne(Value *v) {
    auto c = passes::constantIntOf(v);
    return c && *c == 1;
  }

  Value *cloneLaunch(Builder &b, Value *v, std::map<Value *, Value *> &map) {
    if (auto it = map.find(v); it != map.end())
      return it->second;
    Op *def = v->definingOp;
    std::vector<Value *> operands;
    for (Value *operand : def->operands)
      operands.push_back(cloneLaunch(b, operand, map));
    Value *copy = b.value(def->kind, operands, v->type, def->attrs);
    return map[v] = copy;
  }

  Block &tileLoop(Builder &b, Value *first, Value *tiles, Value *stride) {
    Op *loop = b.create(OpKind::For, {first, tiles, stride}, {}, {{"persistent", Attr(int64_t(1))}});
    loop->body = std::make_unique<Block>();
    loop->body->parentOp = loop;
    loop->body->addArg(i32(), "tile");
    Builder(*loop->body).create(OpKind::Yield, {}, {});
    return *loop->body;
  }

  /// Moves `ops` into the tile loop body and recomputes, inside it, the
  /// per-tile prelude values they use.
  void moveInto(Block &tileBody, const std::vector<Op *> &ops, Value *tilesX, Value *tilesY, Value *first,
                Value *stride, Value *perTileIters) {
    Value *tile = tileBody.args[0].get();
    Builder b(tileBody, std::prev(tileBody.ops.end()));
    b.setLoc(producer_.loc);
    // Grouped order: tiles go down a group of kGroupRows tile rows, then on
    // to the next column; groups follow each other.
    Value *group = b.constInt(kGroupRows);
    Value *perGroup = b.value(OpKind::Mul, {group, tilesX}, i32());
    Value *g = b.value(OpKind::Div, {tile, perGroup}, i32());
    Value *firstRow = b.value(OpKind::Mul, {g, group}, i32());
    Value *rowsLeft = b.value(OpKind::Sub, {tilesY, firstRow}, i32());
    Value *rows = b.value(OpKind::Min, {rowsLeft, group}, i32());
    Value *inGroup = b.value(OpKind::Rem, {tile, perGroup}, i32());
    Value *inRow = b.value(OpKind::Rem, {inGroup, rows}, i32());
    Value *tileY = b.value(OpKind::Add, {firstRow, inRow}, i32());
    tileY->nameHint = "tile_y";
    Value *tileX = b.value(OpKind::Div, {inGroup, rows}, i32());
    tileX->nameHint = "tile_x";
    Value *done = b.value(OpKind::Sub, {tile, first}, i32());
    Value *doneTiles = b.value(OpKind::Div, {done, stride}, i32());
    Value *base = b.value(OpKind::Mul, {doneTiles, perTileIters}, i32());
    base->nameHint = "it_base";

    std::map<Value *, Value *> cloned;
    auto moveOp = [&](Op *op) {
      Block &from = *op->parent;
      auto it = passes::positionOf(*op);
      tileBody.ops.splice(std::prev(tileBody.ops.end()), from.ops, it);
      op->parent = &tileBody;
    };
    for (Op *op : ops)
      moveOp(op);
    // Values used inside, defined per tile in the prelude: clone them in.
    std::vector<Value *> needed;
    std::set<Value *> seen;
    walk(tileBody, [&](Op &op) {
      for (Value *operand : op.operands)
        if (perTile_.count(operand) && seen.insert(operand).second)
          needed.push_back(operand);
    });
    Builder front(tileBody, std::next(passes::positionOf(*base->definingOp)));
    front.setLoc(producer_.loc);
    for (Value *v : needed) {
      Value *copy = clonePerTile(front, v, tileX, tileY, cloned);
      replaceAllUsesIn(tileBody, v, copy);
    }
    replaceAllUsesIn(tileBody, base_, base);
  }

  Value *clonePerTile(Builder &b, Value *v, Value *tileX, Value *tileY, std::map<Value *, Value *> &cloned) {
    if (!perTile_.count(v))
      return v;
    if (auto it = cloned.find(v); it != cloned.end())
      return it->second;
    Op *def = v->definingOp;
    if (def->kind == OpKind::BlockId)
      return cloned[v] = def->intAttr("axis") == 0 ? tileX : tileY;
    std::vector<Value *> operands;
    for (Value *operand : def->operands)
      operands.push_back(clonePerTile(b, operand, tileX, tileY, cloned));
    b.setLoc(def->loc);
    Value *copy = b.value(def->kind, operands, v->type, def->attrs);
    copy->nameHint = v->nameHint;
    return cloned[v] = copy;
  }

  Kernel &kernel_;
  Op &producer_;
  Op &consumer_;
  const Target &target_;
  Value *base_ = nullptr;
  std::set<Value *> perTile_;
};

/// Blocks of the kernel that share a multiprocessor: as many as intended
/// for its consumers where the shared buffers allocated fit that many times
/// (hopper-layout sized the pipeline for it), else one.
int blocksPerMultiprocessor(Kernel &kernel, const Target &target) {
  int blocks = intendedBlocksPerSm(kernel.warps - 4);
  if (blocks == 1)
    return 1;
  int64_t bytes = 0;
  walk(kernel.body, [&](Op &op) {
    if (op.kind == OpKind::SmemAlloc)
      bytes += passes::sharedBufferBytes(op.result()->type) + kSharedAlignment;
  });
  return bytes <= target.sharedMemoryPerBlock(blocks) ? blocks : 1;
}

/// The roles without a persistent tile loop: the producer's ops (those
/// marked `role = "producer"`, from the first one on) go to warpgroup 0;
/// every other op from there on, and the register tiles set up before it,
/// go to the consumers. Scalars and shared buffers set up before stay
/// common to both.
void specializeInPlace(Kernel &kernel, Op &producer, const Target &target) {
  Block &body = kernel.body;
  auto first = std::find_if(body.ops.begin(), body.ops.end(),
                            [](const std::unique_ptr<Op> &op) { return op->strAttr("role") == "producer"; });
  std::vector<Op *> producerOps, consumerOps, registerTiles;
  for (auto it = body.ops.begin(); it != first; ++it)
    if ((*it)->results.size() == 1 && (*it)->result()->type.isRegister() && (*it)->result()->type.isTile())
      registerTiles.push_back(it->get());
  for (auto it = first; it != body.ops.end(); ++it)
    ((*it)->strAttr("role") == "producer" ? producerOps : consumerOps).push_back(it->get());
  consumerOps.insert(consumerOps.begin(), registerTiles.begin(), registerTiles.end());

  std::list<std::unique_ptr<Op>> moved;
  auto take = [&](Op *op) { moved.splice(moved.end(), body.ops, passes::positionOf(*op)); };
  Builder marks(body);
  marks.setLoc(producer.loc);
  int consumerWarps = kernel.warps - 4;
  int consumerRegs = consumerRegisters(target, consumerWarps, blocksPerMultiprocessor(kernel, target));
  Op *producerRole = marks.create(OpKind::WarpgroupRole, {}, {},
                                  {{"role", Attr(std::string("producer"))}, {"warpgroups", Attr(int64_t(1))},
                                   {"regs", Attr(int64_t(kProducerRegisters))}, {"issuers", Attr(int64_t(1))}});
  take(producerRole);
  for (Op *op : producerOps)
    take(op);
  Op *consumerRole = marks.create(OpKind::WarpgroupRole, {}, {},
                                  {{"role", Attr(std::string("consumer"))},
                                   {"warpgroups", Attr(int64_t(consumerWarps / 4))},
                                   {"regs", Attr(int64_t(consumerRegs))}});
  take(consumerRole);
  for (Op *op : consumerOps)
    take(op);
  Op *end = marks.create(OpKind::WarpgroupRoleEnd, {}, {});
  take(end);
  body.ops.splice(body.ops.end(), moved);
  for (auto &op : body.ops)
    op->parent = &body;
}

class WarpSpecializePass : public Pass {
public:
  const char *name() const override { return "warp-specialize"; }
  const char *description() const override {
    return "sm_90a: run producer and consumer loops in their own warpgroups with setmaxnreg, over a persistent grid";
  }
  bool run(Module &module, const Target &target, DiagnosticEngine &diags) override {
    if (target.computeCapability < 90)
      return true;
    for (auto &kernel : module.kernels) {
      Op *producer = nullptr, *consumer = nullptr;
      for (auto &op : kernel->body.ops) {
        if (op->kind != OpKind::For)
          continue;
        if (op->strAttr("role") == "producer")
          producer = op.get();
        if (op->strAttr("role") == "consumer")
          consumer = op.get();
      }
      if (!producer || !consumer)
        continue;
      bool copiesOnce = false;
      for (auto &op : kernel->body.ops)
        copiesOnce |= op.get() != producer && op->strAttr("role") == "producer";
      // Blocks that copy tiles once (or whose grid is not one tile per
      // block along x and y) keep their grid: the roles run once per block.
      if (copiesOnce || !WarpSpecializer::persistable(*kernel, *producer)) {
        specializeInPlace(*kernel, *producer, target);
        continue;
      }
      if (!WarpSpecializer(*kernel, *producer, *consumer, target).run()) {
        diags.report(producer->loc, DiagId::UnsupportedOnTarget, "this producer/consumer loop structure",
                     target.name);
        return false;
      }
    }
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> createWarpSpecializePass() { return std::make_unique<WarpSpecializePass>(); }

} // namespace tkc
