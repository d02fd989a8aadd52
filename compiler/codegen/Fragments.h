#pragma once
#include "ir/Types.h"

#include <string>
#include <vector>

namespace tkc::ir {
struct Op;
}

namespace tkc::codegen {

/// How one thread holds its share of a register tile: a flat array of
/// `count` elements whose flat index decomposes into named coordinates
/// (outermost first), and the C++ expressions giving the tile row and column
/// of an element in terms of those coordinates and `warp_m`, `warp_n`,
/// `warp`, `lane`. Vectors use `row` for their single index.
struct Fragment {
  struct Coord {
    std::string name;
    int extent;
  };
  std::vector<Coord> coords;
  std::string row;
  std::string col;
  /// True for the thread that writes an element back when several threads
  /// hold copies of it.
  std::string owner = "true";

  int count() const;
  /// `const int i = x / 32; const int j = ...;` for flat index variable
  /// `flat`, declaring only the coordinates that `uses` mentions.
  std::string decompose(const std::string &flat, const std::string &uses) const;
  /// The flat index of the given coordinate expressions.
  std::string flatIndex(const std::vector<std::string> &coordExprs) const;
};

/// The expressions of a warp's row and column in the warp grid of a
/// register layout. `warp_m` and `warp_n` hold them for the kernel's grid;
/// a tile with a grid of its own (a product with too few rows for the
/// kernel's grid) computes them from `warp`.
struct WarpCoords {
  std::string row = "warp_m";
  std::string col = "warp_n";
};

/// The coordinates in `layout`'s grid, in a kernel whose grid has
/// `kernelWarpsN` warp columns (`inRole`: inside a warpgroup role).
WarpCoords warpCoordsIn(const ir::Layout &layout, int kernelWarpsN, bool inRole = false);

/// The fragment of a register tile type (layouts Acc, AccRow, Strip,
/// StripRow, StripCol; OperandA has its own packed form).
Fragment fragmentOf(const ir::Type &type, const WarpCoords &warp = {});

/// An accumulator tile of 16-bit values as rows of 16-byte chunks: the four
/// lanes of a quad together hold 4 x 8 consecutive columns of a row (each
/// lane a pair of every 8), and after `tkc::transpose_quad` each lane holds
/// one 8-column chunk. `chunks` enumerates a lane's chunks (coordinates i,
/// g, h) with the row and first column of each; `pairSource(k)` is the flat
/// index, in the accumulator's own fragment, of the pair that lane k of the
/// quad contributes to chunk (i, g, h). Empty (no coordinates) where the
/// columns of a warp do not come in groups of 32.
struct QuadChunks {
  Fragment chunks;
  Fragment source;
  std::string pairSource(const std::string &k) const;
};
QuadChunks quadChunksOf(const ir::Type &type, const WarpCoords &warp = {});

/// Registers per thread of an OperandA tile: 4 per 16x16 block.
int operandACount(const ir::Type &type);

/// Registers per thread of a value (0 unless a register tile or vector).
int registersOf(const ir::Type &type);

/// Registers per thread of the register tiles a loop carries from one
/// iteration to the next (live through the whole body).
int carriedRegisters(const ir::Op &loop);

/// The 16-byte chunk swizzle of a shared tile row with `chunksPerRow`
/// chunks: XOR of the chunk index with a few row bits, so that the eight
/// rows an ldmatrix reads land in eight different bank groups.
std::string swizzledChunk(const std::string &row, const std::string &chunk, int chunksPerRow);

} // namespace tkc::codegen
