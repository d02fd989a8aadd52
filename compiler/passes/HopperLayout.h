#pragma once
// What the files of the `hopper-layout` pass (HopperLayout.cpp) share: the
// two loop shapes it schedules on wgmma and the decisions it takes for them,
// each in a file of its own: HopperLayoutGemm.cpp (whether a loop is a GEMM
// step, and which of its stores the epilogue takes), HopperLayoutFused.cpp
// (whether a loop of several products with work between them qualifies),
// HopperLayoutStages.cpp (the pipeline depth and the epilogue's staging
// width, from the shared memory they take) and HopperLayoutRewrite.cpp (the
// layouts and marks that carry the decisions into the IR).
#include "ir/IR.h"
#include "passes/Pass.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tkc::passes::hopper_layout {

using namespace ir;

/// A pipeline needs two stages at least: the consumers release a slot only
/// after issuing the next iteration's products.
constexpr int64_t kMinStages = 2;

/// Why a kernel's products stay on mma.sync on Hopper: the op that does
/// not fit the GEMM or the fused loop (null: the kernel as a whole) and
/// the reason.
struct ScheduleMismatch {
  const Op *at = nullptr;
  std::string why;
};

// --- GEMM loops (HopperLayoutGemm.cpp) -------------------------------------

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

/// The loop of accumulating products that wgmma can run, or nothing: a body
/// of operand loads, address arithmetic and products, each product adding
/// to a carried accumulator of its own and read by nothing but the next
/// iteration. The accumulators have one shape, so that each consumer
/// warpgroup owns the same 64 rows of all of them. A loop of that form
/// whose products wgmma cannot run sets `why` to the first such product and
/// the reason; one that keeps its accumulators with selects where a step
/// reads only padding, to the load whose slice of K may lie outside its
/// tensor.
std::optional<GemmLoop> matchGemmLoop(const Kernel &kernel, Op &loop, ScheduleMismatch &why);

/// The stores after the loop that can go out through shared staging tiles
/// and bulk tensor copies: each a whole 16-bit accumulator tile to the last
/// two dims of a tensor, in 64-row, 128-byte panels, or the f32 accumulator
/// itself added to one (atomic_add: the copy engine adds whole lines in L2, which goes
/// about 1.6 times as fast as the threads' vector reductions on the H200).
/// An epilogue may store several such tiles (a layer's output and its
/// pre-activation); each gets a staging tile of its own. Other stores stay
/// as they are.
std::vector<Op *> matchTmaStores(Kernel &kernel, const GemmLoop &m);

bool isAccumulatorFamily(LayoutKind kind);

/// Layouts outside the accumulator family make the kernel ineligible: their
/// warp mapping would change with the warpgroup split. Row and column
/// vectors of the accumulator (a bias broadcast over it, `b[new, :]`) split
/// with it, and are taken where the consumers fill a multiprocessor
/// (several warpgroups, one block); with a single consumer warpgroup such a
/// kernel is left to the fused schedule, which sizes its pipeline for two
/// blocks a multiprocessor.
bool onlyAccumulatorLayouts(Kernel &kernel, const GemmLoop &m);

// --- fused loops (HopperLayoutFused.cpp) -----------------------------------

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

/// The kernel's fused loop, or nothing, with the first thing that keeps
/// the kernel from the fused schedule in `mismatch`.
std::optional<FusedLoop> matchFusedLoop(Kernel &kernel, ScheduleMismatch &mismatch);

// --- pipeline depth (HopperLayoutStages.cpp) -------------------------------

/// Shared memory of a fused loop: what stays for the whole kernel (the
/// resident tiles, two slots of each staged tile, the additions' staging
/// tiles) and what one pipeline stage of the streamed tiles takes.
struct FusedBudget {
  int64_t fixedBytes = 0;
  int64_t stageBytes = 0;
  int64_t lateBytes = 0; ///< of stageBytes, the tiles only the late product reads
  int64_t roomBytes = 0; ///< for the stages, beside the fixed part
};

FusedBudget budgetOf(const FusedLoop &f, const Target &target);

/// The pipeline of a GEMM loop: its depth, and the stores that go out
/// through staging tiles of `stagingCols` columns (none where no staging
/// tile fits).
struct GemmPipeline {
  int64_t stages = 0;
  std::vector<Op *> epilogueStores;
  int64_t stagingCols = 0;
};

/// The depth of a GEMM loop laid out for wgmma (layOutGemm) and the width
/// of its epilogue's staging tiles; nothing after reporting that two stages
/// do not fit.
std::optional<GemmPipeline> planGemmPipeline(Kernel &kernel, const GemmLoop &m, const Target &target,
                                             DiagnosticEngine &diags);

/// The pipeline of a fused loop: its depth, and the tiles that only the
/// product issued an iteration late reads, given rings of a slot more.
struct FusedPipeline {
  int64_t stages = 0;
  std::vector<Op *> ringed;
};

/// The depth of a fused loop laid out for wgmma (layOutFused), whose shared
/// memory before the layouts was `budget`.
FusedPipeline planFusedPipeline(const Kernel &kernel, const FusedLoop &f, const FusedBudget &budget,
                                const Target &target, DiagnosticEngine &diags);

// --- rewriting (HopperLayoutRewrite.cpp) -----------------------------------

/// Gives a GEMM kernel's accumulators the consumer warpgroups' layout, its
/// operand tiles the swizzled panels, and the kernel its producer warpgroup.
void layOutGemm(Kernel &kernel, const GemmLoop &m);
/// Records the GEMM loop's depth and marks its epilogue's stores.
void markGemmPipeline(const GemmLoop &m, const GemmPipeline &p);

/// Lays out a fused loop's tiles for wgmma, marks its additions for the
/// bulk copy engine and gives the kernel its producer warpgroup.
void layOutFused(Kernel &kernel, const FusedLoop &f);
/// Records the fused loop's depth and the rings of its late tiles.
void markFusedPipeline(const FusedLoop &f, const FusedPipeline &p);

} // namespace tkc::passes::hopper_layout
