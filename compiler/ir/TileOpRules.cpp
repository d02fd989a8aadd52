// Rules of the ops on whole tiles that are neither elementwise nor products:
// reduce (including a column reduction through shared partial results),
// broadcast, convert between spaces or layouts, and mask.
#include "ir/OpRuleChecks.h"

namespace tkc::ir::rules {

std::string checkReduce(const Op &op) {
  if (auto error = checkCounts(op, 1, 1); !error.empty())
    return error;
  const Type &x = operandType(op, 0), &result = resultType(op);
  if (!x.isTile() || x.shape.size() != 2)
    return fmt::format("operand must be a 2-d tile, but is {}", x.str());
  if (auto error = checkNotF8(op); !error.empty())
    return error;
  if (auto error = checkIntAttr(op, "axis", Presence::Required, 0, 1); !error.empty())
    return error;
  std::string kind = op.strAttr("kind");
  if (kind != "sum" && kind != "max" && kind != "min")
    return "requires attribute `kind` = \"sum\", \"max\" or \"min\"";
  int64_t kept = x.shape[op.intAttr("axis") == 1 ? 0 : 1];
  // A column reduction over several warp rows goes through shared memory:
  // each warp row's partial results, then their reduction.
  bool partials = result.isShared(), ofPartials = x.isShared();
  if ((partials || ofPartials) && op.intAttr("axis") != 0)
    return "only a column reduction (axis 0) goes through shared partial results";
  if (partials) {
    bool tiled = x.isRegister() && (x.layout.kind == LayoutKind::Acc || x.layout.kind == LayoutKind::Strip);
    if (!tiled)
      return fmt::format("operand of a reduction into shared partial results must be an #acc or #strip register "
                         "tile, but is {}",
                         x.str());
    std::vector<int64_t> shape{x.layout.warpsM, kept};
    if (result.shape != shape || result.dtype != DType::F32 || result.layout.kind != LayoutKind::None ||
        result.stages != 0)
      return fmt::format("shared partial results must be smem<f32{}> (one row per warp row), but are {}",
                         shapeText(shape), result.str());
    return "";
  }
  if (ofPartials) {
    if (x.dtype != DType::F32 || x.layout.kind != LayoutKind::None || x.stages != 0)
      return fmt::format("shared partial results must be an f32 tile without a layout, but are {}", x.str());
    if (!result.isRegister() || result.shape != std::vector<int64_t>{kept} || !isFloat(result.dtype))
      return fmt::format("result must be a register tile of {} float elements, but is {}", kept, result.str());
    return "";
  }
  if (!result.isTile() || result.shape != std::vector<int64_t>{kept} || result.dtype != x.dtype)
    return fmt::format("result must be a tile of {} elements of type {}, but is {}", kept, dtypeName(x.dtype),
                       result.str());
  return "";
}

std::string checkBroadcast(const Op &op) {
  if (auto error = checkCounts(op, 1, 1); !error.empty())
    return error;
  const Type &x = operandType(op, 0), &result = resultType(op);
  if (!x.isTile() || x.shape.size() != 1)
    return fmt::format("operand must be a 1-d tile, but is {}", x.str());
  if (auto error = checkIntAttr(op, "axis", Presence::Required, 0, 1); !error.empty())
    return error;
  if (!result.isTile() || result.shape.size() != 2 || result.dtype != x.dtype)
    return fmt::format("result must be a 2-d tile of type {}, but is {}", dtypeName(x.dtype), result.str());
  size_t kept = op.intAttr("axis") == 1 ? 0 : 1;
  if (result.shape[kept] != x.shape[0])
    return fmt::format("result dim {} is {} but the operand has {} elements", kept, result.shape[kept], x.shape[0]);
  return "";
}

std::string checkConvert(const Op &op) {
  if (auto error = checkCounts(op, 1, 1); !error.empty())
    return error;
  const Type &x = operandType(op, 0), &result = resultType(op);
  if (!x.isTile() || !result.isTile())
    return fmt::format("converts tiles, not {} to {}", x.str(), result.str());
  if (x.shape != result.shape || x.dtype != result.dtype)
    return fmt::format("result {} must keep the operand's element type and shape ({})", result.str(), x.str());
  return "";
}

std::string checkMask(const Op &op) {
  if (auto error = checkCounts(op, 2, 1); !error.empty())
    return error;
  const Type &x = operandType(op, 0);
  if (!x.isTile())
    return fmt::format("operand #0 must be a tile, but is {}", x.str());
  if (!isScalarOf(operandType(op, 1), DType::I32))
    return fmt::format("bound must be i32, but is {}", operandType(op, 1).str());
  if (auto error = checkIntAttr(op, "axis", Presence::Required, 0, int64_t(x.shape.size()) - 1); !error.empty())
    return error;
  // Any number: a float fill such as -inf stands for the dtype's extreme.
  auto fill = op.attrs.find("fill");
  if (fill == op.attrs.end())
    return "requires attribute `fill`";
  if (!std::holds_alternative<double>(fill->second) && !std::holds_alternative<int64_t>(fill->second))
    return "attribute `fill` must be a number";
  if (resultType(op) != x)
    return fmt::format("result must be {} like the operand, but is {}", x.str(), resultType(op).str());
  return "";
}

} // namespace tkc::ir::rules
