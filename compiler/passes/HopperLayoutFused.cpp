// hopper-layout's analysis of a fused loop: whether a loop of several
// products with elementwise work between them (attention, forward and
// backward) can run on wgmma, and the roles of its tiles (streamed,
// resident, staged, split by columns, added). Apart from the GEMM analysis
// (HopperLayoutGemm.cpp): it is the fallback for kernels the GEMM schedule
// does not take, and walks the whole kernel rather than one loop step.
#include "passes/HopperLayout.h"
#include "passes/PassUtils.h"

#include <fmt/format.h>

#include <algorithm>

namespace tkc::passes::hopper_layout {

namespace {

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

} // namespace

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

} // namespace tkc::passes::hopper_layout
