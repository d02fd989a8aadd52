#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tkc::ir {

enum class DType { I1, I32, F32, BF16, F16, F8E4M3, F8E5M2 };

const char *dtypeName(DType dtype);
std::optional<DType> parseDType(std::string_view name);
int dtypeBytes(DType dtype);
bool isFloat(DType dtype);
/// The 8-bit floats (OCP E4M3 without infinities, E5M2), which only loads,
/// casts and matrix products take.
bool isF8(DType dtype);

/// Where a tile lives. `Unplaced` tiles come out of lowering; the layout
/// pass decides between registers and shared memory.
enum class MemSpace { Unplaced, Register, Shared };

/// How the elements of a block-wide tile are spread over warps and lanes.
///
///  Acc       the accumulator of mma.sync m16n8k16. Warps form a
///            warpsM x warpsN grid; each owns a (M/warpsM) x (N/warpsN) sub-tile.
///  OperandA  the A-operand fragments of mma.sync: each warp holds the rows of
///            its warp row, every column; replicated across warpsN.
///  AccRow    a vector indexed by the rows of an Acc tile (row reductions);
///            replicated across the four lanes that share a row.
///  AccCol    a vector indexed by the columns of an Acc tile (broadcasts
///            along rows): each lane holds the two columns of each n8 tile it
///            touches; replicated across the eight lanes that share columns
///            and across warp rows.
///  Strip     rows round-robin over warps, each lane owns `chunk` consecutive
///            columns per 32 * chunk columns of a row. `chunk` is 8 (16-byte
///            bf16 accesses) for a multiple of 256 columns, else 4 for a
///            multiple of 128 and 2 for a multiple of 64. A power-of-two tile
///            narrower than 256 columns keeps chunks of 8 and gives each row
///            `lanes` = columns / 8 lanes, and each warp 32 / lanes
///            consecutive rows at a time.
///  StripRow  a vector indexed by the rows of a Strip tile (its chunk is 8,
///            whatever the tile's: a lane holds whole rows).
///  StripCol  a vector indexed by the columns of a Strip tile, in its chunks.
///  Vec       a vector tied to no 2-d tile: element i is held by lane i % 32
///            of every warp (ceil(length / 32) elements a lane; the slots
///            past the length are padding that no thread writes back).
///  Swizzle   shared memory, 16-byte chunks XOR-swizzled by row so that
///            ldmatrix and cp.async hit distinct banks.
///  Swizzle128  shared memory as the bulk tensor copy engine writes it and
///            wgmma reads it with 128-byte swizzling: the tile is cut into
///            panels 128 bytes wide (all rows, 64 bf16 columns each), stored
///            one after the other; within a panel row r's 16-byte chunk c sits
///            at chunk c ^ (r % 8). Slots start on 1024-byte boundaries.
///  Mbarrier  shared memory holding mbarriers, one 8-byte barrier per row of
///            an i32[S, 2] tile (S: pipeline stages).
///
/// On sm_90a the accumulator of wgmma uses Acc: a warpgroup's 64 x N wgmma
/// accumulator gives each of its warps 16 rows with exactly the register
/// order of mma.sync m16n8k16 accumulators, so #acc<Wx1> over the W
/// consumer warps describes it. A product that the consumer warpgroups
/// split by columns (64 rows, each warpgroup a G-th of the columns) is
/// #acc<4xG>, its warps numbered warpgroup by warpgroup (warp w at row
/// w % 4, column w / 4) where elsewhere they go row by row.
enum class LayoutKind { None, Acc, OperandA, AccRow, AccCol, Strip, StripRow, StripCol, Vec, Swizzle, Swizzle128, Mbarrier };

/// Bytes of one row of a Swizzle128 panel (the swizzle's span).
constexpr int64_t kSwizzle128RowBytes = 128;

struct Layout {
  LayoutKind kind = LayoutKind::None;
  int warpsM = 1; ///< warp rows (Acc, OperandA, AccRow, AccCol) or warps (Strip*)
  int warpsN = 1; ///< warp columns (Acc, OperandA, AccRow, AccCol)
  int lanes = 32; ///< Strip*: lanes that share one row (a power of two; 32 for 256 columns or more)
  int chunk = 8;  ///< Strip*: consecutive elements of a row each lane holds at a time (8, 4 or 2)

  bool operator==(const Layout &) const = default;
  std::string str() const;
};

/// A dimension of a global tensor: static, or a symbol that names a scalar
/// kernel parameter.
struct Dim {
  int64_t size = -1;
  std::string symbol;
  /// A derived dim's expression as the source wrote it (support/DimExpr.h,
  /// `cdiv(R, 32)`); empty for a plain one. Its size is static where the
  /// expression is a compile-time value, else `symbol` names the i32
  /// parameter that carries the tensor's size, which the launcher has
  /// checked against the expression.
  std::string derived;
  bool isStatic() const { return symbol.empty(); }
  bool operator==(const Dim &) const = default;
};

enum class TypeKind { Scalar, Global, Tile };

struct Type {
  TypeKind kind = TypeKind::Scalar;
  DType dtype = DType::I32;
  // Global tensors.
  std::vector<Dim> dims;
  bool isOutput = false;
  // Tiles.
  std::vector<int64_t> shape;
  MemSpace space = MemSpace::Unplaced;
  Layout layout;
  int stages = 0; ///< shared buffers with one slot per pipeline stage

  static Type scalar(DType dtype);
  static Type global(DType dtype, std::vector<Dim> dims, bool isOutput);
  static Type tile(DType dtype, std::vector<int64_t> shape, MemSpace space = MemSpace::Unplaced,
                   Layout layout = {});

  bool isScalar() const { return kind == TypeKind::Scalar; }
  bool isGlobal() const { return kind == TypeKind::Global; }
  bool isTile() const { return kind == TypeKind::Tile; }
  bool isRegister() const { return isTile() && space == MemSpace::Register; }
  bool isShared() const { return isTile() && space == MemSpace::Shared; }
  /// A 1-d shared tile without a layout (a staged vector's slot).
  bool isSharedVector() const { return isShared() && shape.size() == 1 && layout.kind == LayoutKind::None; }
  int64_t numElements() const;
  Type withDType(DType d) const;
  Type withLayout(MemSpace s, Layout l) const;

  bool operator==(const Type &) const = default;
  std::string str() const;
};

} // namespace tkc::ir
