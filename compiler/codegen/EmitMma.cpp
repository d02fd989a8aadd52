// mma on the sm_80 path: each warp multiplies its accumulator sub-tile with
// mma.sync.m16n8k16, loading operand fragments from swizzled shared tiles
// with ldmatrix (A: rows of the tile, or ldmatrix.trans for a [K, M] tile
// used transposed; B: ldmatrix.trans for a [K, N] tile, plain ldmatrix for
// a [N, K] tile used transposed).
#include "codegen/KernelEmitter.h"

namespace tkc::codegen {

using namespace ir;

namespace {
/// Fragments are double-buffered only while the registers that stay live
/// across the mma (loop-carried tiles, the accumulator) and both fragment
/// buffers fit in this many, leaving room for addresses and temporaries.
constexpr int kDoubleBufferRegisterBudget = 192;

/// Registers of the two operands' swizzle tables (8 entries each at most).
constexpr int kLaneTableRegisters = 16;

/// Per-thread registers of the tiles carried by the loops around `op`.
int loopCarriedRegisters(const Op &op) {
  int registers = 0;
  for (const Block *block = op.parent; block && block->parentOp; block = block->parentOp->parent)
    registers += carriedRegisters(*block->parentOp);
  return registers;
}

int chunksPerRow(const Type &smem) { return static_cast<int>(smem.shape[1] * dtypeBytes(smem.dtype) / 16); }

std::string smemRowAddress(const std::string &base, const Type &smem, const std::string &row,
                           const std::string &chunk) {
  int cpr = chunksPerRow(smem);
  return fmt::format("{} + ({}) * {} + {} * 16", base, row, cpr * 16, swizzledChunk(row, chunk, cpr));
}

/// The rows and 16-byte chunks a lane's ldmatrix reads from a swizzled
/// shared tile, each split into a part fixed for the thread and a step that
/// the unrolled loops make a constant (the row step a multiple of 8).
///
/// The swizzle XORs a chunk with a function of the row's low bits, which
/// the compiler can neither fold into a constant offset nor hoist, so that
/// every ldmatrix paid for it. With the split, chunk ^ s = ((thread + r) ^
/// s) + (step - r) for r = step % period: adding a multiple of the period
/// leaves the bits the XOR touches alone. The period's few values of
/// (thread + r) ^ s are computed once per product, and each load's address
/// is one of them plus constants.
///
/// Where the step's chunk bits never meet the thread's (the thread's part a
/// lane bit below an even step, and a warp's part above every step: no
/// carries), the swizzle splits further: chunk ^ s = (thread ^ s) ^ step,
/// and with rows of a power of two bytes in a tile aligned to a row, the
/// whole address is one per-thread value XOR (step * 16) plus the row
/// step's constant bytes: one instruction per ldmatrix, one register per
/// operand.
struct LaneRows {
  std::string rowThread, rowStep;
  std::string chunkThread, chunkStep;
  bool stepBitsApart = false; ///< chunkThread + chunkStep == chunkThread | chunkStep
};

bool isPowerOfTwo(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

/// The swizzle's period in chunks (0: unswizzled) and the part of a row
/// that selects its pattern, for rows of `cpr` chunks.
int swizzlePeriod(int cpr) { return cpr >= 8 ? 8 : cpr == 4 ? 4 : cpr == 2 ? 2 : 0; }
std::string swizzleSelector(const std::string &row, int cpr) {
  return cpr >= 8 ? fmt::format("({}) % 8", row) : cpr == 4 ? fmt::format("({}) / 2 % 4", row) : fmt::format("({}) / 4 % 2", row);
}

/// The lines declaring an operand's table of swizzled chunks, one entry per
/// residue of the chunk step (none for an unswizzled tile).
std::vector<std::string> laneSwizzleTable(const std::string &table, const Type &smem, const LaneRows &rows) {
  int cpr = chunksPerRow(smem), period = swizzlePeriod(cpr);
  if (!period)
    return {};
  return {fmt::format("int {}[{}];", table, period),
          fmt::format("TKC_UNROLL for (int r = 0; r < {}; ++r) {}[r] = ({} + r) ^ {};", period, table,
                      rows.chunkThread, swizzleSelector(rows.rowThread, cpr))};
}

/// Whether an operand's addresses split into one per-thread value XOR a
/// constant (see LaneRows): its tile at a multiple of its row's bytes from
/// the 1024-byte-aligned shared base, in every stage.
bool xorAddressable(const Type &smem, const LaneRows &rows, int64_t tileAlignment) {
  int cpr = chunksPerRow(smem);
  return swizzlePeriod(cpr) && isPowerOfTwo(cpr) && rows.stepBitsApart && tileAlignment > 0 &&
         tileAlignment % (cpr * 16) == 0;
}

/// The declaration of an operand's per-thread address for xorAddressable.
std::string laneXorBase(const std::string &var, const std::string &base, const Type &smem, const LaneRows &rows) {
  int cpr = chunksPerRow(smem);
  return fmt::format("const uint32_t {} = {} + ({}) * {} + (({}) ^ {}) * 16;", var, base, rows.rowThread, cpr * 16,
                     rows.chunkThread, swizzleSelector(rows.rowThread, cpr));
}

/// How an operand's ldmatrix addresses are formed (see LaneRows): swizzled
/// in place, through its table, or from its per-thread XOR base.
enum class LaneAddressing { InPlace, Table, XorBase };

/// The name of operand `a` or `b`'s table or XOR base.
std::string laneName(const char *operand, LaneAddressing how) {
  return fmt::format("{}_{}", operand, how == LaneAddressing::Table ? "swz" : "lane");
}

/// The shared address of a lane's ldmatrix row; `lane` names the operand's
/// table or XOR base.
std::string laneRowAddress(const std::string &base, LaneAddressing how, const std::string &lane, const Type &smem,
                           const LaneRows &rows) {
  int cpr = chunksPerRow(smem), period = swizzlePeriod(cpr);
  if (how == LaneAddressing::XorBase)
    return fmt::format("({} ^ (({}) * 16)) + ({}) * {}", lane, rows.chunkStep, rows.rowStep, cpr * 16);
  std::string row = fmt::format("{} + {}", rows.rowStep, rows.rowThread);
  if (!period || how == LaneAddressing::InPlace)
    return smemRowAddress(base, smem, row, fmt::format("{} + {}", rows.chunkThread, rows.chunkStep));
  return fmt::format("{} + ({}) * {} + ({}[({}) % {}] + ({}) / {} * {}) * 16", base, row, cpr * 16, lane,
                     rows.chunkStep, period, rows.chunkStep, period, period);
}
} // namespace

int64_t KernelEmitter::sharedTileAlignment(const Value *tile) const {
  const Op *def = tile->definingOp;
  if (!def)
    return 0;
  auto lowBit = [](int64_t n) { return n == 0 ? int64_t(1024) : std::min<int64_t>(n & -n, 1024); };
  if (def->kind == OpKind::StageView) {
    const Type &slot = tile->type;
    return std::min(sharedTileAlignment(def->operands[0]), lowBit(slot.numElements() * dtypeBytes(slot.dtype)));
  }
  if (!def->hasAttr("offset"))
    return 0;
  return lowBit(def->intAttr("offset"));
}

/// A-operand fragments of this warp's rows, for every 16-wide k step.
void KernelEmitter::emitLoadOperandA(const Value *smem, const Type &regType, const std::string &dst) {
  int64_t wm = regType.shape[0] / regType.layout.warpsM;
  int mt = static_cast<int>(wm / 16), kt = static_cast<int>(regType.shape[1] / 16);
  out_.open(fmt::format("TKC_UNROLL for (int f = 0; f < {}; ++f)", mt * kt));
  out_.line("const int i = f / {}, kk = f % {};", kt, kt);
  std::string row = fmt::format("{} * {} + i * 16 + lane % 16", warpCoords(regType.layout).row, wm);
  // Lanes 0-15 point at the rows of k 0-7, lanes 16-31 at those of k 8-15:
  // the four 8x8 matrices are the fragment's a0-a3.
  std::string address = smemRowAddress(name(smem), smem->type, row, "kk * 2 + lane / 16");
  if (smem->type.layout.kind == LayoutKind::Swizzle128) { // wgmma's panels (sm_90a)
    out_.line("const int row = {}, col = kk * 16 + lane / 16 * 8;", row);
    address = panelAddress(name(smem), smem->type);
  }
  out_.line("tkc::ldmatrix_x4({0}[f * 4], {0}[f * 4 + 1], {0}[f * 4 + 2], {0}[f * 4 + 3], {1});", dst, address);
  out_.close();
}

bool KernelEmitter::emitMma(const Op &op) {
  const Value *a = op.operands[0];
  const Value *b = op.operands[1];
  const Value *c = op.operands[2];
  const Value *d = op.result();
  bool transB = op.intAttr("trans_b") != 0;
  if (!b->type.isShared())
    return unsupported(op, "an mma B operand outside shared memory");
  if (d->type.layout.kind != LayoutKind::Acc)
    return unsupported(op, "an mma accumulator outside the accumulator layout");
  if (isF8(a->type.dtype))
    return unsupported(op, "mma.sync of 8-bit floats");
  std::string instruction = a->type.dtype == DType::F16 ? "tkc::mma_f16_16816" : "tkc::mma_bf16_16816";
  const Layout &layout = d->type.layout;
  const WarpCoords warp = warpCoords(layout);
  int64_t wm = d->type.shape[0] / layout.warpsM, wn = d->type.shape[1] / layout.warpsN;
  int mt = static_cast<int>(wm / 16), nt = static_cast<int>(wn / 8);
  bool transA = op.intAttr("trans_a") != 0;
  int64_t k = a->type.shape[transA ? 0 : 1];
  int kt = static_cast<int>(k / 16);

  std::string acc = declareName(d);
  out_.line("float {}[{}];", acc, mt * nt * 4);
  out_.line("TKC_UNROLL for (int x = 0; x < {}; ++x) {}[x] = {}[x];", mt * nt * 4, acc, name(c));
  if (!a->type.isShared() && a->type.layout.kind != LayoutKind::OperandA)
    return unsupported(op, "an mma A operand in this layout");

  // The rows and chunks each operand's ldmatrix reads at k step `kk`. A
  // warp's chunks start at a multiple of the steps' span: its bits stay
  // apart from theirs where that span is a power of two.
  auto aRows = [&](const std::string &kk) -> LaneRows {
    if (!transA)
      return {fmt::format("{} * {} + lane % 16", warp.row, wm), "i * 16", "lane / 16", fmt::format("({}) * 2", kk), true};
    // a is [K, M] row-major: rows are k; ldmatrix.trans yields the row
    // fragments of a^T, lanes 8-15 giving rows 8-15 and 16-31 k 8-15.
    return {"lane / 16 * 8 + lane % 8", fmt::format("({}) * 16", kk), fmt::format("{} * {} + lane / 8 % 2", warp.row, wm / 8),
            "i * 2", isPowerOfTwo(wm / 8)};
  };
  bool pairs = nt % 2 == 0;
  auto bRows = [&](const std::string &kk) -> LaneRows {
    if (!transB) // b is [K, N] row-major: rows are k; ldmatrix.trans yields column fragments.
      return {"lane % 16", fmt::format("({}) * 16", kk),
              pairs ? fmt::format("{} * {} + lane / 16", warp.col, wn / 8) : fmt::format("{} * {}", warp.col, wn / 8), "j",
              isPowerOfTwo(wn / 8)};
    // b is [N, K] row-major: rows are n; plain ldmatrix yields column fragments of b^T.
    return {pairs ? fmt::format("{} * {} + lane / 16 * 8 + lane % 8", warp.col, wn)
                  : fmt::format("{} * {} + lane % 8", warp.col, wn),
            "j * 8", "lane / 8 % 2", fmt::format("({}) * 2", kk), true};
  };

  // Fragments of k step `kk` into buffer `buf`: the loads of step kk+1 are
  // issued before the multiplies of step kk so that they overlap.
  bool aShared = a->type.isShared();
  // Each operand's addressing, decided below with the fragment buffers.
  LaneAddressing aHow = LaneAddressing::InPlace, bHow = LaneAddressing::InPlace;
  auto loadFragments = [&](const std::string &kk, const std::string &buf) {
    if (aShared) {
      out_.open(fmt::format("TKC_UNROLL for (int i = 0; i < {}; ++i)", mt));
      out_.line("tkc::ldmatrix_x4{0}(a_frag[{1}][i][0], a_frag[{1}][i][1], a_frag[{1}][i][2], a_frag[{1}][i][3], {2});",
                transA ? "_trans" : "", buf,
                laneRowAddress(name(a), aHow, laneName("a", aHow), a->type, aRows(kk)));
      out_.close();
    }
    out_.open(fmt::format("TKC_UNROLL for (int j = 0; j < {}; j += {})", nt, pairs ? 2 : 1));
    std::string addr = laneRowAddress(name(b), bHow, laneName("b", bHow), b->type, bRows(kk));
    std::string suffix = transB ? "" : "_trans";
    if (pairs)
      out_.line("tkc::ldmatrix_x4{0}(b_frag[{1}][j][0], b_frag[{1}][j][1], b_frag[{1}][j + 1][0], b_frag[{1}][j + 1][1], {2});",
                suffix, buf, addr);
    else
      out_.line("tkc::ldmatrix_x2{0}(b_frag[{1}][j][0], b_frag[{1}][j][1], {2});", suffix, buf, addr);
    out_.close();
  };

  out_.open("");
  // Double buffering costs a second set of fragment registers: only while
  // they are few enough to leave the accumulators in registers.
  int fragmentRegisters = nt * 2 + (aShared ? mt * 4 : 0);
  int live = loopCarriedRegisters(op);
  bool accumulatorIsCarried = c->ownerBlock && c->ownerBlock->parentOp && c->ownerBlock->parentOp->kind == OpKind::For;
  if (!accumulatorIsCarried)
    live += mt * nt * 4;
  bool doubleBuffer = kt > 1 && live + 2 * fragmentRegisters <= kDoubleBufferRegisterBudget;
  int buffers = doubleBuffer ? 2 : 1;
  // The swizzle tables hold their registers for the whole product: only
  // where they fit beside the fragments and the live tiles. Counting them
  // mattered on the H200 (2026-12-02): uncounted, the sm_80 dK/dV kernel
  // at D = 128 (160 live beside 2 x 16 fragments) took them and ran 3-6%
  // slower; counted, it keeps the plain addresses, and at D = 64 the
  // products that still take them run 2-3% faster.
  bool laneTables = live + buffers * fragmentRegisters + kLaneTableRegisters <= kDoubleBufferRegisterBudget;
  // Tables where they fit, else one XOR base where the swizzle splits, else
  // in place. On the H200 (2026-12-03) the tables, where they fit, ran
  // faster than the XOR base (the D = 64 attention kernels, up to +4.5%);
  // where they do not, the XOR base beat the swizzle in place (the GEMMs
  // +2 to +6%).
  auto choose = [&](const Value *operand, const LaneRows &rows) {
    if (laneTables)
      return LaneAddressing::Table;
    return xorAddressable(operand->type, rows, sharedTileAlignment(operand)) ? LaneAddressing::XorBase
                                                                              : LaneAddressing::InPlace;
  };
  if (aShared)
    aHow = choose(a, aRows("kk"));
  bHow = choose(b, bRows("kk"));
  if (aShared)
    out_.line("uint32_t a_frag[{}][{}][4];", buffers, mt);
  out_.line("uint32_t b_frag[{}][{}][2];", buffers, nt);
  // Each operand's table or XOR base, A's first.
  auto declareLane = [&](LaneAddressing how, const std::string &lane, const Value *operand, const LaneRows &rows) {
    if (how == LaneAddressing::XorBase)
      out_.line("{}", laneXorBase(lane, name(operand), operand->type, rows));
    if (how == LaneAddressing::Table)
      for (const std::string &line : laneSwizzleTable(lane, operand->type, rows))
        out_.line("{}", line);
  };
  declareLane(aHow, laneName("a", aHow), a, aRows("kk"));
  declareLane(bHow, laneName("b", bHow), b, bRows("kk"));
  if (doubleBuffer)
    loadFragments("0", "0");
  out_.open(fmt::format("TKC_UNROLL for (int kk = 0; kk < {}; ++kk)", kt));
  if (doubleBuffer) {
    out_.open(fmt::format("if (kk + 1 < {})", kt));
    loadFragments("kk + 1", "(kk + 1) % 2");
    out_.close();
  } else {
    loadFragments("kk", "0");
  }
  std::string slot = doubleBuffer ? "kk % 2" : "0";
  std::string aFrag = aShared ? fmt::format("a_frag[{}][i][{{}}]", slot) : fmt::format("{}[(i * {} + kk) * 4 + {{}}]", name(a), kt);
  out_.open(fmt::format("TKC_UNROLL for (int i = 0; i < {}; ++i)", mt));
  out_.open(fmt::format("TKC_UNROLL for (int j = 0; j < {}; ++j)", nt));
  out_.line("float *dd = &{}[(i * {} + j) * 4];", acc, nt);
  out_.line("{}(dd[0], dd[1], dd[2], dd[3], {}, {}, {}, {}, b_frag[{}][j][0], b_frag[{}][j][1]);", instruction,
            fmt::format(fmt::runtime(aFrag), 0), fmt::format(fmt::runtime(aFrag), 1),
            fmt::format(fmt::runtime(aFrag), 2), fmt::format(fmt::runtime(aFrag), 3), slot, slot);
  out_.close();
  out_.close();
  out_.close();
  out_.close();
  return true;
}

} // namespace tkc::codegen
