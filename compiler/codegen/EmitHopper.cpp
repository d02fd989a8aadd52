// sm_90a code: mbarriers, bulk tensor copies (TMA), wgmma and warpgroup
// roles, as introduced by the hopper-layout, hopper-pipeline and
// warp-specialize passes.
//
// Shared operand tiles are #swizzle128: panels of 64 bf16 columns (128
// bytes a row), each written by one TMA box with 128-byte swizzling and read
// by wgmma through matrix descriptors. A k16 step of a K-major panel starts
// 32 bytes further into its rows; of an N-major panel, 16 rows (2048 bytes)
// further down.
#include "codegen/Expressions.h"
#include "codegen/KernelEmitter.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

namespace tkc::codegen {

using namespace ir;

namespace {

/// An A fragment loaded once from a shared tile (hopper-operand-registers'
/// `convert`), as opposed to one made from values in registers.
bool isResidentFragment(const Value *a) {
  return a->definingOp && a->definingOp->kind == OpKind::Convert && a->definingOp->operands[0]->type.isShared();
}

/// Rows of a tile that one consumer warpgroup owns.
constexpr int64_t kWarpgroupRows = 64;
/// The named barrier at which every warp of a role meets.
constexpr int kRoleBarrier = 7;

int64_t slotBytes(const Type &t) { return t.numElements() * dtypeBytes(t.dtype); }
int64_t panelColumns(const Type &t) { return kSwizzle128RowBytes / dtypeBytes(t.dtype); }
} // namespace

std::vector<TensorMapUse> tensorMapsOf(const Kernel &kernel) {
  std::vector<TensorMapUse> maps;
  std::set<const Value *> seen;
  walk(const_cast<Block &>(kernel.body), [&](Op &op) {
    if (op.kind == OpKind::TmaStore && seen.insert(op.operands[1]).second)
      maps.push_back({op.operands[1], kWarpgroupRows, panelColumns(op.operands[0]->type)});
    if (op.kind != OpKind::TmaLoad || !seen.insert(op.operands[3]).second)
      return;
    const Type &tile = op.operands[0]->type;
    maps.push_back({op.operands[3], tile.shape[0], panelColumns(tile)});
  });
  return maps;
}

int KernelEmitter::blocksForRoleRegisters() const {
  int64_t registers = 0;
  walk(const_cast<Block &>(kernel_.body), [&](Op &op) {
    if (op.kind == OpKind::WarpgroupRole)
      registers += op.intAttr("warpgroups") * Target::kWarpgroupThreads * op.intAttr("regs");
  });
  return registers == 0 ? 0 : static_cast<int>(std::max<int64_t>(1, target_.registersPerSm / registers));
}

void KernelEmitter::addTensorMapParams(std::vector<std::string> &params) {
  for (const TensorMapUse &use : tensorMapsOf(kernel_))
    params.push_back(fmt::format("const __grid_constant__ CUtensorMap {}", tensorMapName(use.global)));
}

/// The tensor maps are kernel parameters, which the bulk copy engine reads
/// through the constant path on a copy's first use of each; one thread
/// prefetching them while the block sets up its barriers takes that latency
/// off the first copies (the query tile and the first key and value tiles
/// of an attention block, each block's first panels of a GEMM).
void KernelEmitter::emitTensorMapPrefetch() {
  std::vector<TensorMapUse> maps = tensorMapsOf(kernel_);
  if (maps.empty())
    return;
  std::string prefetches;
  for (const TensorMapUse &use : maps)
    prefetches += fmt::format(" tkc::prefetch_tensor_map(&{});", tensorMapName(use.global));
  out_.line("if (threadIdx.x == 0) {{{} }}", prefetches);
}

/// The address of mbarrier `iteration % S` of an #mbarrier buffer.
std::string KernelEmitter::barrierAddress(const Value *bars, const std::string &iteration) {
  if (bars->type.shape[0] == 1)
    return name(bars);
  return fmt::format("{} + ({}) % {} * 8", name(bars), iteration, bars->type.shape[0]);
}

/// Whether a bulk copy's tile spans the last two dims of its tensor (the
/// box the tensor map describes), one element along the others.
static bool tileIsInnermost(const Op &copy) {
  std::vector<int64_t> sizes = copy.listAttr("sizes");
  size_t rank = sizes.size();
  if (rank < 2 || sizes[rank - 1] == 0 || sizes[rank - 2] == 0)
    return false;
  return std::all_of(sizes.begin(), sizes.end() - 2, [](int64_t s) { return s == 0; });
}

bool KernelEmitter::emitHopperOp(const Op &op) {
  if (!target_.hasHopperInstructions())
    return unsupported(op, fmt::format("operation `{}`", mnemonicOf(op.kind)));
  switch (op.kind) {
  case OpKind::GridSize:
    out_.line("const int {} = int(gridDim.x);", declareName(op.result()));
    return true;
  case OpKind::MbarrierInit: {
    const Value *bars = op.operands[0];
    out_.open("if (threadIdx.x == 0)");
    if (!alignmentChecked_)
      out_.line("if (smem_base % 1024 != 0) __trap(); // 128-byte swizzled slots need 1024-byte alignment");
    alignmentChecked_ = true;
    out_.line("TKC_UNROLL for (int x = 0; x < {}; ++x) tkc::mbarrier_init({} + x * 8, {});", bars->type.shape[0],
              name(bars), op.intAttr("count"));
    out_.line("tkc::fence_mbarrier_init();");
    out_.close();
    return true;
  }
  case OpKind::MbarrierExpectTx:
    out_.line("{}tkc::mbarrier_arrive_expect_tx({}, {});", oneLane(), barrierAddress(op.operands[0], scalar(op.operands[1])),
              op.intAttr("bytes"));
    return true;
  case OpKind::MbarrierWait: {
    const Value *bars = op.operands[0];
    std::string it = scalar(op.operands[1]);
    std::string parity = fmt::format("({}) / {} % 2", it, bars->type.shape[0]);
    if (op.intAttr("release"))
      parity += " ^ 1"; // the slot's previous use: immediately done on the first round
    std::string guard = op.operands.size() == 3 ? fmt::format("if ({}) ", scalar(op.operands[2])) : "";
    out_.line("{}while (!tkc::mbarrier_try_wait({}, {})) {{}}", guard, barrierAddress(bars, it), parity);
    return true;
  }
  case OpKind::MbarrierArrive: {
    // One arrival per warp (the barrier counts warps), or per lane.
    std::string cond = conjunction({scalar(op.operands[2]), op.intAttr("all_lanes") ? "" : "lane == 0"});
    std::string arrive = fmt::format("tkc::mbarrier_arrive({});", barrierAddress(op.operands[0], scalar(op.operands[1])));
    out_.line("{}", cond == "true" ? arrive : fmt::format("if ({}) {}", cond, arrive));
    return true;
  }
  case OpKind::TmaLoad: {
    const Value *buf = op.operands[0];
    const Value *global = op.operands[3];
    const Type &tile = buf->type;
    size_t rank = global->type.dims.size();
    if (rank < 2 || rank > 5 || tile.layout.kind != LayoutKind::Swizzle128 || !tileIsInnermost(op))
      return unsupported(op, "a bulk tensor copy of this tile");
    std::string it = scalar(op.operands[1]);
    std::string dst = slotAddress(buf, it);
    std::string bar = barrierAddress(op.operands[2], it);
    // Coordinates innermost first: the column (per panel), the row, then
    // the outer indices.
    std::vector<std::string> coords;
    for (size_t d = rank; d-- > 0;)
      coords.push_back(scalar(op.operands[4 + d]));
    int64_t cols = panelColumns(tile), panelBytes = tile.shape[0] * kSwizzle128RowBytes;
    for (int64_t p = 0; p < tile.shape[1] / cols; ++p) {
      std::string args = coords[0] + (p ? fmt::format(" + {}", p * cols) : "");
      for (size_t d = 1; d < rank; ++d)
        args += ", " + coords[d];
      out_.line("{}tkc::tma_load_{}d({}{}, &{}, {}, {});", oneLane(), rank, dst,
                p ? fmt::format(" + {}", p * panelBytes) : "", tensorMapName(global), args, bar);
    }
    return true;
  }
  case OpKind::WarpCopy:
    return emitWarpCopy(op);
  case OpKind::Wgmma:
    return emitWgmma(op);
  case OpKind::WgmmaFence:
    out_.line("tkc::wgmma_fence();");
    return true;
  case OpKind::WgmmaCommit:
    out_.line("tkc::wgmma_commit();");
    return true;
  case OpKind::WgmmaWait:
    out_.line("tkc::wgmma_wait<{}>();", op.intAttr("pending"));
    for (const Value *acc : op.operands)
      out_.line("TKC_UNROLL for (int x = 0; x < {}; ++x) tkc::fence_operand({}[x]);", fragment(acc->type).count(),
                name(acc));
    // An A fragment loaded once from shared memory (hopper-operand-registers)
    // is read by an ordinary instruction once its product has retired, in
    // every iteration: see tkc::keep_fragment (`warp`, never negative, comes
    // through a shuffle in kernels with wgmma, opaque to ptxas).
    for (const Value *acc : op.operands) {
      const Op *product = acc->definingOp;
      const Value *a = product && product->kind == OpKind::Wgmma ? product->operands[0] : nullptr;
      if (a && a->type.isRegister() && isResidentFragment(a))
        out_.line("TKC_UNROLL for (int x = 0; x < {}; x += 4) tkc::keep_fragment({}[x], {}[x + 1], {}[x + 2], {}[x + 3], "
                  "warp, {});",
                  operandACount(a->type), name(a), name(a), name(a), name(a), name(a->definingOp->operands[0]));
      if (product)
        retireRegisterProduct(*product);
    }
    return true;
  case OpKind::SmemStore:
    return emitSmemStore(op);
  case OpKind::FenceProxyAsync:
    out_.line("tkc::fence_proxy_async_shared();");
    return true;
  case OpKind::WarpgroupBarrier:
    // Named barriers: 1 + warpgroup for one warpgroup, kRoleBarrier for a
    // whole role (the consumers), 8 and up for taking turns.
    if (op.intAttr("all") == 1)
      out_.line("tkc::named_barrier_sync({}, {});", kRoleBarrier, currentRoleWarpgroups_ * Target::kWarpgroupThreads);
    else
      out_.line("tkc::warpgroup_sync(1 + warp / 4);");
    return true;
  case OpKind::TurnWait:
  case OpKind::TurnPass: {
    // Consumer warpgroup c (warpgroups 1..G; 0 is the producer) waits on
    // named barrier 8 + c - 1 and passes the turn to the next one's; each
    // barrier meets the 128 threads that wait and the 128 that pass.
    int consumers = kernel_.warps / 4 - 1;
    std::string only = op.strAttr("only", "all");
    std::string guard = only == "first" ? "if (warp / 4 == 1) " : only == "last" ? fmt::format("if (warp / 4 == {}) ", consumers) : "";
    if (op.kind == OpKind::TurnWait)
      out_.line("{}tkc::named_barrier_sync(8 + warp / 4 - 1, 256);", guard);
    else
      out_.line("{}tkc::named_barrier_arrive(8 + warp / 4 % {}, 256);", guard, consumers);
    return true;
  }
  case OpKind::TmaStore:
    return emitTmaStore(op);
  case OpKind::TmaStoreWait:
    out_.line("if (threadIdx.x % 128 == 0) tkc::bulk_wait_group{}<{}>();", op.intAttr("read") ? "_read" : "",
              op.intAttr("pending"));
    return true;
  case OpKind::WarpgroupRole: {
    int first = roleWarpgroups_, count = static_cast<int>(op.intAttr("warpgroups", 1));
    int regs = static_cast<int>(op.intAttr("regs"));
    bool last = true;
    for (auto it = std::next(std::find_if(op.parent->ops.begin(), op.parent->ops.end(),
                                          [&](const std::unique_ptr<Op> &o) { return o.get() == &op; }));
         it != op.parent->ops.end(); ++it)
      if ((*it)->kind == OpKind::WarpgroupRole)
        last = false;
    closeRoleIssuers();
    std::string condition = fmt::format("warp / 4 < {}", first + count);
    if (first == 0) {
      out_.open(fmt::format("if ({})", condition));
    } else {
      out_.dedent();
      out_.open(last ? std::string("} else") : fmt::format("}} else if ({})", condition));
    }
    out_.line("// warpgroup{} {}{}: {}", count > 1 ? "s" : "", first, count > 1 ? fmt::format("-{}", first + count - 1) : "",
              op.strAttr("role"));
    // The producer and a reducer give registers back (they hold fewer than
    // an even share), the consumers take them; the sum over the block stays
    // within the register file.
    if (regs > 0) {
      bool gives = op.strAttr("role") == "producer" || op.strAttr("role") == "reducer";
      out_.line("tkc::setmaxnreg_{}<{}>();", gives ? "dec" : "inc", regs);
    }
    if (first > 0) {
      // Accumulator layouts number the warps of the role from 0.
      out_.line("const int warp_m = warp - {};", first * 4);
      out_.line("(void)warp_m;");
    }
    if (op.intAttr("issuers") == 1) {
      out_.open("if (threadIdx.x % 128 == 0)");
      roleIssuerOpen_ = true;
    } else if (op.intAttr("issuers") == 32) {
      out_.open("if (warp % 4 == 0)");
      roleIssuerOpen_ = roleIssuerIsWarp_ = true;
    }
    roleWarpgroups_ += count;
    currentRoleWarpgroups_ = count;
    return true;
  }
  case OpKind::WarpgroupRoleEnd:
    closeRoleIssuers();
    out_.close();
    return true;
  default:
    return unsupported(op, fmt::format("operation `{}`", mnemonicOf(op.kind)));
  }
}

void KernelEmitter::closeRoleIssuers() {
  if (roleIssuerOpen_)
    out_.close();
  roleIssuerOpen_ = roleIssuerIsWarp_ = false;
}

std::string KernelEmitter::slotAddress(const Value *buf, const std::string &it) {
  const Type &t = buf->type;
  return t.stages > 1 ? fmt::format("{} + ({}) % {} * {}", name(buf), it, t.stages, slotBytes(t)) : name(buf);
}

/// The issuing warp copies a vector slice into slot `it % S` (each lane
/// every 32nd element), and each lane arrives on barrier `it % S` once its
/// copies have landed.
bool KernelEmitter::emitWarpCopy(const Op &op) {
  const Value *buf = op.operands[0];
  if (!roleIssuerIsWarp_)
    return unsupported(op, "a vector copy outside a warp's producer role");
  std::string it = scalar(op.operands[1]);
  emitVectorCopy(op, slotAddress(buf, it), buf->type, op.operands[3], 4, "true", "lane", 32);
  out_.line("tkc::cp_async_mbarrier_arrive_noinc({});", barrierAddress(op.operands[2], it));
  return true;
}

/// The byte address of element (`row`, `col`) of a #swizzle128 tile at
/// `base`: its panel of 128-byte rows, and the row's 16-byte chunk XORed
/// with the row's index within its group of eight.
std::string KernelEmitter::panelAddress(const std::string &base, const Type &tile) {
  int64_t elem = dtypeBytes(tile.dtype), cols = panelColumns(tile), perChunk = 16 / elem;
  int64_t panelBytes = tile.shape[0] * kSwizzle128RowBytes;
  return fmt::format("{} + col / {} * {} + row * {} + ((col % {} / {}) ^ (row % 8)) * 16 + col % {} * {}", base, cols,
                     panelBytes, kSwizzle128RowBytes, cols, perChunk, perChunk, elem);
}

bool KernelEmitter::emitSmemStore(const Op &op) {
  const Value *buf = op.operands[0];
  const Value *value = op.operands[1];
  int64_t elem = dtypeBytes(value->type.dtype);
  if (elem != 2 && elem != 4)
    return unsupported(op, "a staged store of these elements");
  emitPanelStores(name(buf), buf->type, value, op.intAttr("first_col", 0));
  return true;
}

/// Every thread writes its accumulator pairs into the #swizzle128 panels of
/// `panels` (columns `first` on of `value`): a warp's 32 writes (four bytes
/// for 16-bit elements, eight for f32) cover eight rows whose chunks the
/// swizzle spreads over all 32 banks.
void KernelEmitter::emitPanelStores(const std::string &base, const Type &panels, const Value *value, int64_t first) {
  int64_t elem = dtypeBytes(value->type.dtype);
  Fragment f = fragment(value->type);
  // A window of the tile's columns: accumulator coordinate j is the 8-column
  // chunk, so the window is a range of j, known when the loop is unrolled.
  // Split by columns, the window is one warpgroup's: the others skip it.
  int64_t width = panels.shape[1];
  int64_t firstChunk = first / 8; // in the warp's own columns
  bool window = width != value->type.shape[1];
  const Layout &layout = value->type.layout;
  bool split = window && layout.warpsN > 1;
  if (split) {
    int64_t perGroup = value->type.shape[1] / layout.warpsN;
    out_.open(fmt::format("if ({} == {})", warpCoords(layout).col, first / perGroup));
    firstChunk = first % perGroup / 8;
    window = width != perGroup;
  }
  out_.open(fmt::format("TKC_UNROLL for (int x = 0; x < {}; x += 2)", f.count()));
  out_.line("{}", f.decompose("x", f.row + " " + f.col + (window ? " j" : "")));
  if (window)
    out_.line("if (j < {} || j >= {}) continue;", firstChunk, firstChunk + width / 8);
  out_.line("const int row = {}, col = {}{};", f.row, f.col, first ? fmt::format(" - {}", first) : "");
  std::string address = panelAddress(base, panels);
  if (elem == 2)
    out_.line("tkc::st_shared_b32({}, tkc::pack2({}[x], {}[x + 1]));", address, name(value), name(value));
  else
    out_.line("tkc::st_shared_v2_b32({}, __float_as_uint({}[x]), __float_as_uint({}[x + 1]));", address, name(value),
              name(value));
  out_.close();
  if (split)
    out_.close();
}

/// One thread of each consumer warpgroup copies the warpgroup's rows of the
/// staging tile out (or adds them to the tensor, `reduce`), a box per
/// panel, and closes them as one bulk group.
bool KernelEmitter::emitTmaStore(const Op &op) {
  const Value *buf = op.operands[0];
  const Value *global = op.operands[1];
  const Type &tile = buf->type;
  size_t rank = global->type.dims.size();
  if (rank < 2 || rank > 5 || op.operands.size() != 2 + rank)
    return unsupported(op, "a bulk tensor store of this tile");
  // Coordinates innermost first: the column (per panel), the warpgroup's
  // first row, then the outer indices.
  std::vector<std::string> coords;
  for (size_t d = rank; d-- > 0;)
    coords.push_back(scalar(op.operands[2 + d]));
  int64_t cols = panelColumns(tile), panelBytes = tile.shape[0] * kSwizzle128RowBytes;
  // One box: from `address` in the staging tile to column `col` and row
  // `row` of the tensor (the outer indices as given).
  auto copyBox = [&](const std::string &address, const std::string &col, const std::string &row) {
    std::string args = col + ", " + row;
    for (size_t d = 2; d < rank; ++d)
      args += ", " + coords[d];
    out_.line("tkc::{}_{}d(&{}, {}, {});", op.hasAttr("reduce") ? "tma_reduce_add" : "tma_store", rank,
              tensorMapName(global), address, args);
  };
  // A tile split by columns between the warpgroups: each copies the panels
  // of its own columns, every row.
  if (op.hasAttr("column_split")) {
    int64_t perGroup = tile.shape[1] / cols / op.intAttr("column_split");
    out_.open("if (threadIdx.x % 128 == 0)");
    out_.line("const int first_panel = warp_m / 4{};", perGroup > 1 ? fmt::format(" * {}", perGroup) : "");
    for (int64_t p = 0; p < perGroup; ++p) {
      std::string panel = p ? fmt::format("(first_panel + {})", p) : "first_panel";
      copyBox(fmt::format("{} + {} * {}", name(buf), panel, panelBytes), fmt::format("{} + {} * {}", coords[0], panel, cols),
              coords[1]);
    }
    out_.line("tkc::bulk_commit_group();");
    out_.close();
    return true;
  }
  // A window of a tile split by columns: the warpgroup that wrote the slot
  // copies all of its rows.
  if (op.hasAttr("warpgroup")) {
    out_.open(fmt::format("if (threadIdx.x % 128 == 0 && warp_m / 4 == {})", op.intAttr("warpgroup")));
    out_.line("const int first_row = 0;");
  } else {
    out_.open("if (threadIdx.x % 128 == 0)");
    out_.line("const int first_row = warp_m / 4 * {};", kWarpgroupRows);
  }
  for (int64_t p = 0; p < tile.shape[1] / cols; ++p)
    copyBox(fmt::format("{} + {} + first_row * {}", name(buf), p * panelBytes, kSwizzle128RowBytes),
            coords[0] + (p ? fmt::format(" + {}", p * cols) : ""), coords[1] + " + first_row");
  out_.line("tkc::bulk_commit_group();");
  out_.close();
  return true;
}

namespace {
/// Committed wgmma groups not yet waited for, oldest first.
using Groups = std::vector<std::vector<const Op *>>;

/// Calls `visit` with each op of `block` and the groups in flight before it.
/// A loop body starts with those its previous iteration left in flight.
void walkWithGroupsInFlight(const Block &block, const std::function<void(const Op &, const Groups &)> &visit) {
  auto step = [](const Op &op, Groups &groups, std::vector<const Op *> &open) {
    if (op.kind == OpKind::Wgmma) {
      open.push_back(&op);
    } else if (op.kind == OpKind::WgmmaCommit) {
      groups.push_back(open);
      open.clear();
    } else if (op.kind == OpKind::WgmmaWait) {
      size_t pending = static_cast<size_t>(op.intAttr("pending"));
      if (groups.size() > pending)
        groups.erase(groups.begin(), groups.end() - static_cast<std::ptrdiff_t>(pending));
    }
  };
  Groups groups;
  std::vector<const Op *> open;
  if (block.parentOp && block.parentOp->kind == OpKind::For)
    for (auto &op : block.ops)
      step(*op, groups, open);
  open.clear();
  for (auto &op : block.ops) {
    visit(*op, groups);
    step(*op, groups, open);
  }
}

bool readsRegisterA(const Groups &groups) {
  return std::any_of(groups.begin(), groups.end(), [](const std::vector<const Op *> &g) {
    return std::any_of(g.begin(), g.end(), [](const Op *w) { return w->operands[0]->type.isRegister(); });
  });
}
} // namespace

/// Two choices ptxas makes badly unless the code leaves it none.
///
/// Zeroing a product's accumulator in registers while other products are in
/// flight: ptxas cannot always tell the new registers from those the pending
/// wgmma write and waits for them (C7517), serialising the products. A
/// product that starts from zeros needs none: its first k16 step can ignore
/// the accumulator (scale-d = 0). With nothing in flight the zeros cost
/// nothing, and the attention forward ran 1% slower without them (ptxas
/// scheduled it otherwise), so only there.
///
/// A wait for products that ran while the threads did other work (the dQ
/// kernel's softmax while dP = dO V^T runs) must stay after that work, but
/// ptxas sees no dependence between them and may hoist the wait above it,
/// idling the threads until the product is done: with the dQ kernel's wait
/// hoisted so, the sm_90a backward at D = 128 ran 5-8% slower. ptxas moves
/// nothing across a branch, so such a wait opens the tail-unswitched part
/// of the body when one follows (EmitUnswitch.cpp): a wait in a block that
/// follows an earlier wait there, with tile work between the two, and
/// products to wait for. Not where a product in flight through the window
/// reads A from registers: ptxas waits early there to reuse those registers
/// for the work (pinned after it, the attention forward spilled 300 to 1600
/// bytes at D = 128). A branch of its own (never taken) before the wait
/// pinned it too, but then ptxas serialised the dQ kernel's products for
/// want of registers (C7512).
void KernelEmitter::findWgmmaSchedule() {
  std::vector<const Block *> blocks{&kernel_.body};
  walk(const_cast<Block &>(kernel_.body), [&](Op &op) {
    if (op.body)
      blocks.push_back(op.body.get());
  });
  for (const Block *block : blocks) {
    std::set<const Op *> fillsInFlight;
    bool afterWait = false, work = false;
    walkWithGroupsInFlight(*block, [&](const Op &op, const Groups &groups) {
      if (op.kind == OpKind::Fill && !groups.empty())
        fillsInFlight.insert(&op);
      if (op.kind == OpKind::Wgmma && op.operands.size() == 3) {
        const Op *fill = op.operands[2]->definingOp;
        if (fillsInFlight.count(fill) && fill->floatAttr("value") == 0.0 && uses_[op.operands[2]] == 1)
          freshAccumulators_.insert(fill);
      }
      if (op.kind == OpKind::WgmmaWait) {
        size_t pending = static_cast<size_t>(op.intAttr("pending"));
        if (afterWait && work && !readsRegisterA(groups) && groups.size() > pending)
          windowClosingWaits_.insert(&op);
        afterWait = true;
        work = false;
      } else if (op.kind != OpKind::Wgmma && op.kind != OpKind::WgmmaCommit) {
        work |= std::any_of(op.results.begin(), op.results.end(),
                            [](const std::unique_ptr<Value> &r) { return r->type.isRegister() && r->type.isTile(); });
      }
    });
  }
}

/// A product that reads A from registers made in the loop body, and the
/// wait that retires it, in one stretch of straight-line code with other
/// code between them: ptxas (CUDA 13.0) gave the fragment's registers to
/// that code while the product still read them (the attention forward,
/// compiled with its loop body unsplit, wrote wrong outputs). Where a
/// branch comes between, ptxas waits for the product at the branch; here
/// the product is waited for where that code begins, which is what ptxas
/// did at the branch (keeping the fragment instead, to overlap the product
/// with that code, ran the forward 9-13% slower and spilled at D = 64).
void KernelEmitter::noteCodeAfterRegisterProducts(const Op &op) {
  switch (op.kind) {
  // The products' own bookkeeping, and synchronisation that takes no
  // registers (a turn passed here must not wait for the product).
  case OpKind::Wgmma: case OpKind::WgmmaFence: case OpKind::WgmmaCommit: case OpKind::WgmmaWait:
  case OpKind::TurnWait: case OpKind::TurnPass: case OpKind::WarpgroupBarrier: case OpKind::Barrier:
  case OpKind::MbarrierArrive: case OpKind::FenceProxyAsync:
    return;
  default:
    break;
  }
  for (auto &[product, at] : registerProducts_)
    if (!at.firstCode.set() && product->parent == op.parent)
      at.firstCode = out_.mark();
}

void KernelEmitter::retireRegisterProduct(const Op &product) {
  auto it = registerProducts_.find(&product);
  if (it == registerProducts_.end())
    return;
  CodeWriter::Mark at = it->second.firstCode;
  registerProducts_.erase(it);
  if (!at.set())
    return;
  size_t moved = out_.insertLine(at, "tkc::wgmma_wait<0>();");
  // The wait retires every product issued before it.
  for (auto entry = registerProducts_.begin(); entry != registerProducts_.end();) {
    if (entry->second.issued.offset <= at.offset) {
      entry = registerProducts_.erase(entry);
      continue;
    }
    entry->second.issued.offset += moved;
    if (entry->second.firstCode.set())
      entry->second.firstCode.offset += moved;
    ++entry;
  }
}

/// One warpgroup multiplies its 64 rows of the tile: K/16 wgmma
/// instructions of m64nNk16, accumulating in place. A comes from shared
/// memory (K-major panels, or an M-major panel per warpgroup for a [K, M]
/// tile read transposed, `trans_a`) or from registers in the A-fragment
/// layout; B is K-major ([N, K], `trans_b`) or N-major ([K, N]) panels.
bool KernelEmitter::emitWgmma(const Op &op) {
  const Value *a = op.operands[0];
  const Value *b = op.operands[1];
  const Value *c = op.operands[2];
  const Type &acc = op.result()->type;
  bool transB = op.intAttr("trans_b") != 0;
  bool aInRegisters = a->type.isRegister() && a->type.layout.kind == LayoutKind::OperandA;
  // Split by columns (#acc<4xW>), warpgroup w multiplies all 64 rows by its
  // W-th of B's columns.
  bool byColumns = acc.layout.warpsN > 1;
  if ((!aInRegisters && a->type.layout.kind != LayoutKind::Swizzle128) ||
      b->type.layout.kind != LayoutKind::Swizzle128 || acc.layout.kind != LayoutKind::Acc ||
      acc.shape[0] != 16 * acc.layout.warpsM || (byColumns && (acc.layout.warpsM != 4 || aInRegisters)))
    return unsupported(op, "wgmma on these operands");
  bool transA = !aInRegisters && op.intAttr("trans_a") != 0;
  if (aInRegisters && !isResidentFragment(a))
    registerProducts_[&op] = {out_.mark(), {}};
  int64_t n = acc.shape[1] / acc.layout.warpsN, k = a->type.shape[transA ? 0 : 1];
  auto ptxType = [](DType d) {
    return d == DType::BF16 ? "bf16" : d == DType::F16 ? "f16" : d == DType::F8E4M3 ? "e4m3" : "e5m2";
  };
  WgmmaShape shape;
  shape.n = n;
  shape.elementType = ptxType(a->type.dtype);
  shape.aInRegisters = aInRegisters;
  if (b->type.dtype != a->type.dtype)
    shape.bType = ptxType(b->type.dtype);
  if (shape.eightBit() && (aInRegisters || transA || !transB))
    return unsupported(op, "wgmma of 8-bit floats not read K-major from shared memory");
  wgmmaShapes_.insert(shape);
  std::string wrapper = "tkc::" + shape.wrapperName();
  // One instruction takes 32 bytes of each row of K: k16 of 16-bit
  // elements, k32 of 8-bit ones.
  int64_t elem = dtypeBytes(a->type.dtype), kStep = shape.k();
  int64_t perPanel = kSwizzle128RowBytes / elem / kStep; // instructions along one panel row
  // The accumulator is updated in place: wgmma runs asynchronously and its
  // registers must stay where they are until the wait.
  names_[op.result()] = name(c);
  // Each operand's descriptor is built once; a k16 step advances its start
  // address: in a K-major panel by 32 bytes along the rows, and to the next
  // panel (each `rows` rows of 128 bytes) every 128 bytes; in an N-major
  // [K, N] tile by 16 rows. The offsets are constants once the loop is
  // unrolled, so each wgmma costs one add instead of a descriptor.
  auto kMajorStep = [&](int64_t rows) {
    return fmt::format("kk / {} * {} + kk % {} * {}", perPanel, rows * kSwizzle128RowBytes, perPanel, kStep * elem);
  };
  bool predicated = op.operands.size() == 4;
  const Op *commit = predicated ? committedWith(op) : nullptr;
  if (predicated)
    out_.open(fmt::format("if ({})", scalar(op.operands[3])));
  else
    out_.open("");
  // The warpgroup's first column of B: its rows of a K-major [N, K] tile,
  // or in an N-major [K, N] tile its panel and the byte offset in the
  // panel's rows (the swizzle follows the address bits, so a start inside
  // a 128-byte row reads on from there).
  std::string bBase = name(b);
  if (byColumns) {
    std::string first = fmt::format("(warp_m / 4) * {}", n);
    bBase = transB ? fmt::format("{} + {} * {}", name(b), first, kSwizzle128RowBytes)
                   : fmt::format("{} + {} / {} * {} + {} % {} * {}", name(b), first, perPanel * 16, k * kSwizzle128RowBytes,
                                 first, perPanel * 16, elem);
  }
  std::string stepB;
  if (transB) {
    out_.line("const uint64_t b_desc = tkc::wgmma_desc_sw128({}, 16, 1024);", bBase);
    stepB = kMajorStep(b->type.shape[0]);
  } else {
    out_.line("const uint64_t b_desc = tkc::wgmma_desc_sw128({}, {}, 1024);", bBase, k * kSwizzle128RowBytes);
    stepB = fmt::format("kk * {}", 16 * kSwizzle128RowBytes);
  }
  // The warpgroup's 64 rows of A (all warpgroups share them when split by
  // columns).
  std::string rowBlock = byColumns ? "0" : "(warp_m / 4)";
  if (transA) // M-major: the warpgroup's 64 rows of M are one panel of k rows
    out_.line("const uint64_t a_desc = tkc::wgmma_desc_sw128({} + {} * {}, {}, 1024);", name(a), rowBlock,
              k * kSwizzle128RowBytes, k * kSwizzle128RowBytes);
  else if (!aInRegisters)
    out_.line("const uint64_t a_desc = tkc::wgmma_desc_sw128({} + {} * {}, 16, 1024);", name(a), rowBlock,
              64 * kSwizzle128RowBytes);
  // A product that starts from zeros overwrites its accumulator first.
  std::string accumulate = freshAccumulators_.count(c->definingOp) ? ", kk > 0" : "";
  out_.open(fmt::format("TKC_UNROLL for (int kk = 0; kk < {}; ++kk)", k / kStep));
  std::string descB = fmt::format("tkc::wgmma_desc_advance(b_desc, {})", stepB);
  if (aInRegisters) {
    // The warp's A fragment of the k16 step, as mma.sync would take it.
    std::string frag = fmt::format("{}[kk * 4", name(a));
    out_.line("{}<{}>({}, {} + 0], {} + 1], {} + 2], {} + 3], {}{});", wrapper, transB ? 0 : 1, name(c), frag, frag,
              frag, frag, descB, accumulate);
  } else {
    std::string descA = fmt::format("tkc::wgmma_desc_advance(a_desc, {})",
                                    transA ? fmt::format("kk * {}", 16 * kSwizzle128RowBytes) : kMajorStep(a->type.shape[0]));
    std::string templateArgs =
        shape.eightBit() ? "" : fmt::format("<{}{}>", transB ? 0 : 1, transA ? ", 1" : "");
    out_.line("{}{}({}, {}, {}{});", wrapper, templateArgs, name(c), descA, descB, accumulate);
  }
  out_.close();
  if (commit) {
    out_.line("tkc::wgmma_commit();");
    out_.dedent();
    out_.line("}} else {{");
    out_.indent();
    out_.line("tkc::wgmma_commit();");
    absorbed_.insert(commit);
  }
  out_.close();
  return true;
}

/// The commit right after a product issued only when its predicate holds,
/// if any. It is emitted in both branches. Committed after the branches
/// join, the group may be empty, and ptxas closes it on every path with an
/// empty wgmma of its own, a group of its own too: a wait for all but the
/// newest group then also waits for the product. In the attention forward
/// that made the softmax wait for the previous tile's output product it
/// was meant to overlap (on the H200 the forward ran 1-2% faster with the
/// commit in each branch).
const Op *KernelEmitter::committedWith(const Op &wgmma) const {
  const Block &block = *wgmma.parent;
  auto it = std::find_if(block.ops.begin(), block.ops.end(), [&](const std::unique_ptr<Op> &o) { return o.get() == &wgmma; });
  if (it == block.ops.end() || std::next(it) == block.ops.end() || (*std::next(it))->kind != OpKind::WgmmaCommit)
    return nullptr;
  return std::next(it)->get();
}

} // namespace tkc::codegen
