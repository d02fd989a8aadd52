#include "codegen/KernelEmitter.h"
#include "codegen/Identifiers.h"
#include "support/CommentText.h"

#include <cassert>
#include <cmath>
#include <set>

namespace tkc::codegen {

using namespace ir;

namespace {
bool isSourceName(const std::string &s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_'))
    return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_'))
      return false;
  return true;
}
} // namespace

KernelEmitter::KernelEmitter(const Kernel &kernel, const Target &target, const std::string &sourceName,
                             const SourceManager *sources, CodeWriter &out, std::set<WgmmaShape> &wgmmaShapes,
                             DiagnosticEngine &diags)
    : kernel_(kernel), target_(target), sourceName_(commentSafe(sourceName)), sources_(sources), out_(out),
      wgmmaShapes_(wgmmaShapes), diags_(diags) {}

std::string KernelEmitter::functionName() const { return kernel_.name + "_kernel" + symbolSuffix_; }

std::string KernelEmitter::cType(DType dtype) const {
  switch (dtype) {
  case DType::I1: return "bool";
  case DType::I32: return "int";
  case DType::F32: return "float";
  case DType::BF16: return "tkc::bf16";
  case DType::F16: return "tkc::f16";
  case DType::F8E4M3: return "tkc::f8e4m3";
  case DType::F8E5M2: return "tkc::f8e5m2";
  }
  return "void";
}

std::string KernelEmitter::name(const Value *v) {
  auto it = names_.find(v);
  if (it != names_.end())
    return it->second;
  return declareName(v);
}

std::string KernelEmitter::declareName(const Value *v) {
  // Values without a source name (and those of a pass that named them
  // oddly) are temporaries: t_0, t_1, ...
  bool named = isSourceName(v->nameHint);
  std::string unique = named ? nameTable_.fresh(sourceIdentifier(v->nameHint)) : nameTable_.fresh("t", true);
  names_[v] = unique;
  return unique;
}

std::string KernelEmitter::strideName(const Value *global, size_t dim) {
  auto key = std::make_pair(global, static_cast<int>(dim));
  auto it = derivedNames_.find(key);
  if (it == derivedNames_.end())
    it = derivedNames_.emplace(key, nameTable_.fresh(fmt::format("{}_stride{}", name(global), dim))).first;
  return it->second;
}

std::string KernelEmitter::globalDimSize(const Value *global, size_t dim) {
  const Type &g = global->type;
  if (g.dims[dim].isStatic())
    return std::to_string(g.dims[dim].size);
  for (auto &arg : kernel_.body.args)
    if (arg->type.isScalar() && arg->nameHint == g.dims[dim].symbol)
      return name(arg.get());
  assert(false && "a symbolic dim is a scalar parameter of its kernel");
  return sourceIdentifier(g.dims[dim].symbol);
}

std::string KernelEmitter::globalStride(const Value *global, size_t dim) {
  return dim + 1 == global->type.dims.size() ? "1" : strideName(global, dim);
}

std::string KernelEmitter::tensorMapName(const Value *global) {
  auto key = std::make_pair(global, -1);
  auto it = derivedNames_.find(key);
  if (it == derivedNames_.end())
    it = derivedNames_.emplace(key, nameTable_.fresh(name(global) + "_tmap")).first;
  return it->second;
}

CExpr KernelEmitter::scalarExpr(const Value *v) {
  if (Op *def = v->definingOp) {
    if (def->kind == OpKind::Const) {
      if (v->type.dtype == DType::I1)
        return CExpr::text(def->intAttr("value") ? "true" : "false");
      if (v->type.dtype == DType::I32)
        return CExpr::integer(def->intAttr("value"));
      return CExpr::floating(def->floatAttr("value"));
    }
    if (def->kind == OpKind::BlockId)
      return call("int", {CExpr::text(fmt::format("blockIdx.{}", "xyz"[def->intAttr("axis") % 3]))});
  }
  return CExpr::text(name(v));
}

bool KernelEmitter::unsupported(const Op &op, const std::string &what) {
  diags_.report(op.loc, DiagId::UnsupportedOnTarget, what, target_.name);
  ok_ = false;
  return false;
}

void KernelEmitter::comment(const Op &op) {
  if (!op.loc.isValid() || static_cast<int>(op.loc.line) == lastCommentLine_)
    return;
  lastCommentLine_ = static_cast<int>(op.loc.line);
  if (!lineFile_.empty())
    out_.line("#line {} {}", op.loc.line, lineFile_);
  std::string_view text = sources_ ? sources_->lineText(op.loc.file, op.loc.line) : std::string_view();
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
    text.remove_prefix(1);
  if (text.empty())
    out_.line("// {}:{}", sourceName_, op.loc.line);
  else
    out_.line("// {}:{}: {}", sourceName_, op.loc.line, commentSafe(text));
}

void KernelEmitter::countUses() {
  walk(const_cast<Block &>(kernel_.body), [&](Op &op) {
    for (Value *operand : op.operands)
      ++uses_[operand];
  });
}

void KernelEmitter::findAbsorbedOps() {
  walk(const_cast<Block &>(kernel_.body), [&](Op &op) {
    if (op.kind != OpKind::Convert || op.result()->type.layout.kind != LayoutKind::OperandA ||
        !op.operands[0]->type.isRegister())
      return;
    const Value *v = op.operands[0];
    std::vector<const Op *> chain;
    if (v->definingOp && v->definingOp->kind == OpKind::Mask && v->definingOp->intAttr("axis") == 1 &&
        v->definingOp->floatAttr("fill") == 0.0 && uses_[v] == 1) {
      chain.push_back(v->definingOp);
      v = v->definingOp->operands[0];
    }
    const Op *cast = v->definingOp;
    if (cast && cast->kind == OpKind::Cast && uses_[v] == 1 && cast->operands[0]->type.dtype == DType::F32 &&
        cast->operands[0]->type.isRegister() && cast->operands[0]->type.layout == v->type.layout) {
      chain.push_back(cast);
      absorbed_.insert(chain.begin(), chain.end());
    }
  });
  // A mask read only by a reduction is applied as the reduction reads its
  // input: no masked copy of the tile lives beside the tile itself. That
  // matters where registers are scarce, in the mma.sync kernels (the sm_80
  // attention forward at D = 128 needed 116 bytes of spills without it); in
  // warp-specialized kernels the second copy of the reduction's loop it
  // costs was measured 1% slower, so they keep the masked copy.
  bool warpSpecialized = false;
  walk(const_cast<Block &>(kernel_.body), [&](Op &op) { warpSpecialized |= op.kind == OpKind::WarpgroupRole; });
  if (warpSpecialized)
    return;
  walk(const_cast<Block &>(kernel_.body), [&](Op &op) {
    if (op.kind != OpKind::Reduce)
      return;
    const Op *mask = op.operands[0]->definingOp;
    if (mask && mask->kind == OpKind::Mask && uses_[op.operands[0]] == 1 && mask->operands[0]->type.isRegister())
      absorbed_.insert(mask);
  });
}

bool KernelEmitter::emit() {
  countUses();
  findAbsorbedOps();
  findWgmmaSchedule();
  // Parameters: global tensors as pointers plus the strides of all but their
  // innermost dim (which is 1); scalars as ints.
  std::vector<std::string> params;
  // The kernel's grid: where accumulators take several grids, the one of
  // warps splitting rows alone (the others name their coordinates inline).
  int warpsN = 0;
  walk(const_cast<Block &>(kernel_.body), [&](Op &op) {
    for (auto &r : op.results)
      if (r->type.isRegister() && r->type.layout.kind == LayoutKind::Acc)
        warpsN = warpsN == 0 ? r->type.layout.warpsN : std::min(warpsN, r->type.layout.warpsN);
  });
  kernelWarpsN_ = warpsN = std::max(warpsN, 1);
  for (auto &arg : kernel_.body.args) {
    std::string n = declareName(arg.get());
    if (arg->type.isGlobal()) {
      std::string qualifier = arg->type.isOutput ? "" : "const ";
      params.push_back(fmt::format("{}{} *__restrict__ {}", qualifier, cType(arg->type.dtype), n));
      for (size_t d = 0; d + 1 < arg->type.dims.size(); ++d)
        params.push_back(fmt::format("int64_t {}", strideName(arg.get(), d)));
    } else {
      params.push_back(fmt::format("{} {}", cType(arg->type.dtype), n));
    }
  }
  addTensorMapParams(params); // sm_90a: tensor maps of the bulk copies
  int threads = kernel_.warps * Target::kWarpSize;
  if (!lineFile_.empty())
    out_.line("#line {} {}", kernel_.loc.line, lineFile_);
  out_.line("// {}:{}: kernel {}", sourceName_, kernel_.loc.line, kernel_.name);
  // Kernels with accumulators aim at one block per SM: their tiles are sized
  // to fill it, and the accumulators need the registers more than a second
  // block would. Warpgroup roles split the register file with setmaxnreg,
  // which needs the bound: as many blocks as the roles' registers allow.
  // Memory-bound kernels keep the compiler's occupancy heuristics.
  bool hasMma = false, hasWgmma = false, takesTurns = false;
  walk(const_cast<Block &>(kernel_.body), [&](Op &op) {
    hasMma = hasMma || op.kind == OpKind::Mma;
    hasWgmma = hasWgmma || op.kind == OpKind::Wgmma;
    takesTurns = takesTurns || op.kind == OpKind::TurnWait;
  });
  int blocks = blocksForRoleRegisters();
  if (blocks == 0 && hasMma)
    blocks = 1;
  out_.line("__global__ void __launch_bounds__({}{}) {}(", threads, blocks ? fmt::format(", {}", blocks) : "",
            functionName());
  out_.indent();
  out_.indent();
  for (size_t i = 0; i < params.size(); ++i)
    out_.line("{}{}", params[i], i + 1 == params.size() ? ") {" : ",");
  out_.dedent();
  // Arch-specific code (sm_90a) compiles only where its instructions exist:
  // a file built for several architectures gets a stub elsewhere, which
  // the launcher never picks.
  bool archSpecific = target_.isArchSpecific();
  if (archSpecific) {
    out_.line("#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM{}_ALL)", target_.computeCapability);
    out_.line("__trap();");
    out_.line("#else");
  }
  out_.line("extern __shared__ __align__(128) unsigned char tkc_smem[];");
  // A kernel whose consumer warpgroups take turns keeps the base in a
  // register (kept_smem_address): each turn begins with an mbarrier wait
  // whose address ptxas would otherwise recompute from the CTA id. (On the
  // H200 the attention forward ran 0.4-1.9% faster; the backward's D = 128
  // kernels, which take no turns, 3-8% slower.)
  out_.line("const uint32_t smem_base = tkc::{}(tkc_smem);", takesTurns ? "kept_smem_address" : "smem_address");
  // ldmatrix addresses XOR a tile's swizzle into its offset (EmitMma.cpp),
  // which needs the tiles aligned to their rows: smem-plan aligns them from
  // the base, and the base must be 1 KiB-aligned (it is on the GPUs
  // measured, as the Hopper path's bulk copies need too); a kernel whose
  // base is not stops rather than read the wrong bytes.
  if (hasMma)
    out_.line("if (smem_base % 1024 != 0) __trap();");
  // With wgmma, the warp index comes through a shuffle from lane 0: the
  // compiler then knows it is the same in every lane and keeps what derives
  // from it (the operand descriptors) in uniform registers.
  if (hasWgmma)
    out_.line("const int warp = __shfl_sync(0xffffffffu, int(threadIdx.x) / 32, 0), lane = threadIdx.x % 32;");
  else
    out_.line("const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;");
  out_.line("const int warp_m = warp / {}, warp_n = warp % {};", warpsN, warpsN);
  out_.line("(void)smem_base; (void)warp_m; (void)warp_n;");
  emitTensorMapPrefetch();
  emitBlock(kernel_.body);
  if (archSpecific)
    out_.line("#endif");
  out_.close();
  if (!lineFile_.empty())
    out_.line("{}", kLineReset);
  return ok_;
}

Fragment KernelEmitter::fragment(const Type &type) const { return fragmentOf(type, warpCoords(type.layout)); }

WarpCoords KernelEmitter::warpCoords(const Layout &layout) const {
  return warpCoordsIn(layout, kernelWarpsN_, roleWarpgroups_ > 0);
}

void KernelEmitter::emitBlock(const Block &block) {
  for (auto &op : block.ops)
    if (!emitOp(*op))
      return;
}

bool KernelEmitter::emitOp(const Op &op) {
  if (absorbed_.count(&op))
    return true;
  if (identityOps_.count(&op)) {
    names_[op.result()] = name(op.operands[op.kind == OpKind::Mask ? 0 : 1]);
    return true;
  }
  if (op.kind != OpKind::Const && op.kind != OpKind::BlockId && op.kind != OpKind::Yield && op.kind != OpKind::Grid) {
    noteCodeAfterRegisterProducts(op);
    comment(op);
  }
  switch (op.kind) {
  case OpKind::Const:
  case OpKind::BlockId:
    return true; // printed inline where used
  case OpKind::For:
    emitFor(op);
    return ok_;
  case OpKind::Yield:
  case OpKind::Grid:
    return true; // handled by the enclosing construct
  case OpKind::CDiv:
    emitScalar(op);
    return true;
  case OpKind::Undef:
    declareName(op.result());
    declareTile(op.result());
    return true;
  case OpKind::Fill:
    emitFill(op);
    return true;
  case OpKind::Iota:
    emitIota(op);
    return true;
  case OpKind::Mask:
    emitMask(op);
    return true;
  case OpKind::Reduce:
    return emitReduce(op);
  case OpKind::Broadcast:
    return emitBroadcast(op);
  case OpKind::Convert:
    return emitConvert(op);
  case OpKind::Load:
    return emitLoad(op);
  case OpKind::Gather:
    return emitGather(op);
  case OpKind::Store:
    return emitStore(op);
  case OpKind::Mma:
    return emitMma(op);
  case OpKind::SmemAlloc:
    emitSmemAlloc(op);
    return true;
  case OpKind::StageView:
    emitStageView(op);
    return true;
  case OpKind::AsyncLoad: {
    const Type &slot = op.operands[0]->type;
    int64_t slotBytes = slot.numElements() * dtypeBytes(slot.dtype);
    std::string dst = (CExpr::text(name(op.operands[0])) + scalarExpr(op.operands[1]) * CExpr::integer(slotBytes)).str();
    if (copiesElementwise(op))
      emitVectorCopy(op, dst, slot, op.operands[3], 4, scalar(op.operands[2]), "int(threadIdx.x)",
                     kernel_.warps * Target::kWarpSize);
    else
      emitSharedCopy(op, dst, slot, op.operands[3], 4, scalar(op.operands[2]));
    return true;
  }
  case OpKind::AsyncCommit:
    out_.line("tkc::cp_async_commit();");
    return true;
  case OpKind::AsyncWait:
    out_.line("tkc::cp_async_wait<{}>();", op.intAttr("pending"));
    return true;
  case OpKind::Barrier:
    out_.line("__syncthreads();");
    return true;
  case OpKind::MbarrierInit: case OpKind::MbarrierExpectTx: case OpKind::MbarrierWait:
  case OpKind::MbarrierArrive: case OpKind::TmaLoad: case OpKind::WarpCopy: case OpKind::Wgmma: case OpKind::WgmmaFence:
  case OpKind::WgmmaCommit: case OpKind::WgmmaWait: case OpKind::WarpgroupRole:
  case OpKind::WarpgroupRoleEnd: case OpKind::GridSize: case OpKind::NumSms: case OpKind::SmemStore:
  case OpKind::FenceProxyAsync: case OpKind::WarpgroupBarrier: case OpKind::TmaStore: case OpKind::TmaStoreWait:
  case OpKind::TurnWait: case OpKind::TurnPass:
    return emitHopperOp(op); // EmitHopper.cpp
  default:
    break;
  }
  if (op.results.size() == 1 && op.result()->type.isScalar()) {
    emitScalar(op);
    return true;
  }
  if (op.results.size() == 1 && op.result()->type.isRegister()) {
    emitElementwise(op);
    return ok_;
  }
  return unsupported(op, fmt::format("operation `{}` on this operand", mnemonicOf(op.kind)));
}

/// Scalar ops become `const` locals: arithmetic is the same in every thread.
void KernelEmitter::emitScalar(const Op &op) {
  std::vector<CExpr> args;
  for (const Value *operand : op.operands)
    args.push_back(scalarExpr(operand));
  OperatorSpelling spelling{isFloat(op.result()->type.dtype), MathPrecision::Accurate, false};
  std::optional<CExpr> expr = op.kind == OpKind::Cast ? call(cType(op.result()->type.dtype), args)
                                                      : operatorExpression(op.kind, args, spelling);
  if (!expr) {
    unsupported(op, fmt::format("scalar operation `{}`", mnemonicOf(op.kind)));
    return;
  }
  out_.line("const {} {} = {};", cType(op.result()->type.dtype), declareName(op.result()), expr->str());
}

/// Loop-carried values live in variables declared before the loop; `yield`
/// assigns the next values at the end of the body.
void KernelEmitter::emitFor(const Op &op) {
  const Block &body = *op.body;
  std::vector<std::string> carried;
  for (size_t i = 0; i < op.results.size(); ++i) {
    const Value *arg = body.args[1 + i].get();
    const Value *init = op.operands[3 + i];
    std::string n = declareName(arg);
    names_[op.result(i)] = n;
    carried.push_back(n);
    if (arg->type.isScalar()) {
      out_.line("{} {} = {};", cType(arg->type.dtype), n, scalar(init));
    } else {
      declareTile(arg);
      int count = arg->type.layout.kind == LayoutKind::OperandA ? operandACount(arg->type)
                                                                 : fragment(arg->type).count();
      out_.line("TKC_UNROLL for (int x = 0; x < {}; ++x) {}[x] = {}[x];", count, n, name(init));
    }
  }
  std::string iv = declareName(body.args[0].get());
  bool constantTrip = op.operands[0]->definingOp && op.operands[0]->definingOp->kind == OpKind::Const &&
                      op.operands[1]->definingOp && op.operands[1]->definingOp->kind == OpKind::Const;
  if (constantTrip)
    out_.line("TKC_UNROLL");
  else
    out_.line("#pragma unroll 1");
  out_.open(fmt::format("for (int {} = {}; {} < {}; {} += {})", iv, scalar(op.operands[0]), iv, scalar(op.operands[1]),
                        iv, scalar(op.operands[2])));
  emitLoopBody(op, body.ops.begin(), true); // EmitUnswitch.cpp
  out_.close();
}

/// The end of an iteration: the loop-carried variables take the yielded values.
void KernelEmitter::emitYield(const Op &op) {
  const Block &body = *op.body;
  std::vector<std::string> carried;
  for (size_t i = 0; i < op.results.size(); ++i)
    carried.push_back(names_.at(body.args[1 + i].get()));
  const Op &yield = *body.ops.back();
  // A yielded value that is itself a loop-carried variable must be read
  // before any carried variable is overwritten.
  std::vector<std::string> sources;
  for (size_t i = 0; i < yield.operands.size(); ++i) {
    const Value *v = yield.operands[i];
    std::string src = v->type.isScalar() ? scalar(v) : name(v);
    bool printedInline = v->definingOp && (v->definingOp->kind == OpKind::Const || v->definingOp->kind == OpKind::BlockId);
    if (v->ownerBlock == &body && v != body.args[0].get() && !printedInline && src != carried[i]) {
      std::string tmp = src + "_next";
      if (v->type.isScalar())
        out_.line("const {} {} = {};", cType(v->type.dtype), tmp, src);
      else {
        int count = fragment(v->type).count();
        out_.line("{} {}[{}];", cType(v->type.dtype), tmp, count);
        out_.line("TKC_UNROLL for (int x = 0; x < {}; ++x) {}[x] = {}[x];", count, tmp, src);
      }
      src = tmp;
    }
    sources.push_back(src);
  }
  for (size_t i = 0; i < yield.operands.size(); ++i) {
    const Value *v = yield.operands[i];
    if (sources[i] == carried[i])
      continue;
    if (v->type.isScalar())
      out_.line("{} = {};", carried[i], sources[i]);
    else {
      int count = v->type.layout.kind == LayoutKind::OperandA ? operandACount(v->type) : fragment(v->type).count();
      out_.line("TKC_UNROLL for (int x = 0; x < {}; ++x) {}[x] = {}[x];", count, carried[i], sources[i]);
    }
  }
}

} // namespace tkc::codegen
