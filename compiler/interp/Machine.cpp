// Blocks, warpgroup roles and their scheduling.
//
// A context walks the ops of its blocks with an explicit cursor stack rather
// than by recursion, so that it can stop at an op that must wait (an
// mbarrier_wait whose phase has not completed, a `barrier` others have not
// reached) and resume there later. Contexts of a block take turns in a fixed
// order; a context keeps running until it must wait (Interleave::Coarse), so
// that the producer fills the ring before any consumer starts, which makes a
// consumer that reads a slot without waiting meet a copy still in flight.
// Only when no context can go on does the oldest copy land; when none is in
// flight either, the block is deadlocked.
#include "interp/Machine.h"

#include <fmt/format.h>

namespace tkc::interp {

using namespace ir;

namespace detail {

namespace {
std::string blockName(const int64_t (&block)[3]) {
  return fmt::format("({}, {}, {})", block[0], block[1], block[2]);
}

/// The ops after which Interleave::Fine switches roles: those that touch
/// what the roles share.
bool synchronises(OpKind kind) {
  switch (kind) {
  case OpKind::MbarrierInit: case OpKind::MbarrierExpectTx: case OpKind::MbarrierWait:
  case OpKind::MbarrierArrive: case OpKind::TmaLoad: case OpKind::WarpCopy: case OpKind::Wgmma:
  case OpKind::WgmmaWait: case OpKind::Barrier: case OpKind::TmaStore: case OpKind::TmaStoreWait: case OpKind::SmemStore:
    return true;
  default:
    return false;
  }
}

/// The first op of a list of asynchronous operations still in flight (open,
/// then committed groups), or null when there is none.
template <typename T> const Op *firstOpOf(const std::vector<T> &open, const std::deque<std::vector<T>> &groups) {
  for (const std::vector<T> &group : groups)
    if (!group.empty())
      return group.front().op;
  return open.empty() ? nullptr : open.front().op;
}

/// `a * b`, or `cap + 1` where that is more than `cap` (a, b >= 0).
int64_t cappedProduct(int64_t a, int64_t b, int64_t cap) {
  return b != 0 && a > cap / b ? cap + 1 : a * b;
}

/// For, yield and warpgroup_role move the cursor themselves.
bool movesCursor(OpKind kind) {
  return kind == OpKind::For || kind == OpKind::Yield || kind == OpKind::WarpgroupRole;
}
} // namespace

bool Machine::run() {
  if (!checkLimits())
    return false;
  int64_t extent[3];
  if (!runLaunch(extent))
    return false;
  int64_t blocks = 1;
  for (int64_t e : extent)
    blocks = cappedProduct(blocks, std::max<int64_t>(e, 0), options_.limits.blocks);
  if (blocks > options_.limits.blocks) {
    fail(*kernel_.launch.ops.back(), DiagId::InterpGridTooLarge,
         fmt::format("{} x {} x {}", extent[0], extent[1], extent[2]), options_.limits.blocks);
    return false;
  }
  gridX_ = extent[0];
  for (int64_t z = 0; z < extent[2]; ++z)
    for (int64_t y = 0; y < extent[1]; ++y)
      for (int64_t x = 0; x < extent[0]; ++x)
        if (!runBlock(x, y, z))
          return false;
  return true;
}

bool Machine::checkLimits() {
  bool ok = true;
  for (const Block *block : {&kernel_.launch, &kernel_.body})
    walk(const_cast<Block &>(*block), [&](const Op &op) {
      for (auto &result : op.results)
        ok = ok && checkLimits(op, *result);
      if (op.body)
        for (auto &arg : op.body->args)
          ok = ok && checkLimits(op, *arg);
    });
  return ok;
}

bool Machine::checkLimits(const Op &op, const Value &v) {
  const Type &type = v.type;
  if (!type.isTile())
    return true;
  const Limits &limits = options_.limits;
  int64_t elements = std::max(type.stages, 1);
  for (int64_t extent : type.shape)
    elements = cappedProduct(elements, extent, limits.tileElements);
  if (elements > limits.tileElements) {
    fail(op, DiagId::InterpTileTooLarge, mnemonicOf(op.kind), nameOf(&v), limits.tileElements);
    return false;
  }
  if (!type.isShared() || !op.hasAttr("offset"))
    return true;
  int64_t offset = op.intAttr("offset"), end = offset + elements * dtypeBytes(type.dtype);
  if (offset >= 0 && end <= limits.sharedBytes)
    return true;
  fail(op, DiagId::InterpSharedTooFar, mnemonicOf(op.kind), nameOf(&v), offset, end, limits.sharedBytes);
  return false;
}

std::optional<bool> Machine::runGuards() {
  int64_t extent[3];
  guardsHold_ = true;
  if (!runLaunch(extent))
    return std::nullopt;
  return guardsHold_;
}

bool Machine::runLaunch(int64_t (&extent)[3]) {
  const Block &launch = kernel_.launch;
  if (launch.ops.empty() || launch.ops.back()->kind != OpKind::Grid || launch.ops.back()->operands.size() != 3) {
    diags_.report(kernel_.loc, DiagId::InterpMalformedOp, "launch", "it does not end in `grid` with three extents");
    return false;
  }
  contexts_.clear();
  Context ctx;
  bindParams(ctx, launch);
  ctx.stack.push_back({&launch, launch.ops.begin(), launch.ops.end()});
  if (runContext(ctx) != Status::Next)
    return false;
  const Op &grid = *launch.ops.back();
  for (int i = 0; i < 3; ++i)
    extent[i] = static_cast<int64_t>(get(ctx, grid.operands[i]).scalar);
  return true;
}

void Machine::bindParams(Context &ctx, const Block &block) {
  int tensor = 0;
  for (auto &arg : block.args) {
    RValue v;
    if (arg->type.isGlobal())
      v.global = tensor++;
    else
      v.scalar = symbolValue(arg->nameHint);
    ctx.values[arg.get()] = v;
  }
}

double Machine::symbolValue(const std::string &symbol) const {
  int index = 0;
  for (auto &arg : kernel_.body.args) {
    if (!arg->type.isGlobal())
      continue;
    for (size_t d = 0; d < arg->type.dims.size(); ++d)
      if (arg->type.dims[d].symbol == symbol && index < static_cast<int>(tensors_.size()))
        return static_cast<double>(tensors_[index].dims[d]);
    ++index;
  }
  return 0;
}

bool Machine::runBlock(int64_t bx, int64_t by, int64_t bz) {
  block_[0] = bx;
  block_[1] = by;
  block_[2] = bz;
  contexts_.clear();
  copies_.clear();
  barrierGeneration_ = 0;
  barrierArrived_ = 0;
  smemTags_.clear();
  smemWriters_.clear();
  lastWrite_.clear();
  lastRead_.clear();
  auto root = std::make_unique<Context>();
  root->warps = kernel_.warps;
  bindParams(*root, kernel_.body);
  root->stack.push_back({&kernel_.body, kernel_.body.ops.begin(), kernel_.body.ops.end()});
  contexts_.push_back(std::move(root));

  size_t current = 0;
  for (;;) {
    bool progress = false;
    for (size_t n = 0; n < contexts_.size() && !progress; ++n) {
      size_t i = (current + n) % contexts_.size();
      Context &ctx = *contexts_[i];
      if (ctx.state == Context::State::Done)
        continue;
      uint64_t before = clock_;
      Status status = runContext(ctx);
      if (status == Status::Failed)
        return false;
      if (clock_ != before) {
        progress = true;
        current = i + 1; // the others' turn
      }
      if (ctx.state == Context::State::Done)
        releaseBarrierIfComplete();
    }
    if (progress)
      continue;
    bool live = false;
    for (auto &ctx : contexts_)
      live = live || ctx->state != Context::State::Done;
    if (!live && !copies_.empty()) {
      fail(*copies_.front().op, DiagId::InterpLeftInFlight, fmt::format("block {}", blockName(block_)),
           fmt::format("{} bulk cop{} in flight that no role waited for", copies_.size(),
                       copies_.size() == 1 ? "y" : "ies"));
      return false;
    }
    if (!copies_.empty()) {
      // Copies land as late as they may: when nothing else can happen.
      if (!landOldestCopy())
        return false;
      continue;
    }
    if (live)
      return reportDeadlock();
    return true;
  }
}

Machine::Status Machine::runContext(Context &ctx) {
  while (!ctx.stack.empty()) {
    Cursor &cursor = ctx.stack.back();
    if (cursor.pc == cursor.end) {
      if (cursor.loop) {
        diags_.report(cursor.loop->loc, DiagId::InterpMalformedOp, "for", "its body does not end in `yield`");
        return Status::Failed;
      }
      ctx.stack.pop_back();
      continue;
    }
    const Op &op = **cursor.pc;
    Status status = exec(ctx, op);
    if (status == Status::Blocked)
      ctx.state = Context::State::Blocked;
    if (status != Status::Next)
      return status;
    ctx.state = Context::State::Ready;
    if (options_.interleave == Options::Interleave::Fine && synchronises(op.kind) && !ctx.stack.empty())
      return Status::Next; // the next role's turn
    if (options_.interleave == Options::Interleave::Release && op.kind == OpKind::MbarrierArrive &&
        !ctx.stack.empty())
      return Status::Next;
  }
  ctx.state = Context::State::Done;
  // What a role leaves in flight would be lost or land after the block.
  std::string who = ctx.role.empty() ? fmt::format("block {}", blockName(block_))
                                     : fmt::format("the {} of block {}", ctx.what(), blockName(block_));
  if (const Op *op = firstOpOf(ctx.open, ctx.groups))
    return fail(*op, DiagId::InterpLeftInFlight, who,
                fmt::format("{} wgmma group(s) in flight (no `wgmma_wait` retired them)",
                            ctx.groups.size() + !ctx.open.empty()));
  if (!ctx.stores.empty())
    return fail(*ctx.stores.front().op, DiagId::InterpLeftInFlight, who,
                fmt::format("{} bulk store group(s) in flight (no `tma_store_wait {{read = 0}}` retired them)",
                            ctx.stores.size()));
  if (const Op *op = firstOpOf(ctx.asyncOpen, ctx.asyncGroups))
    return fail(*op, DiagId::InterpLeftInFlight, who,
                fmt::format("{} cp.async group(s) in flight (no `async_wait` retired them)",
                            ctx.asyncGroups.size() + !ctx.asyncOpen.empty()));
  if (!ctx.lastTurn.empty() && !checkTurnsBalanced(ctx))
    return Status::Failed;
  return Status::Next;
}

Machine::Status Machine::exec(Context &ctx, const Op &op) {
  // Before warp-specialize gives the roles their warpgroups, the producer's
  // ops already run beside the code after them (hopper-pipeline's contract).
  if (ctx.role.empty() && op.kind != OpKind::WarpgroupRole && op.strAttr("role") == "producer")
    return startProducer(ctx, op);
  if (Status status = checkOperands(ctx, op); status != Status::Next)
    return status;
  switch (op.kind) {
  case OpKind::Const: return finish(ctx, op, execConst(ctx, op));
  case OpKind::BlockId: return finish(ctx, op, execBlockId(ctx, op));
  case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Div: case OpKind::Rem:
  case OpKind::Max: case OpKind::Min: case OpKind::CDiv: case OpKind::Lt: case OpKind::Le:
  case OpKind::Gt: case OpKind::Ge: case OpKind::Eq: case OpKind::Ne: case OpKind::And:
  case OpKind::Or: case OpKind::Select: case OpKind::Neg: case OpKind::Exp: case OpKind::Exp2:
  case OpKind::Log: case OpKind::Log2: case OpKind::Sqrt: case OpKind::Rsqrt: case OpKind::Abs:
  case OpKind::Tanh: case OpKind::Erf: case OpKind::Sigmoid: case OpKind::Silu: case OpKind::Cast:
    return finish(ctx, op, execElementwise(ctx, op));
  case OpKind::Fill: return finish(ctx, op, execFill(ctx, op));
  case OpKind::Undef: return finish(ctx, op, execUndef(ctx, op));
  case OpKind::Iota: return finish(ctx, op, execIota(ctx, op));
  case OpKind::Load: return finish(ctx, op, execLoad(ctx, op));
  case OpKind::Gather: return finish(ctx, op, execGather(ctx, op));
  case OpKind::Store: return finish(ctx, op, execStore(ctx, op));
  case OpKind::Mma: return finish(ctx, op, execMma(ctx, op));
  case OpKind::Reduce: return finish(ctx, op, execReduce(ctx, op));
  case OpKind::Broadcast: return finish(ctx, op, execBroadcast(ctx, op));
  case OpKind::Convert: return finish(ctx, op, execConvert(ctx, op));
  case OpKind::Mask: return finish(ctx, op, execMask(ctx, op));
  case OpKind::For: return finish(ctx, op, execFor(ctx, op));
  case OpKind::Yield: return finish(ctx, op, execYield(ctx, op));
  case OpKind::Grid: return finish(ctx, op, Status::Next); // the launch block's result, read by runLaunch
  // Every specialisation computes the same function; the guard only says
  // which one the launcher would pick for these sizes.
  case OpKind::VariantGuard:
    guardsHold_ = guardsHold_ && static_cast<int64_t>(get(ctx, op.operands[0]).scalar) == op.intAttr("value");
    return finish(ctx, op, Status::Next);
  case OpKind::SmemAlloc: return finish(ctx, op, execSmemAlloc(ctx, op));
  case OpKind::StageView: return finish(ctx, op, execStageView(ctx, op));
  case OpKind::AsyncLoad: return finish(ctx, op, execAsyncLoad(ctx, op));
  case OpKind::AsyncCommit: return finish(ctx, op, execAsyncCommit(ctx, op));
  case OpKind::AsyncWait: return finish(ctx, op, execAsyncWait(ctx, op));
  case OpKind::Barrier: return finish(ctx, op, execBarrier(ctx, op));
  case OpKind::MbarrierInit: return finish(ctx, op, execMbarrierInit(ctx, op));
  case OpKind::MbarrierExpectTx: return finish(ctx, op, execMbarrierExpectTx(ctx, op));
  case OpKind::MbarrierWait: return finish(ctx, op, execMbarrierWait(ctx, op));
  case OpKind::MbarrierArrive: return finish(ctx, op, execMbarrierArrive(ctx, op));
  case OpKind::TmaLoad: return finish(ctx, op, execTmaLoad(ctx, op));
  case OpKind::WarpCopy: return finish(ctx, op, execWarpCopy(ctx, op));
  case OpKind::Wgmma: return finish(ctx, op, execWgmma(ctx, op));
  case OpKind::WgmmaFence: return finish(ctx, op, execWgmmaFence(ctx, op));
  case OpKind::WgmmaCommit: return finish(ctx, op, execWgmmaCommit(ctx, op));
  case OpKind::WgmmaWait: return finish(ctx, op, execWgmmaWait(ctx, op));
  case OpKind::WarpgroupRole: return finish(ctx, op, execWarpgroupRole(ctx, op));
  case OpKind::WarpgroupRoleEnd: return finish(ctx, op, Status::Next); // every role goes on past it
  case OpKind::SmemStore: return finish(ctx, op, execSmemStore(ctx, op));
  case OpKind::FenceProxyAsync: return finish(ctx, op, execFenceProxyAsync(ctx, op));
  case OpKind::WarpgroupBarrier: return finish(ctx, op, execWarpgroupBarrier(ctx, op));
  case OpKind::TmaStore: return finish(ctx, op, execTmaStore(ctx, op));
  case OpKind::TmaStoreWait: return finish(ctx, op, execTmaStoreWait(ctx, op));
  case OpKind::GridSize: return finish(ctx, op, execGridSize(ctx, op));
  case OpKind::NumSms: return finish(ctx, op, execNumSms(ctx, op));
  // One context runs all the warpgroups of a role: turns between them only
  // order their issue points, which a single context already does. What
  // can go wrong is their order (execTurn).
  case OpKind::TurnWait:
  case OpKind::TurnPass: return finish(ctx, op, execTurn(ctx, op));
  }
  // An op added to OpKinds.def without a case above (-Wswitch names it).
  return fail(op, DiagId::InterpUnsupportedOp, mnemonicOf(op.kind));
}

Machine::Status Machine::finish(Context &ctx, const Op &op, Status status) {
  // A shared tile computed into the bytes smem-plan gave it.
  if (status == Status::Next && op.kind != OpKind::SmemAlloc && op.results.size() == 1 &&
      op.result()->type.isShared() && op.hasAttr("offset")) {
    RValue &r = ctx.values[op.result()];
    r.smemOffset = op.intAttr("offset");
    r.smemBytes = op.result()->type.numElements() * dtypeBytes(op.result()->type.dtype);
    if (genericWrite(ctx, op, op.result(), r.smemOffset, r.smemBytes, true) == Status::Failed)
      return Status::Failed;
    r.smemWrite = writeShared(op, r.smemOffset, r.smemBytes);
  }
  if (status == Status::Next) {
    if (++clock_ > options_.limits.steps)
      return fail(op, DiagId::InterpTooManySteps, options_.limits.steps, blockName(block_));
    if (!movesCursor(op.kind))
      advance(ctx);
  }
  return status;
}

Machine::Status Machine::checkOperands(Context &ctx, const Op &op) {
  for (size_t i = 0; i < op.operands.size(); ++i) {
    const Value *v = op.operands[i];
    auto it = v ? ctx.values.find(v) : ctx.values.end();
    if (it == ctx.values.end())
      return fail(op, DiagId::InterpValueNotInRole, mnemonicOf(op.kind), nameOf(v), ctx.what());
    RValue &r = it->second;
    bool passesOn = op.kind == OpKind::Yield || op.kind == OpKind::WgmmaWait ||
                    (op.kind == OpKind::Wgmma && i == 2) || (op.kind == OpKind::For && i >= 3);
    if (r.inFlight && *r.inFlight && !passesOn)
      return fail(op, DiagId::InterpResultInFlight, mnemonicOf(op.kind), nameOf(v));
    // wgmma reads its operands when it is retired; stage_view only names a
    // slot; copies write the buffer they are given; loops pass values on.
    bool reads = op.kind != OpKind::StageView && op.kind != OpKind::Wgmma && op.kind != OpKind::Yield &&
                 op.kind != OpKind::For &&
                 !(i == 0 && (op.kind == OpKind::TmaLoad || op.kind == OpKind::WarpCopy || op.kind == OpKind::AsyncLoad ||
                              op.kind == OpKind::SmemStore || op.kind == OpKind::TmaStore));
    if (!reads)
      continue;
    if (r.buffer && r.stage >= 0 && r.buffer->copiesInFlight[r.stage] > 0)
      return fail(op, DiagId::InterpDataRace, r.stage, nameOf(r.buffer->value),
                  fmt::format("`{}` reads it while a copy into it is in flight", mnemonicOf(op.kind)));
    if (checkSharedRead(op, v, r) == Status::Failed || genericRead(ctx, op, v, r) == Status::Failed)
      return Status::Failed;
  }
  return Status::Next;
}

Machine::Status Machine::execFor(Context &ctx, const Op &op) {
  if (!op.body || op.operands.size() < 3 || op.body->args.size() != op.operands.size() - 2 ||
      op.results.size() != op.operands.size() - 3)
    return fail(op, DiagId::InterpMalformedOp, "for", "its operands, block arguments and results do not match");
  int64_t lo = static_cast<int64_t>(get(ctx, op.operands[0]).scalar);
  int64_t hi = static_cast<int64_t>(get(ctx, op.operands[1]).scalar);
  int64_t step = static_cast<int64_t>(get(ctx, op.operands[2]).scalar);
  if (step <= 0)
    return fail(op, DiagId::InterpMalformedOp, "for", fmt::format("its step is {}", step));
  std::vector<RValue> carried;
  for (size_t i = 3; i < op.operands.size(); ++i)
    carried.push_back(copyOf(get(ctx, op.operands[i])));
  if (lo >= hi) {
    for (size_t i = 0; i < carried.size(); ++i)
      ctx.values[op.result(i)] = carried[i];
    advance(ctx);
    return Status::Next;
  }
  const Block &body = *op.body;
  RValue iv;
  iv.scalar = static_cast<double>(lo);
  ctx.values[body.args[0].get()] = iv;
  for (size_t i = 0; i < carried.size(); ++i)
    ctx.values[body.args[1 + i].get()] = carried[i];
  ctx.stack.push_back({&body, body.ops.begin(), body.ops.end(), &op, lo, hi, step});
  return Status::Next;
}

Machine::Status Machine::execYield(Context &ctx, const Op &op) {
  Cursor &cursor = ctx.stack.back();
  const Op *loop = cursor.loop;
  if (!loop || op.operands.size() != loop->results.size())
    return fail(op, DiagId::InterpMalformedOp, "yield", "it does not end the body of a `for` with its results");
  std::vector<RValue> carried;
  for (const Value *v : op.operands)
    carried.push_back(copyOf(get(ctx, v)));
  if (options_.implicitCarriedPadding)
    for (size_t i = 0; i < carried.size(); ++i)
      keepUnderPadding(carried[i], get(ctx, loop->body->args[1 + i].get()));
  cursor.k += cursor.step;
  if (cursor.k < cursor.hi) {
    const Block &body = *loop->body;
    RValue iv;
    iv.scalar = static_cast<double>(cursor.k);
    ctx.values[body.args[0].get()] = iv;
    for (size_t i = 0; i < carried.size(); ++i)
      ctx.values[body.args[1 + i].get()] = carried[i];
    cursor.pc = body.ops.begin();
    return Status::Next;
  }
  ctx.stack.pop_back();
  for (size_t i = 0; i < carried.size(); ++i)
    ctx.values[loop->result(i)] = carried[i];
  advance(ctx);
  return Status::Next;
}

void Machine::keepUnderPadding(RValue &yielded, const RValue &previous) {
  if (!yielded.tile || !yielded.pad || !previous.tile || previous.tile->size() != yielded.tile->size())
    return;
  // Values are shared between aliases: the kept tile is a new one.
  auto values = std::make_shared<std::vector<double>>(*yielded.tile);
  auto pad = std::make_shared<std::vector<char>>(*yielded.pad);
  for (size_t i = 0; i < values->size(); ++i)
    if ((*pad)[i]) {
      (*values)[i] = (*previous.tile)[i];
      (*pad)[i] = previous.pad ? (*previous.pad)[i] : 0;
    }
  yielded.tile = std::move(values);
  yielded.pad = std::move(pad);
}

/// The ops marked `role = "producer"` from `first` on go to a producer
/// context (one thread of warpgroup 0); the rest of the block, which goes
/// on after them, becomes the consumer.
Machine::Status Machine::startProducer(Context &ctx, const Op &first) {
  if (kernel_.warps <= 4)
    return fail(first, DiagId::InterpRoleWarpgroups, 1, kernel_.warps / 4, kernel_.warps);
  auto producer = std::make_unique<Context>();
  producer->role = "producer";
  producer->warps = 4;
  producer->oneThread = true;
  producer->values = ctx.values;
  Cursor &cursor = ctx.stack.back();
  Cursor run = cursor;
  while (cursor.pc != cursor.end && (*cursor.pc)->kind != OpKind::WarpgroupRole &&
         (*cursor.pc)->strAttr("role") == "producer")
    ++cursor.pc;
  run.end = cursor.pc;
  producer->stack.push_back(run);
  ctx.role = "consumer";
  ctx.warps = kernel_.warps - 4;
  contexts_.push_back(std::move(producer));
  ++clock_;
  return Status::Next;
}

Machine::Status Machine::execWarpgroupRole(Context &ctx, const Op &op) {
  Cursor &cursor = ctx.stack.back();
  if (ctx.stack.size() != 1 || cursor.block != &kernel_.body)
    return fail(op, DiagId::InterpRolePlacement, "must be at the top level of the kernel body");
  if (ctx.explicitRole) {
    // The next role's region: this role goes on after warpgroup_role_end.
    while (cursor.pc != cursor.end && (*cursor.pc)->kind != OpKind::WarpgroupRoleEnd)
      ++cursor.pc;
    return Status::Next;
  }
  if (!ctx.role.empty())
    return fail(op, DiagId::InterpRolePlacement, fmt::format("cannot start a role inside the {}", ctx.what()));
  // The threads of the block split: one context per role.
  std::vector<std::unique_ptr<Context>> roles;
  int64_t warpgroups = 0;
  for (OpIter it = cursor.pc; it != cursor.end && (*it)->kind != OpKind::WarpgroupRoleEnd; ++it) {
    const Op &marker = **it;
    if (marker.kind != OpKind::WarpgroupRole)
      continue;
    if (marker.intAttr("warpgroups", 1) < 1)
      return fail(marker, DiagId::InterpMalformedOp, "warpgroup_role", "a role needs at least one warpgroup");
    auto role = std::make_unique<Context>();
    role->role = marker.strAttr("role", "unnamed");
    role->explicitRole = true;
    role->warps = static_cast<int>(4 * marker.intAttr("warpgroups", 1));
    // A warp of issuers acts as one thread: its lane 0 issues, it arrives once.
    role->oneThread = marker.intAttr("issuers") == 1 || marker.intAttr("issuers") == 32;
    role->values = ctx.values;
    role->stack.push_back({cursor.block, std::next(it), cursor.end});
    warpgroups += marker.intAttr("warpgroups", 1);
    roles.push_back(std::move(role));
  }
  if (warpgroups * 4 != kernel_.warps)
    return fail(op, DiagId::InterpRoleWarpgroups, warpgroups, kernel_.warps / 4, kernel_.warps);
  ctx.stack.clear();
  for (auto &role : roles)
    contexts_.push_back(std::move(role));
  return Status::Next;
}

// The turns run in a ring of named barriers: warpgroup c waits on its own,
// which warpgroup c - 1 hands over on (the last warpgroup hands the first its
// first turn). A named barrier counts arrivals, not who arrives: a
// warpgroup that hands over twice without waiting in between can complete a
// phase the next one has not waited for, which then waits forever; one that
// waits twice in a row waits for a hand-over that comes only after its own.
// So each warpgroup alternates, the last starting with a hand-over, the
// others with a wait, and by the end each has waited for every hand-over it
// received (checkTurnsBalanced).
Machine::Status Machine::execTurn(Context &ctx, const Op &op) {
  ctx.lastTurnOp = &op;
  int warpgroups = std::max(1, ctx.warps / 4);
  if (ctx.lastTurn.empty()) {
    ctx.lastTurn.assign(warpgroups, 0);
    ctx.turnsHandedTo.assign(warpgroups, 0);
    ctx.turnsWaited.assign(warpgroups, 0);
  }
  std::string only = op.strAttr("only", "all");
  char now = op.kind == OpKind::TurnWait ? 'w' : 'p';
  for (int c = 0; c < warpgroups; ++c) {
    if ((only == "first" && c != 0) || (only == "last" && c != warpgroups - 1))
      continue;
    char last = ctx.lastTurn[c];
    char first = c == warpgroups - 1 ? 'p' : 'w';
    if (last == now || (last == 0 && now != first)) {
      std::string why =
          now == 'p' ? (last == 0 ? "hands the turn over before it had one"
                                  : "hands the turn over twice in a row: the second hand-over may complete a phase "
                                    "of the next warpgroup's barrier that it has not waited for, and it then waits "
                                    "forever")
                     : (last == 0 ? "waits for the turn before handing the first warpgroup its first one: every "
                                    "warpgroup waits"
                                  : "waits for the turn twice in a row, for a hand-over that comes only after its own");
      return fail(op, DiagId::InterpTurnOrder, c + 1, blockName(block_), why);
    }
    ctx.lastTurn[c] = now;
    if (now == 'w')
      ++ctx.turnsWaited[c];
    else
      ++ctx.turnsHandedTo[(c + 1) % warpgroups];
  }
  return Status::Next;
}

bool Machine::checkTurnsBalanced(const Context &ctx) {
  for (size_t c = 0; c < ctx.lastTurn.size(); ++c)
    if (ctx.turnsHandedTo[c] != ctx.turnsWaited[c]) {
      fail(*ctx.lastTurnOp, DiagId::InterpTurnOrder, c + 1, blockName(block_),
           fmt::format("ends with {} hand-over(s) of the turn to it and {} wait(s) for it: every barrier phase must "
                       "complete",
                       ctx.turnsHandedTo[c], ctx.turnsWaited[c]));
      return false;
    }
  return true;
}

Machine::Status Machine::execBarrier(Context &ctx, const Op &op) {
  (void)op;
  if (!ctx.atBarrier) {
    ctx.atBarrier = true;
    ctx.barrierGeneration = barrierGeneration_;
    ++barrierArrived_;
    releaseBarrierIfComplete();
  }
  if (barrierGeneration_ == ctx.barrierGeneration)
    return Status::Blocked;
  ctx.atBarrier = false;
  return Status::Next;
}

void Machine::releaseBarrierIfComplete() {
  int live = 0;
  for (auto &ctx : contexts_)
    live += ctx->state != Context::State::Done && !ctx->stack.empty();
  if (barrierArrived_ > 0 && barrierArrived_ >= live) {
    ++barrierGeneration_;
    barrierArrived_ = 0;
  }
}

bool Machine::landOldestCopy() {
  BulkCopy copy = std::move(copies_.front());
  copies_.pop_front();
  return land(copy);
}

bool Machine::reportDeadlock() {
  bool allMbarrier = true;
  const Op *first = nullptr;
  for (auto &ctx : contexts_) {
    if (ctx->state == Context::State::Done)
      continue;
    const Op &op = **ctx->stack.back().pc;
    allMbarrier = allMbarrier && op.kind == OpKind::MbarrierWait;
    if (!first)
      first = &op;
  }
  diags_.report(first->loc, DiagId::InterpDeadlock, blockName(block_),
                allMbarrier ? " on an mbarrier" : " on an mbarrier or a `barrier`");
  for (auto &ctx : contexts_) {
    if (ctx->state == Context::State::Done)
      continue;
    const Op &op = **ctx->stack.back().pc;
    diags_.report(op.loc, DiagId::InterpWaitingHere, ctx->what(), waitDescription(*ctx, op));
  }
  return false;
}

std::string Machine::nameOf(const Value *v) const {
  if (!v)
    return "%<null>";
  if (!v->nameHint.empty())
    return "%" + v->nameHint;
  // Messages quote the name: an unnamed value reads `%<convert result>`.
  return v->definingOp ? fmt::format("%<{} result>", mnemonicOf(v->definingOp->kind)) : "%<block argument>";
}

} // namespace detail
} // namespace tkc::interp
