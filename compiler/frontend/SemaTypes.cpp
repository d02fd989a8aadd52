#include "frontend/SemaTypes.h"

#include <fmt/format.h>

namespace tkc::sema {

const char *elemTypeName(ElemType elem) {
  switch (elem) {
  case ElemType::I1: return "i1";
  case ElemType::I32: return "i32";
  case ElemType::F32: return "f32";
  case ElemType::BF16: return "bf16";
  case ElemType::F16: return "f16";
  case ElemType::F8E4M3: return "f8e4m3";
  case ElemType::F8E5M2: return "f8e5m2";
  }
  return "?";
}

std::optional<ElemType> parseElemType(const std::string &name) {
  // i1 has no spelling in the language: it only comes out of comparisons.
  for (ElemType elem : {ElemType::I32, ElemType::F32, ElemType::BF16, ElemType::F16, ElemType::F8E4M3, ElemType::F8E5M2})
    if (name == elemTypeName(elem))
      return elem;
  return std::nullopt;
}

bool isFloatElem(ElemType elem) { return elem == ElemType::F32 || elem == ElemType::BF16 || elem == ElemType::F16; }
bool isNumericElem(ElemType elem) { return elem != ElemType::I1 && !isF8Elem(elem); }
bool isF8Elem(ElemType elem) { return elem == ElemType::F8E4M3 || elem == ElemType::F8E5M2; }

Type Type::scalar(ElemType elem) {
  Type type;
  type.kind = Kind::Scalar;
  type.elem = elem;
  return type;
}

Type Type::tile(ElemType elem, std::vector<int64_t> shape) {
  Type type;
  type.kind = Kind::Tile;
  type.elem = elem;
  type.shape = std::move(shape);
  return type;
}

bool Type::sameValueType(const Type &other) const {
  return kind == other.kind && elem == other.elem && shape == other.shape;
}

std::string shapeString(const std::vector<int64_t> &shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

std::string operandShapeString(const Type &type) {
  if (type.newAxis < 0 || type.shape.size() != 1)
    return shapeString(type.shape);
  return type.newAxis == 1 ? fmt::format("[{}, new]", type.shape[0]) : fmt::format("[new, {}]", type.shape[0]);
}

std::string typeString(const Type &type) {
  switch (type.kind) {
  case Type::Kind::Scalar: return elemTypeName(type.elem);
  case Type::Kind::Tile:
  case Type::Kind::TileSpec:
  case Type::Kind::Slice: return std::string(elemTypeName(type.elem)) + shapeString(type.shape);
  case Type::Kind::Global: return fmt::format("global {}", elemTypeName(type.elem));
  case Type::Kind::Invalid: break;
  }
  return "<invalid>";
}

std::string describeType(const Type &type) {
  switch (type.kind) {
  case Type::Kind::Scalar:
    return type.elem == ElemType::I1 ? "a scalar condition" : fmt::format("a scalar of type {}", typeString(type));
  case Type::Kind::Tile:
    return type.elem == ElemType::I1 ? fmt::format("a mask of shape {}", shapeString(type.shape))
                                     : fmt::format("a tile of type {}", typeString(type));
  case Type::Kind::Global: return "a global tensor";
  case Type::Kind::TileSpec: return "a tile type";
  case Type::Kind::Slice: return "a slice";
  case Type::Kind::Invalid: break;
  }
  return "an invalid value";
}

std::optional<ElemType> commonElemType(const Type &a, const Type &b) {
  if (a.elem == b.elem)
    return a.elem;
  if (!isNumericElem(a.elem) || !isNumericElem(b.elem))
    return std::nullopt;
  auto isI32F32 = [](ElemType x, ElemType y) {
    return (x == ElemType::I32 && y == ElemType::F32) || (x == ElemType::F32 && y == ElemType::I32);
  };
  if (isI32F32(a.elem, b.elem))
    return ElemType::F32;
  // A scalar adapts to a float tile.
  if (a.isScalar() && b.isTile() && isFloatElem(b.elem))
    return b.elem;
  if (b.isScalar() && a.isTile() && isFloatElem(a.elem))
    return a.elem;
  if (a.isScalar() && b.isScalar()) {
    if (a.elem == ElemType::I32)
      return b.elem;
    if (b.elem == ElemType::I32)
      return a.elem;
    if (a.elem == ElemType::F32 || b.elem == ElemType::F32)
      return ElemType::F32;
  }
  return std::nullopt;
}

} // namespace tkc::sema
