// hopper-layout (sm_90a and newer; a no-op for older targets): picks the
// wgmma schedule for a pipelined matrix-product loop.
//
// A loop qualifies when its body is a pipelined GEMM step: two shared loads
// (A [BM, BK], or [BK, BM] with trans_a, and B [BK, BN], or [BN, BK] with
// trans_b) feeding one `mma` whose accumulator is carried by the loop, plus
// scalar address arithmetic.
// For such a loop the pass
//   * stages both operand tiles as 128-byte-swizzled panels (#swizzle128),
//     the layout that the bulk tensor copy engine writes and wgmma reads;
//   * gives the accumulator (and every tile derived from it) the layout of
//     BM/64 consumer warpgroups, each owning 64 rows: #acc<(BM/16)x1>;
//   * makes the kernel one warpgroup larger for the producer;
//   * marks a store of a 16-bit accumulator tile after the loop, or an
//     addition of the f32 accumulator (atomic_add), for an
//     epilogue through shared memory (`epilogue = "tma"`, carried out by
//     hopper-epilogue), with a staging tile of `staging_cols` columns (the
//     whole tile or a part of it, as fits beside the pipeline stages): the
//     consumers then hand the tile to the bulk copy engine and go on with
//     the next one;
//   * chooses the pipeline depth: the deepest that fits the target's shared
//     memory (never shallower than the source asks), recorded as
//     `hopper_stages` in place of `stages` so that `pipeline` leaves the
//     loop to `hopper-pipeline`.
//
// A loop of several products with elementwise work between them (attention)
// qualifies too when its register tiles already give each warp 16 rows, the
// rows of a warp in a wgmma warpgroup: its operand tiles become
// #swizzle128, an A operand loaded once before the loop stays in shared
// memory (no conversion to registers), vectors loaded in the loop go
// straight to the consumers' registers, and the kernel gains the producer
// warpgroup and `hopper_stages`. With a single consumer warpgroup the stages
// are sized so that two blocks share a multiprocessor.
//
// Kernels with anything else (strips, other layouts, other products) are
// left to the sm_80 path.
#include "passes/Pass.h"
#include "passes/PassUtils.h"

#include <set>

namespace tkc {
namespace {

using namespace ir;

/// Shared memory kept free for mbarriers and alignment.
constexpr int64_t kReservedSharedBytes = 2048;
constexpr int kMaxStages = 8;
/// Pipeline depth worth a narrower epilogue staging tile: with fewer stages
/// a slot is refilled too late behind the one wgmma group kept in flight
/// (on the H200, 4 stages and a half-width staging tile ran the 128 x 256
/// GEMM 4-5% faster than 3 stages and a whole one).
constexpr int64_t kPreferredStages = 4;

bool isPureScalar(const Op &op) {
  return op.body == nullptr && op.results.size() == 1 && op.result()->type.isScalar() && op.kind != OpKind::Load;
}

struct GemmLoop {
  Op *loop = nullptr;
  Op *mma = nullptr;
  Op *loadA = nullptr;
  Op *loadB = nullptr;
};

/// The matrix-product loop that wgmma can run, or nothing.
std::optional<GemmLoop> matchGemmLoop(Op &loop) {
  if (loop.kind != OpKind::For || !loop.hasAttr("stages") || loop.results.size() != 1)
    return std::nullopt;
  auto step = passes::constantIntOf(loop.operands[2]);
  if (!step || *step != 1)
    return std::nullopt;
  GemmLoop m;
  m.loop = &loop;
  for (auto &op : loop.body->ops) {
    if (op->kind == OpKind::Mma) {
      if (m.mma)
        return std::nullopt;
      m.mma = op.get();
    } else if (op->kind == OpKind::Load) {
      if (!op->result()->type.isShared())
        return std::nullopt;
    } else if (op->kind != OpKind::Yield && !isPureScalar(*op)) {
      return std::nullopt;
    }
  }
  if (!m.mma)
    return std::nullopt;
  Op &mma = *m.mma;
  Op &yield = *loop.body->ops.back();
  if (mma.operands[2] != loop.body->args[1].get() || yield.operands.size() != 1 || yield.operands[0] != mma.result())
    return std::nullopt;
  m.loadA = mma.operands[0]->definingOp;
  m.loadB = mma.operands[1]->definingOp;
  if (!m.loadA || !m.loadB || m.loadA == m.loadB || m.loadA->kind != OpKind::Load || m.loadB->kind != OpKind::Load ||
      m.loadA->parent != loop.body.get() || m.loadB->parent != loop.body.get())
    return std::nullopt;
  for (Op *load : {m.loadA, m.loadB}) {
    if (load->operands[0]->type.dims.size() != 2 || load->listAttr("sizes").size() != 2)
      return std::nullopt;
    DType d = load->result()->type.dtype;
    if (d != DType::BF16 && d != DType::F16)
      return std::nullopt;
  }
  if (m.loadA->result()->type.dtype != m.loadB->result()->type.dtype)
    return std::nullopt;
  const Type &acc = mma.result()->type;
  if (!acc.isRegister() || acc.layout.kind != LayoutKind::Acc || acc.dtype != DType::F32)
    return std::nullopt;
  int64_t bm = acc.shape[0], bn = acc.shape[1];
  const auto &aShape = m.loadA->result()->type.shape;
  const auto &bShape = m.loadB->result()->type.shape;
  bool transA = mma.intAttr("trans_a") != 0, transB = mma.intAttr("trans_b") != 0;
  int64_t bk = aShape[transA ? 0 : 1];
  // 64 operand columns make one 128-byte swizzle panel: the A tile is then
  // a single box and every k16 step sits inside it. Read transposed ([K, M],
  // M-major), each consumer warpgroup's 64 rows of M are one panel.
  if (bk != 64 || aShape[transA ? 1 : 0] != bm)
    return std::nullopt;
  if (transB ? (bShape[0] != bn || bShape[1] != bk) : (bShape[0] != bk || bShape[1] != bn))
    return std::nullopt;
  if ((bm != 64 && bm != 128) || (bn != 64 && bn != 128 && bn != 256))
    return std::nullopt;
  return m;
}

/// The store after the loop that can go out through a shared staging tile
/// and bulk tensor copies: a whole 16-bit accumulator tile to a 2-d tensor,
/// in 64-row, 128-byte panels, or the f32 accumulator itself added to one
/// (atomic_add: the copy engine adds whole lines in L2, which goes about
/// 1.6 times as fast as the threads' vector reductions on the H200).
Op *matchTmaStore(Kernel &kernel, const GemmLoop &m) {
  Op *found = nullptr;
  for (auto &op : kernel.body.ops) {
    if (op->kind != OpKind::Store)
      continue;
    if (found)
      return nullptr;
    found = op.get();
  }
  if (!found || passes::positionOf(*found) == kernel.body.ops.end())
    return nullptr;
  const Type &value = found->operands[1]->type;
  const Type &global = found->operands[0]->type;
  const Type &acc = m.mma->result()->type;
  bool adds = found->hasAttr("accumulate");
  if (!value.isRegister() || value.layout.kind != LayoutKind::Acc || dtypeBytes(value.dtype) != (adds ? 4 : 2) ||
      value.shape != acc.shape || global.dims.size() != 2 || found->listAttr("sizes") != acc.shape)
    return nullptr;
  if (value.shape[0] % 64 != 0 || value.shape[1] % (kSwizzle128RowBytes / dtypeBytes(value.dtype)) != 0)
    return nullptr;
  bool afterLoop = false;
  for (auto &op : kernel.body.ops) {
    afterLoop |= op.get() == m.loop;
    if (op.get() == found)
      return afterLoop ? found : nullptr;
  }
  return nullptr;
}

/// Layouts outside the accumulator family make the kernel ineligible: their
/// warp mapping would change with the warpgroup split.
bool onlyAccumulatorLayouts(Kernel &kernel) {
  bool ok = true;
  walk(kernel.body, [&](Op &op) {
    for (auto &r : op.results)
      if (r->type.isRegister() && r->type.layout.kind != LayoutKind::Acc)
        ok = false;
  });
  return ok;
}

/// A pipelined loop of several products with work between them, such as
/// attention's: every `mma` of the kernel sits directly in it, each with
/// its B operand a 16-bit shared tile loaded in the loop (`streamed`) and
/// its A operand either registers in the A-fragment layout, a shared tile
/// loaded in the loop, or a shared tile loaded once before the loop and
/// converted to registers (`resident`: wgmma reads it from shared memory
/// instead). Every register tile must already give each warp 16 rows, the
/// rows a warp holds in a wgmma warpgroup.
struct FusedLoop {
  Op *loop = nullptr;
  std::vector<Op *> mmas;
  std::vector<Op *> streamed;
  std::vector<Op *> resident;
  int warps = 0;
};

bool isSixteenBitTile(const Type &t) {
  return t.shape.size() == 2 && (t.dtype == DType::BF16 || t.dtype == DType::F16);
}

/// Whether every use of `v` in the kernel is as an operand of an `mma`.
bool onlyFeedsMmas(Kernel &kernel, Value *v) {
  bool ok = true;
  walk(kernel.body, [&](Op &op) {
    for (Value *operand : op.operands)
      if (operand == v && op.kind != OpKind::Mma)
        ok = false;
  });
  return ok;
}

std::optional<FusedLoop> matchFusedLoop(Kernel &kernel) {
  FusedLoop f;
  bool ok = true;
  int mmas = 0;
  walk(kernel.body, [&](Op &op) {
    if (op.kind == OpKind::Mma)
      ++mmas;
    for (auto &r : op.results) {
      const Type &t = r->type;
      if (!t.isRegister() || t.isScalar())
        continue;
      bool family = t.layout.kind == LayoutKind::Acc || t.layout.kind == LayoutKind::AccRow ||
                    t.layout.kind == LayoutKind::OperandA || t.layout.kind == LayoutKind::AccCol;
      // A column vector spans a tile's columns, which every warp holds whole.
      bool rowsPerWarp = t.layout.kind == LayoutKind::AccCol || t.shape[0] == 16 * t.layout.warpsM;
      if (!family || t.layout.warpsN != 1 || !rowsPerWarp)
        ok = false;
      else if (f.warps == 0)
        f.warps = t.layout.warpsM;
      else if (f.warps != t.layout.warpsM)
        ok = false;
    }
  });
  if (!ok || f.warps % 4 != 0 || mmas == 0)
    return std::nullopt;
  for (auto &op : kernel.body.ops)
    if (op->kind == OpKind::For && op->hasAttr("stages") && op->body) {
      if (f.loop)
        return std::nullopt;
      f.loop = op.get();
    }
  if (!f.loop)
    return std::nullopt;
  auto step = passes::constantIntOf(f.loop->operands[2]);
  if (!step || *step != 1)
    return std::nullopt;
  Block &body = *f.loop->body;
  auto inLoopLoad = [&](Value *v) {
    Op *def = v->definingOp;
    return def && def->kind == OpKind::Load && def->parent == &body && v->type.isShared() &&
           isSixteenBitTile(v->type) && onlyFeedsMmas(kernel, v);
  };
  // Vectors loaded in the loop straight into registers (attention
  // backward's per-query statistics) stay with the consumers.
  auto vectorLoad = [](Value *v) { return v->type.isRegister() && v->type.shape.size() == 1; };
  for (auto &op : body.ops) {
    if (op->kind != OpKind::Mma) {
      if (op->kind == OpKind::Load && !inLoopLoad(op->result()) && !vectorLoad(op->result()))
        return std::nullopt;
      continue;
    }
    // A transposed A operand is left to the sm_80 code.
    if (op->intAttr("trans_a"))
      return std::nullopt;
    f.mmas.push_back(op.get());
    Value *a = op->operands[0], *b = op->operands[1];
    const Type &acc = op->result()->type;
    int64_t n = acc.shape[1];
    bool transB = op->intAttr("trans_b") != 0;
    if (acc.dtype != DType::F32 || !isWgmmaWidth(n) || !inLoopLoad(b))
      return std::nullopt;
    int64_t k = transB ? b->type.shape[1] : b->type.shape[0];
    if (transB ? (b->type.shape[0] != n || k % 64 != 0) : (b->type.shape[1] != n || k % 16 != 0 || n % 64 != 0))
      return std::nullopt;
    if (a->type.isRegister()) {
      if (a->type.layout.kind != LayoutKind::OperandA)
        return std::nullopt;
      // A converted shared tile loaded once before the loop stays in shared memory.
      Op *convert = a->definingOp;
      Value *src = convert && convert->kind == OpKind::Convert ? convert->operands[0] : nullptr;
      if (src && src->type.isShared() && src->definingOp && src->definingOp->kind == OpKind::Load &&
          src->definingOp->parent == &kernel.body) {
        if (!isSixteenBitTile(src->type) || src->type.shape[1] % 64 != 0)
          return std::nullopt;
        if (std::find(f.resident.begin(), f.resident.end(), src->definingOp) == f.resident.end())
          f.resident.push_back(src->definingOp);
      }
    } else if (a->definingOp && a->definingOp->kind == OpKind::Load && a->definingOp->parent == &kernel.body) {
      if (!a->type.isShared() || !isSixteenBitTile(a->type) || a->type.shape[1] % 64 != 0)
        return std::nullopt;
      if (std::find(f.resident.begin(), f.resident.end(), a->definingOp) == f.resident.end())
        f.resident.push_back(a->definingOp);
    } else if (!inLoopLoad(a) || a->type.shape[1] % 64 != 0) {
      return std::nullopt;
    }
  }
  for (auto &op : body.ops)
    if (op->kind == OpKind::Load && op->result()->type.isShared())
      f.streamed.push_back(op.get());
  // Shared tiles outside these roles have no place in the warp-specialized kernel.
  int sharedLoads = 0;
  walk(kernel.body, [&](Op &op) {
    if (op.kind == OpKind::Load && op.result()->type.isShared())
      ++sharedLoads;
  });
  if (sharedLoads != static_cast<int>(f.streamed.size() + f.resident.size()))
    return std::nullopt;
  return f;
}

class HopperLayoutPass : public Pass {
public:
  const char *name() const override { return "hopper-layout"; }
  const char *description() const override {
    return "sm_90a: choose wgmma accumulator and 128-byte-swizzled operand layouts and the pipeline depth";
  }
  bool run(Module &module, const Target &target, DiagnosticEngine &diags) override {
    if (target.computeCapability < 90)
      return true;
    for (auto &kernel : module.kernels)
      runOnKernel(*kernel, target);
    return true;
  }

private:
  void runOnKernel(Kernel &kernel, const Target &target) {
    std::vector<GemmLoop> found;
    int mmas = 0;
    walk(kernel.body, [&](Op &op) {
      if (op.kind == OpKind::Mma)
        ++mmas;
      if (op.kind == OpKind::For && op.parent == &kernel.body)
        if (auto m = matchGemmLoop(op))
          found.push_back(*m);
    });
    if (found.size() != 1 || mmas != 1 || !onlyAccumulatorLayouts(kernel)) {
      if (auto f = matchFusedLoop(kernel))
        layOutFused(kernel, *f, target);
      return;
    }
    GemmLoop &m = found.front();
    const Type &acc = m.mma->result()->type;
    int consumerWarps = static_cast<int>(acc.shape[0] / 16);
    Layout wgAcc{LayoutKind::Acc, consumerWarps, 1};
    walk(kernel.body, [&](Op &op) {
      for (auto &r : op.results)
        if (r->type.isRegister() && r->type.layout.kind == LayoutKind::Acc)
          r->type.layout = wgAcc;
      if (op.body)
        for (auto &a : op.body->args)
          if (a->type.isRegister() && a->type.layout.kind == LayoutKind::Acc)
            a->type.layout = wgAcc;
    });
    for (Op *load : {m.loadA, m.loadB})
      load->result()->type.layout = {LayoutKind::Swizzle128, 1, 1};
    kernel.warps = consumerWarps + 4;

    int64_t stageBytes = passes::sharedBufferBytes(m.loadA->result()->type) +
                         passes::sharedBufferBytes(m.loadB->result()->type);
    int64_t asked = m.loop->intAttr("stages", 2);
    int64_t free = target.sharedMemoryBytes - kReservedSharedBytes;
    if (Op *store = matchTmaStore(kernel, m)) {
      // The widest staging tile (the whole tile, else a half, a quarter...,
      // never under one panel) that leaves room for the preferred depth, or
      // failing that for the depth the source asks.
      const Type &tile = store->operands[1]->type;
      int64_t rows = tile.shape[0], elem = dtypeBytes(tile.dtype), minCols = kSwizzle128RowBytes / elem;
      auto widestFitting = [&](int64_t stages) -> int64_t {
        for (int64_t cols = tile.shape[1]; cols >= minCols && tile.shape[1] % cols == 0; cols /= 2)
          if ((free - rows * cols * elem) / stageBytes >= stages)
            return cols;
        return 0;
      };
      int64_t cols = widestFitting(std::max(asked, kPreferredStages));
      if (cols == 0)
        cols = widestFitting(asked);
      if (cols > 0) {
        store->attrs["epilogue"] = Attr(std::string("tma"));
        store->attrs["staging_cols"] = Attr(cols);
        free -= rows * cols * elem;
      }
    }
    int64_t fit = free / stageBytes;
    int64_t stages = std::max<int64_t>(asked, std::min<int64_t>(fit, kMaxStages));
    m.loop->attrs.erase("stages");
    m.loop->attrs["hopper_stages"] = Attr(stages);
  }

  void layOutFused(Kernel &kernel, FusedLoop &f, const Target &target) {
    for (Op *load : f.streamed)
      load->result()->type.layout = {LayoutKind::Swizzle128, 1, 1};
    int64_t residentBytes = 0;
    for (Op *load : f.resident) {
      load->result()->type.layout = {LayoutKind::Swizzle128, 1, 1};
      residentBytes += passes::sharedBufferBytes(load->result()->type);
    }
    // wgmma reads resident A tiles from shared memory: the conversions to
    // registers go.
    for (Op *mma : f.mmas) {
      Op *convert = mma->operands[0]->definingOp;
      if (convert && convert->kind == OpKind::Convert && convert->operands[0]->type.isShared())
        mma->operands[0] = convert->operands[0];
    }
    // (Erasing an unused conversion changes no other conversion's uses.)
    passes::UseCounts uses = passes::countUses(kernel.body);
    for (Op *load : f.resident)
      for (auto it = kernel.body.ops.begin(); it != kernel.body.ops.end();) {
        Op &op = **it;
        if (op.kind == OpKind::Convert && op.operands[0] == load->result() && uses[op.result()] == 0)
          it = kernel.body.ops.erase(it);
        else
          ++it;
      }
    kernel.warps = f.warps + 4;

    int64_t stageBytes = 0;
    for (Op *load : f.streamed)
      stageBytes += passes::sharedBufferBytes(load->result()->type);
    int64_t asked = f.loop->intAttr("stages", 2);
    int blocks = intendedBlocksPerSm(f.warps);
    int64_t fit = (target.sharedMemoryPerBlock(blocks) - kReservedSharedBytes - residentBytes) / stageBytes;
    int64_t stages = std::max<int64_t>(asked, std::min<int64_t>(fit, kPreferredStages));
    f.loop->attrs.erase("stages");
    f.loop->attrs["hopper_stages"] = Attr(stages);
  }
};

} // namespace

std::unique_ptr<Pass> createHopperLayoutPass() { return std::make_unique<HopperLayoutPass>(); }

} // namespace tkc
