// hopper-layout (sm_90a and newer; a no-op for older targets): picks the
// wgmma schedule for a pipelined matrix-product loop.
//
// A loop qualifies when its body is a pipelined GEMM step: shared loads
// (A [BM, BK], or [BK, BM] with trans_a, and B [BK, BN], or [BN, BK] with
// trans_b) feeding `mma`s, each on an accumulator of its own that the loop
// carries, plus scalar address arithmetic. One product is a GEMM; several
// (a gated MLP's gate and up projections, which share A's tile) are
// independent products of one accumulator shape, run side by side.
// For such a loop the pass
//   * stages the operand tiles as 128-byte-swizzled panels (#swizzle128),
//     the layout that the bulk tensor copy engine writes and wgmma reads;
//   * gives the accumulators (and every tile derived from them) the layout
//     of BM/64 consumer warpgroups, each owning 64 rows: #acc<(BM/16)x1>,
//     whatever warp grid the layout pass chose for mma.sync (the grid is
//     decided here, where the loop is known to go to wgmma: a kernel that
//     stays on mma.sync keeps layout's);
//   * makes the kernel one warpgroup larger for the producer;
//   * marks the stores of 16-bit accumulator tiles after the loop (one or
//     more: an output and its pre-activation), or an addition of the f32
//     accumulator (atomic_add), for an epilogue through shared memory
//     (`epilogue = "tma"`, carried out by hopper-epilogue), each with a
//     staging tile of `staging_cols` columns (the whole tile or a part of
//     it, the same part for all, as fits beside the pipeline stages): the
//     consumers then hand the tiles to the bulk copy engine and go on with
//     the next one;
//   * chooses the pipeline depth: the deepest that fits the target's shared
//     memory, no shallower than the source asks where that many fit, else
//     the deepest that does (with a note; two at least, or an error),
//     recorded as `hopper_stages` in place of `stages` so that `pipeline`
//     leaves the loop to `hopper-pipeline`.
//
// A loop of several products with elementwise work between them (attention)
// qualifies too when its register tiles already give each warp 16 rows, the
// rows of a warp in a wgmma warpgroup: its operand tiles become
// #swizzle128, an A operand loaded once before the loop stays in shared
// memory (no conversion to registers), vectors loaded in the loop go
// straight to the consumers' registers, and the kernel gains the producer
// warpgroup and `hopper_stages`. With a single consumer warpgroup the stages
// are sized so that two blocks share a multiprocessor. Such a loop may also
// stage a register tile in shared memory for a product that reads it
// transposed or as it is (a `convert` to #swizzle128, written by the
// consumers; one copy serves every product that reads it), read a B
// operand loaded before the loop, split 64-row tiles between the consumer
// warpgroups by columns (#acc<4xG>, each warpgroup all 64 rows: the
// attention backward's scores with queries as rows, with their row vectors
// #accrow<4xG> and dQ's share), and add a product's f32 result to a tensor
// in every iteration through the bulk copy engine (marked like the
// epilogue's store). Two pipeline stages at least must fit beside the
// resident and staged tiles; where they do not, the kernel stays on
// mma.sync with a warning that says so. Where hopper-pipeline will issue the
// second of two products an iteration late (the attention forward's output
// product) in a persistent kernel with resident tiles, below the preferred
// depth, the tiles only that product reads get a ring of their own,
// `hopper_slots` = `hopper_stages` + 1, as they stay taken an iteration
// longer.
//
// Kernels with anything else (strips, other layouts, other products) are
// left to the sm_80 path.
#include "passes/IndexBounds.h"
#include "passes/Pass.h"
#include "passes/PassUtils.h"

#include <fmt/format.h>

#include <set>

namespace tkc {
namespace {

using namespace ir;

constexpr int kMaxStages = 8;
/// Pipeline depth worth a narrower epilogue staging tile: with fewer stages
/// a slot is refilled too late behind the one wgmma group kept in flight
/// (on the H200, 4 stages and a half-width staging tile ran the 128 x 256
/// GEMM 4-5% faster than 3 stages and a whole one).
constexpr int64_t kPreferredStages = 4;

/// The first product of 8-bit floats, which only wgmma can run.
Op *firstF8Product(Kernel &kernel) {
  Op *found = nullptr;
  walk(kernel.body, [&](Op &op) {
    if (!found && op.kind == OpKind::Mma && isF8(op.operands[0]->type.dtype))
      found = &op;
  });
  return found;
}

bool isPureScalar(const Op &op) {
  return op.body == nullptr && op.results.size() == 1 && op.result()->type.isScalar() && op.kind != OpKind::Load;
}

/// Why a kernel's products stay on mma.sync on Hopper: the op that does
/// not fit the GEMM or the fused loop (null: the kernel as a whole) and
/// the reason.
struct ScheduleMismatch {
  const Op *at = nullptr;
  std::string why;
};

/// One product of a GEMM loop and the loads of its operands.
struct GemmProduct {
  Op *mma = nullptr;
  Op *loadA = nullptr;
  Op *loadB = nullptr;
};

/// A pipelined loop of independent accumulating products: each carries an
/// accumulator of its own, and the products may share operand tiles (the
/// gate and the up projection of a gated MLP both read X's tile).
struct GemmLoop {
  Op *loop = nullptr;
  std::vector<GemmProduct> products;
  /// The distinct operand tiles the loop loads, in program order.
  std::vector<Op *> loads;
  const Type &accumulator() const { return products.front().mma->result()->type; }
};

/// Why one product of a GEMM step cannot run on wgmma, checked on its own
/// operands; empty if it can.
std::string wgmmaStepMismatch(const GemmProduct &p, const Block &body) {
  const Op &mma = *p.mma;
  if (!p.loadA || !p.loadB || p.loadA == p.loadB || p.loadA->kind != OpKind::Load || p.loadB->kind != OpKind::Load ||
      p.loadA->parent != &body || p.loadB->parent != &body)
    return "this product's operands are not two different tiles loaded in the loop";
  for (Op *load : {p.loadA, p.loadB}) {
    // The tile spans the tensor's last two dims and takes one index of each
    // other (a batch, a head): a box of the tensor map, as bulk copies move.
    std::vector<int64_t> sizes = load->listAttr("sizes");
    size_t rank = load->operands[0]->type.dims.size();
    if (rank < 2 || rank > 5 || sizes.size() != rank || sizes[rank - 2] == 0 || sizes[rank - 1] == 0 ||
        !std::all_of(sizes.begin(), sizes.end() - 2, [](int64_t s) { return s == 0; }))
      return "an operand of this product is a tile that does not span the last two dimensions of its tensor "
             "(of 2 to 5) with one index of each other dimension, as a bulk tensor copy moves it";
    DType d = load->result()->type.dtype;
    if (d != DType::BF16 && d != DType::F16 && !isF8(d))
      return fmt::format("an operand of this product holds {}; wgmma reads bf16, f16 and 8-bit floats", dtypeName(d));
  }
  DType aType = p.loadA->result()->type.dtype, bType = p.loadB->result()->type.dtype;
  if (aType != bType && !(isF8(aType) && isF8(bType))) // wgmma mixes e4m3 and e5m2
    return fmt::format("this product's operands hold {} and {}; wgmma takes one 16-bit type", dtypeName(aType),
                       dtypeName(bType));
  const Type &acc = mma.result()->type;
  if (!acc.isRegister() || acc.layout.kind != LayoutKind::Acc || acc.dtype != DType::F32)
    return "this product's accumulator is not an f32 register tile";
  int64_t bm = acc.shape[0], bn = acc.shape[1];
  const auto &aShape = p.loadA->result()->type.shape;
  const auto &bShape = p.loadB->result()->type.shape;
  bool transA = mma.intAttr("trans_a") != 0, transB = mma.intAttr("trans_b") != 0;
  int64_t bk = aShape[transA ? 0 : 1];
  // Whole 128-byte swizzle panels of K (64 16-bit columns, 128 8-bit
  // ones), each a box of its own, so that every instruction's K step sits
  // inside one. Read transposed ([K, M], M-major), each consumer
  // warpgroup's 64 rows of M are one panel of BK rows, and a box has at
  // most 256 rows; 8-bit floats are read K-major only.
  int64_t panel = kSwizzle128RowBytes / dtypeBytes(aType);
  if (bk % panel != 0 || bk > 256)
    return fmt::format("this product's step of K is {} elements; the GEMM schedule takes whole 128-byte panels "
                       "of K ({} elements of {}, or a multiple of that up to 256)",
                       bk, panel, dtypeName(aType));
  if (isF8(aType) && (transA || !transB))
    return "this product reads 8-bit floats M- or N-major; wgmma reads them K-major only (A as [M, K], B as `b^T`)";
  if (aShape[transA ? 1 : 0] != bm ||
      (transB ? (bShape[0] != bn || bShape[1] != bk) : (bShape[0] != bk || bShape[1] != bn)))
    return "this product's operand tiles do not match its accumulator's rows and columns";
  if (!((bm == 64 || bm == 128) && (bn == 64 || bn == 128 || bn == 256)))
    return fmt::format("this product's accumulator is {} x {}; the GEMM schedule takes 64 or 128 rows and 64, "
                       "128 or 256 columns",
                       bm, bn);
  return "";
}

/// Whether `op` is part of the selects that the tail pass puts in a loop
/// body to keep a carried accumulator as it was where a step reads only
/// padding: the selects themselves and the masks (element indices and
/// their comparisons with the limits) they choose by.
bool keepsCarriedValue(const Op &op) {
  if (op.kind == OpKind::Select)
    return op.hasAttr("carried");
  return op.results.size() == 1 && !op.result()->type.isScalar() &&
         (op.kind == OpKind::Iota || op.kind == OpKind::Lt || op.kind == OpKind::And);
}

/// The operand load of a GEMM loop's product whose slice of K may lie
/// wholly outside its tensor, and why; null if none may. Such a step reads
/// only padding, so the tail pass keeps the accumulator as it was with a
/// select in the loop, which the GEMM schedule has no place for: the
/// slices of the usual loops (`k * 64` for k in 0 .. cdiv(K, 64)) are
/// proven to start inside their tensors and get none.
ScheduleMismatch sliceOfKOutsideTensor(const Kernel &kernel, const GemmProduct &p) {
  const Op &mma = *p.mma;
  for (auto [load, transposed, isA] : {std::tuple{p.loadA, mma.intAttr("trans_a") != 0, true},
                                       std::tuple{p.loadB, mma.intAttr("trans_b") != 0, false}}) {
    // K is A's columns and B's rows, the other way round where transposed.
    size_t rank = load->operands[0]->type.dims.size();
    size_t k = isA != transposed ? rank - 1 : rank - 2;
    const Value *start = load->operands[1 + k];
    const Dim &dim = load->operands[0]->type.dims[k];
    if (!passes::provablyNonNegative(kernel, start))
      return {load, "this load's slice of K may start before the tensor's first element (its start is not proven "
                    ">= 0), so that a step may read only padding, and the loop keeps its accumulator there with a "
                    "select, which the GEMM schedule does not take"};
    if (!passes::provablyStartsInside(kernel, dim, start))
      return {load, "this load's slice of K may start past the tensor's last element (its start is not proven "
                    "below the tensor's size), so that a step may read only padding, and the loop keeps its "
                    "accumulator there with a select, which the GEMM schedule does not take"};
  }
  return {};
}

/// The loop of accumulating products that wgmma can run, or nothing: a body
/// of operand loads, address arithmetic and products, each product adding
/// to a carried accumulator of its own and read by nothing but the next
/// iteration. The accumulators have one shape, so that each consumer
/// warpgroup owns the same 64 rows of all of them. A loop of that form
/// whose products wgmma cannot run sets `why` to the first such product and
/// the reason; one that keeps its accumulators with selects where a step
/// reads only padding, to the load whose slice of K may lie outside its
/// tensor.
std::optional<GemmLoop> matchGemmLoop(const Kernel &kernel, Op &loop, ScheduleMismatch &why) {
  if (loop.kind != OpKind::For || !loop.hasAttr("stages") || loop.results.empty())
    return std::nullopt;
  auto step = passes::constantIntOf(loop.operands[2]);
  if (!step || *step != 1)
    return std::nullopt;
  GemmLoop m;
  m.loop = &loop;
  bool keeps = false; // selects that keep an accumulator, checked below
  for (auto &op : loop.body->ops) {
    if (keepsCarriedValue(*op)) {
      keeps = true;
    } else if (op->kind == OpKind::Mma) {
      m.products.push_back({op.get(), op->operands[0]->definingOp, op->operands[1]->definingOp});
    } else if (op->kind == OpKind::Load) {
      if (!op->result()->type.isShared())
        return std::nullopt;
      m.loads.push_back(op.get());
    } else if (op->kind != OpKind::Yield && !isPureScalar(*op)) {
      return std::nullopt;
    }
  }
  // One product a carried value: product i accumulates into the value that
  // yield slot j carries, and yields its result there.
  Block &body = *loop.body;
  Op &yield = *body.ops.back();
  if (m.products.size() != loop.results.size())
    return std::nullopt;
  // What an iteration yields, seen through the selects that keep it (a
  // select of the new value or the carried one).
  auto yielded = [&](Value *v) {
    while (v->definingOp && v->definingOp->kind == OpKind::Select && v->definingOp->hasAttr("carried"))
      v = v->definingOp->operands[1];
    return v;
  };
  std::vector<bool> taken(loop.results.size(), false);
  for (const GemmProduct &p : m.products) {
    auto slot = std::find_if(yield.operands.begin(), yield.operands.end(),
                             [&](Value *v) { return yielded(v) == p.mma->result(); });
    if (slot == yield.operands.end())
      return std::nullopt;
    size_t j = static_cast<size_t>(slot - yield.operands.begin());
    if (taken[j] || p.mma->operands[2] != body.args[1 + j].get())
      return std::nullopt;
    taken[j] = true;
    std::string step = wgmmaStepMismatch(p, body);
    if (step.empty() && p.mma->result()->type.shape != m.accumulator().shape)
      step = fmt::format("this product's accumulator is {} where the loop's first is {}; the GEMM schedule gives every "
                         "consumer warpgroup the same rows of accumulators of one shape",
                         fmt::join(p.mma->result()->type.shape, " x "), fmt::join(m.accumulator().shape, " x "));
    if (step.empty() && p.loadA->result()->type.dtype != m.products.front().loadA->result()->type.dtype)
      step = "this product's operands differ in element type from the loop's first product's";
    if (!step.empty()) {
      why = {p.mma, step};
      return std::nullopt;
    }
  }
  if (keeps) {
    for (const GemmProduct &p : m.products)
      if (ScheduleMismatch outside = sliceOfKOutsideTensor(kernel, p); outside.at) {
        why = outside;
        break;
      }
    return std::nullopt;
  }
  // Each carried accumulator feeds its product alone (checked above: the
  // body holds nothing else that could read it) and each loaded tile only
  // products (layout staged it in shared memory for them).
  return m;
}

/// The stores after the loop that can go out through shared staging tiles
/// and bulk tensor copies: each a whole 16-bit accumulator tile to the last
/// two dims of a tensor, in 64-row, 128-byte panels, or the f32 accumulator
/// itself added to one (atomic_add: the copy engine adds whole lines in L2, which goes
/// about 1.6 times as fast as the threads' vector reductions on the H200).
/// An epilogue may store several such tiles (a layer's output and its
/// pre-activation); each gets a staging tile of its own. Other stores stay
/// as they are.
std::vector<Op *> matchTmaStores(Kernel &kernel, const GemmLoop &m) {
  std::vector<Op *> found;
  const Type &acc = m.accumulator();
  bool afterLoop = false;
  for (auto &op : kernel.body.ops) {
    afterLoop |= op.get() == m.loop;
    if (op->kind != OpKind::Store || !afterLoop)
      continue;
    const Type &value = op->operands[1]->type;
    const Type &global = op->operands[0]->type;
    bool adds = op->hasAttr("accumulate");
    // The tile fills the last two dims of a tensor of 2 to 5, one index of
    // each other: a box of the tensor map, as for the loads.
    std::vector<int64_t> sizes = op->listAttr("sizes");
    size_t rank = global.dims.size();
    bool box = rank >= 2 && rank <= 5 && sizes.size() == rank && sizes[rank - 2] == acc.shape[0] &&
               sizes[rank - 1] == acc.shape[1] &&
               std::all_of(sizes.begin(), sizes.end() - 2, [](int64_t s) { return s == 0; });
    if (!value.isRegister() || value.layout.kind != LayoutKind::Acc || dtypeBytes(value.dtype) != (adds ? 4 : 2) ||
        value.shape != acc.shape || !box)
      continue;
    if (value.shape[0] % 64 != 0 || value.shape[1] % (kSwizzle128RowBytes / dtypeBytes(value.dtype)) != 0)
      continue;
    found.push_back(op.get());
  }
  return found;
}

bool isAccumulatorFamily(LayoutKind kind) {
  return kind == LayoutKind::Acc || kind == LayoutKind::AccRow || kind == LayoutKind::AccCol;
}

/// Layouts outside the accumulator family make the kernel ineligible: their
/// warp mapping would change with the warpgroup split. Row and column
/// vectors of the accumulator (a bias broadcast over it, `b[new, :]`) split
/// with it, and are taken where the consumers fill a multiprocessor
/// (several warpgroups, one block); with a single consumer warpgroup such a
/// kernel is left to the fused schedule, which sizes its pipeline for two
/// blocks a multiprocessor.
bool onlyAccumulatorLayouts(Kernel &kernel, const GemmLoop &m) {
  int consumerWarps = static_cast<int>(m.accumulator().shape[0] / 16);
  bool vectors = intendedBlocksPerSm(consumerWarps) == 1;
  bool ok = true;
  walk(kernel.body, [&](Op &op) {
    for (auto &r : op.results) {
      if (!r->type.isRegister())
        continue;
      LayoutKind kind = r->type.layout.kind;
      if (kind != LayoutKind::Acc && !(vectors && isAccumulatorFamily(kind)))
        ok = false;
    }
  });
  return ok;
}

/// A pipelined loop of several products with work between them, such as
/// attention's: every `mma` of the kernel sits directly in it, each with
/// its B operand a 16-bit shared tile loaded in the loop (`streamed`) or
/// once before it (`resident`), and its A operand either registers in the
/// A-fragment layout, a shared tile loaded in the loop, a shared tile
/// loaded once before the loop and converted to registers (`resident`:
/// wgmma reads it from shared memory instead), or a register tile the
/// consumers write to shared memory in the loop and the product reads
/// transposed (`staged`: attention backward's dS^T for dQ = dS K). Every
/// register tile must already give each warp 16 rows, the rows a warp holds
/// in a wgmma warpgroup. Accumulating stores of a product's f32 result in
/// the loop (`adds`: dQ's share of each iteration) go out through the bulk
/// copy engine's additions.
struct FusedLoop {
  Op *loop = nullptr;
  std::vector<Op *> mmas;
  std::vector<Op *> streamed;
  std::vector<Op *> resident;
  std::vector<Op *> staged;
  std::vector<Op *> adds;
  /// Products of 64 rows (and their zero accumulators) to split by columns.
  std::set<Value *> split;
  int warps = 0;
};

bool isSixteenBitTile(const Type &t) {
  return t.shape.size() == 2 && (t.dtype == DType::BF16 || t.dtype == DType::F16);
}

/// Whether every use of `v` in the kernel is as an operand of an `mma`, or
/// (`viaConversions`) of a conversion to registers that only feeds them.
bool onlyFeedsMmas(Kernel &kernel, Value *v, bool viaConversions = false) {
  bool ok = true;
  walk(kernel.body, [&](Op &op) {
    for (Value *operand : op.operands) {
      if (operand != v || op.kind == OpKind::Mma)
        continue;
      bool conversion = viaConversions && op.kind == OpKind::Convert && op.result()->type.isRegister() &&
                        onlyFeedsMmas(kernel, op.result());
      if (!conversion)
        ok = false;
    }
  });
  return ok;
}

/// An accumulating store in the loop body that the bulk copy engine can
/// add: the whole f32 result of a product in the loop, to a tensor of 2 to
/// 5 dims whose last two the tile spans, in 128-byte panels of 64-row
/// boxes.
bool isBulkAddition(const Op &store, const Block &body) {
  const Value *value = store.operands[1];
  const Op *def = value->definingOp;
  const Type &t = value->type;
  const Type &global = store.operands[0]->type;
  auto sizes = store.listAttr("sizes");
  size_t rank = global.dims.size();
  if (!def || def->kind != OpKind::Mma || def->parent != &body || t.dtype != DType::F32 || t.shape.size() != 2 ||
      rank < 2 || rank > 5 || sizes.size() != rank)
    return false;
  if (sizes[rank - 2] != t.shape[0] || sizes[rank - 1] != t.shape[1] ||
      !std::all_of(sizes.begin(), sizes.end() - 2, [](int64_t s) { return s == 0; }))
    return false;
  return t.shape[0] % 64 == 0 && t.shape[1] % (kSwizzle128RowBytes / 4) == 0;
}

/// Whether `v` is a tile to split by columns between the consumer
/// warpgroups (#acc<4xG>, each warpgroup all 64 rows and its G-th of the
/// columns, as wgmma splits a product of 64 rows): a 64-row accumulator
/// tile or row vector spread over all of a kernel's warps, more than one
/// warpgroup. Its uses must keep to one warpgroup's columns: elementwise
/// work, row vectors broadcast along the rows, copies to shared memory,
/// products that start from zeros or accumulating stores. Reducing its
/// rows, reading it as a product's A operand from registers or carrying it
/// around the loop would need the other warpgroup's columns.
bool splitByColumns(Kernel &kernel, Value *v) {
  const Type &t = v->type;
  bool tile = t.layout.kind == LayoutKind::Acc && t.shape.size() == 2;
  bool rowVector = t.layout.kind == LayoutKind::AccRow && t.shape.size() == 1;
  int warps = t.layout.warpsM * t.layout.warpsN;
  if (!(tile || rowVector) || t.shape[0] != 64 || warps <= 4 || warps % 4 != 0 || warps != kernel.warps)
    return false;
  if (v->definingOp == nullptr) // a loop-carried value
    return false;
  bool ok = true;
  walk(kernel.body, [&](Op &op) {
    for (size_t i = 0; i < op.operands.size(); ++i) {
      if (op.operands[i] != v)
        continue;
      switch (op.kind) {
      case OpKind::Mma:
        ok &= i == 2 && v->definingOp->kind == OpKind::Fill;
        break;
      case OpKind::Store:
        ok &= i == 1 && op.hasAttr("accumulate");
        break;
      case OpKind::Yield:
      case OpKind::Reduce:
        ok = false;
        break;
      case OpKind::Convert:
        ok &= op.result()->type.isShared();
        break;
      default:
        // Elementwise work and broadcasts stay in the tile's grid.
        for (auto &r : op.results)
          ok &= !r->type.isRegister() || r->type.isScalar() || r->type.shape[0] == 64;
        break;
      }
    }
  });
  return ok;
}

std::optional<FusedLoop> matchFusedLoop(Kernel &kernel, ScheduleMismatch &mismatch) {
  auto no = [&](const Op *at, std::string why) -> std::optional<FusedLoop> {
    mismatch = {at, std::move(why)};
    return std::nullopt;
  };
  FusedLoop f;
  walk(kernel.body, [&](Op &op) {
    for (auto &r : op.results)
      if (r->type.isRegister() && splitByColumns(kernel, r.get()))
        f.split.insert(r.get());
  });
  std::optional<ScheduleMismatch> misfit; // the first register tile the warpgroups cannot split
  int mmas = 0;
  walk(kernel.body, [&](Op &op) {
    if (op.kind == OpKind::Mma)
      ++mmas;
    for (auto &r : op.results) {
      const Type &t = r->type;
      if (!t.isRegister() || t.isScalar() || f.split.count(r.get()) || misfit)
        continue;
      bool family = t.layout.kind == LayoutKind::Acc || t.layout.kind == LayoutKind::AccRow ||
                    t.layout.kind == LayoutKind::OperandA || t.layout.kind == LayoutKind::AccCol;
      if (!family)
        misfit = ScheduleMismatch{&op, "this tile is neither a product's result or operand nor a vector of one"};
      // A column vector spans a tile's columns, which every warp holds whole.
      else if (int warps = t.layout.warpsM * t.layout.warpsN;
               t.layout.kind != LayoutKind::AccCol && t.shape[0] != 16 * warps)
        misfit = ScheduleMismatch{&op, fmt::format("this tile has {} rows where each of the kernel's {} warps needs "
                                                   "16 (a 64-row tile may have fewer where the warpgroups can split "
                                                   "its columns: not carried by the loop, its rows not reduced, not a "
                                                   "product's first operand in registers)",
                                                   t.shape[0], warps)};
      else if (t.layout.warpsN != 1)
        misfit = ScheduleMismatch{&op, fmt::format("this tile is split among the warps by columns too ({} by {} "
                                                   "warps), which wgmma's warpgroups do not do",
                                                   t.layout.warpsM, t.layout.warpsN)};
      else if (f.warps == 0)
        f.warps = t.layout.warpsM;
      else if (f.warps != t.layout.warpsM)
        misfit = ScheduleMismatch{&op, fmt::format("this tile is spread over {} warps, others over {}",
                                                   t.layout.warpsM, f.warps)};
    }
  });
  if (mmas == 0)
    return no(nullptr, "it has no products");
  // The loop at the top of the kernel that holds the products (every loop
  // carries `stages`, 1 where the source asks for no pipeline).
  for (auto &op : kernel.body.ops) {
    if (op->kind != OpKind::For || !op->body)
      continue;
    bool holdsProducts = false;
    walk(*op->body, [&](Op &inner) { holdsProducts |= inner.kind == OpKind::Mma; });
    if (!holdsProducts)
      continue;
    if (f.loop)
      return no(op.get(), "its products are in more than one loop");
    f.loop = op.get();
  }
  if (!f.loop)
    return no(nullptr, "its products are not in a loop at the top of the kernel");
  for (auto &op : f.loop->body->ops)
    if (op->kind == OpKind::For && op->body)
      return no(op.get(), "its products are in nested loops; the Hopper schedules pipeline one loop");
  auto step = passes::constantIntOf(f.loop->operands[2]);
  if (!step || *step != 1)
    return no(f.loop, "its loop does not step by 1");
  if (misfit)
    return no(misfit->at, misfit->why);
  if (f.warps % 4 != 0)
    return no(nullptr, fmt::format("its tiles are spread over {} warps, not whole warpgroups", f.warps));
  Block &body = *f.loop->body;
  auto inLoopLoad = [&](Value *v) {
    Op *def = v->definingOp;
    return def && def->kind == OpKind::Load && def->parent == &body && v->type.isShared() &&
           isSixteenBitTile(v->type) && onlyFeedsMmas(kernel, v);
  };
  // Vectors loaded in the loop straight into registers (attention
  // backward's per-query statistics) stay with the consumers.
  auto vectorLoad = [](Value *v) { return v->type.isRegister() && v->type.shape.size() == 1; };
  // A shared tile loaded once before the loop, read by the products from
  // there.
  auto residentLoad = [&](Value *v) {
    Op *def = v->definingOp;
    return def && def->kind == OpKind::Load && def->parent == &kernel.body && v->type.isShared() &&
           isSixteenBitTile(v->type) && v->type.shape[1] % 64 == 0;
  };
  auto addStaged = [&](Op *convert) { // one copy may serve several products
    if (std::find(f.staged.begin(), f.staged.end(), convert) == f.staged.end())
      f.staged.push_back(convert);
  };
  auto addResident = [&](Op *load) {
    if (std::find(f.resident.begin(), f.resident.end(), load) == f.resident.end())
      f.resident.push_back(load);
  };
  for (auto &op : body.ops) {
    if (op->kind == OpKind::Store && op->hasAttr("accumulate")) {
      if (!isBulkAddition(*op, body))
        return no(op.get(), "this `atomic_add` does not add a whole f32 product of the loop body, of 64-row and "
                            "32-column multiples, to the last two dimensions of a tensor");
      f.adds.push_back(op.get());
      continue;
    }
    if (op->kind != OpKind::Mma) {
      if (op->kind == OpKind::Load && !inLoopLoad(op->result()) && !vectorLoad(op->result()))
        return no(op.get(), "this load in the loop is neither a 16-bit tile that only products read nor a vector");
      continue;
    }
    f.mmas.push_back(op.get());
    Value *a = op->operands[0], *b = op->operands[1];
    const Type &acc = op->result()->type;
    int64_t n = acc.shape[1];
    bool transB = op->intAttr("trans_b") != 0;
    bool residentB = residentLoad(b) && onlyFeedsMmas(kernel, b, /*viaConversions=*/true);
    // Split by columns, each consumer warpgroup computes n / warpgroups
    // of them.
    bool byColumns = f.split.count(op->result()) != 0;
    if (byColumns && acc.layout.warpsM * acc.layout.warpsN != f.warps)
      return no(op.get(), "this 64-row product is not spread over all the kernel's warps");
    int64_t groups = byColumns ? f.warps / 4 : 1;
    if (acc.dtype != DType::F32 || n % groups != 0 || !Target::isWgmmaWidth(n / groups))
      return no(op.get(), fmt::format("this product's result is not f32 of a width wgmma has ({} columns a warpgroup)",
                                      n / groups));
    if (!(inLoopLoad(b) || residentB))
      return no(op.get(), "this product's second operand is not a 16-bit tile loaded into shared memory");
    bool added = std::any_of(body.ops.begin(), body.ops.end(), [&](const std::unique_ptr<Op> &o) {
      return o->kind == OpKind::Store && o->hasAttr("accumulate") && o->operands[1] == op->result();
    });
    if (byColumns && added && (n / groups) % (kSwizzle128RowBytes / 4) != 0) // a bulk addition's window, one warpgroup's
      return no(op.get(), "this 64-row product's columns a warpgroup are not a multiple of 32");
    int64_t k = transB ? b->type.shape[1] : b->type.shape[0];
    if (transB ? (b->type.shape[0] != n || k % 64 != 0) : (b->type.shape[1] != n || k % 16 != 0 || n % 64 != 0))
      return no(op.get(), "this product's second operand is not read in panels of 64 elements");
    if (residentB)
      addResident(b->definingOp);
    if (op->intAttr("trans_a")) {
      // Transposed, A must be a tile the consumers stage: [K, M] with each
      // consumer warpgroup's 64 columns of M one panel.
      Op *convert = a->definingOp;
      if (!convert || convert->kind != OpKind::Convert || convert->parent != &body || !a->type.isShared() ||
          !isSixteenBitTile(a->type) || !convert->operands[0]->type.isRegister() ||
          a->type.shape[1] != acc.shape[0] || a->type.shape[0] != k || k % 16 != 0)
        return no(op.get(), "this product's transposed first operand is not a 16-bit tile computed in the loop");
      addStaged(convert);
      continue;
    }
    if (Op *convert = a->definingOp; convert && convert->kind == OpKind::Convert && convert->parent == &body &&
                                      a->type.isShared()) {
      // Staged, read K-major: [M, K] in panels of 64 columns of K.
      if (!isSixteenBitTile(a->type) || !convert->operands[0]->type.isRegister() ||
          a->type.shape[0] != acc.shape[0] || a->type.shape[1] != k || k % 64 != 0)
        return no(op.get(), "this product's first operand, computed in the loop, is not a 16-bit tile of 64-column "
                            "multiples");
      addStaged(convert);
      continue;
    }
    if (a->type.isRegister()) {
      if (a->type.layout.kind != LayoutKind::OperandA)
        return no(op.get(), "this product's first operand is in registers but not in the operand layout");
      // A converted shared tile loaded once before the loop stays in shared memory.
      Op *convert = a->definingOp;
      Value *src = convert && convert->kind == OpKind::Convert ? convert->operands[0] : nullptr;
      if (src && src->type.isShared() && src->definingOp && src->definingOp->kind == OpKind::Load &&
          src->definingOp->parent == &kernel.body) {
        if (!residentLoad(src))
          return no(op.get(), "this product's first operand, loaded before the loop, is not a 16-bit tile of "
                              "64-column multiples");
        addResident(src->definingOp);
      }
    } else if (a->definingOp && a->definingOp->kind == OpKind::Load && a->definingOp->parent == &kernel.body) {
      if (!residentLoad(a))
        return no(op.get(), "this product's first operand, loaded before the loop, is not a 16-bit tile of "
                            "64-column multiples");
      addResident(a->definingOp);
    } else if (!inLoopLoad(a) || a->type.shape[1] % 64 != 0) {
      return no(op.get(), "this product's first operand is neither in registers nor a 16-bit tile of 64-column "
                          "multiples loaded in the loop");
    }
  }
  for (auto &op : body.ops)
    if (op->kind == OpKind::Load && op->result()->type.isShared())
      f.streamed.push_back(op.get());
  // A loop that copies no tile leaves a producer nothing to do (and no
  // stage to size).
  if (f.streamed.empty())
    return no(f.loop, "its `pipelined` loop copies no tile into shared memory");
  // Shared tiles outside these roles have no place in the warp-specialized kernel.
  int sharedLoads = 0;
  walk(kernel.body, [&](Op &op) {
    if (op.kind == OpKind::Load && op.result()->type.isShared())
      ++sharedLoads;
  });
  if (sharedLoads != static_cast<int>(f.streamed.size() + f.resident.size()))
    return no(nullptr, "it loads a shared tile that neither its loop's products nor those before it read");
  return f;
}

/// Shared memory of a fused loop: what stays for the whole kernel (the
/// resident tiles, two slots of each staged tile, the additions' staging
/// tiles) and what one pipeline stage of the streamed tiles takes.
struct FusedBudget {
  int64_t fixedBytes = 0;
  int64_t stageBytes = 0;
  int64_t lateBytes = 0; ///< of stageBytes, the tiles only the late product reads
  int64_t roomBytes = 0; ///< for the stages, beside the fixed part
};

FusedBudget budgetOf(const FusedLoop &f, const Target &target) {
  FusedBudget b;
  for (Op *load : f.resident)
    b.fixedBytes += passes::sharedBufferBytes(load->result()->type);
  for (Op *convert : f.staged)
    b.fixedBytes += 2 * passes::sharedBufferBytes(convert->result()->type);
  for (Op *store : f.adds) {
    const Type &tile = store->operands[1]->type;
    b.fixedBytes += tile.numElements() * dtypeBytes(tile.dtype);
  }
  std::vector<Op *> late = passes::tilesReadAnIterationLate(*f.loop);
  for (Op *load : f.streamed) {
    int64_t bytes = passes::sharedBufferBytes(load->result()->type);
    b.stageBytes += bytes;
    if (std::find(late.begin(), late.end(), load) != late.end())
      b.lateBytes += bytes;
  }
  b.roomBytes = target.sharedMemoryPerBlock(intendedBlocksPerSm(f.warps)) - Target::kReservedSharedBytes - b.fixedBytes;
  return b;
}

/// A pipeline needs two stages at least: the consumers release a slot only
/// after issuing the next iteration's products.
constexpr int64_t kMinStages = 2;

/// Bytes of the shared buffers the kernel defines besides `loads` (the
/// loop's operand tiles, which become the pipeline's slots), each aligned as
/// smem-plan aligns it.
int64_t otherSharedBytes(Kernel &kernel, const std::vector<Op *> &loads) {
  int64_t end = 0;
  walk(kernel.body, [&](Op &op) {
    if (passes::definesSharedBuffer(op) && std::find(loads.begin(), loads.end(), &op) == loads.end())
      end = passes::alignUp(end, passes::sharedAlignmentOf(op.result()->type)) +
            passes::sharedBufferBytes(op.result()->type);
  });
  return end;
}

class HopperLayoutPass : public Pass {
public:
  const char *name() const override { return "hopper-layout"; }
  const char *description() const override {
    return "sm_90a: choose wgmma accumulator and 128-byte-swizzled operand layouts and the pipeline depth";
  }
  bool run(Module &module, const Target &target, DiagnosticEngine &diags) override {
    if (!target.hasHopperInstructions())
      return true;
    bool ok = true;
    for (auto &kernel : module.kernels)
      ok &= runOnKernel(*kernel, target, diags);
    return ok;
  }

private:
  /// False after reporting a pipeline whose two stages do not fit.
  bool runOnKernel(Kernel &kernel, const Target &target, DiagnosticEngine &diags) {
    std::vector<GemmLoop> found;
    ScheduleMismatch gemmMismatch; // a GEMM loop's product that wgmma cannot run
    int mmas = 0;
    walk(kernel.body, [&](Op &op) {
      if (op.kind == OpKind::Mma)
        ++mmas;
      if (op.kind == OpKind::For && op.parent == &kernel.body)
        if (auto m = matchGemmLoop(kernel, op, gemmMismatch))
          found.push_back(*m);
    });
    if (found.size() != 1 || mmas != static_cast<int>(found.front().products.size()) ||
        !onlyAccumulatorLayouts(kernel, found.front())) {
      ScheduleMismatch mismatch;
      auto f = matchFusedLoop(kernel, mismatch);
      if (f) {
        FusedBudget b = budgetOf(*f, target);
        if (b.roomBytes < kMinStages * b.stageBytes) {
          mismatch = {f->loop, fmt::format("two stages of its loop's tiles ({} bytes each) do not fit in shared "
                                           "memory beside the {} bytes of its resident, staged and addition tiles",
                                           b.stageBytes, b.fixedBytes)};
          f.reset();
        }
      }
      // A loop of the GEMM's form says what kept its product off wgmma;
      // that is the nearer miss than the general schedule's reason.
      if (!f && found.empty() && gemmMismatch.at)
        mismatch = gemmMismatch;
      if (f)
        layOutFused(kernel, *f, target, diags);
      else if (Op *f8 = firstF8Product(kernel))
        // mma.sync has no 8-bit float form on sm_90a.
        diags.report(gemmMismatch.at ? gemmMismatch.at->loc : f8->loc, DiagId::F8MmaNotWgmma, kernel.name,
                     target.name,
                     gemmMismatch.at ? gemmMismatch.why
                                     : "its loop is not one pipelined GEMM step of loaded tiles, A [BM, BK] and B "
                                       "[BN, BK] read as `b^T` (BM 64 or 128, BN 64, 128 or 256, BK 128 or 256), "
                                       "each product on a carried accumulator of its own");
      else if (mmas > 0)
        // Correct code still, at half the tensor cores' rate or less: say
        // where the kernel leaves the shape the Hopper pipeline takes.
        diags.report(mismatch.at ? mismatch.at->loc : kernel.loc, DiagId::MmaSyncOnHopper, kernel.name, target.name,
                     mismatch.why);
      return true;
    }
    GemmLoop &m = found.front();
    const Type &acc = m.accumulator();
    int consumerWarps = static_cast<int>(acc.shape[0] / 16);
    auto split = [&](Type &type) {
      if (type.isRegister() && isAccumulatorFamily(type.layout.kind))
        type.layout = {type.layout.kind, consumerWarps, 1};
    };
    walk(kernel.body, [&](Op &op) {
      for (auto &r : op.results)
        split(r->type);
      if (op.body)
        for (auto &a : op.body->args)
          split(a->type);
    });
    // A column reduction's shared partial results hold a row per warp row:
    // as many as the consumer warps now (their operand, defined before
    // them, has been split above).
    walk(kernel.body, [&](Op &op) {
      if (op.kind == OpKind::Reduce && op.result()->type.isShared() && op.operands[0]->type.isRegister())
        op.result()->type.shape[0] = op.operands[0]->type.layout.warpsM;
    });
    int64_t stageBytes = 0;
    for (Op *load : m.loads) {
      load->result()->type.layout = {LayoutKind::Swizzle128, 1, 1};
      stageBytes += passes::sharedBufferBytes(load->result()->type);
    }
    kernel.warps = consumerWarps + 4;

    int64_t asked = m.loop->intAttr("stages", 2);
    // Beside the stages: the mbarriers (in the reserve) and whatever else
    // the kernel keeps in shared memory.
    int64_t fixed = Target::kReservedSharedBytes + otherSharedBytes(kernel, m.loads);
    int64_t free = target.sharedMemoryBytes - fixed;
    // With no staging tiles at all, as many stages fit; the source's depth
    // gives way to shared memory, down to kMinStages.
    int64_t deepest = free / stageBytes;
    if (deepest < kMinStages) {
      diags.report(m.loop->loc, DiagId::PipelineStagesDoNotFit, kMinStages * stageBytes + fixed, kMinStages,
                   target.sharedMemoryBytes);
      return false;
    }
    int64_t depth = std::min(asked, deepest);
    std::vector<Op *> stores = matchTmaStores(kernel, m);
    if (!stores.empty()) {
      // The widest staging tiles (the whole tile, else a half, a
      // quarter..., never under one panel; the same width for every store)
      // that leave room for the preferred depth, or failing that for the
      // depth the source asks (or the deepest that fits, if shallower).
      const Type &tile = m.accumulator();
      // Bytes of one staging column of all the stores, and the widest
      // element's panel, which no staging tile may be narrower than.
      int64_t columnBytes = 0, minCols = 1;
      for (Op *store : stores) {
        int64_t elem = dtypeBytes(store->operands[1]->type.dtype);
        columnBytes += tile.shape[0] * elem;
        minCols = std::max<int64_t>(minCols, kSwizzle128RowBytes / elem);
      }
      auto widestFitting = [&](int64_t stages) -> int64_t {
        for (int64_t cols = tile.shape[1]; cols >= minCols && tile.shape[1] % cols == 0; cols /= 2)
          if ((free - columnBytes * cols) / stageBytes >= stages)
            return cols;
        return 0;
      };
      int64_t cols = widestFitting(std::max(asked, kPreferredStages));
      if (cols == 0)
        cols = widestFitting(depth);
      if (cols > 0) {
        for (Op *store : stores) {
          store->attrs["epilogue"] = Attr(std::string("tma"));
          store->attrs["staging_cols"] = Attr(cols);
        }
        free -= columnBytes * cols;
      }
    }
    int64_t fit = free / stageBytes;
    int64_t stages = fit >= asked ? std::max<int64_t>(asked, std::min<int64_t>(fit, kMaxStages)) : fit;
    if (stages < asked)
      diags.report(m.loop->loc, DiagId::PipelineStagesLowered, asked, stages, asked, asked * stageBytes + fixed,
                   target.sharedMemoryBytes);
    m.loop->attrs.erase("stages");
    m.loop->attrs["hopper_stages"] = Attr(stages);
    return true;
  }

  void layOutFused(Kernel &kernel, FusedLoop &f, const Target &target, DiagnosticEngine &diags) {
    FusedBudget budget = budgetOf(f, target);
    for (Op *load : f.streamed)
      load->result()->type.layout = {LayoutKind::Swizzle128, 1, 1};
    for (Op *load : f.resident)
      load->result()->type.layout = {LayoutKind::Swizzle128, 1, 1};
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
    // 64-row tiles and their row vectors go to the consumer warpgroups by
    // columns.
    for (Value *v : f.split)
      v->type.layout = {v->type.layout.kind, 4, f.warps / 4};
    // Staged tiles: written by the consumers, read by wgmma as M-major
    // panels, in two slots (hopper-pipeline alternates them).
    for (Op *convert : f.staged)
      convert->result()->type.layout = {LayoutKind::Swizzle128, 1, 1};
    // Each addition goes out through a staging tile of its own, whole.
    for (Op *store : f.adds) {
      store->attrs["epilogue"] = Attr(std::string("tma"));
      store->attrs["staging_cols"] = Attr(store->operands[1]->type.shape[1]);
    }
    kernel.warps = f.warps + 4;

    // A tile that only the product issued an iteration late reads stays
    // taken an iteration longer than the others (see the rings below).
    std::vector<Op *> late = passes::tilesReadAnIterationLate(*f.loop);
    int64_t stageBytes = budget.stageBytes, lateBytes = budget.lateBytes, room = budget.roomBytes;
    int64_t asked = f.loop->intAttr("stages", 2);
    // A persistent kernel with resident tiles (the attention forward's
    // query tile) runs below the preferred depth on rings of its own for
    // the late tiles, a slot deeper than the others: the tiles the first
    // product reads are released as soon as it is done, so that S + 1
    // slots of the late tiles and S of the others run as far ahead as
    // S + 1 shared slots, in a slot's less room, which warp-specialize
    // gives the resident tiles (a second slot, the next tile's copy).
    bool rings = kernel.persistent == 1 && !f.resident.empty() && !late.empty();
    int64_t fit = (room - (rings ? lateBytes : 0)) / stageBytes;
    int64_t stages = std::max<int64_t>({kMinStages, asked, std::min<int64_t>(fit, kPreferredStages)});
    // Deeper than fits the two blocks a multiprocessor `room` is sized for,
    // the source's depth runs in one block's shared memory, as deep as that
    // holds.
    int64_t fixed = Target::kReservedSharedBytes + budget.fixedBytes;
    int64_t deepest = (target.sharedMemoryBytes - fixed) / stageBytes;
    if (stages > deepest) {
      diags.report(f.loop->loc, DiagId::PipelineStagesLowered, asked, deepest, asked, asked * stageBytes + fixed,
                   target.sharedMemoryBytes);
      stages = deepest;
    }
    if (rings && stages < kPreferredStages && stages * stageBytes + lateBytes <= room)
      for (Op *load : late)
        load->attrs["hopper_slots"] = Attr(stages + 1);
    f.loop->attrs.erase("stages");
    f.loop->attrs["hopper_stages"] = Attr(stages);
  }
};

} // namespace

std::unique_ptr<Pass> createHopperLayoutPass() { return std::make_unique<HopperLayoutPass>(); }

} // namespace tkc
