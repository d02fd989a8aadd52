#pragma once
#include "codegen/CodeWriter.h"
#include "codegen/Expressions.h"
#include "codegen/Fragments.h"
#include "codegen/Identifiers.h"
#include "codegen/WgmmaWrappers.h"
#include "ir/IR.h"
#include "support/Diagnostics.h"
#include "target/Target.h"

#include <map>
#include <optional>
#include <set>
#include <string>

namespace tkc::codegen {

/// Where a load or store touches a global tensor: the base pointer
/// expression (with the offsets of every dim folded in), the strides of the
/// tile's row and column dims, and the bounds that must be checked.
struct GlobalAccess {
  std::string base;       ///< pointer to the tile's element (0, 0)
  std::string rowStride;  ///< elements between tile rows (2-d tiles)
  std::string rowBound;   ///< valid rows, or "" when unchecked
  std::string colBound;   ///< valid columns (or elements of a vector), or ""
  std::string guard;      ///< condition on dropped dims, or ""
  /// Where the slice may start before the tensor: the offset that, added to
  /// a tile row (column), gives the tensor's; else "".
  std::string rowStart;
  std::string colStart;
  /// The start of the slice's contiguous dim (null where it is 0): vector
  /// copies need it to be a multiple of their width (alignedColumns).
  const ir::Value *colOffset = nullptr;
};

/// A tensor map a kernel takes as a `__grid_constant__` parameter: one per
/// global tensor read by `tma_load`, with the box (rows x 128-byte panel
/// columns) its copies use.
struct TensorMapUse {
  const ir::Value *global;
  int64_t boxRows;
  int64_t boxCols;
};
/// The tensor maps of a kernel, in parameter order (EmitHopper.cpp).
std::vector<TensorMapUse> tensorMapsOf(const ir::Kernel &kernel);

/// Whether a copy into a staged shared vector (`warp_copy`, `async_load`)
/// goes element by element, 4 bytes at a time (emitVectorCopy): its tensor
/// needs no more than element alignment.
bool copiesElementwise(const ir::Op &op);

/// Emits the `__global__` function of one IR kernel. The methods are split
/// over files by concern: KernelEmitter.cpp (structure, scalars, loops),
/// EmitElementwise.cpp, EmitMemory.cpp, EmitMma.cpp.
/// The line that ends a kernel function's `#line` span; emitCuda replaces
/// it with the generated file's own `#line`.
inline constexpr const char *kLineReset = "#line 1 \"<tkc: back to the generated file>\"";

class KernelEmitter {
public:
  /// Adds the wgmma forms the kernel calls to `wgmmaShapes`.
  KernelEmitter(const ir::Kernel &kernel, const Target &target, const std::string &sourceName,
                const SourceManager *sources, CodeWriter &out, std::set<WgmmaShape> &wgmmaShapes,
                DiagnosticEngine &diags);
  bool emit();
  /// Bytes of dynamic shared memory the kernel needs.
  int64_t sharedMemoryBytes() const { return sharedBytes_; }
  std::string functionName() const;
  /// Appended to the function's name, so that one file can hold the
  /// kernels of several targets.
  void setSymbolSuffix(std::string suffix) { symbolSuffix_ = std::move(suffix); }
  /// Precedes the code of each source line with `#line N FILE` (FILE a C
  /// string literal), so that nvcc -lineinfo maps the instructions to the
  /// .tk file; the function ends with kLineReset, which emitCuda turns into
  /// the `#line` of the generated file.
  void setLineDirectives(std::string fileLiteral) { lineFile_ = std::move(fileLiteral); }

private:
  // KernelEmitter.cpp
  void emitBlock(const ir::Block &block);
  bool emitOp(const ir::Op &op);
  void emitFor(const ir::Op &op);
  void emitYield(const ir::Op &loop);
  void emitScalar(const ir::Op &op);
  std::string name(const ir::Value *v);
  /// "" where the access's column start is provably a multiple of
  /// `elements`, else the C condition that it is one at run time.
  std::string alignedColumns(const GlobalAccess &access, int elements);
  std::string declareName(const ir::Value *v);
  /// The parameter holding the stride of a global tensor's dim.
  std::string strideName(const ir::Value *global, size_t dim);
  /// A global tensor's size in `dim`: its static extent, or the scalar
  /// parameter that holds it.
  std::string globalDimSize(const ir::Value *global, size_t dim);
  /// A global tensor's stride in `dim` as an expression ("1" for the last).
  std::string globalStride(const ir::Value *global, size_t dim);
  /// The parameter holding a global tensor's bulk-copy tensor map.
  std::string tensorMapName(const ir::Value *global);
  /// A scalar operand as an expression.
  CExpr scalarExpr(const ir::Value *v);
  /// scalarExpr's code, bare where it may follow a binary operator.
  std::string scalar(const ir::Value *v) { return scalarExpr(v).operand(Precedence::Unary); }
  std::string cType(ir::DType dtype) const;
  void comment(const ir::Op &op);
  bool unsupported(const ir::Op &op, const std::string &what);
  /// The fragment of a register tile in this kernel (its warp grid's
  /// coordinates named as the kernel declares them).
  Fragment fragment(const ir::Type &type) const;
  WarpCoords warpCoords(const ir::Layout &layout) const;

  // EmitElementwise.cpp
  void emitElementwise(const ir::Op &op);
  struct RowRescale {
    const ir::Value *tile;    ///< the carried accumulator (or its in-place update)
    const ir::Value *factors; ///< one factor per row
  };
  std::optional<RowRescale> carriedRowRescale(const ir::Op &op);
  std::optional<std::pair<CExpr, CExpr>> indexRange(const ir::Value *v,
                                                    std::vector<const ir::Value *> *leaves = nullptr);
  std::optional<CExpr> wholeTileCondition(const ir::Value *cond, std::vector<const ir::Value *> *leaves = nullptr);
  void emitFill(const ir::Op &op);
  void emitIota(const ir::Op &op);
  void emitMask(const ir::Op &op);
  bool emitReduce(const ir::Op &op);
  bool emitPartialsReduce(const ir::Op &op);
  bool emitBroadcast(const ir::Op &op);
  bool emitConvert(const ir::Op &op);
  bool emitStageToShared(const ir::Op &op);
  /// `name[x]` of a tile operand or the expression of a scalar operand,
  /// converted to float when `asFloat`.
  CExpr element(const ir::Value *v, const std::string &flat, bool asFloat);
  void declareTile(const ir::Value *v);

  // EmitUnswitch.cpp
  /// Emits the loop body from `from` and the yield; with `split`, from the
  /// first mask on twice: masks dropped on interior tiles, and as written.
  void emitLoopBody(const ir::Op &loop, ir::Block::OpList::const_iterator from, bool split);
  bool isMaskLike(const ir::Op &op) const;
  /// The block-uniform conditions under which the masks from `from` on are
  /// identities (those whose inputs are known before `from`: defined
  /// outside `body` or at an earlier `position`), collected into
  /// `identities`.
  std::vector<CExpr> maskFreeConditions(const ir::Block &body, ir::Block::OpList::const_iterator from,
                                        const std::map<const ir::Op *, int> &position,
                                        std::set<const ir::Op *> &identities);
  /// Masks emitted as their unmasked input (the interior-tile copy of a body).
  std::set<const ir::Op *> identityOps_;
  /// Whether the interior-tile conditions in force (a tail mask of `dim -
  /// offset` valid elements that is an identity on `size` or more) put the
  /// slice [offset, offset + size) of the dim named `symbol` inside it.
  bool interiorTileCovers(const std::string &symbol, const ir::Value *offset, int64_t size) const;

  // EmitMemory.cpp
  GlobalAccess describeAccess(const ir::Op &op, const ir::Value *global, size_t firstOffset);
  bool emitLoad(const ir::Op &op);
  bool emitGather(const ir::Op &op);
  std::string declareSharedTile(const ir::Op &op);
  bool emitStore(const ir::Op &op);
  bool emitChunkedStore(const ir::Value *tile, const GlobalAccess &access, const std::string &all);
  void emitReductions(const ir::Value *tile, const GlobalAccess &access, const std::string &all,
                      const std::string &address, bool pairs);
  void emitSharedCopy(const ir::Op &op, const std::string &dstAddr, const ir::Type &tile, const ir::Value *global,
                      size_t firstOffset, const std::string &pred);
  void emitSmemAlloc(const ir::Op &op);
  void emitStageView(const ir::Op &op);

  // EmitMma.cpp
  bool emitMma(const ir::Op &op);
  /// The largest power of two, up to 1024, that divides a shared tile's
  /// byte offset from smem_base in every stage (0: not known here).
  int64_t sharedTileAlignment(const ir::Value *tile) const;
  void emitLoadOperandA(const ir::Value *smem, const ir::Type &regType, const std::string &dst);

  // EmitHopper.cpp (sm_90a)
  bool emitHopperOp(const ir::Op &op);
  bool emitWgmma(const ir::Op &op);
  bool emitSmemStore(const ir::Op &op);
  bool emitTmaStore(const ir::Op &op);
  bool emitWarpCopy(const ir::Op &op);
  /// Slot `it % S` of the staged shared buffer `buf`.
  std::string slotAddress(const ir::Value *buf, const std::string &it);
  void emitVectorCopy(const ir::Op &op, const std::string &dstAddr, const ir::Type &slot, const ir::Value *global,
                      size_t firstOffset, const std::string &pred, const std::string &first, int step);
  bool emitSharedVectorRead(const ir::Op &op);
  bool emitVectorToShared(const ir::Op &op);
  bool emitVectorFromShared(const ir::Op &op);
  /// `if (lane == 0) ` where the role's issuer is a whole warp, else nothing.
  std::string oneLane() const { return roleIssuerIsWarp_ ? "if (lane == 0) " : ""; }
  /// Blocks per multiprocessor that the warpgroup roles' registers
  /// (setmaxnreg) leave room for; 0 without roles.
  int blocksForRoleRegisters() const;
  void addTensorMapParams(std::vector<std::string> &params);
  /// Fetches the tensor maps ahead, before the first bulk copies need them.
  void emitTensorMapPrefetch();
  std::string barrierAddress(const ir::Value *bars, const std::string &iteration);
  void closeRoleIssuers();
  std::string panelAddress(const std::string &base, const ir::Type &tile);
  void emitPanelStores(const std::string &base, const ir::Type &panels, const ir::Value *value, int64_t first);
  int roleWarpgroups_ = 0;      ///< warpgroups given a role so far
  int currentRoleWarpgroups_ = 0; ///< warpgroups of the role being emitted
  bool roleIssuerOpen_ = false; ///< inside a role's single-thread (or single-warp) block
  /// Inside a role run by one warp: ops for one thread run in its lane 0.
  bool roleIssuerIsWarp_ = false;
  bool alignmentChecked_ = false;

  const ir::Kernel &kernel_;
  const Target &target_;
  std::string sourceName_; // escaped for comments
  std::string lineFile_;   // a C string literal; empty: no #line directives
  std::string symbolSuffix_;
  const SourceManager *sources_;
  CodeWriter &out_;
  std::set<WgmmaShape> &wgmmaShapes_;
  DiagnosticEngine &diags_;
  /// How many ops read each value, across the whole kernel.
  std::map<const ir::Value *, int> uses_;
  void countUses();
  /// Ops whose work another op's emission does inline (the rounding and
  /// masking of an A operand that `convert` packs straight from f32).
  std::set<const ir::Op *> absorbed_;
  void findAbsorbedOps();
  /// Zero fills that only start one wgmma product while others are in
  /// flight: its first k16 step ignores the accumulator (scale-d = 0).
  std::set<const ir::Op *> freshAccumulators_;
  /// Products reading A from registers made in the loop body, issued in the
  /// straight-line code of the body being emitted: where each was issued and
  /// where the first code after it at its level begins (see WgmmaWait).
  struct RegisterProduct {
    CodeWriter::Mark issued, firstCode;
  };
  std::map<const ir::Op *, RegisterProduct> registerProducts_;
  void noteCodeAfterRegisterProducts(const ir::Op &op);
  void retireRegisterProduct(const ir::Op &product);
  /// wgmma waits that close a window of work overlapping the products in
  /// flight: each opens the tail-unswitched part of a loop body that has one.
  std::set<const ir::Op *> windowClosingWaits_;
  void findWgmmaSchedule();
  const ir::Op *committedWith(const ir::Op &wgmma) const;
  std::map<const ir::Value *, std::string> names_;
  NameTable nameTable_;
  std::map<std::pair<const ir::Value *, int>, std::string> derivedNames_; // strides (dim) and tensor maps (-1)
  /// Warp columns of the kernel's grid (`warp_m`, `warp_n`).
  int kernelWarpsN_ = 1;
  int64_t sharedBytes_ = 0;
  int lastCommentLine_ = 0;
  bool ok_ = true;
};

} // namespace tkc::codegen
