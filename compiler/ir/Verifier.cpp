#include "ir/Verifier.h"
#include "ir/OpRules.h"
#include "ir/Syntax.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <unordered_set>

namespace tkc::ir {

namespace {

/// What a block is for decides which ops it may hold and how it ends.
enum class BlockRole { Launch, Body, LoopBody };

/// Ops that `launch` may hold: it runs on the host and computes the grid
/// from scalar parameters.
bool isHostScalarOp(OpKind kind) {
  switch (kind) {
  case OpKind::BlockId: case OpKind::Fill: case OpKind::Undef: case OpKind::Iota: case OpKind::Load: case OpKind::Gather:
  case OpKind::Store:
  case OpKind::Mma: case OpKind::Reduce: case OpKind::Broadcast: case OpKind::Convert: case OpKind::Mask:
  case OpKind::For: case OpKind::Yield: case OpKind::SmemAlloc: case OpKind::StageView:
  case OpKind::AsyncLoad: case OpKind::AsyncCommit: case OpKind::AsyncWait: case OpKind::Barrier:
    return false;
  default:
    return true;
  }
}

class ModuleVerifier {
public:
  explicit ModuleVerifier(DiagnosticEngine &diags) : diags_(diags) {}

  bool verify(const Module &module) {
    std::set<std::string> kernelNames;
    for (auto &kernel : module.kernels) {
      if (!kernelNames.insert(kernel->name).second)
        kernelError(*kernel, "is defined twice");
      verifyKernel(*kernel);
    }
    return ok_;
  }

private:
  void kernelError(const Kernel &kernel, const std::string &message) {
    diags_.report(kernel.loc, DiagId::IRVerifyKernelFailed, kernel.name, message);
    ok_ = false;
  }
  void opError(const Op &op, const std::string &message) {
    diags_.report(op.loc, DiagId::IRVerifyFailed, mnemonicOf(op.kind), message);
    ok_ = false;
  }

  void verifyKernel(const Kernel &kernel) {
    warps_ = kernel.warps;
    if (!isIdentifier(kernel.name))
      kernelError(kernel, "has a name that is not an identifier");
    // Warp-specialized kernels have, say, 12 warps: not always a power of two.
    if (kernel.warps < 1 || kernel.warps > 32)
      kernelError(kernel, fmt::format("has warps({}); expected 1 to 32 (1024 threads)", kernel.warps));
    if (!verifyParams(kernel))
      return;

    visible_.clear();
    verifyBlock(kernel.launch, BlockRole::Launch);
    // A misplaced `grid` was reported at the op already.
    if (std::none_of(kernel.launch.ops.begin(), kernel.launch.ops.end(),
                     [](auto &op) { return op->kind == OpKind::Grid; }))
      kernelError(kernel, "has a `launch` block that does not end with `grid`");
    visible_.clear();
    verifyBlock(kernel.body, BlockRole::Body);
  }

  /// Body arguments are the parameters; launch's are the scalar ones, in the
  /// same order. Symbolic dims of global tensors name i32 parameters.
  bool verifyParams(const Kernel &kernel) {
    bool paramsOk = true;
    auto fail = [&](const std::string &message) {
      kernelError(kernel, message);
      paramsOk = false;
    };
    std::set<std::string> names, i32Names;
    for (auto &param : kernel.body.args)
      if (param->type.isScalar() && param->type.dtype == DType::I32)
        i32Names.insert(param->nameHint);
    std::vector<const Value *> scalarParams;
    for (size_t i = 0; i < kernel.body.args.size(); ++i) {
      const Value &param = *kernel.body.args[i];
      if (param.ownerBlock != &kernel.body || param.index != i)
        fail(fmt::format("parameter #{} has a stale owner or index", i));
      if (!isIdentifier(param.nameHint) || !names.insert(param.nameHint).second)
        fail(fmt::format("parameter #{} needs a unique identifier as its name, not `{}`", i, param.nameHint));
      if (auto error = checkTypeRules(param.type, kernel.warps); !error.empty())
        fail(fmt::format("parameter `%{}`: {}", param.nameHint, error));
      if (param.type.isTile())
        fail(fmt::format("parameter `%{}` must be a scalar or a global tensor", param.nameHint));
      if (param.type.isScalar())
        scalarParams.push_back(&param);
      for (const Dim &dim : param.type.dims)
        if (!dim.isStatic() && !i32Names.count(dim.symbol))
          fail(fmt::format("parameter `%{}` has dim `{}`, which names no i32 parameter", param.nameHint, dim.symbol));
    }
    const Block &launch = kernel.launch;
    bool launchMatches = launch.args.size() == scalarParams.size();
    for (size_t i = 0; launchMatches && i < launch.args.size(); ++i)
      launchMatches = launch.args[i]->type == scalarParams[i]->type &&
                      launch.args[i]->nameHint == scalarParams[i]->nameHint &&
                      launch.args[i]->ownerBlock == &launch && launch.args[i]->index == i;
    if (!launchMatches)
      fail("has `launch` arguments that are not its scalar parameters in order");
    return paramsOk;
  }

  /// Ops see the block's arguments, the results of earlier ops in the block
  /// and whatever the enclosing blocks saw at the point of entry.
  void verifyBlock(const Block &block, BlockRole role) {
    std::vector<const Value *> added;
    auto define = [&](const Value *value) {
      visible_.insert(value);
      added.push_back(value);
    };
    for (auto &arg : block.args)
      define(arg.get());

    for (auto it = block.ops.begin(); it != block.ops.end(); ++it) {
      const Op &op = **it;
      bool isLast = std::next(it) == block.ops.end();
      if (verifyPlacement(op, block, role, isLast) && verifyOperands(op) && verifyResults(op)) {
        if (auto error = checkOpRules(op); !error.empty())
          opError(op, error);
      }
      if (op.body) {
        if (op.body->parentOp != &op)
          opError(op, "has a body whose parent pointer is stale");
        else if (op.kind == OpKind::For && verifyBodyArgs(op))
          verifyBlock(*op.body, BlockRole::LoopBody);
      }
      for (auto &result : op.results)
        define(result.get());
    }
    for (const Value *value : added)
      visible_.erase(value);
  }

  bool verifyPlacement(const Op &op, const Block &block, BlockRole role, bool isLast) {
    if (op.parent != &block) {
      opError(op, "has a stale parent pointer");
      return false;
    }
    if (role == BlockRole::Launch && !isHostScalarOp(op.kind)) {
      opError(op, "is not allowed in `launch`, which computes the grid from scalars on the host");
      return false;
    }
    if (op.kind == OpKind::VariantGuard && role != BlockRole::Launch) {
      opError(op, "belongs in `launch`, where the launcher picks a specialisation");
      return false;
    }
    if (op.kind == OpKind::Grid && !(role == BlockRole::Launch && isLast)) {
      opError(op, "must be the last op of `launch`");
      return false;
    }
    if (op.kind == OpKind::Yield && !(role == BlockRole::LoopBody && isLast)) {
      opError(op, "must be the last op of a `for` body");
      return false;
    }
    if (role == BlockRole::Launch)
      for (auto &result : op.results)
        if (!result->type.isScalar()) {
          opError(op, "in `launch` must produce scalars");
          return false;
        }
    return true;
  }

  bool verifyOperands(const Op &op) {
    for (size_t i = 0; i < op.operands.size(); ++i) {
      if (!op.operands[i]) {
        opError(op, fmt::format("operand #{} is null", i));
        return false;
      }
      if (!visible_.count(op.operands[i])) {
        opError(op, fmt::format("operand #{} is not defined before this use in an enclosing block", i));
        return false;
      }
    }
    return true;
  }

  bool verifyResults(const Op &op) {
    for (size_t i = 0; i < op.results.size(); ++i) {
      const Value &result = *op.results[i];
      if (result.definingOp != &op || result.index != i || result.ownerBlock) {
        opError(op, fmt::format("result #{} has a stale defining op or index", i));
        return false;
      }
      if (result.type.isGlobal()) {
        opError(op, fmt::format("result #{} cannot be a global tensor", i));
        return false;
      }
      if (auto error = checkTypeRules(result.type, warps_); !error.empty()) {
        opError(op, fmt::format("result #{}: {}", i, error));
        return false;
      }
    }
    return true;
  }

  bool verifyBodyArgs(const Op &op) {
    const Block &body = *op.body;
    for (size_t i = 0; i < body.args.size(); ++i) {
      const Value &arg = *body.args[i];
      if (arg.ownerBlock != &body || arg.index != i || arg.definingOp) {
        opError(op, fmt::format("body argument #{} has a stale owner or index", i));
        return false;
      }
      if (auto error = checkTypeRules(arg.type, warps_); !error.empty()) {
        opError(op, fmt::format("body argument #{}: {}", i, error));
        return false;
      }
    }
    return true;
  }

  DiagnosticEngine &diags_;
  bool ok_ = true;
  int warps_ = 4;
  std::unordered_set<const Value *> visible_;
};

} // namespace

bool verifyModule(const Module &module, DiagnosticEngine &diags) { return ModuleVerifier(diags).verify(module); }

} // namespace tkc::ir
