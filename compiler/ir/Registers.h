// How many 32-bit registers a thread spends on register tiles: per value,
// from its layout, and for a kernel, on the values live at once. The passes
// that size fragments to a register budget, the code generator and its
// register-pressure warning all count with these; what a thread may have
// is a fact of the target (Target::threadRegisterLimit).
#pragma once
#include "ir/IR.h"

namespace tkc::ir {

/// 32-bit registers each thread holds of a register tile or vector: its
/// share of the elements under its layout, copies included (an OperandA
/// tile is held by every warp column, a row vector by every lane of a
/// quad). 0 for values outside registers.
int64_t threadRegisters(const Type &type);

/// The point of a kernel where its register values take the most registers
/// a thread: how many, and the value that takes the most of them there.
struct RegisterPeak {
  int64_t registers = 0;
  const Value *largest = nullptr;
};

/// Counts, between every two ops, the registers of the values defined
/// before and used after (a loop's body also holds what the loop reads from
/// around it), and returns the largest count. Results of element-by-element
/// ops, which ptxas fuses with their readers, count only where they must be
/// held whole: between a reduction (or product) of them and a later reader
/// of both (a softmax's row and its maximum). Temporaries, addresses and
/// indices are left out: the count is a lower bound of what ptxas needs.
RegisterPeak peakLiveRegisters(const Kernel &kernel);

/// Where `v` comes from in the source: for a loop's carried value (a body
/// argument or a loop result), the value that starts it.
const Value *originOf(const Value *v);

} // namespace tkc::ir
