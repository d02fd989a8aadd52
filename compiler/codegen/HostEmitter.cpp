#include "codegen/HostEmitter.h"
#include "codegen/Expressions.h"
#include "codegen/Identifiers.h"
#include "codegen/KernelEmitter.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace tkc::codegen {

using namespace ir;

namespace {

const char *elementCType(DType dtype) {
  switch (dtype) {
  case DType::BF16: return "tkc::bf16";
  case DType::F16: return "tkc::f16";
  case DType::F8E4M3: return "tkc::f8e4m3";
  case DType::F8E5M2: return "tkc::f8e5m2";
  case DType::F32: return "float";
  case DType::I32: return "int";
  case DType::I1: return "bool";
  }
  return "void";
}

/// The scalar computation of the launch block, printed as host C++ through
/// the kernels' expression printer: integers are `long long` (the sizes they
/// come from are 64-bit), with the same tkc_int.h operations.
const char *hostCType(DType dtype) {
  return dtype == DType::F32 ? "float" : dtype == DType::I1 ? "bool" : "long long";
}

std::optional<CExpr> hostScalar(const Value *v, const std::map<const Value *, std::string> &names) {
  if (Op *def = v->definingOp; def && def->kind == OpKind::Const) {
    if (v->type.dtype == DType::F32)
      return CExpr::floating(def->floatAttr("value"));
    if (v->type.dtype == DType::I1)
      return CExpr::text(def->intAttr("value") ? "true" : "false");
    return CExpr::integer(def->intAttr("value"), "LL");
  }
  auto it = names.find(v);
  return it != names.end() ? std::optional<CExpr>(CExpr::text(it->second)) : std::nullopt;
}

std::optional<CExpr> hostExpr(const Op &op, const std::map<const Value *, std::string> &names) {
  if (op.kind == OpKind::NumSms)
    return call("static_cast<long long>", {CExpr::text("multiprocessors")});
  std::vector<CExpr> args;
  for (const Value *operand : op.operands) {
    std::optional<CExpr> arg = hostScalar(operand, names);
    if (!arg)
      return std::nullopt;
    args.push_back(*arg);
  }
  if (op.kind == OpKind::Cast && args.size() == 1)
    return call(fmt::format("static_cast<{}>", hostCType(op.result()->type.dtype)), args);
  bool floatMath = op.results.size() == 1 && isFloat(op.result()->type.dtype);
  return operatorExpression(op.kind, args, {floatMath, MathPrecision::Accurate, true});
}

/// The kernel's `index`-th tensor parameter.
const Value *tensorParameter(const Kernel &kernel, size_t index) {
  size_t seen = 0;
  for (auto &arg : kernel.body.args)
    if (arg->type.isGlobal() && seen++ == index)
      return arg.get();
  return nullptr;
}

} // namespace

/// The alignment in bytes that the kernels' accesses to tensor parameter
/// `index` need of its data pointer and row strides: 16 for 16-byte vector
/// and asynchronous copies of tiles (a strip's chunk where it is shorter:
/// 8 bytes for chunks of 4 bf16 elements), two elements for the pairs that stores
/// of accumulators write (16-bit elements) or add (atomic_add), else one
/// element (vector copies too).
int accessAlignment(const LaunchVariant &variant, size_t index) {
  const Value *global = tensorParameter(*variant.kernel, index);
  int element = dtypeBytes(global->type.dtype);
  int bytes = element;
  walk(const_cast<Block &>(variant.kernel->body), [&](Op &op) {
    bool uses = false;
    for (const Value *operand : op.operands)
      uses = uses || operand == global;
    if (!uses || copiesElementwise(op))
      return;
    const Type *tile = op.kind == OpKind::Load    ? &op.result()->type
                       : op.kind == OpKind::Store ? &op.operands[1]->type
                                                  : nullptr;
    if (!tile) {
      bytes = std::max(bytes, 16); // asynchronous and bulk tensor copies
      return;
    }
    LayoutKind layout = tile->layout.kind;
    if (tile->isShared())
      bytes = std::max(bytes, 16);
    else if (layout == LayoutKind::Strip || layout == LayoutKind::StripCol)
      bytes = std::max(bytes, std::min(16, tile->layout.chunk * element));
    else if (layout == LayoutKind::Acc && op.kind == OpKind::Store && (element == 2 || op.hasAttr("accumulate")))
      bytes = std::max(bytes, 2 * element);
  });
  return bytes;
}

int accessAlignment(const std::vector<LaunchVariant> &variants, size_t index) {
  int bytes = 1;
  for (const LaunchVariant &variant : variants)
    bytes = std::max(bytes, accessAlignment(variant, index));
  return bytes;
}

/// Whether a kernel writes tensor parameter `index` with bulk tensor copies,
/// which write a row's last 16 bytes whole even where the row ends inside
/// them (on the H200, into the next 7 bf16 elements of a 1001-element row
/// in a 1008-element stride).
bool bulkStored(const std::vector<LaunchVariant> &variants, size_t index) {
  bool stored = false;
  for (const LaunchVariant &variant : variants) {
    const Value *global = tensorParameter(*variant.kernel, index);
    walk(const_cast<Block &>(variant.kernel->body), [&](Op &op) {
      stored = stored || (op.kind == OpKind::TmaStore && op.operands[1] == global);
    });
  }
  return stored;
}

namespace {

/// Whether `op` divides (integers) by its second operand.
bool dividesIntegers(const Op &op) {
  return (op.kind == OpKind::Div || op.kind == OpKind::Rem || op.kind == OpKind::CDiv) && op.operands.size() == 2 &&
         !isFloat(op.operands[1]->type.dtype);
}

/// Prints one scalar op of the launch block as a host local named
/// `prefix` + a number, after a check that returns an error rather than
/// divide by a zero size; false after reporting an op the host cannot
/// compute. `what` names the computation for those messages.
bool emitHostScalarOp(const Op &op, std::map<const Value *, std::string> &names, const std::string &prefix, int &temp,
                      const std::string &what, const std::string &fn, const std::string &targetName, CodeWriter &out,
                      DiagnosticEngine &diags) {
  std::optional<CExpr> expr = op.results.size() == 1 ? hostExpr(op, names) : std::nullopt;
  if (!expr) {
    diags.report(op.loc, DiagId::UnsupportedOnTarget, fmt::format("computing `{}` in {}", mnemonicOf(op.kind), what),
                 targetName);
    return false;
  }
  const Op *divisorDef = dividesIntegers(op) ? op.operands[1]->definingOp : nullptr;
  if (divisorDef && divisorDef->kind == OpKind::Const && divisorDef->intAttr("value") == 0) {
    diags.report(op.loc, DiagId::DivisorIsZero, mnemonicOf(op.kind));
    return false;
  }
  if (dividesIntegers(op) && !(divisorDef && divisorDef->kind == OpKind::Const)) {
    std::optional<CExpr> divisor = hostScalar(op.operands[1], names);
    out.line("if ({} == 0) return {}_fail(TKC_ERROR_SHAPE, \"{} divides by zero (`{}` at line {})\");", divisor->str(),
             fn, what, mnemonicOf(op.kind), op.loc.line);
  }
  std::string n = fmt::format("{}{}", prefix, temp++);
  out.line("const {} {} = {};", hostCType(op.result()->type.dtype), n, expr->str());
  names[op.result()] = n;
  return true;
}

/// The launch block's ops whose results only variant guards read, directly
/// or through other such ops: the choice of a specialisation computes them,
/// the grid does not.
std::set<const Op *> guardOnlyOps(const Kernel &k) {
  std::set<const Op *> guardOnly;
  for (auto it = k.launch.ops.rbegin(); it != k.launch.ops.rend(); ++it) {
    const Op &op = **it;
    if (op.kind == OpKind::VariantGuard) {
      guardOnly.insert(&op);
      continue;
    }
    bool used = false, onlyByGuards = true;
    for (auto &user : k.launch.ops)
      for (const Value *operand : user->operands)
        for (auto &result : op.results)
          if (operand == result.get()) {
            used = true;
            onlyByGuards = onlyByGuards && guardOnly.count(user.get());
          }
    if (used && onlyByGuards)
      guardOnly.insert(&op);
  }
  return guardOnly;
}

/// Prints the scalar ops of the launch block as host locals and returns the
/// three grid extents (`num_sms` reads the `multiprocessors` local), or
/// nothing after reporting an op the host cannot compute. The launcher
/// returns an error rather than divide by a zero size or launch a grid of
/// negative extent.
std::optional<std::vector<std::string>> emitGridExtents(const Kernel &k, std::map<const Value *, std::string> &names,
                                                        const std::string &fn, const std::string &targetName,
                                                        CodeWriter &out, DiagnosticEngine &diags) {
  int temp = 0;
  std::vector<std::string> grid{"1", "1", "1"};
  std::set<const Op *> guardOnly = guardOnlyOps(k);
  for (auto &op : k.launch.ops) {
    if (op->kind == OpKind::Const || guardOnly.count(op.get()))
      continue;
    if (op->kind == OpKind::Grid) {
      for (size_t i = 0; i < 3 && i < op->operands.size(); ++i) {
        std::optional<CExpr> extent = hostScalar(op->operands[i], names);
        if (!extent) {
          diags.report(op->loc, DiagId::UnsupportedOnTarget, "this grid extent", targetName);
          return std::nullopt;
        }
        grid[i] = extent->str();
        if (!op->operands[i]->definingOp || op->operands[i]->definingOp->kind != OpKind::Const)
          out.line("if ({0} < 0 || {0} > 0x7fffffff) return {1}_fail(TKC_ERROR_SHAPE, \"the grid's {2} extent %lld "
                   "is out of range\", (long long)({0}));",
                   grid[i], fn, "xyz"[i]);
      }
      continue;
    }
    if (!emitHostScalarOp(*op, names, "g", temp, "the grid", fn, targetName, out, diags))
      return std::nullopt;
  }
  return grid;
}

/// The launch block's variant guards, and the ops they read, in block order.
std::vector<const Op *> guardSlice(const Kernel &k) {
  std::set<const Op *> needed;
  for (auto it = k.launch.ops.rbegin(); it != k.launch.ops.rend(); ++it) {
    const Op &op = **it;
    bool feedsGuard = op.kind == OpKind::VariantGuard;
    for (auto &result : op.results)
      for (const Op *user : needed)
        feedsGuard |= std::find(user->operands.begin(), user->operands.end(), result.get()) != user->operands.end();
    if (feedsGuard)
      needed.insert(&op);
  }
  std::vector<const Op *> slice;
  for (auto &op : k.launch.ops)
    if (needed.count(op.get()) && op->kind != OpKind::Const)
      slice.push_back(op.get());
  return slice;
}

/// Kernels that need more than 48 KiB of dynamic shared memory must say so
/// before their first launch on each device.
void emitSharedMemoryOptIn(const LaunchVariant &variant, const std::string &fn, CodeWriter &out) {
  if (variant.sharedBytes <= Target::kDefaultSharedBytes)
    return;
  out.line("static tkc::host::PerDevice shared_memory_allowed;");
  out.line("if (const int status = tkc::host::allow_shared_memory({}_message, shared_memory_allowed, device, "
           "reinterpret_cast<const void *>(&{}), {})) return status;",
           fn, variant.functionName, variant.sharedBytes);
}

/// Launches the variant's kernel with `args` on the caller's stream and
/// returns the launch's status from the launcher `fn`.
void emitLaunch(const LaunchVariant &variant, const std::vector<std::string> &args, const std::string &fn,
                CodeWriter &out) {
  std::string argText;
  for (size_t i = 0; i < args.size(); ++i)
    argText += (i ? ", " : "") + args[i];
  out.line("{}<<<grid, {}, {}, cuda_stream>>>({});", variant.functionName, variant.kernel->warps * Target::kWarpSize,
           variant.sharedBytes, argText);
  out.line("const cudaError_t status = cudaGetLastError();");
  out.line("if (status != cudaSuccess) return {}_fail(TKC_ERROR_LAUNCH, \"launch failed: %s\", cudaGetErrorString(status));",
           fn);
  out.line("return TKC_OK;");
}

/// The kernel's arguments in parameter order: each tensor's data pointer and
/// outer strides, then the scalar symbols (specialised ones as constants).
std::vector<std::string> kernelArguments(const Kernel &k, const std::map<std::string, DimPosition> &symbols) {
  std::vector<std::string> args;
  for (auto &arg : k.body.args) {
    if (arg->type.isGlobal()) {
      std::string n = sourceIdentifier(arg->nameHint);
      args.push_back(fmt::format("static_cast<{}{} *>({}->data)", arg->type.isOutput ? "" : "const ",
                                 elementCType(arg->type.dtype), n));
      for (size_t d = 0; d + 1 < arg->type.dims.size(); ++d)
        args.push_back(fmt::format("{}->strides[{}]", n, d));
    } else if (symbols.count(arg->nameHint)) {
      args.push_back(fmt::format("int({})", sourceIdentifier(arg->nameHint)));
    } else {
      int64_t value = 0;
      for (auto &[p, v] : k.specialization)
        if (p == arg->nameHint)
          value = v;
      args.push_back(std::to_string(value));
    }
  }
  return args;
}

/// The launch block's arguments as host code: a symbol names its local,
/// another scalar parameter is a constant of the specialisation or, where
/// it is none, the launcher's parameter of that name.
std::map<const Value *, std::string> launchArgumentNames(const Kernel &k,
                                                         const std::map<std::string, DimPosition> &symbols) {
  std::map<const Value *, std::string> names;
  for (auto &arg : k.launch.args) {
    names[arg.get()] = sourceIdentifier(arg->nameHint);
    if (!symbols.count(arg->nameHint))
      for (auto &[p, v] : k.specialization)
        if (p == arg->nameHint)
          names[arg.get()] = CExpr::integer(v, "LL").operand(Precedence::Postfix);
  }
  return names;
}

/// Picks specialisation `v` where `condition` (its static dims and
/// constants) holds and the sizes give each constant it was compiled for:
/// the guards' expressions are computed in a block of their own.
bool emitGuardedChoice(const Kernel &k, size_t v, const std::string &condition,
                       const std::map<std::string, DimPosition> &symbols, const std::string &fn,
                       const std::string &targetName, CodeWriter &out, DiagnosticEngine &diags) {
  std::vector<const Op *> slice = guardSlice(k);
  out.open(fmt::format("if (variant < 0{}{})", condition.empty() ? "" : " && ", condition));
  std::map<const Value *, std::string> names = launchArgumentNames(k, symbols);
  std::vector<std::string> guards, picks;
  int temp = 0;
  for (const Op *op : slice) {
    if (op->kind != OpKind::VariantGuard) {
      if (!emitHostScalarOp(*op, names, "p", temp, "the choice of a specialisation", fn, targetName, out, diags))
        return false;
      continue;
    }
    std::optional<CExpr> picked = hostScalar(op->operands[0], names);
    guards.push_back(fmt::format("{} == {}", picked->str(), op->intAttr("value")));
    picks.push_back(fmt::format("{} = {}", op->strAttr("name"), op->intAttr("value")));
  }
  std::string all, joinedPicks;
  for (size_t i = 0; i < guards.size(); ++i) {
    all += (i ? " && " : "") + guards[i];
    joinedPicks += (i ? ", " : "") + picks[i];
  }
  if (all.empty())
    out.line("variant = {};", v);
  else
    out.line("if ({}) variant = {}; // {}", all, v, joinedPicks);
  out.close();
  return true;
}

// --- sm_90a launches: tensor maps and persistent grids ------------------------

/// The launch of a kernel that reads through bulk tensor copies: it builds
/// one tensor map per copied tensor (128-byte swizzled boxes, zero fill past
/// the tensor's end), computes the grid from the launch block (which may ask
/// for the number of multiprocessors) and passes the maps after the usual
/// arguments. Emitted inside the specialisation's `if`.
bool emitTensorMapLaunch(const Kernel &k, const LaunchVariant &variant, const std::string &fn,
                         const std::map<std::string, DimPosition> &symbols, const std::string &targetName,
                         NameTable &locals, CodeWriter &out, DiagnosticEngine &diags) {
  std::map<const Value *, std::string> names = launchArgumentNames(k, symbols);
  bool needsSms = std::any_of(k.launch.ops.begin(), k.launch.ops.end(),
                              [](const std::unique_ptr<Op> &op) { return op->kind == OpKind::NumSms; });
  if (needsSms) {
    out.line("int multiprocessors = 0;");
    out.line("if (const int status = tkc::host::multiprocessors({}_message, device, &multiprocessors)) return status;", fn);
  }
  std::optional<std::vector<std::string>> grid = emitGridExtents(k, names, fn, targetName, out, diags);
  if (!grid)
    return false;
  out.line("const dim3 grid{{unsigned({}), unsigned({}), unsigned({})}};", (*grid)[0], (*grid)[1], (*grid)[2]);
  out.line("if (grid.x == 0 || grid.y == 0 || grid.z == 0) return TKC_OK; // nothing to do");

  // Tensor maps: dims of zero (an empty K) still need a valid map; no copy
  // reads it then.
  std::vector<std::string> mapArgs;
  for (const TensorMapUse &use : tensorMapsOf(k)) {
    std::string n = sourceIdentifier(use.global->nameHint);
    std::string map = locals.fresh(n + "_tmap");
    DType dtype = use.global->type.dtype;
    // The copy engine moves 8-bit floats as bytes: it never converts them.
    const char *type = dtype == DType::BF16  ? "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16"
                       : dtype == DType::F32 ? "CU_TENSOR_MAP_DATA_TYPE_FLOAT32"
                       : isF8(dtype)         ? "CU_TENSOR_MAP_DATA_TYPE_UINT8"
                                             : "CU_TENSOR_MAP_DATA_TYPE_FLOAT16";
    int bytes = dtypeBytes(dtype);
    out.line("CUtensorMap {};", map);
    size_t rank = use.global->type.dims.size();
    if (rank == 2)
      out.line("if (tkc_make_tensor_map_2d(&{5}, {0}->data, {1}, std::max<int64_t>({0}->sizes[0], 1), "
               "std::max<int64_t>({0}->sizes[1], 1), std::max<int64_t>({0}->strides[0], 1) * {2}, {3}, {4}) != 0)",
               n, type, bytes, use.boxRows, use.boxCols, map);
    else
      out.line("if (tkc_make_tensor_map(&{6}, {0}->data, {1}, {2}, {0}->sizes, {0}->strides, {3}, {4}, {5}) != 0)",
               n, type, rank, bytes, use.boxRows, use.boxCols, map);
    out.line("  return {}_fail(TKC_ERROR_LAUNCH, \"could not encode the tensor map of {}\");", fn,
             use.global->nameHint);
    mapArgs.push_back(map);
  }
  emitSharedMemoryOptIn(variant, fn, out);
  std::vector<std::string> args = kernelArguments(k, symbols);
  args.insert(args.end(), mapArgs.begin(), mapArgs.end());
  emitLaunch(variant, args, fn, out);
  return true;
}

} // namespace

DLType dlType(DType dtype) {
  switch (dtype) {
  case DType::BF16: return {4, 16};
  case DType::F16: return {2, 16};
  // DLPack's kDLFloat8_e4m3fn and kDLFloat8_e5m2.
  case DType::F8E4M3: return {10, 8};
  case DType::F8E5M2: return {12, 8};
  case DType::F32: return {2, 32};
  case DType::I32: return {0, 32};
  case DType::I1: return {6, 8};
  }
  return {0, 0};
}

LauncherShape analyzeLauncher(const std::vector<LaunchVariant> &variants) {
  LauncherShape shape;
  const Kernel &first = *variants.front().kernel;
  for (auto &arg : first.body.args)
    if (arg->type.isGlobal())
      shape.tensors.push_back(arg.get());
  const std::vector<const Value *> &tensors = shape.tensors;

  // Symbols: the first tensor dim that names one defines its value.
  for (size_t t = 0; t < tensors.size(); ++t)
    for (size_t d = 0; d < tensors[t]->type.dims.size(); ++d)
      for (auto &variant : variants) {
        const Dim &dim = variant.kernel->body.args[t]->type.dims[d];
        if (!dim.isStatic() && !shape.symbols.count(dim.symbol)) {
          shape.symbols[dim.symbol] = {t, d};
          shape.symbolOrder.push_back(dim.symbol);
        }
      }

  // Compile-time parameters: a dim when some tensor dim equals the value in
  // every specialisation; otherwise a constant the caller passes.
  for (auto &[param, value] : first.specialization) {
    shape.parameters.push_back(param);
    for (size_t t = 0; t < tensors.size(); ++t)
      for (size_t d = 0; d < tensors[t]->type.dims.size(); ++d) {
        bool matches = true;
        for (auto &variant : variants) {
          const Dim &dim = variant.kernel->body.args[t]->type.dims[d];
          int64_t expected = 0;
          for (auto &[p, v] : variant.kernel->specialization)
            if (p == param)
              expected = v;
          matches = matches && dim.isStatic() && dim.derived.empty() && dim.size == expected;
        }
        if (matches)
          shape.parameterDims[param].push_back({t, d});
      }
  }
  for (auto &param : shape.parameters)
    if (!shape.parameterDims.count(param))
      shape.constants.push_back(param);
  return shape;
}

std::string launcherParameters(const LauncherShape &shape) {
  std::string signature;
  for (auto *t : shape.tensors)
    signature += fmt::format("const tkc_tensor *{}, ", sourceIdentifier(t->nameHint));
  for (auto &c : shape.constants)
    signature += fmt::format("int64_t {}, ", sourceIdentifier(c));
  return signature + "void *stream";
}

std::string launcherArguments(const LauncherShape &shape) {
  std::string arguments;
  for (auto *t : shape.tensors)
    arguments += sourceIdentifier(t->nameHint) + ", ";
  for (auto &c : shape.constants)
    arguments += sourceIdentifier(c) + ", ";
  return arguments + "stream";
}

std::string targetSymbol(const Target &target) {
  std::string symbol;
  for (char c : target.name)
    if (c != '_')
      symbol += c;
  return symbol;
}

namespace {

/// The launcher's checks that tensor `t`'s data pointer is `bytes`-byte
/// aligned and its outer strides multiples of as many bytes (nothing where
/// that is one element); `when` names the specialisation that needs them,
/// if only one does.
void emitAlignmentChecks(const Value &t, int bytes, const std::string &fn, const std::string &when, CodeWriter &out) {
  std::string n = sourceIdentifier(t.nameHint);
  int elements = bytes / dtypeBytes(t.type.dtype);
  out.line("if (reinterpret_cast<uintptr_t>({0}->data) % {2}) return {1}_fail(TKC_ERROR_ALIGNMENT, \"{3} must be "
           "{2}-byte aligned{4}\");",
           n, fn, bytes, t.nameHint, when);
  if (elements > 1)
    for (size_t d = 0; d + 1 < t.type.dims.size(); ++d)
      out.line("if ({0}->strides[{2}] < 0 || {0}->strides[{2}] % {3}) return {1}_fail(TKC_ERROR_ALIGNMENT, "
               "\"{4}.strides[{2}] must be a non-negative multiple of {3}{5}\");",
               n, fn, d, elements, t.nameHint, when);
}

/// The alignment every specialisation needs of tensor `index`, if they
/// agree.
std::optional<int> uniformAlignment(const std::vector<LaunchVariant> &variants, size_t index) {
  int bytes = accessAlignment(variants.front(), index);
  for (const LaunchVariant &variant : variants)
    if (accessAlignment(variant, index) != bytes)
      return std::nullopt;
  return bytes;
}

/// The alignment checks of the tensors whose specialisations copy them in
/// vectors of different widths (rows of 384 columns in 8-byte chunks, of
/// 768 in 16-byte ones; a tile through bulk copies at one head size, in
/// registers at another), each as the specialisation the sizes chose
/// needs.
void emitSpecialisationAlignment(const std::vector<const Value *> &tensors, const std::vector<LaunchVariant> &variants,
                                 const std::string &fn, CodeWriter &out) {
  for (size_t v = 0; v < variants.size(); ++v) {
    std::string values;
    for (auto &[param, value] : variants[v].kernel->specialization)
      values += fmt::format("{}{} = {}", values.empty() ? " for " : ", ", param, value);
    bool opened = false;
    for (size_t t = 0; t < tensors.size(); ++t) {
      if (uniformAlignment(variants, t))
        continue;
      if (!opened)
        out.open(fmt::format("if (variant == {})", v));
      opened = true;
      emitAlignmentChecks(*tensors[t], accessAlignment(variants[v], t), fn, values, out);
    }
    if (opened)
      out.close();
  }
}

} // namespace

bool emitTargetLauncher(const std::string &sourceKernel, const Target &target,
                        const std::vector<LaunchVariant> &variants, CodeWriter &out, DiagnosticEngine &diags) {
  const Kernel &first = *variants.front().kernel;
  LauncherShape shape = analyzeLauncher(variants);
  const std::vector<const Value *> &tensors = shape.tensors;
  const std::map<std::string, DimPosition> &symbols = shape.symbols;

  std::string fn = "tkc_" + sourceKernel;
  out.line("// The {} code: checks the arguments, picks the specialisation and launches; 0 on success.", target.name);
  out.open(fmt::format("extern \"C\" int {}_{}({})", fn, targetSymbol(target), launcherParameters(shape)));
  out.line("{}_message[0] = 0;", fn);
  out.line("TKC_NVTX_RANGE(\"{}_{}\");", fn, targetSymbol(target));
  // Structural checks first: they read only the descriptors, so they answer
  // the same with or without a GPU.
  // Source names are printed as their C++ spelling in code (`n`) and as
  // written in messages (`shown`).
  NameTable locals;
  for (auto *t : tensors)
    locals.reserve(sourceIdentifier(t->nameHint));
  for (auto &s : shape.symbolOrder)
    locals.reserve(sourceIdentifier(s));
  for (auto &c : shape.constants)
    locals.reserve(sourceIdentifier(c));
  size_t tensorIndex = 0;
  for (auto *t : tensors) {
    std::string n = sourceIdentifier(t->nameHint);
    const std::string &shown = t->nameHint;
    size_t rank = t->type.dims.size();
    bool rowsWrittenWhole = bulkStored(variants, tensorIndex);
    // Where the specialisations copy the tensor in vectors of different
    // widths, the sizes pick one first (below).
    std::optional<int> alignBytes = uniformAlignment(variants, tensorIndex++);
    DLType dl = dlType(t->type.dtype);
    out.line("if (!{0}) return {1}_fail(TKC_ERROR_NULL_POINTER, \"{2} is null\");", n, fn, shown);
    out.line("if ({0}->struct_size != sizeof(tkc_tensor) || {0}->abi_version != TKC_ABI_VERSION) return {1}_fail("
             "TKC_ERROR_ABI, \"{2} is a tkc_tensor of %u bytes and ABI version %u; this launcher takes %u bytes and "
             "version %u\", (unsigned){0}->struct_size, (unsigned){0}->abi_version, (unsigned)sizeof(tkc_tensor), "
             "(unsigned)TKC_ABI_VERSION);",
             n, fn, shown);
    out.line("if ({0}->dtype.code != {2} || {0}->dtype.bits != {3} || {0}->dtype.lanes != 1) return {1}_fail("
             "TKC_ERROR_DTYPE, \"{5} must be {4}, not %s\", tkc::host::dtype_name({0}->dtype));",
             n, fn, dl.code, dl.bits, dtypeName(t->type.dtype), shown);
    out.line("if (!{0}->data) return {1}_fail(TKC_ERROR_NULL_POINTER, \"{2}'s data is null\");", n, fn, shown);
    out.line("if ({0}->rank != {2}) return {1}_fail(TKC_ERROR_SHAPE, \"{3} must have rank {2}, not %d\", (int){0}->rank);",
             n, fn, rank, shown);
    out.line("if ({0}->strides[{2}] != 1) return {1}_fail(TKC_ERROR_STRIDE, \"{3} must have unit stride in its last dim\");",
             n, fn, rank - 1, shown);
    if (alignBytes)
      emitAlignmentChecks(*t, *alignBytes, fn, "", out);
    for (size_t d = 0; d + 1 < rank; ++d)
      if (!alignBytes || *alignBytes == dtypeBytes(t->type.dtype))
        out.line("if ({0}->strides[{2}] < 0) return {1}_fail(TKC_ERROR_STRIDE, \"{3}.strides[{2}] must be "
                 "non-negative\");",
                 n, fn, d, shown);
    for (size_t d = 0; d < rank; ++d)
      out.line("if ({0}->sizes[{2}] < 0 || {0}->sizes[{2}] > 0x7fffffff) return {1}_fail(TKC_ERROR_SHAPE, "
               "\"{3}.sizes[{2}] is out of range\");",
               n, fn, d, shown);
    if (rowsWrittenWhole && rank > 1)
      out.line("if ({0}->sizes[{2}] % {3}) return {1}_fail(TKC_ERROR_ALIGNMENT, \"{4}'s rows must be a multiple of 16 "
               "bytes long ({3} elements): bulk tensor stores write them in 16-byte pieces\");",
               n, fn, rank - 1, 16 / dtypeBytes(t->type.dtype), shown);
  }
  for (auto &s : shape.symbolOrder) {
    DimPosition p = symbols.at(s);
    out.line("const long long {} = {}->sizes[{}];", sourceIdentifier(s), sourceIdentifier(tensors[p.tensor]->nameHint),
             p.dim);
  }
  // Every other mention of a symbol must agree with its first.
  for (size_t t = 0; t < tensors.size(); ++t)
    for (size_t d = 0; d < tensors[t]->type.dims.size(); ++d) {
      const Dim &dim = first.body.args[t]->type.dims[d];
      // Derived dims are checked against their expressions (below).
      if (dim.isStatic() || !dim.derived.empty() ||
          (symbols.at(dim.symbol).tensor == t && symbols.at(dim.symbol).dim == d))
        continue;
      out.line("if ({0}->sizes[{1}] != {2}) return {3}_fail(TKC_ERROR_SHAPE, \"{4}.sizes[{1}] is %lld but {5} is %lld\", "
               "(long long){0}->sizes[{1}], {2});",
               sourceIdentifier(tensors[t]->nameHint), d, sourceIdentifier(dim.symbol), fn, tensors[t]->nameHint,
               dim.symbol);
    }
  // A compile-time dim must agree wherever it appears before it picks a
  // specialisation.
  for (auto &[param, positions] : shape.parameterDims)
    for (size_t i = 1; i < positions.size(); ++i) {
      const Value *firstTensor = tensors[positions[0].tensor], *otherTensor = tensors[positions[i].tensor];
      out.line("if ({0}->sizes[{1}] != {2}->sizes[{3}]) return {4}_fail(TKC_ERROR_SHAPE, \"{6}.sizes[{1}] is %lld but "
               "{7}.sizes[{3}] is %lld; both are {5}\", (long long){0}->sizes[{1}], (long long){2}->sizes[{3}]);",
               sourceIdentifier(otherTensor->nameHint), positions[i].dim, sourceIdentifier(firstTensor->nameHint),
               positions[0].dim, fn, param, otherTensor->nameHint, firstTensor->nameHint);
    }

  // The specialisation: the first whose static dims and constants match
  // and, where the sizes pick a constant, whose guards hold.
  bool guarded = std::any_of(variants.begin(), variants.end(), [](const LaunchVariant &variant) {
    return !guardSlice(*variant.kernel).empty();
  });
  out.line("int variant = -1;");
  for (size_t v = 0; v < variants.size(); ++v) {
    const Kernel &k = *variants[v].kernel;
    std::vector<std::string> conditions;
    for (size_t t = 0; t < tensors.size(); ++t)
      for (size_t d = 0; d < k.body.args[t]->type.dims.size(); ++d) {
        const Dim &dim = k.body.args[t]->type.dims[d];
        if (dim.isStatic() && dim.derived.empty())
          conditions.push_back(fmt::format("{}->sizes[{}] == {}", sourceIdentifier(tensors[t]->nameHint), d, dim.size));
      }
    for (auto &[param, value] : k.specialization)
      if (!shape.parameterDims.count(param))
        conditions.push_back(fmt::format("{} == {}", sourceIdentifier(param), value));
    std::string condition;
    for (size_t i = 0; i < conditions.size(); ++i)
      condition += (i ? " && " : "") + conditions[i];
    if (guarded) {
      if (!emitGuardedChoice(k, v, condition, symbols, fn, target.name, out, diags))
        return false;
      continue;
    }
    if (condition.empty()) {
      out.line("{}variant = {};", v ? "else " : "", v);
      break;
    }
    out.line("{}if ({}) variant = {};", v ? "else " : "", condition, v);
  }
  std::string values, valueArgs;
  for (auto &param : shape.parameters) {
    values += fmt::format("{}{} = %lld", values.empty() ? "" : ", ", param);
    auto it = shape.parameterDims.find(param);
    if (it != shape.parameterDims.end())
      valueArgs += fmt::format(", (long long){}->sizes[{}]", sourceIdentifier(tensors[it->second[0].tensor]->nameHint),
                               it->second[0].dim);
    else
      valueArgs += fmt::format(", (long long){}", sourceIdentifier(param));
  }
  if (shape.parameters.empty())
    out.line("if (variant < 0) return {}_fail(TKC_ERROR_NO_SPECIALIZATION, \"the tensor sizes do not match the "
             "kernel's static dims\");",
             fn);
  else
    out.line("if (variant < 0) return {}_fail(TKC_ERROR_NO_SPECIALIZATION, \"no specialisation for {}\"{});", fn, values,
             valueArgs);
  // After the specialisation, so that a constant outside its set is
  // reported as such rather than as the sizes it would give.
  emitDerivedDimChecks(shape, first, fn, out);
  emitSpecialisationAlignment(tensors, variants, fn, out);

  // Then the device: its architecture and where each tensor lives.
  out.line("int device = 0, capability = 0;");
  out.line("if (const int status = tkc::host::current_device({}_message, &device, &capability)) return status;", fn);
  int cc = target.computeCapability;
  bool archSpecific = target.isArchSpecific();
  out.line("if ({}) return {}_fail(TKC_ERROR_NO_TARGET, \"this is {} code; device %d is sm_%d\", device, capability);",
           archSpecific ? fmt::format("capability != {}", cc) : fmt::format("capability < {}", cc), fn,
           archSpecific ? target.name : target.name + " (and newer)");
  for (auto *t : tensors)
    out.line("if (const int status = tkc::host::check_device_memory({0}_message, {1}, \"{2}\", device)) return status;",
             fn, sourceIdentifier(t->nameHint), t->nameHint);
  out.line("cudaStream_t cuda_stream = static_cast<cudaStream_t>(stream);");

  for (size_t v = 0; v < variants.size(); ++v) {
    const LaunchVariant &variant = variants[v];
    const Kernel &k = *variant.kernel;
    out.open(fmt::format("if (variant == {})", v));
    if (!tensorMapsOf(k).empty()) { // sm_90a: bulk tensor copies
      if (!emitTensorMapLaunch(k, variant, fn, symbols, target.name, locals, out, diags))
        return false;
      out.close();
      continue;
    }
    // Grid from the launch block.
    std::map<const Value *, std::string> names = launchArgumentNames(k, symbols);
    std::optional<std::vector<std::string>> grid = emitGridExtents(k, names, fn, target.name, out, diags);
    if (!grid)
      return false;
    out.line("const dim3 grid{{unsigned({}), unsigned({}), unsigned({})}};", (*grid)[0], (*grid)[1], (*grid)[2]);
    out.line("if (grid.x == 0 || grid.y == 0 || grid.z == 0) return TKC_OK; // nothing to do");
    out.line("if (grid.y > 65535 || grid.z > 65535) return {}_fail(TKC_ERROR_SHAPE, \"grid is too large\");", fn);
    emitSharedMemoryOptIn(variant, fn, out);
    emitLaunch(variant, kernelArguments(k, symbols), fn, out);
    out.close();
  }
  out.line("return {}_fail(TKC_ERROR_NO_SPECIALIZATION, \"no kernel for variant %d\", variant);", fn);
  out.close();
  return true;
}

} // namespace tkc::codegen
