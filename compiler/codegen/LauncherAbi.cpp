#include "codegen/LauncherAbi.h"

#include <algorithm>
#include <set>

namespace tkc::codegen {

using namespace ir;

namespace {

std::string joined(const std::vector<std::string> &items, const std::string &separator = ", ") {
  std::string text;
  for (size_t i = 0; i < items.size(); ++i)
    text += (i ? separator : "") + items[i];
  return text;
}

std::vector<LaunchVariant> allVariants(const std::vector<TargetLaunch> &targets) {
  std::vector<LaunchVariant> all;
  for (const TargetLaunch &launch : targets)
    all.insert(all.end(), launch.variants.begin(), launch.variants.end());
  return all;
}

/// Tensor `t`'s dim `d` as the info table names it: its expression, its
/// symbol, the compile-time parameter it equals, or its fixed size.
std::string dimName(const LauncherShape &shape, size_t t, size_t d) {
  const Dim &dim = shape.tensors[t]->type.dims[d];
  if (!dim.derived.empty())
    return dim.derived;
  if (!dim.isStatic())
    return dim.symbol;
  for (auto &[param, positions] : shape.parameterDims)
    for (const DimPosition &p : positions)
      if (p.tensor == t && p.dim == d)
        return param;
  return std::to_string(dim.size);
}

/// Each compile-time parameter's values over every target's variants.
std::map<std::string, std::set<int64_t>> whereValues(const std::vector<TargetLaunch> &targets) {
  std::map<std::string, std::set<int64_t>> values;
  for (const LaunchVariant &variant : allVariants(targets))
    for (auto &[param, value] : variant.kernel->specialization)
      values[param].insert(value);
  return values;
}

/// `Q: bf16[B, H, N, D], O: out bf16[...]` for comments.
std::string describeParameters(const LauncherShape &shape) {
  std::vector<std::string> items;
  for (size_t t = 0; t < shape.tensors.size(); ++t) {
    std::vector<std::string> dims;
    for (size_t d = 0; d < shape.tensors[t]->type.dims.size(); ++d)
      dims.push_back(dimName(shape, t, d));
    const Type &type = shape.tensors[t]->type;
    items.push_back(fmt::format("{}: {}{}[{}]", shape.tensors[t]->nameHint, type.isOutput ? "out " : "",
                                dtypeName(type.dtype), joined(dims)));
  }
  return joined(items);
}

std::string describeWheres(const LauncherShape &shape, const std::vector<TargetLaunch> &targets) {
  std::map<std::string, std::set<int64_t>> values = whereValues(targets);
  std::vector<std::string> items;
  for (auto &param : shape.parameters) {
    std::vector<std::string> list;
    for (int64_t v : values[param])
      list.push_back(std::to_string(v));
    items.push_back(fmt::format("{} in {{{}}}", param, joined(list)));
  }
  return items.empty() ? "" : " where " + joined(items);
}

void emitCommon(const std::string &fn, CodeWriter &out) {
  out.line("static thread_local char {}_message[tkc::host::kMessageBytes];", fn);
  out.blank();
  out.line("extern \"C\" const char *{}_error(void) {{ return {}_message; }}", fn, fn);
  out.blank();
  out.open(fmt::format("static int {}_fail(int status, const char *format, ...)", fn));
  out.line("va_list args;");
  out.line("va_start(args, format);");
  out.line("tkc::host::failv({}_message, status, format, args);", fn);
  out.line("va_end(args);");
  out.line("return status;");
  out.close();
  out.blank();
}

/// Tries the arch-specific targets (exact match) before the portable ones,
/// newest first.
std::vector<const Target *> dispatchOrder(const std::vector<TargetLaunch> &targets) {
  std::vector<const Target *> order;
  for (const TargetLaunch &launch : targets)
    order.push_back(launch.target);
  auto archSpecific = [](const Target *t) { return t->isArchSpecific(); };
  std::stable_sort(order.begin(), order.end(), [&](const Target *a, const Target *b) {
    if (archSpecific(a) != archSpecific(b))
      return archSpecific(a);
    return a->computeCapability > b->computeCapability;
  });
  return order;
}

void emitDispatcher(const std::string &fn, const LauncherShape &shape, const std::vector<TargetLaunch> &targets,
                    CodeWriter &out) {
  std::string args = launcherArguments(shape);
  out.line("// Launches the code for the current device's architecture; 0 on success.");
  out.open(fmt::format("extern \"C\" int {}({})", fn, launcherParameters(shape)));
  if (targets.size() == 1) {
    out.line("return {}_{}({});", fn, targetSymbol(*targets[0].target), args);
    out.close();
    return;
  }
  out.line("int device = 0, capability = 0;");
  out.line("// Without a device the first target's launcher still checks the arguments.");
  out.line("if (tkc::host::current_device({}_message, &device, &capability) != TKC_OK) return {}_{}({});", fn, fn,
           targetSymbol(*targets[0].target), args);
  std::vector<std::string> names;
  for (const Target *target : dispatchOrder(targets)) {
    bool archSpecific = target->isArchSpecific();
    out.line("if (capability {} {}) return {}_{}({});", archSpecific ? "==" : ">=", target->computeCapability, fn,
             targetSymbol(*target), args);
  }
  for (const TargetLaunch &launch : targets)
    names.push_back(launch.target->name);
  out.line("return {}_fail(TKC_ERROR_NO_TARGET, \"no code for device %d (sm_%d): this library holds {}\", device, "
           "capability);",
           fn, joined(names));
  out.close();
}

void emitInfo(const std::string &sourceKernel, const LauncherShape &shape, const std::vector<TargetLaunch> &targets,
              CodeWriter &out) {
  std::string fn = "tkc_" + sourceKernel;
  std::map<std::string, std::set<int64_t>> values = whereValues(targets);
  for (auto &param : shape.parameters) {
    std::vector<std::string> list;
    for (int64_t v : values[param])
      list.push_back(std::to_string(v));
    out.line("static const int64_t {}_where_{}[] = {{{}}};", fn, param, joined(list));
  }
  std::vector<std::string> wheres;
  for (auto &param : shape.parameters) {
    bool argument = std::find(shape.constants.begin(), shape.constants.end(), param) != shape.constants.end();
    wheres.push_back(fmt::format("{{\"{}\", {}, {}, {}_where_{}}}", param, argument ? 1 : 0, values[param].size(), fn,
                                 param));
  }
  if (!wheres.empty())
    out.line("static const tkc_where_info {}_wheres[] = {{{}}};", fn, joined(wheres));

  out.line("static const tkc_param_info {}_tensors[] = {{", fn);
  out.indent();
  for (size_t t = 0; t < shape.tensors.size(); ++t) {
    const Value *tensor = shape.tensors[t];
    std::vector<std::string> dims;
    for (size_t d = 0; d < tensor->type.dims.size(); ++d)
      dims.push_back("\"" + dimName(shape, t, d) + "\"");
    int alignment = 1;
    bool rowsWhole = false;
    for (const TargetLaunch &launch : targets) {
      alignment = std::max(alignment, accessAlignment(launch.variants, t));
      rowsWhole = rowsWhole || bulkStored(launch.variants, t);
    }
    DLType dl = dlType(tensor->type.dtype);
    int rowMultiple = rowsWhole && dims.size() > 1 ? 16 / dtypeBytes(tensor->type.dtype) : 1;
    out.line("{{\"{}\", {{{}, {}, 1}}, {}, {}, {{{}}}, {}, {}}},", tensor->nameHint, dl.code, dl.bits,
             tensor->type.isOutput ? 1 : 0, dims.size(), joined(dims), alignment, rowMultiple);
  }
  out.dedent();
  out.line("}};");
  std::vector<std::string> constants, targetNames;
  for (auto &c : shape.constants)
    constants.push_back("\"" + c + "\"");
  for (const TargetLaunch &launch : targets)
    targetNames.push_back("\"" + launch.target->name + "\"");
  if (!constants.empty())
    out.line("static const char *const {}_constants[] = {{{}}};", fn, joined(constants));
  out.line("static const char *const {}_targets[] = {{{}}};", fn, joined(targetNames));
  out.blank();
  out.line("// What {} takes, for loaders: {}{}", fn, describeParameters(shape), describeWheres(shape, targets));
  out.open(fmt::format("extern \"C\" const tkc_kernel_info *{}_info(void)", fn));
  out.line("static const tkc_kernel_info info = {{sizeof(tkc_kernel_info), TKC_ABI_VERSION, \"{}\", {}, {}_tensors, "
           "{}, {}, {}, {}, {}, {}_targets}};",
           sourceKernel, shape.tensors.size(), fn, constants.size(), constants.empty() ? "nullptr" : fn + "_constants",
           wheres.size(), wheres.empty() ? "nullptr" : fn + "_wheres", targetNames.size(), fn);
  out.line("return &info;");
  out.close();
}

} // namespace

std::vector<std::string> launcherSymbols(const std::string &sourceKernel, const std::vector<TargetLaunch> &targets) {
  std::string fn = "tkc_" + sourceKernel;
  LauncherShape shape = analyzeLauncher(targets.front().variants);
  std::vector<std::string> names = {fn,           fn + "_message", fn + "_error",   fn + "_fail",
                                    fn + "_info", fn + "_tensors", fn + "_targets", fn + "_constants",
                                    fn + "_wheres"};
  for (const TargetLaunch &launch : targets)
    names.push_back(fn + "_" + targetSymbol(*launch.target));
  for (auto &param : shape.parameters)
    names.push_back(fn + "_where_" + param);
  return names;
}

bool emitLaunchers(const std::string &sourceKernel, const std::vector<TargetLaunch> &targets, CodeWriter &out,
                   DiagnosticEngine &diags) {
  std::string fn = "tkc_" + sourceKernel;
  LauncherShape shape = analyzeLauncher(targets.front().variants);
  emitCommon(fn, out);
  for (const TargetLaunch &launch : targets) {
    if (!emitTargetLauncher(sourceKernel, *launch.target, launch.variants, out, diags))
      return false;
    out.blank();
  }
  emitDispatcher(fn, shape, targets, out);
  out.blank();
  emitInfo(sourceKernel, shape, targets, out);
  return true;
}

void emitLauncherHeader(const std::string &generatedFrom, const std::string &guard,
                        const std::vector<std::pair<std::string, std::vector<TargetLaunch>>> &kernels,
                        CodeWriter &out) {
  out.line("// {} Do not edit: edit the .tk source.", generatedFrom);
  out.line("// The launch functions of the generated .cu file; docs/abi.md describes them.");
  out.line("#ifndef {}", guard);
  out.line("#define {}", guard);
  out.blank();
  out.line("#include \"tkc_host.h\"");
  out.blank();
  out.line("#ifdef __cplusplus");
  out.line("extern \"C\" {{");
  out.line("#endif");
  for (auto &[sourceKernel, targets] : kernels) {
    std::string fn = "tkc_" + sourceKernel;
    LauncherShape shape = analyzeLauncher(targets.front().variants);
    std::string params = launcherParameters(shape);
    out.blank();
    out.line("// {}({}){}", sourceKernel, describeParameters(shape), describeWheres(shape, targets));
    out.line("int {}({});", fn, params);
    for (const TargetLaunch &launch : targets)
      out.line("int {}_{}({});", fn, targetSymbol(*launch.target), params);
    out.line("const char *{}_error(void);", fn);
    out.line("const tkc_kernel_info *{}_info(void);", fn);
  }
  out.blank();
  out.line("#ifdef __cplusplus");
  out.line("}}");
  out.line("#endif");
  out.line("#endif");
}

} // namespace tkc::codegen
