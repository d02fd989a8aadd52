#pragma once
// What the files of the `tail` pass (Tail.cpp) share: the padding each tile
// may hold, the limits that bound it, and the rewriter that analyses a
// kernel and masks its padding, whose phases live in files of their own:
// TailChecked.cpp (accesses that may run past a tensor), TailAnalysis.cpp
// (which axes of which values hold padding), TailObserved.cpp (which
// padding a consumer observes), TailCarried.cpp (the selects of the
// carried-padding rule), TailMasks.cpp (the masks before reductions and
// contractions) and TailLimits.cpp (the limits those compute).
#include "ir/IR.h"
#include "passes/IndexBounds.h"
#include "passes/PassUtils.h"

#include <compare>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace tkc::passes::tail {

using namespace ir;

// --- accesses (TailChecked.cpp) --------------------------------------------

/// Index of the first offset operand of a global access.
unsigned firstOffsetOperand(const Op &op);
unsigned globalOperand(const Op &op);
/// Sets `checked` (and, where a slice may start before its tensor,
/// `checked_low`) of a global access.
void setChecked(const Kernel &kernel, Op &op);
const Dim &globalDimOf(const Op &access, unsigned d);
const Value *offsetOf(const Op &access, unsigned d);
bool mayStartBeforeTensor(const Op &load, unsigned globalDim);

// --- padding ---------------------------------------------------------------

/// One limit on the valid elements along a tile axis: dim - offset of one
/// global dim of one load; the limit a loop carries for one axis of one of
/// its iter args (inside the body, or after the loop); or all or nothing,
/// by whether the axis a reduction or product reduces holds any valid
/// element (the result of reducing only padding is padding). Materialised
/// only when a mask or select needs it.
struct BoundTerm {
  /// The program position of `load` or `loop`, compared first: sets of
  /// terms then iterate in program order, not by address, and the limits
  /// they combine into print the same on every run.
  size_t order = 0;
  Op *load = nullptr;
  unsigned globalDim = 0;
  Op *loop = nullptr;
  size_t iterArg = 0;
  int64_t axis = 0;
  bool afterLoop = false;
  /// The reduce or mma whose reduced axis may be all padding, the operand
  /// that axis belongs to and its number, and the extent of the result's
  /// axis that the term limits (the limit is that extent or 0).
  Op *reduction = nullptr;
  const Value *reducedInput = nullptr;
  int64_t reducedAxis = 0;
  int64_t extent = 0;
  auto operator<=>(const BoundTerm &) const = default;
};

/// A load dim whose padding may have reached a value.
using Origin = std::pair<Op *, unsigned>;

/// An iter arg: its loop, its index among the loop's results.
using IterArg = std::pair<const Op *, size_t>;

/// An iter arg whose yielded padding reached a value by way of the loop's
/// back edge (inside the loop) or its result (after it).
struct Carrier {
  const Op *loop = nullptr;
  size_t iterArg = 0;
  bool after = false;
  auto operator<=>(const Carrier &) const = default;
};

struct AxisPadding {
  std::set<BoundTerm> terms;   ///< the valid elements are those inside every term
  std::set<Origin> origins;    ///< where the padding comes from (for stores)
  /// Some padding comes from no load's bounds: a reduction's results over
  /// only padding, which lie inside any tensor they are stored to.
  bool beyondOrigins = false;
  std::set<Carrier> carriers;  ///< the iter args it went through unselected
  bool knownZero = false;      ///< the padding holds zeros, as a load leaves it
  bool operator==(const AxisPadding &) const = default;
};

/// Tile axis -> its padding; absent axes have none.
using Padding = std::map<int64_t, AxisPadding>;

/// A limit on valid indices i: i < high, and i + lowOffset >= 0 where the
/// slice may start before its tensor (null lowOffset: it does not).
struct Limits {
  Value *high = nullptr;
  Value *lowOffset = nullptr;
};

// --- where a limit holds (TailLimits.cpp) ----------------------------------

/// Whether the value a term stands for is defined outside `loop`, so that
/// it holds at the top of every iteration and after the loop.
bool availableOutside(const BoundTerm &term, const Op &loop);
/// A load term of a load in `loop`'s body whose limit is the same in every
/// iteration (TailLimits.cpp says when).
bool loadLimitSameInEveryIteration(const BoundTerm &term, const Op &loop);

/// Tracks the padding of every tile of one kernel and rewrites the kernel
/// so that no consumer sees padding the language hides. `run` (Tail.cpp)
/// orders the phases; each member's file is named beside it.
class TailRewriter {
public:
  explicit TailRewriter(Kernel &kernel) : kernel_(kernel) {}

  void run();

private:
  // TailAnalysis.cpp
  const Padding &paddingOf(const Value *v);
  void analyzeBlock(Block &block);
  void analyzeLoop(Op &loop);
  void absorb(Padding &into, int64_t axis, const AxisPadding &padding, Op &loop, size_t i) const;
  Padding transfer(const Op &op);
  void addEmptyAxisTerm(Padding &result, int64_t resultAxis, const Op &reduction, const Value *input,
                        int64_t reducedAxis);
  bool provablyNonEmpty(const AxisPadding &padding) const;

  // TailObserved.cpp
  bool storeDropsLoadPadding(const Op &store);
  bool storeDropsPadding(const Op &store);
  void findObservedReductions();
  std::set<Carrier> observedCarriers();
  bool sameEveryIteration(const IterArg &arg);

  // TailCarried.cpp
  std::vector<Value *> validFlags(const Padding &padding, const Type &type, Block &block, OpIterator before,
                                  SourceLocation loc, Op *afterLoop = nullptr);
  static Value *selectCarried(Block &block, OpIterator before, SourceLocation loc, const std::vector<Value *> &valid,
                              Value *value, Value *other);
  void keepCarriedElements();

  // TailMasks.cpp
  void maskBlock(Block &block);
  void maskReduceInput(Op &reduce);
  void maskContraction(Op &mma);
  void maskGatherIndices(Op &gather);
  bool sliceEndsWithIndices(const Op &gather, const AxisPadding &indexPadding) const;
  Value *maskedCastInput(Value *value, int64_t axis);
  Value *masked(Op &consumer, Value *value, int64_t axis, const AxisPadding &padding, double fill);

  // TailLimits.cpp
  Limits combine(const AxisPadding &padding, Op &before);
  static void narrow(Builder &builder, Limits &result, const Limits &limits);
  Limits combine(const AxisPadding &padding, Block &block, OpIterator before, SourceLocation loc);
  Limits combineAfter(const AxisPadding &padding, Op &loop, Block &block, OpIterator before, SourceLocation loc);
  Limits limitsOf(Builder &builder, const Dim &dim, Value *offset, bool low);
  Limits materialize(const BoundTerm &term);
  Limits materializeLoad(const BoundTerm &term);
  Limits materializeCarried(const BoundTerm &term);
  Limits materializeNonEmpty(const BoundTerm &term);
  static Value *addCarried(Op &loop, Value *init, const std::string &name, Value *&result);
  Value *parameterNamed(const std::string &name);

  Kernel &kernel_;
  std::map<const Op *, size_t> order_; ///< each op's position in the kernel before the pass
  std::map<const Value *, Padding> padding_;
  std::map<const Op *, std::vector<Padding>> carried_;
  bool grew_ = false;
  std::set<const Op *> observed_;
  std::set<IterArg> selected_;  ///< iter args that keep their elements where the yield is padding
  std::set<IterArg> keptAfter_; ///< iter args whose padded elements the loop's result puts back
  std::map<BoundTerm, Limits> bounds_;
  std::map<std::tuple<Value *, int64_t, double, Block *>, Value *> masks_;
};

} // namespace tkc::passes::tail
