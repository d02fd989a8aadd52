#pragma once
// What smem-plan would make of a kernel's shared memory, for the passes
// that size buffers before it runs.
#include "ir/IR.h"
#include "passes/Pass.h"

#include <vector>

namespace tkc::passes {

/// The copies `pipeline` would make of `loop`'s `loads` (each turned into
/// a buffer of `stages` slots allocated just before the loop and kept until
/// the copies drain right after it), for sizing the ring before building it.
struct PlannedRing {
  const ir::Op *loop = nullptr;
  std::vector<const ir::Op *> loads;
  int64_t stages = 1;
};

/// The bytes of dynamic shared memory smem-plan gives `kernel` as it is,
/// or, with `ring`, once that loop is pipelined: the same placement, so
/// that a depth that this says fits also fits there.
int64_t plannedSharedPeak(ir::Kernel &kernel, const Target &target, const PlannedRing *ring = nullptr);

} // namespace tkc::passes
