// layout: decides where every tile lives and how its elements are spread
// over the warps and lanes of the block.
//
// Tiles that feed `mma` only as operands are staged in shared memory. Every
// other tile joins a class of tiles that must share one register layout
// (operands and results of elementwise ops, loop-carried values). A class
// that holds an mma accumulator takes the mma accumulator layout; others
// take the "strip" layout (rows over warps, 16-byte vectors of a row over
// lanes where its width allows, shorter ones else). Vectors take the row or
// column layout of the tiles they are reduced from or broadcast to (a column
// reduction across warp rows goes through shared partial results); one
// reduced from or broadcast to tiles of different layouts takes the layout
// of the first and is converted through shared memory at the others. A
// vector tied to no 2-d tile is spread over the lanes of each warp. Where a value
// changes role (an accumulator used as an mma A operand, a shared tile read
// many times inside a loop, unless it is read transposed) a `convert` is
// inserted. B operands and operands read transposed (`trans_a`) are read
// from shared memory, where ldmatrix transposes them; a register tile in
// such a place gets a `convert` into shared memory right after it is
// computed.
#include "ir/Registers.h"
#include "passes/Pass.h"

#include <fmt/format.h>

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace tkc {
namespace {

using namespace ir;

/// Union-find over values.
class ValueClasses {
public:
  Value *find(Value *v) {
    auto it = parent_.find(v);
    if (it == parent_.end()) {
      parent_[v] = v;
      return v;
    }
    if (it->second == v)
      return v;
    return it->second = find(it->second);
  }
  void unite(Value *a, Value *b) { parent_[find(a)] = find(b); }

private:
  std::map<Value *, Value *> parent_;
};

/// Per-thread registers that the mma A operands kept in registers across a
/// loop may take, all of them together, and that they may take together with
/// the tiles the loop carries (its accumulators) and the largest product it
/// computes afresh in every iteration.
constexpr int64_t kMaxHoistedOperandRegisters = 64;
constexpr int64_t kMaxHoistedAndCarriedRegisters = 160;

/// Per-thread 32-bit registers of the register tiles a loop carries.
int64_t carriedRegisters(const Op &loop, int warps) {
  int64_t words = 0;
  for (auto &result : loop.results)
    if (result->type.isTile())
      words += result->type.numElements() * dtypeBytes(result->type.dtype) / 4;
  return words / (warps * Target::kWarpSize);
}

/// Registers per thread of the largest product computed afresh in each
/// iteration of `loop` (attention's scores): live beside the carried ones.
int64_t largestFreshProduct(const Op &loop, int warps) {
  int64_t words = 0;
  for (auto &op : loop.body->ops)
    if (op->kind == OpKind::Mma && op->operands[2]->definingOp && op->operands[2]->definingOp->kind == OpKind::Fill)
      words = std::max(words, op->result()->type.numElements() * dtypeBytes(op->result()->type.dtype) / 4);
  return words / (warps * Target::kWarpSize);
}

bool isElementwise(OpKind kind) {
  switch (kind) {
  case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Div: case OpKind::Rem:
  case OpKind::Max: case OpKind::Min: case OpKind::Lt: case OpKind::Le: case OpKind::Gt:
  case OpKind::Ge: case OpKind::Eq: case OpKind::Ne: case OpKind::And: case OpKind::Or:
  case OpKind::Select: case OpKind::Neg: case OpKind::Exp: case OpKind::Exp2: case OpKind::Log:
  case OpKind::Log2: case OpKind::Sqrt: case OpKind::Rsqrt: case OpKind::Abs: case OpKind::Tanh:
  case OpKind::Erf: case OpKind::Sigmoid: case OpKind::Silu: case OpKind::Cast: case OpKind::Mask:
    return true;
  default:
    return false;
  }
}

/// Depth of `for` nesting around an op.
int loopDepth(const Op &op) {
  int depth = 0;
  for (Block *b = op.parent; b && b->parentOp; b = b->parentOp->parent)
    ++depth;
  return depth;
}

class LayoutAssigner {
public:
  LayoutAssigner(Kernel &kernel, DiagnosticEngine &diags)
      : kernel_(kernel), diags_(diags) {}

  bool run() {
    collectUses(kernel_.body);
    markSharedOperands();
    buildClasses(kernel_.body);
    if (!chooseWarpGrid())
      return false;
    if (!assignClassLayouts())
      return false;
    applyTypes(kernel_.body);
    insertVectorConversions();
    splitColumnReductions();
    if (!stageSharedOperands())
      return false;
    return insertOperandConversions(kernel_.body);
  }

private:
  void collectUses(Block &block) {
    walk(block, [&](Op &op) {
      for (unsigned i = 0; i < op.operands.size(); ++i)
        uses_[op.operands[i]].push_back({&op, i});
    });
  }

  /// A load whose every use is an mma operand goes to shared memory.
  void markSharedOperands() {
    walk(kernel_.body, [&](Op &op) {
      if (op.kind != OpKind::Load || !op.result()->type.isTile())
        return;
      Value *v = op.result();
      auto &uses = uses_[v];
      if (uses.empty())
        return;
      for (auto &[user, index] : uses)
        if (user->kind != OpKind::Mma || index == 2)
          return;
      shared_.insert(v);
    });
  }

  void buildClasses(Block &block) {
    walk(block, [&](Op &op) {
      auto isRegTile = [&](Value *v) { return v->type.isTile() && !shared_.count(v); };
      if (isElementwise(op.kind)) {
        for (Value *operand : op.operands)
          if (isRegTile(operand) && operand->type.shape == op.result()->type.shape)
            classes_.unite(operand, op.result());
        classes_.find(op.result());
      } else if (op.kind == OpKind::Mma) {
        classes_.unite(op.operands[2], op.result());
        accumulators_.insert(op.result());
      } else if (op.kind == OpKind::For) {
        unsigned iters = op.results.size();
        Op &yield = *op.body->ops.back();
        for (unsigned i = 0; i < iters; ++i) {
          Value *result = op.result(i);
          if (!result->type.isTile())
            continue;
          classes_.unite(op.operands[3 + i], result);
          classes_.unite(op.body->args[1 + i].get(), result);
          classes_.unite(yield.operands[i], result);
        }
      } else if (op.kind == OpKind::Reduce) {
        vectorLinks_.push_back({op.result(), op.operands[0], static_cast<int>(op.intAttr("axis")), true});
      } else if (op.kind == OpKind::Gather) {
        // Each lane reads the elements whose indices it holds.
        classes_.unite(op.operands[1 + op.intAttr("axis")], op.result());
      } else if (op.kind == OpKind::Broadcast) {
        vectorLinks_.push_back({op.operands[0], op.result(), static_cast<int>(op.intAttr("axis")) == 1 ? 1 : 0, false});
        classes_.find(op.result());
      } else {
        for (auto &result : op.results)
          if (isRegTile(result.get()))
            classes_.find(result.get());
      }
    });
  }

  /// One warp grid for the accumulators of the kernel. Row reductions and
  /// broadcasts stay inside a warp only if warps split the rows alone, and
  /// so do products with an A operand computed in registers.
  bool chooseWarpGrid() {
    bool rowsOnly = !vectorLinks_.empty();
    int64_t maxM = 0, maxN = 0;
    walk(kernel_.body, [&](Op &op) {
      if (op.kind == OpKind::Mma) {
        maxM = std::max(maxM, op.result()->type.shape[0]);
        maxN = std::max(maxN, op.result()->type.shape[1]);
        if (!shared_.count(op.operands[0]))
          rowsOnly = true;
      }
    });
    warpsM_ = kernel_.warps;
    warpsN_ = 1;
    if (!rowsOnly && maxM != 0)
      std::tie(warpsM_, warpsN_) = squarestGridOf(maxM, maxN, 16).value_or(std::pair<int, int>{warpsM_, warpsN_});
    return true;
  }

  /// The classes whose warps must hold whole rows: those reduced along a
  /// vector (the lanes of a row combine through shuffles, not across
  /// warps), those read as A operands in registers, and the accumulators of
  /// products whose A operand is in registers (a transposed one is read from
  /// a shared copy, in any grid). A vector only broadcast along a tile's
  /// rows is read where each warp needs it, in any grid; and an A operand
  /// with fewer rows than the kernel's warps split is read from a shared
  /// copy instead (stageSharedOperands), so that its class may take a grid
  /// of its own.
  std::set<Value *> rowsOnlyClasses() {
    std::set<Value *> rowsOnly;
    for (auto &link : vectorLinks_)
      if (link.reduced)
        rowsOnly.insert(classes_.find(link.tile));
    walk(kernel_.body, [&](Op &op) {
      if (op.kind != OpKind::Mma || shared_.count(op.operands[0]) || op.intAttr("trans_a") ||
          !fillsKernelRows(op.operands[0]->type))
        return;
      rowsOnly.insert(classes_.find(op.operands[0]));
      rowsOnly.insert(classes_.find(op.result()));
    });
    return rowsOnly;
  }

  /// True if the kernel's warp grid splits the rows of a tile of `type`.
  bool fillsKernelRows(const Type &type) const { return type.shape[0] % (16 * warpsM_) == 0; }

  /// The most square warp tile of an M x N accumulator whose width is a
  /// multiple of 16 (so B fragments load two n-tiles per ldmatrix.x4);
  /// warps alone split the rows if no grid fits, and where they cannot
  /// either (a 16 x 32 tile over four warps), the most square grid of warp
  /// tiles 8 columns wide, whose B fragments load one n-tile at a time.
  std::pair<int, int> squarestGrid(int64_t m, int64_t n) {
    int warps = kernel_.warps;
    if (auto grid = squarestGridOf(m, n, 16))
      return *grid;
    if (m % (16 * warps) == 0)
      return {warps, 1};
    return squarestGridOf(m, n, 8).value_or(std::pair<int, int>{warps, 1});
  }

  std::optional<std::pair<int, int>> squarestGridOf(int64_t m, int64_t n, int64_t columnUnit) const {
    int warps = kernel_.warps;
    std::optional<std::pair<int, int>> grid;
    double best = 1e30;
    for (int gm = 1; gm <= warps; ++gm) {
      int gn = warps / gm;
      if (warps % gm || m % (16 * gm) || n % (columnUnit * gn))
        continue;
      double ratio = double(m / gm) / double(n / gn);
      double score = ratio > 1 ? ratio : 1 / ratio;
      if (score < best) {
        best = score;
        grid = std::pair<int, int>{gm, gn};
      }
    }
    return grid;
  }

  Layout vectorLayoutFor(Layout tileLayout, int axis) {
    if (tileLayout.kind == LayoutKind::Acc)
      return {axis == 1 ? LayoutKind::AccRow : LayoutKind::AccCol, tileLayout.warpsM, tileLayout.warpsN};
    // A row vector is spread like the rows alone, whatever each lane's
    // chunk of a row.
    if (tileLayout.kind == LayoutKind::Strip && axis == 1)
      return {LayoutKind::StripRow, tileLayout.warpsM, 1, tileLayout.lanes};
    if (tileLayout.kind == LayoutKind::Strip)
      return {LayoutKind::StripCol, tileLayout.warpsM, 1, tileLayout.lanes, tileLayout.chunk};
    return {};
  }

  /// The strip of a tile with `cols` columns. Lanes read 16-byte vectors
  /// (8 bf16 elements) where rows split evenly into them: a multiple of 256
  /// columns over the 32 lanes of a warp, a power-of-two width under 256
  /// over `cols / 8` lanes. Other widths take the 32 lanes with shorter
  /// chunks, the longest that splits a row evenly: 4 elements (8 bytes of
  /// bf16) for a multiple of 128 columns (384, 640), 2 for a multiple of 64
  /// (192, 320).
  Layout stripFor(int64_t cols) const {
    Layout strip{LayoutKind::Strip, kernel_.warps, 1};
    if (cols % 256 == 0)
      return strip;
    if (cols < 256 && cols % 8 == 0 && ((cols / 8) & (cols / 8 - 1)) == 0) {
      strip.lanes = int(cols / 8);
      return strip;
    }
    for (int chunk : {4, 2})
      if (cols % (32 * chunk) == 0) {
        strip.chunk = chunk;
        return strip;
      }
    return strip; // refused by checkShape
  }

  bool assignClassLayouts() {
    std::set<Value *> accClasses;
    for (Value *acc : accumulators_)
      accClasses.insert(classes_.find(acc));
    // Two-dimensional classes first. Classes are visited in program order
    // (the first member's position), so that the first error reported does
    // not depend on where values were allocated.
    std::map<Value *, std::vector<Value *>> members;
    std::vector<Value *> order;
    auto addMember = [&](Value *v) {
      std::vector<Value *> &values = members[classes_.find(v)];
      if (values.empty())
        order.push_back(classes_.find(v));
      values.push_back(v);
    };
    walk(kernel_.body, [&](Op &op) {
      for (auto &r : op.results)
        if (r->type.isTile() && !shared_.count(r.get()))
          addMember(r.get());
      if (op.body)
        for (auto &a : op.body->args)
          if (a->type.isTile())
            addMember(a.get());
    });
    std::set<Value *> rowsOnly = rowsOnlyClasses();
    for (Value *root : order) {
      const std::vector<Value *> &values = members[root];
      if (values.front()->type.shape.size() != 2)
        continue;
      Layout layout = accClasses.count(root) ? Layout{LayoutKind::Acc, warpsM_, warpsN_}
                                             : stripFor(values.front()->type.shape[1]);
      // An accumulator with fewer rows than the kernel's grid splits (dQ's
      // query tile in a block of key rows) takes its own grid if nothing
      // ties its warps to whole rows.
      const auto &shape = values.front()->type.shape;
      if (layout.kind == LayoutKind::Acc && !fillsKernelRows(values.front()->type) && !rowsOnly.count(root))
        std::tie(layout.warpsM, layout.warpsN) = squarestGrid(shape[0], shape[1]);
      classLayout_[root] = layout;
    }
    // Vectors follow the tiles they are linked to, the first where these
    // disagree (the others get a conversion); a vector linked to none (say,
    // loaded and stored back) is spread like a strip column where its length
    // allows, else over the lanes of each warp.
    for (Value *root : order) {
      const std::vector<Value *> &values = members[root];
      if (values.front()->type.shape.size() != 1)
        continue;
      Layout chosen;
      std::vector<std::pair<const VectorLink *, Layout>> linked;
      for (auto &link : vectorLinks_) {
        if (classes_.find(link.vector) != root)
          continue;
        Layout tile = classLayout_[classes_.find(link.tile)];
        Layout candidate = vectorLayoutFor(tile, link.axis);
        if (candidate.kind == LayoutKind::None)
          return fail(values.front(), "its tile has no register layout");
        if (chosen.kind == LayoutKind::None)
          chosen = candidate;
        linked.push_back({&link, candidate});
      }
      if (chosen.kind == LayoutKind::None)
        chosen = values.front()->type.shape[0] % 256 == 0 ? Layout{LayoutKind::StripCol, kernel_.warps, 1}
                                                           : Layout{LayoutKind::Vec, 1, 1};
      classLayout_[root] = chosen;
      for (auto &[link, candidate] : linked) {
        if (candidate == chosen)
          continue;
        // Reported at the reduction or broadcast that needs the vector in
        // the tile's layout (the vector may be carried by a loop, which
        // would point at the loop or the kernel).
        const Op *user = link->reduced ? link->vector->definingOp : link->tile->definingOp;
        if (!checkShape(link->vector, candidate, user))
          return false;
        converted_.push_back({*link, candidate});
      }
    }
    for (Value *root : order)
      if (!checkShape(members[root].front(), classLayout_[root]))
        return false;
    return true;
  }

  /// A vector whose class took another layout than the tile it is reduced
  /// from (broadcast to) needs: the reduction gives the tile's own vector
  /// layout, converted to the class's right after it; a broadcast reads a
  /// conversion into the tile's. Threads in one layout write the vector to
  /// shared memory and read it back in the other (the barriers pass puts a
  /// barrier between).
  void insertVectorConversions() {
    for (auto &[link, own] : converted_) {
      Value *vector = link.vector;
      if (link.reduced) {
        Op *reduce = vector->definingOp;
        Type classType = vector->type;
        vector->type = vector->type.withLayout(MemSpace::Register, own);
        Builder builder(*reduce->parent, std::next(findOp(*reduce->parent, reduce)));
        builder.setLoc(reduce->loc);
        Value *converted = throughShared(builder, vector, classType);
        replaceAllUsesIn(kernel_.body, vector, converted);
        converted->definingOp->operands[0]->definingOp->operands[0] = vector;
      } else {
        Op *broadcast = link.tile->definingOp;
        Builder builder(*broadcast->parent, findOp(*broadcast->parent, broadcast));
        builder.setLoc(broadcast->loc);
        broadcast->operands[0] = throughShared(builder, vector, vector->type.withLayout(MemSpace::Register, own));
      }
    }
  }

  static Value *throughShared(Builder &builder, Value *vector, const Type &into) {
    Value *slot = builder.value(OpKind::Convert, {vector}, vector->type.withLayout(MemSpace::Shared, {}));
    Value *converted = builder.value(OpKind::Convert, {slot}, into);
    slot->nameHint = vector->nameHint.empty() ? "" : vector->nameHint + "_shared";
    converted->nameHint = vector->nameHint;
    return converted;
  }

  /// Whether `v` fits `layout`; reports at `at` (else where `v` is defined)
  /// if not.
  bool checkShape(Value *v, Layout layout, const Op *at = nullptr) {
    auto fail = [&](Value *v, const std::string &why) { return this->fail(v, why, at); };
    const auto &shape = v->type.shape;
    switch (layout.kind) {
    case LayoutKind::Acc:
      if (shape[0] % (16 * layout.warpsM) || shape[1] % (8 * layout.warpsN))
        return fail(v, fmt::format("mma accumulator tiles need rows divisible by {} and columns by {}",
                                   16 * layout.warpsM, 8 * layout.warpsN));
      return true;
    case LayoutKind::AccRow:
      if (shape[0] % (16 * layout.warpsM))
        return fail(v, fmt::format("row vectors of accumulators need a length divisible by {}", 16 * layout.warpsM));
      return true;
    case LayoutKind::AccCol:
      if (shape[0] % (8 * layout.warpsN))
        return fail(v, fmt::format("column vectors of accumulators need a length divisible by {}", 8 * layout.warpsN));
      return true;
    case LayoutKind::Strip: {
      int rows = layout.warpsM * (32 / layout.lanes);
      if (shape[0] % rows || (layout.lanes == 32 && shape[1] % (32 * layout.chunk)))
        return fail(v, fmt::format("tiles outside mma need rows divisible by {} and columns by 64, or 8, 16 or 32 "
                                   "columns",
                                   rows));
      return true;
    }
    case LayoutKind::StripRow:
      if (shape[0] % (layout.warpsM * (32 / layout.lanes)))
        return fail(v, fmt::format("row vectors need a length divisible by {}", layout.warpsM * (32 / layout.lanes)));
      return true;
    case LayoutKind::StripCol:
      if (layout.lanes == 32 ? shape[0] % (32 * layout.chunk) != 0 : shape[0] != layout.chunk * layout.lanes)
        return fail(v, layout.lanes == 32 ? fmt::format("column vectors of tiles outside mma need a length "
                                                        "divisible by {}",
                                                        32 * layout.chunk)
                                          : fmt::format("column vectors of tiles outside mma need a length of {}",
                                                        layout.chunk * layout.lanes));
      return true;
    default:
      return true;
    }
  }

  /// The value of the source that `v` stands for: for a value a loop
  /// carries (its result, its body argument, or the tail pass's select of
  /// it where an iteration yields padding), the value that starts it. Those
  /// have no place in the source of their own (the loop's, or the kernel's).
  static const Value *sourceValueOf(const Value *v) {
    for (;;) {
      const Op *def = v->definingOp;
      if (def && def->kind == OpKind::Select && def->hasAttr("carried")) {
        v = def->operands[1];
        continue;
      }
      const Value *origin = originOf(v);
      if (origin == v)
        return v;
      v = origin;
    }
  }

  /// Reports at `at`, or else where `v` is defined: for a value a loop
  /// carries, where its first value is, named as the source names it.
  bool fail(Value *v, const std::string &why, const Op *at = nullptr) {
    const Value *origin = sourceValueOf(v);
    if (!at)
      at = origin->definingOp;
    diags_.report(at ? at->loc : kernel_.loc, DiagId::NoLayoutForValue, describe(*origin), why);
    return false;
  }

  /// Reports at the op that needs the value (where the fix belongs).
  bool failAt(const Op &user, Value *v, const std::string &why) {
    diags_.report(user.loc, DiagId::NoLayoutForValue, describe(*v), why);
    return false;
  }

  /// A value as the source names it: its variable, the reduction that
  /// computes it, or else the expression the caret points at (lowering's
  /// own values, such as an `mma`'s zero accumulator, have no source name).
  static std::string describe(const Value &v) {
    if (!v.nameHint.empty())
      return fmt::format("`{}`", v.nameHint);
    if (v.definingOp && v.definingOp->kind == OpKind::Reduce)
      return fmt::format("the result of `{}{}`", v.definingOp->intAttr("axis") == 1 ? "row" : "col",
                         v.definingOp->strAttr("kind"));
    return "this expression";
  }

  void applyTypes(Block &block) {
    auto place = [&](Value *v) {
      if (!v->type.isTile())
        return;
      if (shared_.count(v))
        v->type = v->type.withLayout(MemSpace::Shared, {LayoutKind::Swizzle, 1, 1});
      else
        v->type = v->type.withLayout(MemSpace::Register, classLayout_[classes_.find(v)]);
    };
    walk(block, [&](Op &op) {
      for (auto &r : op.results)
        place(r.get());
      if (op.body)
        for (auto &a : op.body->args)
          place(a.get());
    });
  }

  /// A column reduction over a tile whose rows several warp rows hold
  /// combines the warps through shared memory: each warp row reduces its
  /// own rows into one row of f32 partial results (lanes that share columns
  /// combine through shuffles), and every thread then reduces the partials
  /// of its columns, so the vector is whole in every warp. The barriers
  /// pass orders the two.
  void splitColumnReductions() {
    std::vector<Op *> reductions;
    walk(kernel_.body, [&](Op &op) {
      const Type &x = op.kind == OpKind::Reduce ? op.operands[0]->type : Type{};
      bool tiled = x.layout.kind == LayoutKind::Acc || x.layout.kind == LayoutKind::Strip;
      if (op.kind == OpKind::Reduce && op.intAttr("axis") == 0 && x.isRegister() && tiled && x.layout.warpsM > 1)
        reductions.push_back(&op);
    });
    for (Op *reduce : reductions) {
      Value *x = reduce->operands[0];
      Builder builder(*reduce->parent, findOp(*reduce->parent, reduce));
      builder.setLoc(reduce->loc);
      Type partials = Type::tile(DType::F32, {x->type.layout.warpsM, x->type.shape[1]}, MemSpace::Shared);
      Value *rows = builder.value(OpKind::Reduce, {x}, partials, reduce->attrs);
      rows->nameHint = reduce->result()->nameHint.empty() ? "partials" : reduce->result()->nameHint + "_partials";
      reduce->operands[0] = rows;
    }
  }

  /// mma A operands in registers must be in the A-fragment layout; shared A
  /// operands read inside a deeper loop than their load are loaded into
  /// registers once, right after the load.
  bool insertOperandConversions(Block &block) {
    Layout operandA{LayoutKind::OperandA, warpsM_, warpsN_};
    std::map<Value *, Value *> hoisted;
    int64_t hoistedRegisters = 0;
    std::vector<Op *> mmas;
    walk(block, [&](Op &op) {
      if (op.kind == OpKind::Mma)
        mmas.push_back(&op);
    });
    for (Op *mma : mmas) {
      Value *a = mma->operands[0];
      if (a->type.isShared()) {
        Op *load = a->definingOp;
        // A transposed operand is read with ldmatrix.trans at each use.
        if (!load || loopDepth(*load) >= loopDepth(*mma) || mma->intAttr("trans_a"))
          continue;
        // Registers are worth it only while they leave room for the
        // accumulators: past that, reading shared memory each time is cheaper
        // than spilling.
        Type fragments = a->type.withLayout(MemSpace::Register, operandA);
        int64_t perThread = fragments.shape[0] / operandA.warpsM / 16 * (fragments.shape[1] / 16) * 4;
        Value *&converted = hoisted[a];
        const Op *loop = mma->parent->parentOp;
        int64_t carried = loop ? carriedRegisters(*loop, kernel_.warps) + largestFreshProduct(*loop, kernel_.warps) : 0;
        if (!converted && (hoistedRegisters + perThread > kMaxHoistedOperandRegisters ||
                           carried + hoistedRegisters + perThread > kMaxHoistedAndCarriedRegisters))
          continue;
        if (!converted) {
          hoistedRegisters += perThread;
          Block &home = *load->parent;
          auto after = std::next(findOp(home, load));
          Builder builder(home, after);
          builder.setLoc(load->loc);
          converted = builder.value(OpKind::Convert, {a}, a->type.withLayout(MemSpace::Register, operandA));
          converted->nameHint = a->nameHint;
        }
        mma->operands[0] = converted;
        continue;
      }
      if (a->type.layout.kind == LayoutKind::OperandA)
        continue;
      if (a->type.layout.kind != LayoutKind::Acc)
        return fail(a, "an mma A operand in registers must come from an mma accumulator or a load");
      // Pack the operand as soon as it exists: the packed fragments take half
      // the registers of the unpacked tile, and the wide value it was rounded
      // from can die earlier. A rounding cast moves up with it.
      Block &block = *mma->parent;
      hoistRoundingChain(block, a);
      auto insertAt = findOp(block, mma);
      if (Op *def = a->definingOp; def && def->parent == &block)
        insertAt = std::next(findOp(block, def));
      Builder builder(block, insertAt);
      builder.setLoc(mma->loc);
      Value *converted = builder.value(OpKind::Convert, {a}, a->type.withLayout(MemSpace::Register, operandA));
      converted->nameHint = a->nameHint;
      mma->operands[0] = converted;
    }
    return true;
  }

  /// B operands, and A operands read transposed, are read from shared memory
  /// by ldmatrix, which is also where a tile is transposed (lanes cannot
  /// trade registers that way); so is an A operand whose registers are not
  /// laid out like an accumulator's rows in the kernel's warp grid. A tile
  /// in registers in such a place is copied to shared memory once, right
  /// after it is computed, and every product that needs it there reads the
  /// copy.
  bool stageSharedOperands() {
    std::vector<std::pair<Op *, unsigned>> places;
    walk(kernel_.body, [&](Op &op) {
      if (op.kind != OpKind::Mma)
        return;
      if (!op.operands[1]->type.isShared())
        places.push_back({&op, 1});
      const Type &a = op.operands[0]->type;
      bool rowsOfKernelGrid = a.layout.kind == LayoutKind::Acc && a.layout.warpsM == warpsM_ && a.layout.warpsN == 1;
      if (!a.isShared() && (op.intAttr("trans_a") || !rowsOfKernelGrid))
        places.push_back({&op, 0});
    });
    mergePaddingMasks(places);
    std::map<Value *, Value *> staged;
    for (auto [mma, index] : places) {
      Value *tile = mma->operands[index];
      // The copy goes after the op that computes the tile, or first in the
      // loop body whose argument (a carried tile) it is: where every use sees it.
      Op *def = tile->definingOp;
      Block *home = def ? def->parent : tile->ownerBlock;
      LayoutKind kind = tile->type.layout.kind;
      if (!home || !tile->type.isRegister() || (kind != LayoutKind::Acc && kind != LayoutKind::Strip))
        return failAt(*mma, tile, "an mma operand read from shared memory must be a loaded or computed 2-d tile");
      Value *&copy = staged[tile];
      if (!copy) {
        Builder builder(*home, def ? std::next(findOp(*home, def)) : home->ops.begin());
        builder.setLoc(def ? def->loc : mma->loc);
        copy = builder.value(OpKind::Convert, {tile}, tile->type.withLayout(MemSpace::Shared, {LayoutKind::Swizzle, 1, 1}));
        copy->nameHint = tile->nameHint;
      }
      mma->operands[index] = copy;
    }
    return true;
  }

  /// Products that read one tile from shared memory masked along different
  /// axes (the attention backward with queries as rows: dS masked along the
  /// queries for dK, along the keys for dQ) read it masked along all of them,
  /// from one copy. A mask zeroes padding (see tail), which no result
  /// depends on except through the contraction or reduction it is masked
  /// for: the other product's zeros there change nothing it computes.
  void mergePaddingMasks(const std::vector<std::pair<Op *, unsigned>> &places) {
    std::map<Value *, std::vector<Value **>> readersOf; // unmasked tile -> the operands reading a mask of it
    for (auto [mma, index] : places) {
      Op *mask = mma->operands[index]->definingOp;
      if (mask && mask->kind == OpKind::Mask && mask->parent == mma->parent && mask->floatAttr("fill") == 0.0)
        readersOf[mask->operands[0]].push_back(&mma->operands[index]);
    }
    for (auto &[tile, readers] : readersOf) {
      std::map<int64_t, Op *> byAxis;
      bool sameBlock = true, oneBoundAnAxis = true;
      for (Value **operand : readers) {
        Op *mask = (*operand)->definingOp;
        auto [known, added] = byAxis.emplace(mask->intAttr("axis"), mask);
        oneBoundAnAxis &= added || known->second->operands[1] == mask->operands[1];
        sameBlock &= mask->parent == (*readers.front())->definingOp->parent;
      }
      if (byAxis.size() < 2 || !sameBlock || !oneBoundAnAxis)
        continue;
      // The merged masks go right after the earliest of them, where every
      // bound must already be known.
      Block &block = *byAxis.begin()->second->parent;
      auto first = block.ops.end();
      for (auto &[axis, mask] : byAxis)
        if (auto at = findOp(block, mask); first == block.ops.end() || isBefore(block, at, first))
          first = at;
      bool boundsKnown = true;
      for (auto &[axis, mask] : byAxis)
        if (Op *def = mask->operands[1]->definingOp; def && def->parent == &block)
          boundsKnown &= isBefore(block, findOp(block, def), first);
      if (!boundsKnown)
        continue;
      Builder builder(block, std::next(first));
      builder.setLoc((*first)->loc);
      Value *merged = (*first)->result();
      for (auto &[axis, mask] : byAxis)
        if (mask != first->get())
          merged = builder.value(OpKind::Mask, {merged, mask->operands[1]}, merged->type, mask->attrs);
      for (Value **operand : readers)
        *operand = merged;
    }
  }

  static bool isBefore(Block &block, std::list<std::unique_ptr<Op>>::iterator a,
                       std::list<std::unique_ptr<Op>>::iterator b) {
    for (auto it = block.ops.begin(); it != block.ops.end(); ++it) {
      if (it == b)
        return false;
      if (it == a)
        return true;
    }
    return false;
  }

  /// Moves the casts and masks that turn a computed tile into `a` up to
  /// right after the tile's definition, so that the narrow operand replaces
  /// the wide tile in registers as early as possible.
  static void hoistRoundingChain(Block &block, Value *a) {
    std::vector<Op *> chain;
    Op *source = a->definingOp;
    while (source && source->parent == &block && (source->kind == OpKind::Cast || source->kind == OpKind::Mask)) {
      chain.push_back(source);
      source = source->operands[0]->definingOp;
    }
    if (chain.empty() || !source || source->parent != &block)
      return;
    auto position = [&](Op *op) { return std::distance(block.ops.begin(), findOp(block, op)); };
    auto sourcePosition = position(source);
    for (Op *op : chain)
      for (size_t i = 1; i < op->operands.size(); ++i)
        if (Op *def = op->operands[i]->definingOp; def && def->parent == &block && position(def) > sourcePosition)
          return; // a mask bound computed later: leave the chain where it is
    // Cast first, then what masks its result; an op already in place stays.
    auto at = std::next(findOp(block, source));
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      auto op = findOp(block, *it);
      if (op == at)
        ++at;
      else
        block.ops.splice(at, block.ops, op);
    }
  }

  static std::list<std::unique_ptr<Op>>::iterator findOp(Block &block, Op *op) {
    for (auto it = block.ops.begin(); it != block.ops.end(); ++it)
      if (it->get() == op)
        return it;
    return block.ops.end();
  }

  struct VectorLink {
    Value *vector;
    Value *tile;
    int axis;     ///< 1: one element per row of the tile; 0: per column
    bool reduced; ///< the vector is reduced from the tile (else broadcast to it)
  };

  Kernel &kernel_;
  DiagnosticEngine &diags_;
  std::map<Value *, std::vector<std::pair<Op *, unsigned>>> uses_;
  std::set<Value *> shared_;
  std::set<Value *> accumulators_;
  ValueClasses classes_;
  std::vector<VectorLink> vectorLinks_;
  std::vector<std::pair<VectorLink, Layout>> converted_; ///< links whose vector needs a conversion, and its own layout
  std::map<Value *, Layout> classLayout_;
  int warpsM_ = 1, warpsN_ = 1;
};

class LayoutPass : public Pass {
public:
  const char *name() const override { return "layout"; }
  const char *description() const override {
    return "place tiles in registers or shared memory and choose their layouts";
  }
  bool run(Module &module, const Target &target, DiagnosticEngine &diags) override {
    for (auto &kernel : module.kernels)
      if (!LayoutAssigner(*kernel, diags).run())
        return false;
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> createLayoutPass() { return std::make_unique<LayoutPass>(); }

} // namespace tkc
