// hopper-layout's GEMM analysis: whether a loop is a pipelined GEMM step that
// wgmma can run (and if not, why), and which stores after it the epilogue
// sends through shared memory. Apart from the fused loop's analysis
// (HopperLayoutFused.cpp): the GEMM schedule is tried first and takes a
// narrower shape, checked product by product.
#include "passes/HopperLayout.h"
#include "passes/IndexBounds.h"
#include "passes/PassUtils.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

namespace tkc::passes::hopper_layout {

namespace {

bool isPureScalar(const Op &op) {
  return op.body == nullptr && op.results.size() == 1 && op.result()->type.isScalar() && op.kind != OpKind::Load;
}

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

} // namespace

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

} // namespace tkc::passes::hopper_layout
