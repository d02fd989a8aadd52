#include "ir/Types.h"

#include <fmt/format.h>

namespace tkc::ir {

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::I1: return "i1";
  case DType::I32: return "i32";
  case DType::F32: return "f32";
  case DType::BF16: return "bf16";
  case DType::F16: return "f16";
  case DType::F8E4M3: return "f8e4m3";
  case DType::F8E5M2: return "f8e5m2";
  }
  return "?";
}

std::optional<DType> parseDType(std::string_view name) {
  for (DType d : {DType::I1, DType::I32, DType::F32, DType::BF16, DType::F16, DType::F8E4M3, DType::F8E5M2})
    if (name == dtypeName(d))
      return d;
  return std::nullopt;
}

int dtypeBytes(DType dtype) {
  switch (dtype) {
  case DType::I1:
  case DType::F8E4M3:
  case DType::F8E5M2: return 1;
  case DType::BF16:
  case DType::F16: return 2;
  default: return 4;
  }
}

bool isFloat(DType dtype) { return dtype == DType::F32 || dtype == DType::BF16 || dtype == DType::F16 || isF8(dtype); }
bool isF8(DType dtype) { return dtype == DType::F8E4M3 || dtype == DType::F8E5M2; }

std::string Layout::str() const {
  switch (kind) {
  case LayoutKind::None: return "";
  case LayoutKind::Acc: return fmt::format("#acc<{}x{}>", warpsM, warpsN);
  case LayoutKind::OperandA: return fmt::format("#opa<{}x{}>", warpsM, warpsN);
  case LayoutKind::AccRow: return fmt::format("#accrow<{}x{}>", warpsM, warpsN);
  case LayoutKind::AccCol: return fmt::format("#acccol<{}x{}>", warpsM, warpsN);
  case LayoutKind::Strip:
  case LayoutKind::StripRow:
  case LayoutKind::StripCol: {
    const char *name = kind == LayoutKind::Strip ? "strip" : kind == LayoutKind::StripRow ? "striprow" : "stripcol";
    if (chunk != 8)
      return fmt::format("#{}<{}, {}, {}>", name, warpsM, lanes, chunk);
    if (lanes == 32)
      return fmt::format("#{}<{}>", name, warpsM);
    return fmt::format("#{}<{}, {}>", name, warpsM, lanes);
  }
  case LayoutKind::Vec: return "#vec";
  case LayoutKind::Swizzle: return "#swizzle";
  case LayoutKind::Swizzle128: return "#swizzle128";
  case LayoutKind::Mbarrier: return "#mbarrier";
  }
  return "";
}

Type Type::scalar(DType dtype) {
  Type t;
  t.kind = TypeKind::Scalar;
  t.dtype = dtype;
  return t;
}

Type Type::global(DType dtype, std::vector<Dim> dims, bool isOutput) {
  Type t;
  t.kind = TypeKind::Global;
  t.dtype = dtype;
  t.dims = std::move(dims);
  t.isOutput = isOutput;
  return t;
}

Type Type::tile(DType dtype, std::vector<int64_t> shape, MemSpace space, Layout layout) {
  Type t;
  t.kind = TypeKind::Tile;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.space = space;
  t.layout = layout;
  return t;
}

int64_t Type::numElements() const {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}

Type Type::withDType(DType d) const {
  Type t = *this;
  t.dtype = d;
  return t;
}

Type Type::withLayout(MemSpace s, Layout l) const {
  Type t = *this;
  t.space = s;
  t.layout = l;
  return t;
}

std::string Type::str() const {
  switch (kind) {
  case TypeKind::Scalar: return dtypeName(dtype);
  case TypeKind::Global: {
    std::string dimsText;
    for (size_t i = 0; i < dims.size(); ++i) {
      dimsText += (i ? ", " : "") + (dims[i].isStatic() ? std::to_string(dims[i].size) : dims[i].symbol);
      if (!dims[i].derived.empty())
        dimsText += " = \"" + dims[i].derived + "\"";
    }
    return fmt::format("global<{}{}[{}]>", isOutput ? "out " : "", dtypeName(dtype), dimsText);
  }
  case TypeKind::Tile: {
    std::string shapeText;
    for (size_t i = 0; i < shape.size(); ++i)
      shapeText += (i ? ", " : "") + std::to_string(shape[i]);
    const char *spaceName = space == MemSpace::Register ? "reg" : space == MemSpace::Shared ? "smem" : "tile";
    std::string text = fmt::format("{}<{}[{}]", spaceName, dtypeName(dtype), shapeText);
    if (layout.kind != LayoutKind::None)
      text += ", " + layout.str();
    if (stages > 0)
      text += fmt::format(", stages = {}", stages);
    return text + ">";
  }
  }
  return "?";
}

} // namespace tkc::ir
