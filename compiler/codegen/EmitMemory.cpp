// Global and shared memory: loads and stores of register tiles, cooperative
// copies into swizzled shared tiles, shared buffers and their stage slots.
#include "codegen/Expressions.h"
#include "codegen/KernelEmitter.h"
#include "ir/ScalarFacts.h"

#include <algorithm>
#include <cassert>
#include <cctype>

namespace tkc::codegen {

using namespace ir;

namespace {
std::vector<int64_t> checkedDims(const Op &op, size_t rank) {
  std::vector<int64_t> checked = op.listAttr("checked");
  if (checked.size() != rank)
    checked.assign(rank, 1); // without the tail pass's proof, check everything
  return checked;
}
/// Dims whose slice may start before the tensor. The tail pass records
/// them; an access it has not seen may start anywhere.
std::vector<int64_t> checkedLowDims(const Op &op, size_t rank) {
  std::vector<int64_t> checked = op.listAttr("checked_low");
  if (checked.size() != rank)
    checked.assign(rank, op.hasAttr("checked") ? 0 : 1);
  return checked;
}
/// `all` and, where the access has a column bound, `test` of it (`test`
/// holds `{}` for the bound); where the slice may start before the tensor,
/// also that column `first` lies at or after its start.
std::string andColumnTest(const std::string &all, const GlobalAccess &access, const std::string &test,
                          const std::string &first) {
  std::vector<std::string> terms{all};
  if (!access.colBound.empty())
    terms.push_back(fmt::format(fmt::runtime(test), access.colBound));
  if (!access.colStart.empty())
    terms.push_back(fmt::format("{} + {} >= 0", access.colStart, first));
  return conjunction(terms);
}
/// The tests that keep tile row `row` inside the tensor.
void appendRowTests(std::vector<std::string> &conditions, const GlobalAccess &access, const std::string &row = "row") {
  if (!access.rowBound.empty())
    conditions.push_back(fmt::format("{} < {}", row, access.rowBound));
  if (!access.rowStart.empty())
    conditions.push_back(fmt::format("{} + {} >= 0", access.rowStart, row));
}
} // namespace

GlobalAccess KernelEmitter::describeAccess(const Op &op, const Value *global, size_t firstOffset) {
  const Type &g = global->type;
  size_t rank = g.dims.size();
  std::vector<int64_t> sizes = op.listAttr("sizes");
  std::vector<int64_t> checked = checkedDims(op, rank);
  std::vector<int64_t> checkedLow = checkedLowDims(op, rank);
  auto dimSize = [&](size_t d) { return globalDimSize(global, d); };
  auto stride = [&](size_t d) { return globalStride(global, d); };
  GlobalAccess access;
  access.base = name(global);
  std::vector<size_t> tileDims;
  for (size_t d = 0; d < rank; ++d) {
    std::string offset = scalar(op.operands[firstOffset + d]);
    if (offset != "0")
      access.base += d + 1 == rank ? fmt::format(" + {}", offset) : fmt::format(" + int64_t({}) * {}", offset, stride(d));
    bool dropped = d < sizes.size() && sizes[d] == 0;
    if (dropped) {
      if (checked[d])
        access.guard += fmt::format("{}{} < {}", access.guard.empty() ? "" : " && ", offset, dimSize(d));
      if (checkedLow[d])
        access.guard += fmt::format("{}{} >= 0", access.guard.empty() ? "" : " && ", offset);
      continue;
    }
    tileDims.push_back(d);
    if (d + 1 == rank && offset != "0")
      access.colOffset = op.operands[firstOffset + d];
    if (checked[d] && !g.dims[d].isStatic() && interiorTileCovers(g.dims[d].symbol, op.operands[firstOffset + d], sizes[d]))
      checked[d] = 0;
    std::string bound = checked[d] ? (offset == "0" ? dimSize(d) : fmt::format("({} - {})", dimSize(d), offset)) : "";
    std::string start = checkedLow[d] ? offset : "";
    if (tileDims.size() == 1) {
      access.rowBound = bound;
      access.rowStart = start;
      access.rowStride = stride(d);
    } else {
      access.colBound = bound;
      access.colStart = start;
    }
  }
  // A vector's single dim is its "column" dim for bounds.
  if (tileDims.size() == 1) {
    access.colBound = access.rowBound;
    access.colStart = access.rowStart;
    access.rowBound = access.rowStart = "";
    access.rowStride = stride(tileDims[0]);
  }
  return access;
}

std::string KernelEmitter::alignedColumns(const GlobalAccess &access, int elements) {
  if (elements <= 1 || !access.colOffset || provablyMultipleOf(access.colOffset, elements))
    return "";
  std::string offset = scalar(access.colOffset);
  bool simple = std::all_of(offset.begin(), offset.end(),
                            [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
  return fmt::format("{} % {} == 0", simple ? offset : "(" + offset + ")", elements);
}

/// The shared tile an op defines, at the offset smem-plan gave it.
std::string KernelEmitter::declareSharedTile(const Op &op) {
  const Value *result = op.result();
  std::string n = declareName(result);
  int64_t offset = op.intAttr("offset");
  sharedBytes_ = std::max(sharedBytes_, offset + result->type.numElements() * dtypeBytes(result->type.dtype));
  out_.line("const uint32_t {} = smem_base + {};", n, offset);
  return n;
}

namespace {
/// The vector access that moves a strip's chunk of `chunk` elements of
/// `elementBytes` bytes: 16 bytes at a time, or the whole chunk where it is
/// shorter.
struct VectorUnit {
  int bytes;
  int elements;
  const char *type;
};
VectorUnit vectorUnit(int chunk, int elementBytes) {
  int bytes = std::min(16, chunk * elementBytes);
  const char *type = bytes == 16 ? "uint4" : bytes == 8 ? "uint2" : "uint32_t";
  return {bytes, bytes / elementBytes, type};
}
} // namespace

bool KernelEmitter::emitLoad(const Op &op) {
  const Value *result = op.result();
  const Value *global = op.operands[0];
  if (result->type.isShared()) {
    std::string n = declareSharedTile(op);
    emitSharedCopy(op, n, result->type, global, 1, "true");
    out_.line("tkc::cp_async_commit();");
    out_.line("tkc::cp_async_wait<0>();");
    return true;
  }
  if (!result->type.isRegister() || result->type.layout.kind == LayoutKind::OperandA)
    return unsupported(op, fmt::format("a load into {}", result->type.str()));
  declareName(result);
  declareTile(result);
  GlobalAccess access = describeAccess(op, global, 1);
  Fragment f = fragment(result->type);
  bool is2d = result->type.shape.size() == 2;
  std::string rowExpr = is2d ? f.row : "0";
  std::string colExpr = is2d ? f.col : f.row;
  std::string elem = cType(result->type.dtype);
  std::string zero = fmt::format("{}(0)", result->type.dtype == DType::BF16 ? "__float2bfloat16" : elem);
  if (result->type.dtype == DType::F16)
    zero = "__float2half(0)";
  out_.open("");
  out_.line("const {} *src = {};", elem, access.base);
  // Strips hold chunks of consecutive elements of a row: each one or two
  // 16-byte loads, or one narrower load for a short chunk.
  LayoutKind kind = result->type.layout.kind;
  bool vectorized = (kind == LayoutKind::Strip || kind == LayoutKind::StripCol);
  int chunk = result->type.layout.chunk;
  int step = vectorized ? chunk : 1;
  out_.open(fmt::format("TKC_UNROLL for (int x = 0; x < {}; x += {})", f.count(), step));
  out_.line("{}", f.decompose("x", rowExpr + " " + colExpr));
  out_.line("const int row = {}, col = {};", rowExpr, colExpr);
  if (!is2d)
    out_.line("(void)row;");
  std::string address = is2d ? fmt::format("src + int64_t(row) * {} + col", access.rowStride)
                             : fmt::format("src + int64_t(col) * {}", access.rowStride);
  std::vector<std::string> conditions;
  if (!access.guard.empty())
    conditions.push_back(access.guard);
  // A vector shorter than a multiple of the warp has lanes past its end:
  // they must not read (past the tile, and maybe past the tensor).
  if (kind == LayoutKind::Vec && result->type.shape[0] % 32 != 0)
    conditions.push_back(fmt::format("col < {}", result->type.shape[0]));
  appendRowTests(conditions, access);
  std::string all = conjunction(conditions);
  if (vectorized) {
    VectorUnit unit = vectorUnit(chunk, dtypeBytes(result->type.dtype));
    std::string full = andColumnTest(all, access, fmt::format("col + {} <= {{}}", chunk), "col");
    // A slice that starts between vector boundaries is read element by
    // element.
    if (std::string aligned = alignedColumns(access, unit.elements); !aligned.empty())
      full = conjunction({full, aligned});
    out_.open(fmt::format("if ({})", full));
    out_.open(fmt::format("TKC_UNROLL for (int piece = 0; piece < {}; ++piece)", chunk / unit.elements));
    out_.line("const {} v = tkc::load_global_{}({} + piece * {});", unit.type, unit.bytes, address, unit.elements);
    out_.line("const {} *parts = reinterpret_cast<const {} *>(&v);", elem, elem);
    out_.line("TKC_UNROLL for (int p = 0; p < {}; ++p) {}[x + piece * {} + p] = parts[p];", unit.elements,
              name(result), unit.elements);
    out_.close();
    out_.dedent();
    out_.open("} else");
    std::string partial = andColumnTest(all, access, "col + p < {}", "col + p");
    out_.line("TKC_UNROLL for (int p = 0; p < {}; ++p) {}[x + p] = {} ? ({})[p] : {};", chunk, name(result), partial,
              address, zero);
    out_.close();
  } else {
    std::string ok = andColumnTest(all, access, "col < {}", "col");
    out_.line("{}[x] = {} ? *({}) : {};", name(result), ok, address, zero);
  }
  out_.close();
  out_.close();
  return true;
}

/// Each thread reads the elements whose indices it holds (the result has
/// the index tile's layout), one scalar load each, with zero where the
/// index or the sliced position falls outside the tensor.
bool KernelEmitter::emitGather(const Op &op) {
  const Value *result = op.result();
  const Value *global = op.operands[0];
  size_t axis = static_cast<size_t>(op.intAttr("axis"));
  const Value *indices = op.operands[1 + axis];
  if (!result->type.isRegister() || result->type.shape.size() != 1)
    return unsupported(op, fmt::format("a gather into {}", result->type.str()));
  const Type &g = global->type;
  size_t rank = g.dims.size();
  std::vector<int64_t> sizes = op.listAttr("sizes");
  std::vector<int64_t> checked = checkedDims(op, rank), checkedLow = checkedLowDims(op, rank);
  auto dimSize = [&](size_t d) { return globalDimSize(global, d); };
  auto stride = [&](size_t d) { return globalStride(global, d); };
  // Where element pos lies: base + pos * (sliced stride) + index * (gathered stride).
  std::string base = name(global), sliced = "0";
  std::vector<std::string> uniform, perElement;
  for (size_t d = 0; d < rank; ++d) {
    if (d == axis)
      continue;
    std::string offset = scalar(op.operands[1 + d]);
    if (offset != "0")
      base += fmt::format(" + int64_t({}) * {}", offset, stride(d));
    if (sizes[d] == 0) {
      if (checked[d])
        uniform.push_back(fmt::format("{} < {}", offset, dimSize(d)));
      if (checkedLow[d])
        uniform.push_back(fmt::format("{} >= 0", offset));
      continue;
    }
    sliced = stride(d);
    if (checked[d])
      perElement.push_back(offset == "0" ? fmt::format("pos < {}", dimSize(d))
                                         : fmt::format("pos < {} - {}", dimSize(d), offset));
    if (checkedLow[d])
      perElement.push_back(fmt::format("pos + {} >= 0", offset));
  }
  // A vector layout may give lanes positions past the tile's end.
  perElement.insert(perElement.begin(), fmt::format("pos < {}", result->type.shape[0]));
  perElement.push_back("k >= 0");
  perElement.push_back(fmt::format("k < {}", dimSize(axis)));
  std::vector<std::string> conditions = uniform;
  conditions.insert(conditions.end(), perElement.begin(), perElement.end());
  declareName(result);
  declareTile(result);
  std::string elem = cType(result->type.dtype);
  std::string zero = result->type.dtype == DType::BF16  ? "__float2bfloat16(0)"
                     : result->type.dtype == DType::F16 ? "__float2half(0)"
                                                        : fmt::format("{}(0)", elem);
  Fragment f = fragment(result->type);
  out_.open("");
  out_.line("const {} *src = {};", elem, base);
  out_.open(fmt::format("TKC_UNROLL for (int x = 0; x < {}; ++x)", f.count()));
  out_.line("{}", f.decompose("x", f.row));
  // `pos`, not a name of the layout's coordinates (`i` of an mma row
  // vector), which the decomposition above declares in this scope.
  out_.line("const int pos = {}, k = {}[x];", f.row, name(indices));
  out_.line("(void)pos;");
  std::string address = sliced == "0" ? fmt::format("src + int64_t(k) * {}", stride(axis))
                                      : fmt::format("src + int64_t(pos) * {} + int64_t(k) * {}", sliced, stride(axis));
  out_.line("{}[x] = {} ? *({}) : {};", name(result), conjunction(conditions), address, zero);
  out_.close();
  out_.close();
  return true;
}

bool KernelEmitter::emitStore(const Op &op) {
  const Value *global = op.operands[0];
  const Value *tile = op.operands[1];
  if (!tile->type.isRegister() || tile->type.layout.kind == LayoutKind::OperandA)
    return unsupported(op, fmt::format("a store from {}", tile->type.str()));
  GlobalAccess access = describeAccess(op, global, 2);
  Fragment f = fragment(tile->type);
  bool is2d = tile->type.shape.size() == 2;
  std::string elem = cType(tile->type.dtype);
  std::string rowExpr = is2d ? f.row : "0";
  std::string colExpr = is2d ? f.col : f.row;
  out_.open("");
  out_.line("{} *dst = {};", elem, access.base);
  LayoutKind kind = tile->type.layout.kind;
  // atomic_add: reductions in L2, a pair of adjacent accumulator columns at a
  // time where the GPU has the vector form.
  bool accumulate = op.hasAttr("accumulate");
  bool vectorized = !accumulate && (kind == LayoutKind::Strip || kind == LayoutKind::StripCol);
  bool pairs = kind == LayoutKind::Acc && (accumulate || dtypeBytes(tile->type.dtype) == 2);
  int step = vectorized ? tile->type.layout.chunk : pairs ? 2 : 1;
  std::vector<std::string> conditions;
  if (f.owner != "true")
    conditions.push_back(f.owner);
  if (!access.guard.empty())
    conditions.push_back(access.guard);
  appendRowTests(conditions, access);
  std::string all = conjunction(conditions);
  bool chunked = !accumulate && is2d && emitChunkedStore(tile, access, all);
  out_.open(fmt::format("TKC_UNROLL for (int x = 0; x < {}; x += {})", f.count(), step));
  out_.line("{}", f.decompose("x", rowExpr + " " + colExpr));
  out_.line("const int row = {}, col = {};", rowExpr, colExpr);
  if (!is2d)
    out_.line("(void)row;");
  std::string address = is2d ? fmt::format("dst + int64_t(row) * {} + col", access.rowStride)
                             : fmt::format("dst + int64_t(col) * {}", access.rowStride);
  if (accumulate) {
    emitReductions(tile, access, all, address, pairs);
  } else if (vectorized || pairs) {
    int width = step;
    std::string full = andColumnTest(all, access, fmt::format("col + {} <= {{}}", width), "col");
    VectorUnit unit = vectorUnit(step, dtypeBytes(tile->type.dtype));
    bool units = vectorized && dtypeBytes(tile->type.dtype) >= 2;
    int alignment = units ? unit.elements : 2;
    if (std::string aligned = alignedColumns(access, alignment); !aligned.empty())
      full = conjunction({full, aligned});
    out_.open(fmt::format("if ({})", full));
    if (units) {
      out_.open(fmt::format("TKC_UNROLL for (int piece = 0; piece < {}; ++piece)", step / unit.elements));
      out_.line("{} v;", unit.type);
      out_.line("{} *parts = reinterpret_cast<{} *>(&v);", elem, elem);
      out_.line("TKC_UNROLL for (int p = 0; p < {}; ++p) parts[p] = {}[x + piece * {} + p];", unit.elements,
                name(tile), unit.elements);
      out_.line("tkc::store_global_{}({} + piece * {}, v);", unit.bytes, address, unit.elements);
      out_.close();
    } else {
      out_.line("*reinterpret_cast<uint32_t *>({}) = tkc::pack2({}[x], {}[x + 1]);", address, name(tile), name(tile));
    }
    out_.dedent();
    out_.open("} else");
    std::string partial = andColumnTest(all, access, "col + p < {}", "col + p");
    out_.line("TKC_UNROLL for (int p = 0; p < {}; ++p) if ({}) ({})[p] = {}[x + p];", width, partial, address,
              name(tile));
    out_.close();
  } else {
    std::string ok = andColumnTest(all, access, "col < {}", "col");
    out_.line("if ({}) *({}) = {}[x];", ok, address, name(tile));
  }
  out_.close();
  if (chunked)
    out_.close();
  out_.close();
  return true;
}

/// atomic_add's reductions in L2: a pair of adjacent accumulator columns at
/// a time where the layout has them (one vector reduction on sm_90; the
/// launcher checks that the tensor's rows are 8-byte aligned, since a test
/// of each address becomes a branch around every reduction in SASS), each
/// guarded by a predicate rather than a branch (see `red_add_f32_if`). A
/// pair that straddles the column bound falls back to single elements.
void KernelEmitter::emitReductions(const Value *tile, const GlobalAccess &access, const std::string &all,
                                   const std::string &address, bool pairs) {
  std::string values = name(tile);
  if (!pairs) {
    std::string ok = andColumnTest(all, access, "col < {}", "col");
    if (ok == "true")
      out_.line("tkc::red_add_f32({}, {}[x]);", address, values);
    else
      out_.line("tkc::red_add_f32_if({}, {}, {}[x]);", ok, address, values);
    return;
  }
  if (access.colBound.empty() && access.colStart.empty() && all == "true") {
    out_.line("tkc::red_add_f32x2({}, {}[x], {}[x + 1]);", address, values, values);
    return;
  }
  if (access.colBound.empty() && access.colStart.empty()) {
    out_.line("tkc::red_add_f32x2_if({}, {}, {}[x], {}[x + 1]);", all, address, values, values);
    return;
  }
  out_.line("const bool whole = {};", andColumnTest(all, access, "col + 2 <= {}", "col"));
  out_.line("tkc::red_add_f32x2_if(whole, {}, {}[x], {}[x + 1]);", address, values, values);
  out_.line("TKC_UNROLL for (int p = 0; p < 2; ++p) tkc::red_add_f32_if({}, {} + p, {}[x + p]);",
            conjunction({"!whole", andColumnTest(all, access, "col + p < {}", "col + p")}), address, values);
}

/// An accumulator tile of 16-bit values leaves in 16-byte chunks where the
/// tensor is aligned for them: each quad of lanes transposes its 4 x 4
/// pairs so that a lane holds 8 consecutive columns. A warp's store then
/// writes 64 bytes of each of 8 rows rather than 16: a quarter of the
/// stores, each touching as many lines as before. Opens the branch of
/// the aligned case, whose `else` the caller fills with the pair stores;
/// false (nothing printed) where the layout has no such chunks.
bool KernelEmitter::emitChunkedStore(const Value *tile, const GlobalAccess &access, const std::string &all) {
  QuadChunks q = quadChunksOf(tile->type, warpCoords(tile->type.layout));
  if (q.chunks.coords.empty())
    return false;
  int perChunk = 16 / dtypeBytes(tile->type.dtype);
  out_.open(fmt::format("if (reinterpret_cast<uintptr_t>(dst) % 16 == 0 && {} % {} == 0)", access.rowStride, perChunk));
  out_.open(fmt::format("TKC_UNROLL for (int y = 0; y < {}; ++y)", q.chunks.count()));
  out_.line("{}", q.chunks.decompose("y", "i g h"));
  out_.line("uint32_t v[4];");
  out_.line("TKC_UNROLL for (int pair = 0; pair < 4; ++pair) v[pair] = tkc::pack2({0}[{1}], {0}[{1} + 1]);",
            name(tile), q.pairSource("pair"));
  out_.line("tkc::transpose_quad(v);");
  out_.line("const int row = {}, col = {};", q.chunks.row, q.chunks.col);
  std::string address = fmt::format("dst + int64_t(row) * {} + col", access.rowStride);
  if (access.colBound.empty() && access.colStart.empty()) {
    out_.line("if ({}) tkc::store_global_16({}, make_uint4(v[0], v[1], v[2], v[3]));", all, address);
  } else {
    out_.line("if ({}) tkc::store_global_16({}, make_uint4(v[0], v[1], v[2], v[3]));",
              andColumnTest(all, access, fmt::format("col + {} <= {{}}", perChunk), "col"), address);
    out_.line("else TKC_UNROLL for (int p = 0; p < {}; ++p) if ({}) ({})[p] = tkc::half_of<{}>(v[p / 2], p % 2);",
              perChunk, andColumnTest(all, access, "col + p < {}", "col + p"), address, cType(tile->type.dtype));
  }
  out_.close();
  out_.dedent();
  out_.open("} else");
  return true;
}

/// Every thread copies 16-byte chunks of the tile with cp.async; chunks past
/// the tensor's end are zero-filled (source size 0, or fewer bytes at a
/// row's ragged end).
void KernelEmitter::emitSharedCopy(const Op &op, const std::string &dstAddr, const Type &tile, const Value *global,
                                   size_t firstOffset, const std::string &pred) {
  GlobalAccess access = describeAccess(op, global, firstOffset);
  int bytes = dtypeBytes(tile.dtype);
  int64_t rows = tile.shape.size() == 2 ? tile.shape[0] : 1;
  int64_t cols = tile.shape.back();
  int64_t chunksPerRow = cols * bytes / 16;
  int64_t total = rows * chunksPerRow;
  int threads = kernel_.warps * Target::kWarpSize;
  int64_t iterations = (total + threads - 1) / threads;
  int perChunk = 16 / bytes;
  std::vector<std::string> uniform; // the same for every chunk of the tile
  if (pred != "true")
    uniform.push_back(pred);
  if (!access.guard.empty())
    uniform.push_back(access.guard);
  std::vector<std::string> fullTile = uniform;
  if (!access.rowBound.empty() && tile.shape.size() == 2)
    fullTile.push_back(fmt::format("{} <= {}", rows, access.rowBound));
  if (!access.colBound.empty())
    fullTile.push_back(fmt::format("{} <= {}", cols, access.colBound));
  for (const std::string &start : {access.rowStart, access.colStart})
    if (!start.empty())
      fullTile.push_back(fmt::format("{} >= 0", start));
  std::string source = tile.shape.size() == 2 ? fmt::format("src + int64_t(row) * {} + col", access.rowStride)
                                              : std::string("src + col");
  std::string destination =
      fmt::format("{} + row * {} + {} * 16", dstAddr, chunksPerRow * 16,
                  swizzledChunk("row", "piece", static_cast<int>(chunksPerRow)));
  // When the block's threads cover whole rows, a multiple of the swizzle's
  // 8-row period, each thread copies the same chunk of every
  // `rowsPerRound`-th row: its source and destination are computed once and
  // advanced by constants, instead of a 64-bit row address per chunk. That
  // pays from four chunks a thread on (the GEMM's eight and four); with
  // fewer, the extra live pointers cost more than they save.
  int64_t rowsPerRound = threads % chunksPerRow == 0 ? threads / chunksPerRow : 0;
  bool sameChunk = tile.shape.size() == 2 && rowsPerRound > 0 && rowsPerRound % 8 == 0 && iterations >= 4;
  auto sameChunkLoop = [&]() {
    out_.line("const int row = threadIdx.x / {}, piece = threadIdx.x % {};", chunksPerRow, chunksPerRow);
    out_.line("const {} *from = src + int64_t(row) * {} + piece * {};", cType(tile.dtype), access.rowStride, perChunk);
    out_.line("const uint32_t to = {};", destination);
    out_.line("const int64_t round_stride = int64_t({}) * {};", rowsPerRound, access.rowStride);
    out_.open(fmt::format("TKC_UNROLL for (int it = 0; it < {}; ++it)", iterations));
    if (total % threads)
      out_.line("if (threadIdx.x + it * {} >= {}) break;", threads, total);
    out_.line("tkc::cp_async_16(to + it * {}, from + it * round_stride, 16);", rowsPerRound * chunksPerRow * 16);
    out_.close();
  };
  // Opens the loop over the thread's chunks, with `row`, `piece` and `col`.
  auto openChunks = [&]() {
    out_.open(fmt::format("TKC_UNROLL for (int it = 0; it < {}; ++it)", iterations));
    // Unsigned, so that the compiler sees each thread's column repeat from
    // one round to the next (a signed division is computed per round, and
    // in a loop those per-round values stay live across it).
    out_.line("const unsigned chunk = threadIdx.x + it * {}u;", threads);
    if (total % threads)
      out_.line("if (chunk >= {}u) break;", total);
    out_.line("const int row = int(chunk / {}u), piece = int(chunk % {}u), col = piece * {};", chunksPerRow,
              chunksPerRow, perChunk);
  };
  auto chunkLoop = [&](bool checked) {
    if (!checked && sameChunk)
      return sameChunkLoop();
    openChunks();
    if (!checked) {
      out_.line("tkc::cp_async_16({}, {}, 16);", destination, source);
    } else {
      // A chunk that starts before the tensor is read as zeros whole: slices
      // copied in 16-byte chunks start on a chunk boundary, so a chunk lies
      // wholly before the tensor's start or wholly after it.
      std::vector<std::string> conditions = uniform;
      if (tile.shape.size() == 2)
        appendRowTests(conditions, access);
      conditions.push_back(andColumnTest("true", access, "col < {}", "col"));
      std::string size = access.colBound.empty()
                             ? std::string("16")
                             : fmt::format("min(16, ({} - col) * {})", access.colBound, bytes);
      out_.line("const bool inside = {};", conjunction(conditions));
      out_.line("tkc::cp_async_16({}, inside ? {} : {}, inside ? {} : 0);", destination, source, name(global), size);
    }
    out_.close();
  };
  // A slice that starts between 16-byte boundaries: each thread gathers a
  // chunk's elements and writes it to shared memory itself.
  auto gatherLoop = [&]() {
    openChunks();
    std::vector<std::string> conditions = uniform;
    if (tile.shape.size() == 2)
      appendRowTests(conditions, access);
    conditions.push_back(andColumnTest("true", access, "col + p < {}", "col + p"));
    out_.line("uint4 v = make_uint4(0, 0, 0, 0);");
    out_.line("{0} *parts = reinterpret_cast<{0} *>(&v);", cType(tile.dtype));
    out_.line("TKC_UNROLL for (int p = 0; p < {}; ++p) if ({}) parts[p] = ({})[p];", perChunk, conjunction(conditions),
              source);
    out_.line("tkc::st_shared_v4_b32({}, v);", destination);
    out_.close();
  };
  out_.open("");
  out_.line("const {} *src = {};", cType(tile.dtype), access.base);
  std::string aligned = alignedColumns(access, perChunk);
  if (!aligned.empty()) {
    out_.open(fmt::format("if (!({}))", aligned));
    gatherLoop();
    out_.dedent();
    out_.open("} else");
  }
  std::string full = conjunction(fullTile);
  if (full == "true") {
    chunkLoop(false);
  } else {
    // Tiles wholly inside the tensor skip the per-chunk bounds arithmetic.
    out_.open(fmt::format("if ({})", full));
    chunkLoop(false);
    out_.dedent();
    out_.open("} else");
    chunkLoop(true);
    out_.close();
  }
  if (!aligned.empty())
    out_.close();
  out_.close();
}

bool copiesElementwise(const Op &op) {
  if (op.kind == OpKind::Gather)
    return true; // one element at a time
  const Type &slot = op.operands[0]->type;
  return (op.kind == OpKind::WarpCopy || op.kind == OpKind::AsyncLoad) && slot.isSharedVector() &&
         dtypeBytes(slot.dtype) == 4;
}

/// A vector slice copied into shared memory with 4-byte cp.async, thread
/// `first` taking every `step`-th element (zeros past the tensor's end or
/// where `pred` fails): the tensor's rows need no 16-byte alignment, as
/// chunked copies would.
void KernelEmitter::emitVectorCopy(const Op &op, const std::string &dstAddr, const Type &slot, const Value *global,
                                   size_t firstOffset, const std::string &pred, const std::string &first, int step) {
  GlobalAccess access = describeAccess(op, global, firstOffset);
  std::string inside = andColumnTest(conjunction({pred, access.guard}), access, "col < {}", "col");
  std::string address = fmt::format("src + int64_t(col) * {}", access.rowStride);
  out_.open("");
  out_.line("const {} *src = {};", cType(slot.dtype), access.base);
  // One round where the threads outnumber the elements: ptxas cannot bound
  // `first` (a thread index), so a loop would stay a loop, with its branches.
  if (step >= slot.shape[0])
    out_.open(fmt::format("if (const int col = {}; col < {})", first, slot.shape[0]));
  else
    out_.open(fmt::format("TKC_UNROLL for (int col = {}; col < {}; col += {})", first, slot.shape[0], step));
  if (inside == "true")
    out_.line("tkc::cp_async_4({} + col * 4, {}, 4);", dstAddr, address);
  else
    out_.line("tkc::cp_async_4({0} + col * 4, {1} ? {2} : {3}, {1} ? 4 : 0);", dstAddr, inside, address, name(global));
  out_.close();
  out_.close();
}

void KernelEmitter::emitSmemAlloc(const Op &op) {
  const Type &t = op.result()->type;
  int64_t offset = op.intAttr("offset");
  int64_t bytes = t.numElements() * dtypeBytes(t.dtype) * std::max(t.stages, 1);
  sharedBytes_ = std::max(sharedBytes_, offset + bytes);
  out_.line("const uint32_t {} = smem_base + {}; // {} stage(s) of {}", declareName(op.result()), offset,
            std::max(t.stages, 1), t.str());
}

void KernelEmitter::emitStageView(const Op &op) {
  const Type &t = op.result()->type;
  int64_t slotBytes = t.numElements() * dtypeBytes(t.dtype);
  out_.line("const uint32_t {} = {} + {} * {};", declareName(op.result()), name(op.operands[0]),
            scalar(op.operands[1]), slotBytes);
}

/// A register tile copied into a swizzled shared tile, so that mma reads it
/// with ldmatrix like a loaded one: each thread writes its accumulator pairs
/// as 32-bit words, and the swizzle puts the eight rows of a warp's store in
/// different banks.
bool KernelEmitter::emitStageToShared(const Op &op) {
  const Value *src = op.operands[0];
  const Value *result = op.result();
  LayoutKind kind = src->type.layout.kind;
  LayoutKind into = result->type.layout.kind;
  if ((kind != LayoutKind::Acc && kind != LayoutKind::Strip) || dtypeBytes(src->type.dtype) != 2 ||
      (into != LayoutKind::Swizzle && (into != LayoutKind::Swizzle128 || kind != LayoutKind::Acc)))
    return unsupported(op, fmt::format("a copy of {} into {}", src->type.str(), result->type.str()));
  std::string n = declareSharedTile(op);
  if (into == LayoutKind::Swizzle128) { // wgmma's operand panels (sm_90a)
    emitPanelStores(n, result->type, src, 0);
    return true;
  }
  Fragment f = fragment(src->type);
  int perChunk = 16 / dtypeBytes(src->type.dtype);
  int chunksPerRow = static_cast<int>(result->type.shape[1] / perChunk);
  out_.open(fmt::format("TKC_UNROLL for (int x = 0; x < {}; x += 2)", f.count()));
  out_.line("{}", f.decompose("x", f.row + " " + f.col));
  out_.line("const int row = {}, col = {};", f.row, f.col);
  out_.line("tkc::st_shared_b32({} + row * {} + {} * 16 + col % {} * {}, tkc::pack2({}[x], {}[x + 1]));", n,
            chunksPerRow * 16, swizzledChunk("row", fmt::format("col / {}", perChunk), chunksPerRow), perChunk,
            dtypeBytes(src->type.dtype), name(src), name(src));
  out_.close();
  return true;
}

} // namespace tkc::codegen
