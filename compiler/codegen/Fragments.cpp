#include "codegen/Fragments.h"
#include "ir/IR.h"
#include "ir/Registers.h"

#include <fmt/format.h>

namespace tkc::codegen {

using namespace ir;

int Fragment::count() const {
  int n = 1;
  for (const Coord &c : coords)
    n *= c.extent;
  return n;
}

namespace {
bool mentions(const std::string &text, const std::string &word) {
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    auto isWordChar = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    bool startsWord = at == 0 || !isWordChar(text[at - 1]);
    bool endsWord = at + word.size() == text.size() || !isWordChar(text[at + word.size()]);
    if (startsWord && endsWord)
      return true;
  }
  return false;
}
} // namespace

std::string Fragment::decompose(const std::string &flat, const std::string &uses) const {
  std::string text;
  int stride = count();
  bool outermost = true;
  for (const Coord &c : coords) {
    stride /= c.extent;
    std::string expr = flat;
    if (stride != 1)
      expr += fmt::format(" / {}", stride);
    if (!outermost)
      expr += fmt::format(" % {}", c.extent);
    outermost = false;
    if (!mentions(uses, c.name))
      continue;
    text += fmt::format("{}const int {} = {};", text.empty() ? "" : " ", c.name, expr);
  }
  return text;
}

std::string Fragment::flatIndex(const std::vector<std::string> &coordExprs) const {
  std::string text;
  int stride = count();
  for (size_t i = 0; i < coords.size(); ++i) {
    stride /= coords[i].extent;
    if (coords[i].extent == 1)
      continue;
    std::string term = stride == 1 ? coordExprs[i] : fmt::format("({}) * {}", coordExprs[i], stride);
    text += text.empty() ? term : " + " + term;
  }
  return text.empty() ? "0" : text;
}

WarpCoords warpCoordsIn(const Layout &layout, int kernelWarpsN, bool inRole) {
  // In a warpgroup role, a grid of four warp rows and several columns is
  // numbered warpgroup by warpgroup, as wgmma splits a product: warpgroup w
  // holds column w (`warp_m` counts the role's warps). A row vector of such
  // a tile follows it.
  bool tileOrRows = layout.kind == LayoutKind::Acc || layout.kind == LayoutKind::AccRow;
  if (inRole && tileOrRows && layout.warpsM == 4 && layout.warpsN > 1)
    return {"(warp_m % 4)", "(warp_m / 4)"};
  if (layout.warpsN == kernelWarpsN)
    return {};
  if (layout.warpsN == 1)
    return {"warp", "0"};
  return {fmt::format("(warp / {})", layout.warpsN), fmt::format("(warp % {})", layout.warpsN)};
}

Fragment fragmentOf(const Type &type, const WarpCoords &warp) {
  Fragment f;
  const Layout &l = type.layout;
  const auto &shape = type.shape;
  switch (l.kind) {
  case LayoutKind::Acc: {
    int64_t wm = shape[0] / l.warpsM, wn = shape[1] / l.warpsN;
    f.coords = {{"i", int(wm / 16)}, {"j", int(wn / 8)}, {"e", 4}};
    f.row = fmt::format("{} * {} + i * 16 + lane / 4 + e / 2 * 8", warp.row, wm);
    f.col = fmt::format("{} * {} + j * 8 + lane % 4 * 2 + e % 2", warp.col, wn);
    break;
  }
  case LayoutKind::AccRow: {
    int64_t wm = shape[0] / l.warpsM;
    f.coords = {{"i", int(wm / 16)}, {"h", 2}};
    f.row = fmt::format("{} * {} + i * 16 + lane / 4 + h * 8", warp.row, wm);
    f.owner = fmt::format("lane % 4 == 0 && {} == 0", warp.col);
    break;
  }
  case LayoutKind::AccCol: {
    int64_t wn = shape[0] / l.warpsN;
    f.coords = {{"j", int(wn / 8)}, {"e", 2}};
    f.row = fmt::format("{} * {} + j * 8 + lane % 4 * 2 + e", warp.col, wn);
    f.owner = fmt::format("lane < 4 && {} == 0", warp.row);
    break;
  }
  case LayoutKind::Strip:
  case LayoutKind::StripRow:
  case LayoutKind::StripCol: {
    // A row takes `lanes` lanes of `chunk` elements each at a time; a warp
    // takes 32 / lanes consecutive rows at a time.
    int lanes = l.lanes, rowsPerWarp = 32 / lanes, chunk = l.chunk;
    std::string row = rowsPerWarp == 1 ? fmt::format("r * {} + warp", l.warpsM)
                                       : fmt::format("(r * {} + warp) * {} + lane / {}", l.warpsM, rowsPerWarp, lanes);
    std::string laneInRow = lanes == 32 ? "lane" : fmt::format("lane % {}", lanes);
    std::string col = fmt::format("c * {} + {} * {} + e", chunk * lanes, laneInRow, chunk);
    if (l.kind == LayoutKind::Strip) {
      f.coords = {{"r", int(shape[0] / l.warpsM / rowsPerWarp)}, {"c", int(shape[1] / (chunk * lanes))}, {"e", chunk}};
      f.row = row;
      f.col = col;
    } else if (l.kind == LayoutKind::StripRow) {
      f.coords = {{"r", int(shape[0] / l.warpsM / rowsPerWarp)}};
      f.row = row;
      f.owner = lanes == 32 ? "lane == 0" : fmt::format("{} == 0", laneInRow);
    } else {
      f.coords = {{"c", int(shape[0] / (chunk * lanes))}, {"e", chunk}};
      f.row = col;
      f.owner = lanes == 32 ? "warp == 0" : fmt::format("warp == 0 && lane < {}", lanes);
    }
    break;
  }
  case LayoutKind::Vec: {
    // Consecutive lanes hold consecutive elements (coalesced accesses);
    // warp 0 writes back, and no lane a slot past the length.
    int64_t length = shape[0];
    f.coords = {{"e", int((length + 31) / 32)}};
    f.row = "e * 32 + lane";
    f.owner = length % 32 == 0 ? "warp == 0" : fmt::format("warp == 0 && e * 32 + lane < {}", length);
    break;
  }
  default:
    break;
  }
  return f;
}

QuadChunks quadChunksOf(const Type &type, const WarpCoords &warp) {
  QuadChunks q;
  const Layout &l = type.layout;
  if (l.kind != LayoutKind::Acc || type.shape.size() != 2 || dtypeBytes(type.dtype) != 2)
    return q;
  int64_t wm = type.shape[0] / l.warpsM, wn = type.shape[1] / l.warpsN;
  if (wn % 32 != 0)
    return q;
  q.source = fragmentOf(type, warp);
  q.chunks.coords = {{"i", int(wm / 16)}, {"g", int(wn / 32)}, {"h", 2}};
  q.chunks.row = fmt::format("{} * {} + i * 16 + lane / 4 + h * 8", warp.row, wm);
  q.chunks.col = fmt::format("{} * {} + (g * 4 + lane % 4) * 8", warp.col, wn);
  return q;
}

std::string QuadChunks::pairSource(const std::string &k) const {
  return source.flatIndex({"i", fmt::format("g * 4 + {}", k), "h * 2"});
}

int operandACount(const Type &type) {
  int64_t wm = type.shape[0] / type.layout.warpsM;
  return static_cast<int>(wm / 16 * (type.shape[1] / 16) * 4);
}

int registersOf(const Type &type) { return static_cast<int>(threadRegisters(type)); }

int carriedRegisters(const Op &loop) {
  int registers = 0;
  for (auto &result : loop.results)
    registers += registersOf(result->type);
  return registers;
}

std::string swizzledChunk(const std::string &row, const std::string &chunk, int chunksPerRow) {
  if (chunksPerRow >= 8)
    return fmt::format("(({}) ^ (({}) % 8))", chunk, row);
  if (chunksPerRow == 4)
    return fmt::format("(({}) ^ (({}) / 2 % 4))", chunk, row);
  if (chunksPerRow == 2)
    return fmt::format("(({}) ^ (({}) / 4 % 2))", chunk, row);
  return fmt::format("({})", chunk);
}

} // namespace tkc::codegen
