#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

/// The types the semantic checker gives to expressions. Lowering reads them
/// to pick IR types, so the promotion rule lives here, in one place.
namespace tkc::sema {

/// I1 is the element type of comparison results (conditions and masks).
enum class ElemType { I1, I32, F32, BF16, F16, F8E4M3, F8E5M2 };

const char *elemTypeName(ElemType elem);
std::optional<ElemType> parseElemType(const std::string &name);
bool isFloatElem(ElemType elem);
bool isNumericElem(ElemType elem);
/// f8e4m3 and f8e5m2: storage types only. Their tiles are loaded, converted
/// (to f32, bf16 or f16) and multiplied by `mma`; no arithmetic takes them.
bool isF8Elem(ElemType elem);

struct Type {
  enum class Kind {
    Invalid,  ///< an error was already reported; stay silent about it
    Scalar,   ///< one value per block
    Tile,     ///< a block-wide 1-d or 2-d tile with a static shape
    Global,   ///< a global tensor parameter
    TileSpec, ///< `f32[64, D]`: only the first argument of zeros and fill
    Slice,    ///< `X[i +: 64, :]`: only the argument of load and store
  };
  Kind kind = Kind::Invalid;
  ElemType elem = ElemType::I32;
  std::vector<int64_t> shape; ///< Tile and TileSpec; Slice: the tile it reads

  /// `v[:, new]` sets 1 and `v[new, :]` sets 0: the axis along which the
  /// partner operand stretches this vector. -1 when not marked.
  int newAxis = -1;
  /// `b^T`: only meaningful as the second operand of mma.
  bool transposed = false;

  static Type invalid() { return Type{}; }
  static Type scalar(ElemType elem);
  static Type tile(ElemType elem, std::vector<int64_t> shape);

  bool isInvalid() const { return kind == Kind::Invalid; }
  bool isScalar() const { return kind == Kind::Scalar; }
  bool isTile() const { return kind == Kind::Tile; }
  bool isMarked() const { return newAxis >= 0 || transposed; }
  bool sameValueType(const Type &other) const;
};

/// `[128, 64]`
std::string shapeString(const std::vector<int64_t> &shape);
/// The shape of a possibly broadcast-marked tile: `[128, new]`.
std::string operandShapeString(const Type &type);
/// `f32[128, 64]` for tiles, `f32` for scalars.
std::string typeString(const Type &type);
/// For messages: "a scalar of type f32", "a tile of type bf16[64, 64]".
std::string describeType(const Type &type);

/// The element type both operands of an arithmetic operation or comparison
/// are converted to, or nullopt if they do not mix.
///  - equal types stay as they are;
///  - a scalar next to a float tile takes the tile's type (`x * 0.5` on a
///    bf16 tile stays bf16);
///  - i32 mixes with f32 by promotion to f32, for scalars and tiles alike;
///  - a scalar i32 next to a bf16 or f16 scalar takes the float type.
std::optional<ElemType> commonElemType(const Type &a, const Type &b);

/// Tiles may hold at most this many elements.
constexpr int64_t kMaxTileElements = 65536;

} // namespace tkc::sema
