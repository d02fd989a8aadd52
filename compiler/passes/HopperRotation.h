#pragma once
// hopper-pipeline's software pipeline of a loop of two products (the
// attention forward: scores, then the output accumulator): the second
// product moves one iteration later, behind the next scores, and the
// consumer warpgroups take turns issuing.
#include "ir/IR.h"

namespace tkc::passes {

/// Software-pipelines the deferred product (the output accumulator,
/// acc = g(acc) + p @ v) one iteration later, behind the next
/// iteration's first product (the scores), so that the work between the
/// scores and the accumulator's next use (the softmax) overlaps it:
///
///   before                          after
///   for k (acc) {                   for k (acc, p = 0) {
///     s = wgmma q, k[k]; wait 0       s = wgmma q, k[k]; commit
///                                     acc = wgmma p, v[k - 1], acc if k > lo; commit
///     ...softmax(s) -> p...           wait 1 (s); ...softmax(s) -> p...
///     wait 0 (acc)                    wait 0 (acc)
///     acc = wgmma p, v[k], g(acc)     yield g(acc), p
///   }                               }
///                                   acc = wgmma p, v[hi - 1], acc if lo < hi; commit
///
/// Nothing stays in flight across iterations, and each wait sees the
/// groups of its own iteration. Returns the accumulator after the loop,
/// or null when the loop does not have this shape (the product's slot
/// must depend only on the induction variable, the step must be 1, and
/// the scores must be waited for before the accumulator).
ir::Value *rotateDeferred(ir::Op &loop, ir::Op &first, ir::Op &deferred, ir::Op &deferredWait, ir::Value *deferredArg,
                          ir::Value *deferredResult);

/// The consumer warpgroups take turns issuing their products, so that
/// one's softmax runs while the tensor cores work for the other (left to
/// themselves, they fall into step and wait for the tensor cores at the
/// same time). The turn passes in a ring; the last warpgroup hands the
/// first one its first turn, and the first takes back the last hand-over
/// after the loop, so every barrier phase completes.
void takeTurns(ir::Op &loop, ir::Op &first, ir::Op &finalProduct);

/// Whether `v` is computed in the loop body from the values it carries
/// (not only from the induction variable and values from outside).
bool dependsOnCarried(const ir::Op &loop, ir::Value *v);

} // namespace tkc::passes
