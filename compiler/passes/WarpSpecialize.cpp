// warp-specialize (sm_90a and newer; a no-op for older targets): gives the
// producer and consumer loops of hopper-pipeline their own warpgroups and
// makes the kernel persistent.
//
//   * Warpgroup 0 is the producer: one thread issues the bulk copies (one
//     warp, `issuers = 32`, where it also copies vectors, each lane its
//     share), and the warpgroup gives registers back (`regs`,
//     setmaxnreg.dec).
//     Warpgroups 1.. are the consumers and take the registers it freed. A
//     kernel with a single consumer warpgroup whose shared buffers fit
//     twice shares the multiprocessor with a second block: each block's
//     roles split half the register file (24 + 232 registers per thread),
//     and codegen bounds the kernel for two blocks.
//     `warpgroup_role` ops open each role's region; `warpgroup_role_end`
//     closes the last one.
//   * The grid becomes min(tiles, blocks the multiprocessors hold at once);
//     each role walks the output tiles t = block, block + grid, ... in a
//     grouped order (16 tile rows at a time, column by column) so that
//     blocks running together share A and B panels in L2. Values computed
//     from `block_id` are recomputed per tile inside each role, and the
//     pipeline's iteration numbers continue from tile to tile (`it_base` =
//     tiles done so far x iterations per tile, or a running count where
//     the tiles' iterations differ), so the producer runs ahead across
//     tiles while the consumers store the previous one.
//   * A kernel with tiles copied once per block (attention's query tile)
//     keeps its grid unless the source asks for `persistent(...)`: the roles
//     run once per block (specializeInPlace), and the register tiles set up
//     before the loops move into the consumer role, whose warps they are
//     laid out over. Asked, it becomes persistent too. When every tile
//     takes the same number of iterations, its tiles go in launch order (x
//     fastest, then y, then z); when their numbers differ (attention under
//     a causal mask), each role carries the iteration number from tile to
//     tile, and the tiles go x slowest within groups of heads, every other
//     round backwards, which keeps a static round-robin balanced where the
//     source numbers x from the longest tiles to the shortest. The
//     producer copies each tile's resident tiles on the `once`
//     barrier, now with one phase per tile, after the consumers have
//     released the previous tile's on a barrier of their own (`once_empty`:
//     right after their loop, or once the products in flight after it are
//     done where those read the tiles), so that the next tile's copies
//     overlap the current tile's last products and stores; where shared
//     memory has room, the resident tiles take two slots, alternating by
//     tile, so that the copies overlap the whole tile. The consumer
//     warpgroups' turns at issuing (hopper-pipeline) run on from tile to
//     tile, so that the first warpgroup starts the next tile while the
//     others finish this one. (Whether that pays
//     depends on the schedule and the sizes: on the H200 the attention
//     forward at D = 128 gains 2.5-6% up to 2k keys and about 1% at 4k,
//     and loses 1-2% at 8k-16k; under the causal mask, at D = 64 it gains
//     2.4-7.6% up to 8k keys and 1% at 16k, at D = 128 it moved by -3 to
//     +3.6% in two runs (-2% at 16k in both), and the backward's dK/dV
//     kernel gains 2-5%; hence a hint.)
//   * `persistent(0)` keeps any kernel's grid.
#include "ir/Registers.h"
#include "passes/Pass.h"
#include "passes/PassUtils.h"

#include <algorithm>
#include <functional>
#include <list>
#include <map>
#include <set>

namespace tkc {
namespace {

using namespace ir;

constexpr int kProducerRegisters = 24;
constexpr int kMaxRegisters = 240;
constexpr int64_t kGroupRows = 16;
/// Tiles of each head that a round of a persistent kernel whose tiles vary
/// in length takes at once (see balancedOrder).
constexpr int64_t kTilesPerHeadPerRound = 2;

Type i32() { return Type::scalar(DType::I32); }

/// The producer's issuing threads: one, or a whole warp where its loop
/// copies vectors (`warp_copy`), whose lanes share the elements.
int64_t producerIssuers(Op &producerLoop) {
  bool warpCopies = false;
  walk(*producerLoop.body, [&](Op &op) { warpCopies |= op.kind == OpKind::WarpCopy; });
  return warpCopies ? Target::kWarpSize : 1;
}

/// Registers per consumer thread when the producer keeps its minimum and
/// `blocks` blocks share the register file.
int consumerRegisters(const Target &target, int consumerWarps, int blocks) {
  return std::min(kMaxRegisters,
                  (target.registersPerSm / blocks - Target::kWarpgroupThreads * kProducerRegisters) /
                      (consumerWarps * Target::kWarpSize) / 8 * 8);
}

/// The shared bytes the kernel will need: its buffers, counted one after
/// the other, each aligned as smem-plan aligns it (the most smem-plan's
/// first fit can need, as it never places a buffer above the end of those
/// before it), and the staging tiles hopper-epilogue will add for the
/// stores marked for it.
int64_t plannedSharedBytes(Kernel &kernel) {
  int64_t end = 0;
  walk(kernel.body, [&](Op &op) {
    if (passes::definesSharedBuffer(op))
      end = passes::alignUp(end, passes::sharedAlignmentOf(op.result()->type)) +
            passes::sharedBufferBytes(op.result()->type);
    if (op.kind == OpKind::Store && op.strAttr("epilogue") == "tma")
      end = passes::alignUp(end, 1024) + passes::epilogueStagingBytes(op);
  });
  return end;
}

/// Blocks of the kernel that share a multiprocessor: as many as intended
/// for its consumers where its shared bytes fit that many times
/// (hopper-layout sized the pipeline for it) and no register tile takes a
/// thread's whole share of the register file at that many blocks, else one.
/// ptxas compiles each instruction to the launch bound's share (128
/// registers a thread for two blocks of 256 threads) even after setmaxnreg
/// raised the consumers' count: the wgmma that writes a 64 x 256 f32
/// accumulator, 128 registers a thread, then does not compile ("Insufficient
/// registers"), while tiles of fewer registers each may add up to more (the
/// attention backward's dK/dV kernel at D = 128 uses 249 without spills).
int blocksPerMultiprocessor(Kernel &kernel, const Target &target) {
  int blocks = intendedBlocksPerSm(kernel.warps - 4);
  if (blocks == 1)
    return 1;
  int64_t threadShare = target.registersPerSm / (int64_t(blocks) * kernel.warps * Target::kWarpSize);
  int64_t largest = 0;
  walk(kernel.body, [&](Op &op) {
    for (auto &r : op.results)
      largest = std::max(largest, ir::threadRegisters(r->type));
  });
  if (largest >= threadShare)
    return 1;
  return plannedSharedBytes(kernel) <= target.sharedMemoryPerBlock(blocks) ? blocks : 1;
}

/// The grid's tiles along x, y and z (z only for kernels with resident
/// tiles; a GEMM's grid is 2-d), and in all.
struct TileCounts {
  Value *x = nullptr, *y = nullptr, *z = nullptr, *all = nullptr;
};

/// One tile's coordinates (z null where the grid is 2-d).
struct TileIds {
  Value *x = nullptr, *y = nullptr, *z = nullptr;
};

class WarpSpecializer {
public:
  WarpSpecializer(Kernel &kernel, Op &producer, Op &consumer, const Target &target)
      : kernel_(kernel), producer_(producer), consumer_(consumer), target_(target) {}

  /// Finds the pieces the persistent form needs; false if the kernel's
  /// structure is not the one hopper-pipeline makes.
  bool analyze() {
    Block &body = kernel_.body;
    if (producer_.parent != &body || consumer_.parent != &body)
      return false;
    grid_ = kernel_.launch.ops.back().get();
    if (grid_->kind != OpKind::Grid)
      return false;
    // The base constant from hopper-pipeline.
    for (auto &op : body.ops)
      if (op->kind == OpKind::Const && op->result()->nameHint == "it_base")
        base_ = op->result();
    if (!base_)
      return false;
    // Values that must be recomputed per tile: block ids, what depends on
    // them, and tiles (each role makes its own); and the resident copies.
    for (auto &op : body.ops) {
      if (op.get() == &producer_)
        break;
      if (op->strAttr("role") == "producer")
        onceCopies_.push_back(op.get());
      bool perTile = op->kind == OpKind::BlockId || (op->results.size() == 1 && op->result()->type.isTile() &&
                                                     op->kind != OpKind::SmemAlloc);
      for (Value *operand : op->operands)
        perTile |= perTile_.count(operand) != 0;
      if (perTile && op->results.size() == 1)
        perTile_.insert(op->result());
    }
    if (!onceCopies_.empty()) {
      once_ = onceCopies_.front()->operands[0];
      for (auto it = std::next(passes::positionOf(producer_)); it != body.ops.end() && !onceWait_; ++it)
        if ((*it)->kind == OpKind::MbarrierWait && (*it)->operands[0] == once_)
          onceWait_ = it->get();
      for (auto &op : body.ops)
        if (op->kind == OpKind::MbarrierInit && op->operands[0] == once_)
          onceInit_ = op.get();
    }
    return onceCopies_.empty() || (onceWait_ && onceInit_);
  }

  /// Whether the blocks can become a persistent loop over tiles: a grid of
  /// one tile per block along x and y, or, for kernels with resident tiles
  /// (which the source must ask for), along x, y and z with the same
  /// iterations for every tile. Otherwise `whyNot` says what stands in the way.
  bool persistable(std::string &whyNot) const {
    if (kernel_.persistent == 0)
      return false;
    if (onceCopies_.empty()) {
      whyNot = "the grid is not one output tile per block along x and y";
      if (!isOne(grid_->operands[2]))
        return false;
      for (auto &op : kernel_.body.ops) {
        if (op.get() == &producer_)
          break;
        if (op->kind == OpKind::BlockId && op->intAttr("axis") == 2)
          return false;
      }
      return true;
    }
    return kernel_.persistent == 1;
  }

  /// Whether the consumer loop's bounds depend on the tile (attention's
  /// causal loop stops at the diagonal).
  bool iterationsVary() const {
    return perTile_.count(consumer_.operands[0]) || perTile_.count(consumer_.operands[1]);
  }

  void run() {
    Block &body = kernel_.body;
    Op *grid = grid_;
    Builder b(body, passes::positionOf(producer_));
    b.setLoc(producer_.loc);
    // Tile counts from the launch grid, recomputed in the body.
    std::map<Value *, Value *> launchToBody;
    for (auto &arg : kernel_.launch.args)
      for (auto &param : body.args)
        if (param->nameHint == arg->nameHint)
          launchToBody[arg.get()] = param.get();
    // (A kernel parameter used as a count keeps its name.)
    auto tileCount = [&](Value *extent, const char *name) {
      Value *v = cloneLaunch(b, extent, launchToBody);
      if (v->definingOp)
        v->nameHint = name;
      return v;
    };
    TileCounts counts;
    counts.x = tileCount(grid->operands[0], "tiles_x");
    counts.y = tileCount(grid->operands[1], "tiles_y");
    counts.all = b.value(OpKind::Mul, {counts.x, counts.y}, i32());
    if (!onceCopies_.empty()) {
      counts.z = tileCount(grid->operands[2], "tiles_z");
      counts.all = b.value(OpKind::Mul, {counts.all, counts.z}, i32());
    }
    counts.all->nameHint = "tiles";
    Value *first = b.value(OpKind::BlockId, {}, i32(), {{"axis", Attr(int64_t(0))}});
    Value *stride = b.value(OpKind::GridSize, {}, i32());
    stride->nameHint = "blocks";
    // With the same iterations in every tile, a tile's first iteration
    // number is a product; otherwise each role carries a running count.
    Value *perTileIters = nullptr;
    if (!iterationsVary()) {
      perTileIters = b.value(OpKind::Sub, {consumer_.operands[1], consumer_.operands[0]}, i32());
      perTileIters->nameHint = "k_iters";
    }
    Value *zero = perTileIters ? nullptr : b.constInt(0);

    int consumerWarps = kernel_.warps - 4;
    int blocks = blocksPerMultiprocessor(kernel_, target_);
    int consumerRegs = consumerRegisters(target_, consumerWarps, blocks);
    b.create(OpKind::WarpgroupRole, {}, {},
             {{"role", Attr(std::string("producer"))}, {"warpgroups", Attr(int64_t(1))},
              {"regs", Attr(int64_t(kProducerRegisters))}, {"issuers", Attr(producerIssuers(producer_))}});
    Block &producerTiles = tileLoop(b, first, counts.all, stride, zero);
    b.create(OpKind::WarpgroupRole, {}, {},
             {{"role", Attr(std::string("consumer"))}, {"warpgroups", Attr(int64_t(consumerWarps / 4))},
              {"regs", Attr(int64_t(consumerRegs))}});
    Block &consumerTiles = tileLoop(b, first, counts.all, stride, zero);
    b.create(OpKind::WarpgroupRoleEnd, {}, {});

    // Move the producer loop, and the consumer loop with everything after it.
    // The role markers and tile loops went in before the producer loop, so
    // the consumer loop and everything after it form the consumer's work.
    // With resident tiles, what sits between the two loops (the wait for
    // them) belongs to the consumers too.
    std::vector<Op *> consumerOps;
    bool seen = false;
    bool afterProducer = false;
    for (auto &op : body.ops) {
      seen |= onceCopies_.empty() ? op.get() == &consumer_ : afterProducer;
      afterProducer |= op.get() == &producer_;
      if (seen)
        consumerOps.push_back(op.get());
    }
    std::vector<Op *> producerOps = onceCopies_;
    producerOps.push_back(&producer_);
    Value *producerDone = moveInto(producerTiles, producerOps, producer_, counts, first, stride, perTileIters);
    Value *consumerDone = moveInto(consumerTiles, consumerOps, consumer_, counts, first, stride, perTileIters);
    if (!onceCopies_.empty()) {
      Value *released = releaseResidentTiles(producerDone, consumerDone);
      residentTilesInTwoSlots(consumerDone, released, blocks);
    }
    continueTurnsAcrossTiles(consumerTiles);

    // Per-tile prelude values are recomputed inside the roles now.
    for (auto it = body.ops.end(); it != body.ops.begin();) {
      --it;
      Op &op = **it;
      if (op.results.size() == 1 && perTile_.count(op.result()) && passes::countUses(body)[op.result()] == 0)
        it = body.ops.erase(it);
    }

    // Launch: as many blocks as there are tiles, at most as many as share
    // the multiprocessors.
    Builder lb(kernel_.launch, passes::positionOf(*grid));
    Value *launchTiles = lb.value(OpKind::Mul, {grid->operands[0], grid->operands[1]}, i32());
    if (!onceCopies_.empty())
      launchTiles = lb.value(OpKind::Mul, {launchTiles, grid->operands[2]}, i32());
    Value *sms = lb.value(OpKind::NumSms, {}, i32());
    if (blocks > 1)
      sms = lb.value(OpKind::Mul, {sms, lb.constInt(blocks)}, i32());
    grid->operands[0] = lb.value(OpKind::Min, {launchTiles, sms}, i32());
    grid->operands[1] = onceCopies_.empty() ? grid->operands[2] : lb.constInt(1);
    grid->operands[2] = grid->operands[1];
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

  /// A loop over this block's tiles; with `firstIteration`, it carries the
  /// pipeline's iteration number at the start of each tile (`it_base`).
  Block &tileLoop(Builder &b, Value *first, Value *tiles, Value *stride, Value *firstIteration) {
    std::vector<Value *> operands = {first, tiles, stride};
    std::vector<Type> results;
    if (firstIteration) {
      operands.push_back(firstIteration);
      results.push_back(i32());
    }
    Op *loop = b.create(OpKind::For, operands, results, {{"persistent", Attr(int64_t(1))}});
    if (firstIteration)
      loop->result()->nameHint = "it_end";
    loop->body = std::make_unique<Block>();
    loop->body->parentOp = loop;
    loop->body->addArg(i32(), "tile");
    if (firstIteration)
      loop->body->addArg(i32(), "it_base");
    Builder(*loop->body).create(OpKind::Yield, {}, {});
    return *loop->body;
  }

  /// A GEMM's tiles in grouped order: down a group of kGroupRows tile rows,
  /// then on to the next column; groups follow each other.
  TileIds groupedOrder(Builder &b, Value *tile, const TileCounts &counts) {
    Value *group = b.constInt(kGroupRows);
    Value *perGroup = b.value(OpKind::Mul, {group, counts.x}, i32());
    Value *g = b.value(OpKind::Div, {tile, perGroup}, i32());
    Value *firstRow = b.value(OpKind::Mul, {g, group}, i32());
    Value *rowsLeft = b.value(OpKind::Sub, {counts.y, firstRow}, i32());
    Value *rows = b.value(OpKind::Min, {rowsLeft, group}, i32());
    Value *inGroup = b.value(OpKind::Rem, {tile, perGroup}, i32());
    Value *inRow = b.value(OpKind::Rem, {inGroup, rows}, i32());
    TileIds ids;
    ids.y = b.value(OpKind::Add, {firstRow, inRow}, i32());
    ids.x = b.value(OpKind::Div, {inGroup, rows}, i32());
    return ids;
  }

  /// Tiles of equal length in launch order (x fastest, then y, then z):
  /// blocks running together share the K and V of one (batch, head), as a
  /// grid of one tile per block would.
  TileIds launchOrder(Builder &b, Value *tile, const TileCounts &counts) {
    TileIds ids;
    ids.x = b.value(OpKind::Rem, {tile, counts.x}, i32());
    Value *rest = b.value(OpKind::Div, {tile, counts.x}, i32());
    ids.y = b.value(OpKind::Rem, {rest, counts.y}, i32());
    ids.z = b.value(OpKind::Div, {rest, counts.y}, i32());
    return ids;
  }

  /// Tiles of different lengths, x slowest within a group of heads (y, z),
  /// so that where the source numbers x from the longest tiles to the
  /// shortest (attention's causal query tiles) a round of `blocks` tiles
  /// takes tiles of about the same length. Odd rounds that are full go
  /// backwards, so that the blocks that took the longest tiles of one round
  /// take the shortest of the next. A group has blocks /
  /// kTilesPerHeadPerRound heads, so that the K and V that the blocks read
  /// at once come from that many heads and stay in L2. (A launch-order
  /// round-robin can give a block the same x every time, 132 blocks over 11
  /// or 12 x; with x slowest over all heads, the causal forward at D = 128
  /// and 1k-2k keys ran 8-11% slower on the H200 than with these groups,
  /// which read K and V from L2.)
  TileIds balancedOrder(Builder &b, Value *tile, Value *round, Value *stride, const TileCounts &counts) {
    Value *roundStart = b.value(OpKind::Mul, {round, stride}, i32());
    Value *roundEnd = b.value(OpKind::Add, {roundStart, stride}, i32());
    Value *odd = b.value(OpKind::Eq, {b.value(OpKind::Rem, {round, b.constInt(2)}, i32()), b.constInt(1)},
                         Type::scalar(DType::I1));
    Value *full = b.value(OpKind::Le, {roundEnd, counts.all}, Type::scalar(DType::I1));
    Value *backwards = b.value(OpKind::And, {odd, full}, Type::scalar(DType::I1));
    Value *mirrored = b.value(OpKind::Sub, {b.value(OpKind::Add, {roundStart, roundEnd}, i32()), tile}, i32());
    mirrored = b.value(OpKind::Sub, {mirrored, b.constInt(1)}, i32());
    Value *order = b.value(OpKind::Select, {backwards, mirrored, tile}, i32());
    order->nameHint = "tile_order";
    Value *heads = b.value(OpKind::Mul, {counts.y, counts.z}, i32());
    Value *group = b.value(OpKind::Max, {b.value(OpKind::Div, {stride, b.constInt(kTilesPerHeadPerRound)}, i32()),
                                         b.constInt(1)},
                           i32());
    group->nameHint = "head_group";
    Value *groupTiles = b.value(OpKind::Mul, {group, counts.x}, i32());
    Value *g = b.value(OpKind::Div, {order, groupTiles}, i32());
    Value *inGroup = b.value(OpKind::Rem, {order, groupTiles}, i32());
    Value *firstHead = b.value(OpKind::Mul, {g, group}, i32());
    Value *groupHeads =
        b.value(OpKind::Min, {group, b.value(OpKind::Sub, {heads, firstHead}, i32())}, i32());
    TileIds ids;
    ids.x = b.value(OpKind::Div, {inGroup, groupHeads}, i32());
    Value *head = b.value(OpKind::Add, {firstHead, b.value(OpKind::Rem, {inGroup, groupHeads}, i32())}, i32());
    ids.y = b.value(OpKind::Rem, {head, counts.y}, i32());
    ids.z = b.value(OpKind::Div, {head, counts.y}, i32());
    return ids;
  }

  /// Moves `ops` into the tile loop body and recomputes, inside it, the
  /// per-tile prelude values they use. Returns the number of tiles the
  /// block has finished before this one.
  Value *moveInto(Block &tileBody, const std::vector<Op *> &ops, Op &pipelineLoop, const TileCounts &counts,
                  Value *first, Value *stride, Value *perTileIters) {
    Value *tile = tileBody.args[0].get();
    Builder b(tileBody, std::prev(tileBody.ops.end()));
    b.setLoc(producer_.loc);
    Value *doneTiles = nullptr;
    auto tilesDone = [&] {
      if (!doneTiles) {
        Value *done = b.value(OpKind::Sub, {tile, first}, i32());
        doneTiles = b.value(OpKind::Div, {done, stride}, i32());
      }
      return doneTiles;
    };
    TileIds ids = onceCopies_.empty() ? groupedOrder(b, tile, counts)
                  : perTileIters       ? launchOrder(b, tile, counts)
                                       : balancedOrder(b, tile, tilesDone(), stride, counts);
    Value *tileX = ids.x, *tileY = ids.y, *tileZ = ids.z;
    if (tileZ)
      tileZ->nameHint = "tile_z";
    tileY->nameHint = "tile_y";
    tileX->nameHint = "tile_x";
    tilesDone();
    Value *base = tileBody.args.size() > 1 ? tileBody.args[1].get() : nullptr;
    if (perTileIters) {
      base = b.value(OpKind::Mul, {doneTiles, perTileIters}, i32());
      base->nameHint = "it_base";
    }

    Op *lastPrelude = std::prev(tileBody.ops.end(), 2)->get();
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
    Builder front(tileBody, std::next(passes::positionOf(*lastPrelude)));
    front.setLoc(producer_.loc);
    // A 2-d grid's z index is 0 (made only if something reads it).
    Value *tileIds[3] = {tileX, tileY, tileZ};
    auto tileId = [&](int64_t axis) {
      if (!tileIds[axis])
        tileIds[axis] = front.constInt(0);
      return tileIds[axis];
    };
    // Block ids among the moved ops (the loops' address arithmetic, the
    // stores after them) name the tile too.
    std::vector<Op *> blockIds;
    walk(tileBody, [&](Op &op) {
      if (op.kind == OpKind::BlockId)
        blockIds.push_back(&op);
    });
    for (Op *id : blockIds) {
      replaceAllUsesIn(tileBody, id->result(), tileId(id->intAttr("axis")));
      passes::eraseOp(*id);
    }
    for (Value *v : needed) {
      Value *copy = clonePerTile(front, v, tileId, cloned);
      replaceAllUsesIn(tileBody, v, copy);
    }
    replaceAllUsesIn(tileBody, base_, base);
    if (!perTileIters) {
      // The next tile starts where this one's iterations end.
      Op &yield = *tileBody.ops.back();
      Builder end(tileBody, passes::positionOf(yield));
      end.setLoc(pipelineLoop.loc);
      Value *iterations = end.value(OpKind::Sub, {pipelineLoop.operands[1], pipelineLoop.operands[0]}, i32());
      iterations = end.value(OpKind::Max, {iterations, end.constInt(0)}, i32());
      Value *next = end.value(OpKind::Add, {base, iterations}, i32());
      next->nameHint = "it_next";
      yield.operands = {next};
    }
    return doneTiles;
  }

  Value *clonePerTile(Builder &b, Value *v, const std::function<Value *(int64_t)> &tileId,
                      std::map<Value *, Value *> &cloned) {
    if (!perTile_.count(v))
      return v;
    if (auto it = cloned.find(v); it != cloned.end())
      return it->second;
    Op *def = v->definingOp;
    if (def->kind == OpKind::BlockId)
      return cloned[v] = tileId(def->intAttr("axis"));
    std::vector<Value *> operands;
    for (Value *operand : def->operands)
      operands.push_back(clonePerTile(b, operand, tileId, cloned));
    b.setLoc(def->loc);
    Value *copy = b.value(def->kind, operands, v->type, def->attrs);
    copy->nameHint = v->nameHint;
    return cloned[v] = copy;
  }

  /// The resident tiles get one copy per tile: the producer waits until
  /// the consumers have released the previous tile's (the first wait passes
  /// at once), and copies on phase `done` of `once`; the consumers wait for
  /// that phase and release the tiles once the products still in flight
  /// after their loop (which may read them) are done. Returns the
  /// barrier they release them on (`once_empty`).
  Value *releaseResidentTiles(Value *producerDone, Value *consumerDone) {
    Block &body = kernel_.body;
    Builder init(body, std::next(passes::positionOf(*onceInit_)));
    init.setLoc(onceInit_->loc);
    Builder alloc(body, passes::positionOf(*once_->definingOp));
    alloc.setLoc(once_->definingOp->loc);
    Value *released = alloc.value(OpKind::SmemAlloc, {}, once_->type);
    released->nameHint = "once_empty";
    int consumerWarps = kernel_.warps - 4;
    init.create(OpKind::MbarrierInit, {released}, {}, {{"count", Attr(int64_t(consumerWarps))}});

    Builder wait(*onceCopies_.front()->parent, passes::positionOf(*onceCopies_.front()));
    wait.setLoc(onceCopies_.front()->loc);
    wait.create(OpKind::MbarrierWait, {released, producerDone}, {}, {{"release", Attr(int64_t(1))}});
    for (Op *copy : onceCopies_) {
      copy->operands[1] = producerDone;
      copy->attrs.erase("role");
    }
    onceWait_->operands[1] = consumerDone;
    Block &tile = *consumer_.parent;
    auto at = std::next(passes::positionOf(consumer_));
    auto drained = std::find_if(at, tile.ops.end(), [](const std::unique_ptr<Op> &op) {
      return op->kind == OpKind::WgmmaWait && op->intAttr("pending") == 0;
    });
    bool readLater = residentTilesReadAfterLoop();
    Builder after(tile, drained == tile.ops.end() || !readLater ? at : std::next(drained));
    after.setLoc(consumer_.loc);
    Value *always = after.value(OpKind::Const, {}, Type::scalar(DType::I1), {{"value", Attr(int64_t(1))}});
    after.create(OpKind::MbarrierArrive, {released, consumerDone, always}, {});
    return released;
  }

  /// Where shared memory has room for a second copy of the resident tiles,
  /// they alternate between two slots by tile (as do `once` and
  /// `once_empty`): the producer copies the next tile's into the other slot
  /// while the consumers still read this one's, instead of after they
  /// release it, whose wait the consumers would otherwise meet at the start
  /// of each tile.
  void residentTilesInTwoSlots(Value *consumerDone, Value *released, int blocks) {
    std::set<Value *> buffers;
    int64_t extra = 0;
    for (Op *copy : onceCopies_)
      if (copy->kind == OpKind::TmaLoad && buffers.insert(copy->operands[0]).second)
        extra += passes::sharedBufferBytes(copy->operands[0]->type);
    if (plannedSharedBytes(kernel_) + extra + Target::kReservedSharedBytes > target_.sharedMemoryPerBlock(blocks))
      return;
    for (Value *buffer : buffers)
      buffer->type.stages = 2;
    for (Value *barrier : {once_, released})
      barrier->type.shape[0] = 2;
    std::vector<Op *> views;
    walk(kernel_.body, [&](Op &op) {
      if (op.kind == OpKind::StageView && buffers.count(op.operands[0]))
        views.push_back(&op);
    });
    for (Op *view : views) {
      Builder at(*view->parent, passes::positionOf(*view));
      at.setLoc(view->loc);
      view->operands[1] = at.value(OpKind::Rem, {consumerDone, at.constInt(2)}, i32());
    }
  }

  /// Whether the resident tiles may still be read once the consumer loop
  /// has ended: by a product in flight across its end (issued in the body
  /// and not waited for there) or by anything after it. If not, the
  /// consumers release them right after the loop rather than after the
  /// products in flight, so that the producer copies the next tile's while
  /// they drain and store this one.
  bool residentTilesReadAfterLoop() const {
    std::set<Value *> buffers;
    for (Op *copy : onceCopies_)
      if (copy->kind == OpKind::TmaLoad)
        buffers.insert(copy->operands[0]);
    auto readsResident = [&](const Op &op) {
      return std::any_of(op.operands.begin(), op.operands.end(), [&](Value *v) {
        return buffers.count(v) || (v->definingOp && v->definingOp->kind == OpKind::StageView &&
                                    buffers.count(v->definingOp->operands[0]));
      });
    };
    Block &body = *consumer_.body;
    std::set<Value *> waited;
    walk(body, [&](Op &op) {
      if (op.kind == OpKind::WgmmaWait)
        waited.insert(op.operands.begin(), op.operands.end());
    });
    bool later = false;
    walk(body, [&](Op &op) {
      later |= op.kind == OpKind::Wgmma && !waited.count(op.result()) && readsResident(op);
    });
    Block &tile = *consumer_.parent;
    for (auto it = std::next(passes::positionOf(consumer_)); it != tile.ops.end(); ++it) {
      later |= readsResident(**it);
      if ((*it)->body)
        walk(*(*it)->body, [&](Op &op) { later |= readsResident(op); });
    }
    return later;
  }

  /// The consumer warpgroups' turns (hopper-pipeline: takeTurns) run in a
  /// ring that starts, as written, with the last warpgroup's hand-over before
  /// the loop and closes with the first warpgroup's wait before its final
  /// product. Per tile, that would make the first warpgroup wait at each
  /// tile's start for the last one to finish the previous tile (its stores
  /// included), so that all of them drain, store and refill together while
  /// the tensor cores idle. Instead the ring runs on across tiles: the
  /// opening hand-over happens once, before the tile loop; the final product
  /// is a turn of every warpgroup (each waits, issues it and hands over, the
  /// last one to the first warpgroup's first turn of the next tile, which
  /// then overlaps the others' stores); and the first warpgroup takes the
  /// hand-over left after the tile loop, so that every barrier phase
  /// completes.
  ///
  /// Every warpgroup alternates between waiting and handing over. A named
  /// barrier counts arrivals, not arriving warpgroups: had the last one
  /// handed over twice in a row (after its last loop turn and after its
  /// final product, with no wait of its own between), both hand-overs could
  /// complete one phase of the first warpgroup's barrier before that one
  /// waited on it, and the first warpgroup would wait forever. (On the H200
  /// a forward with 112-key tiles, slower in its first warpgroup, hung so
  /// with some twenty tiles a block.)
  void continueTurnsAcrossTiles(Block &tileBody) {
    auto turn = [&](OpKind kind, const char *only) {
      auto it = std::find_if(tileBody.ops.begin(), tileBody.ops.end(), [&](const std::unique_ptr<Op> &op) {
        return op->kind == kind && op->strAttr("only", "all") == only;
      });
      return it == tileBody.ops.end() ? nullptr : it->get();
    };
    Op *opening = turn(OpKind::TurnPass, "last");
    Op *closing = turn(OpKind::TurnWait, "first");
    if (!opening || !closing)
      return;
    auto commit = std::find_if(std::next(passes::positionOf(*closing)), tileBody.ops.end(),
                               [](const std::unique_ptr<Op> &op) { return op->kind == OpKind::WgmmaCommit; });
    if (commit == tileBody.ops.end())
      return;
    Op &tileLoop = *tileBody.parentOp;
    Block &outer = *tileLoop.parent;
    outer.ops.splice(passes::positionOf(tileLoop), tileBody.ops, passes::positionOf(*opening));
    opening->parent = &outer;
    closing->attrs.erase("only");
    Builder handOver(tileBody, std::next(commit));
    handOver.setLoc(closing->loc);
    handOver.create(OpKind::TurnPass, {}, {});
    Builder leftOver(outer, std::next(passes::positionOf(tileLoop)));
    leftOver.setLoc(closing->loc);
    leftOver.create(OpKind::TurnWait, {}, {}, {{"only", Attr(std::string("first"))}});
  }

  Kernel &kernel_;
  Op &producer_;
  Op &consumer_;
  const Target &target_;
  Op *grid_ = nullptr;
  Value *base_ = nullptr;
  std::set<Value *> perTile_;
  std::vector<Op *> onceCopies_;
  Value *once_ = nullptr;
  Op *onceWait_ = nullptr;
  Op *onceInit_ = nullptr;
};

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
                                   {"regs", Attr(int64_t(kProducerRegisters))},
                                   {"issuers", Attr(producerIssuers(producer))}});
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
    if (!target.hasRegisterReallocation())
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
      if (!producer || !consumer) {
        if (kernel->persistent == 1)
          diags.report(kernel->loc, DiagId::PersistentIgnored, kernel->name,
                       "its loop does not run as a producer/consumer pipeline on this target");
        continue;
      }
      WarpSpecializer specializer(*kernel, *producer, *consumer, target);
      if (!specializer.analyze()) {
        diags.report(producer->loc, DiagId::UnsupportedOnTarget, "this producer/consumer loop structure",
                     target.name);
        return false;
      }
      std::string whyNot;
      if (specializer.persistable(whyNot)) {
        specializer.run();
        continue;
      }
      if (kernel->persistent == 1)
        diags.report(kernel->loc, DiagId::PersistentIgnored, kernel->name, whyNot);
      specializeInPlace(*kernel, *producer, target);
    }
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> createWarpSpecializePass() { return std::make_unique<WarpSpecializePass>(); }

} // namespace tkc
