#pragma once
#include "ir/IR.h"
#include "support/Diagnostics.h"

#include <optional>
#include <string>
#include <vector>

namespace tkc::interp {

/// A global tensor's contents, row-major, held in double precision but
/// rounded to the tensor's element type whenever it is written.
struct Tensor {
  ir::DType dtype = ir::DType::F32;
  std::vector<int64_t> dims;
  std::vector<double> data;
};

/// How much one run may take: more is reported as an error at the op
/// that exceeds it rather than run for hours or exhaust memory.
struct Limits {
  /// Ops executed in all blocks together.
  uint64_t steps = uint64_t(1) << 26;
  /// Blocks of the grid.
  int64_t blocks = int64_t(1) << 16;
  /// Elements of one tile (all the slots of a shared buffer together).
  int64_t tileElements = int64_t(1) << 24;
  /// Shared bytes a block may address: offsets and sizes past the largest
  /// shared memory of any GPU (228 KiB) by far.
  int64_t sharedBytes = int64_t(1) << 20;
};

struct Options {
  /// What `num_sms` gives: small, so that a persistent grid gives each block
  /// several tiles.
  int64_t numSms = 3;
  /// How the roles of a block take turns: `Coarse`, a role runs until it
  /// must wait; `Fine`, the next role's turn comes after every mbarrier,
  /// bulk copy, wgmma or barrier op; `Release`, after every mbarrier
  /// arrival, so that the others run as far as they can the moment a role
  /// releases something (a producer refills a slot released while the
  /// releasing role still has products in flight). Each schedule finds
  /// orderings that a pipeline wrongly relies on.
  enum class Interleave { Coarse, Fine, Release } interleave = Interleave::Coarse;
  /// Whether ordinary accesses of shared memory by different threads must be
  /// ordered by `barrier` (true of IR after the barriers pass).
  bool checkBarriers = false;
  Limits limits;
  /// Whether padding is still implicit (IR before the tail pass): each
  /// `yield` then applies the language's rule for carried tiles itself,
  /// keeping an iter arg's element (and its padding mark) wherever the
  /// yielded element is padding. From `tail` on the IR spells the rule out
  /// (a `select {carried}` at the yield) where its result is observed.
  bool implicitCarriedPadding = false;
};

/// Runs a kernel on the CPU with the reference semantics of the tile IR.
///
/// Blocks run one after the other; tiles are dense block-wide arrays whatever
/// their layout. Arithmetic is done in double and rounded to each result's
/// element type, so that two versions of a kernel that compute the same
/// function agree up to reassociation. A cp.async copy (sm_80) lands when
/// the async_wait that retires its group runs.
///
/// sm_90a: the warpgroup roles of a block run as cooperatively scheduled
/// contexts that meet only through mbarriers, `barrier` and shared memory.
/// The schedule is deterministic and lazy: a context runs until it must wait
/// (or, with Interleave::Fine, until its next synchronising op, and with
/// Interleave::Release until its next mbarrier arrival), and bulk
/// tensor copies land only when no context can go on, one at a time in issue
/// order; wgmma reads its shared operands when a wgmma_wait retires
/// it. A wrong phase, slot, arrival or a missing wait thus shows up as a
/// wrong result, a data race or a deadlock, each reported with the op.
class Interpreter {
public:
  Interpreter(DiagnosticEngine &diags, Options options = {}) : diags_(diags), options_(options) {}

  /// `tensors` are the kernel's global parameters in order; scalar
  /// parameters are taken from the dims of the tensors that name them.
  /// Reports what went wrong at the op that did it and returns false.
  bool run(const ir::Kernel &kernel, std::vector<Tensor> &tensors);

  /// Whether the launcher would run this specialisation of a kernel on
  /// `tensors`: its launch block's variant guards (constants that the sizes
  /// pick) hold. Nothing after reporting an error.
  std::optional<bool> picks(const ir::Kernel &kernel, std::vector<Tensor> &tensors);

private:
  DiagnosticEngine &diags_;
  Options options_;
};

/// Rounds to the nearest value of `dtype` (ties to even for bf16, f16 and
/// the 8-bit floats, which saturate to their largest finite value).
double roundTo(ir::DType dtype, double value);

} // namespace tkc::interp
