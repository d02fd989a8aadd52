// The `checked` flags of the tail pass: which global accesses may run past
// the end of their tensor (or start before it), so that the code generator
// tests bounds exactly there; and where an access keeps its global tensor
// and offsets.
#include "passes/TailRewriter.h"

#include <algorithm>

namespace tkc::passes::tail {

unsigned firstOffsetOperand(const Op &op) {
  switch (op.kind) {
  case OpKind::Load: return 1;     // global, offsets
  case OpKind::Gather: return 1;   // global, offsets with the indices at `axis`
  case OpKind::Store: return 2;    // global, tile, offsets
  case OpKind::AsyncLoad: return 4; // buffer, stage, pred, global, offsets
  default: return 0;
  }
}

unsigned globalOperand(const Op &op) { return op.kind == OpKind::AsyncLoad ? 3 : 0; }

void setChecked(const Kernel &kernel, Op &op) {
  const Type &global = op.operands[globalOperand(op)]->type;
  std::vector<int64_t> sizes = op.listAttr("sizes");
  std::vector<int64_t> checked, checkedLow;
  // A gather's indices are tested element by element wherever they run.
  int64_t gathered = op.kind == OpKind::Gather ? op.intAttr("axis") : -1;
  for (size_t d = 0; d < global.dims.size(); ++d) {
    const Value *offset = op.operands[firstOffsetOperand(op) + d];
    if (int64_t(d) == gathered) {
      checked.push_back(0);
      checkedLow.push_back(0);
      continue;
    }
    int64_t size = d < sizes.size() ? sizes[d] : 0;
    checked.push_back(provablyInBounds(kernel, global.dims[d], size, offset) ? 0 : 1);
    checkedLow.push_back(provablyNonNegative(kernel, offset) ? 0 : 1);
  }
  op.attrs["checked"] = Attr(checked);
  // Slices that may start before the tensor: most kernels have none, and
  // their IR does not mention it.
  if (std::count(checkedLow.begin(), checkedLow.end(), 1))
    op.attrs["checked_low"] = Attr(checkedLow);
}

const Dim &globalDimOf(const Op &access, unsigned d) { return access.operands[globalOperand(access)]->type.dims[d]; }
const Value *offsetOf(const Op &access, unsigned d) { return access.operands[firstOffsetOperand(access) + d]; }

bool mayStartBeforeTensor(const Op &load, unsigned globalDim) {
  std::vector<int64_t> checkedLow = load.listAttr("checked_low");
  return globalDim < checkedLow.size() && checkedLow[globalDim];
}

} // namespace tkc::passes::tail
