// checkTypeRules (OpRules.h): what makes a type well formed taken alone, a
// layout that suits its memory space, shape and warp count.
#include "ir/OpRuleChecks.h"
#include "ir/OpRules.h"

#include <algorithm>

namespace tkc::ir {

using rules::shapeText;

std::string checkTypeRules(const Type &type, int warps) {
  switch (type.kind) {
  case TypeKind::Scalar:
    if (!type.dims.empty() || !type.shape.empty() || type.layout.kind != LayoutKind::None || type.stages != 0 ||
        type.isOutput)
      return fmt::format("scalar type {} carries tensor fields", type.str());
    return "";
  case TypeKind::Global:
    if (type.dims.empty())
      return fmt::format("global tensor {} has no dims", type.str());
    for (const Dim &dim : type.dims)
      if (dim.isStatic() && dim.size <= 0)
        return fmt::format("global tensor {} has a non-positive dim", type.str());
    if (!type.shape.empty() || type.layout.kind != LayoutKind::None || type.stages != 0)
      return fmt::format("global type {} carries tile fields", type.str());
    return "";
  case TypeKind::Tile:
    break;
  }
  if (type.shape.empty())
    return fmt::format("tile {} has no dims", type.str());
  if (std::any_of(type.shape.begin(), type.shape.end(), [](int64_t extent) { return extent <= 0; }))
    return fmt::format("tile {} has a non-positive extent", type.str());
  if (!type.dims.empty() || type.isOutput)
    return fmt::format("tile type {} carries global-tensor fields", type.str());
  if (type.stages < 0 || (type.stages > 0 && type.space != MemSpace::Shared))
    return fmt::format("only shared buffers have stages: {}", type.str());

  const Layout &layout = type.layout;
  bool warpGrid = layout.kind == LayoutKind::Acc || layout.kind == LayoutKind::OperandA ||
                  layout.kind == LayoutKind::AccRow || layout.kind == LayoutKind::AccCol;
  bool warpList = layout.kind == LayoutKind::Strip || layout.kind == LayoutKind::StripRow ||
                  layout.kind == LayoutKind::StripCol;
  bool lone = layout.kind == LayoutKind::Vec;
  switch (type.space) {
  case MemSpace::Unplaced:
    if (layout.kind != LayoutKind::None)
      return fmt::format("an unplaced tile has no layout: {}", type.str());
    break;
  case MemSpace::Shared:
    if (warpGrid || warpList || lone)
      return fmt::format("a shared-memory tile takes no register layout: {}", type.str());
    break;
  case MemSpace::Register:
    if (!warpGrid && !warpList && !lone)
      return fmt::format("a register tile needs a register layout: {}", type.str());
    break;
  }
  // The text form writes only the warp counts a layout uses; others stay 1.
  if (layout.warpsM < 1 || layout.warpsN < 1 || (!warpGrid && layout.warpsN != 1) ||
      (!warpGrid && !warpList && layout.warpsM != 1))
    return fmt::format("layout of {} has invalid warp counts {}x{}", type.str(), layout.warpsM, layout.warpsN);
  if (layout.lanes != 32 && (!warpList || layout.lanes < 1 || layout.lanes > 32 || (layout.lanes & (layout.lanes - 1))))
    return fmt::format("layout of {} has an invalid lane count {}", type.str(), layout.lanes);
  if (layout.chunk != 8 && (!warpList || (layout.chunk != 4 && layout.chunk != 2)))
    return fmt::format("layout of {} has an invalid chunk length {}", type.str(), layout.chunk);
  // With warp specialization a layout may cover only the consumer warps.
  // The counts come from the text as any int: their product needs 64 bits.
  int64_t layoutWarps = int64_t(layout.warpsM) * layout.warpsN;
  if ((warpGrid || warpList) && layoutWarps > warps)
    return fmt::format("layout of {} spreads over {} warps but the kernel has {}", type.str(), layoutWarps, warps);
  if (layout.kind == LayoutKind::Mbarrier && (type.dtype != DType::I32 || type.shape.size() != 2 || type.shape[1] != 2))
    return fmt::format("#mbarrier holds one barrier per row of an i32[S, 2] tile, not {}", type.str());

  size_t rank = type.shape.size();
  size_t wantRank = layout.kind == LayoutKind::AccRow || layout.kind == LayoutKind::AccCol ||
                            layout.kind == LayoutKind::StripRow ||
                            layout.kind == LayoutKind::StripCol || lone
                        ? 1
                    : layout.kind == LayoutKind::None ? rank
                                                      : 2;
  if (rank != wantRank)
    return fmt::format("layout {} needs a {}-d tile, but the shape is {}", layout.str(), wantRank,
                       shapeText(type.shape));
  // mma.sync m16n8k16: each warp's share of an accumulator is a whole number
  // of 16x8 fragments, and A fragments are 16x16.
  int64_t rowQuantum = 16 * layout.warpsM;
  if (layout.kind == LayoutKind::Acc && (type.shape[0] % rowQuantum || type.shape[1] % (8 * layout.warpsN)))
    return fmt::format("{} needs a shape divisible by [{}, {}], but it is {}", layout.str(), rowQuantum,
                       8 * layout.warpsN, shapeText(type.shape));
  if (layout.kind == LayoutKind::OperandA && (type.shape[0] % rowQuantum || type.shape[1] % 16))
    return fmt::format("{} needs a shape divisible by [{}, 16], but it is {}", layout.str(), rowQuantum,
                       shapeText(type.shape));
  if (layout.kind == LayoutKind::AccRow && type.shape[0] % rowQuantum)
    return fmt::format("{} needs a length divisible by {}, but it is {}", layout.str(), rowQuantum,
                       type.shape[0]);
  if (layout.kind == LayoutKind::AccCol && type.shape[0] % (8 * layout.warpsN))
    return fmt::format("{} needs a length divisible by {}, but it is {}", layout.str(), 8 * layout.warpsN,
                       type.shape[0]);
  // A narrow strip is exactly `lanes` chunks wide; a wide one a whole
  // number of 32 chunks.
  int64_t stripWidth = layout.chunk * layout.lanes;
  if ((layout.kind == LayoutKind::Strip || layout.kind == LayoutKind::StripCol) && layout.lanes != 32 &&
      type.shape.back() != stripWidth)
    return fmt::format("{} needs {} {}, but the shape is {}", layout.str(), stripWidth,
                       layout.kind == LayoutKind::Strip ? "columns" : "elements", shapeText(type.shape));
  if ((layout.kind == LayoutKind::Strip || layout.kind == LayoutKind::StripCol) && layout.lanes == 32 &&
      type.shape.back() % stripWidth)
    return fmt::format("{} needs {} divisible by {}, but the shape is {}", layout.str(),
                       layout.kind == LayoutKind::Strip ? "columns" : "a length", stripWidth, shapeText(type.shape));
  return "";
}

} // namespace tkc::ir
