#include "codegen/CudaEmitter.h"
#include "codegen/HostEmitter.h"
#include "codegen/KernelEmitter.h"
#include "codegen/LauncherAbi.h"
#include "ir/Registers.h"
#include "support/CommentText.h"

#include <map>
#include <set>

namespace tkc::codegen {

using namespace ir;

namespace {
/// Registers a thread of `kernel` may have, and what sets that limit (empty
/// where it is the target's per-thread limit). A block's threads share the
/// register file: ptxas holds them to the share of one block of
/// `warps(...)`, the launch bound (codegen asks for one block a
/// multiprocessor at least). Warpgroup roles reallocate it with setmaxnreg:
/// a role's threads have the count it sets, the most of which is what the
/// register tiles (all in the consumers' roles) may take.
std::pair<int, std::string> threadRegisterLimit(const Kernel &kernel, const Target &target) {
  int64_t roleRegisters = 0;
  walk(const_cast<Block &>(kernel.body), [&](Op &op) {
    if (op.kind == OpKind::WarpgroupRole)
      roleRegisters = std::max(roleRegisters, op.intAttr("regs"));
  });
  if (roleRegisters > 0) {
    int limit = static_cast<int>(std::min<int64_t>(target.maxThreadRegisters, roleRegisters));
    return {limit, limit < target.maxThreadRegisters ? " after setmaxnreg" : ""};
  }
  int threads = kernel.warps * Target::kWarpSize;
  int limit = target.threadRegisterLimit(threads);
  return {limit, limit < target.maxThreadRegisters ? fmt::format(" in a block of {} threads", threads) : ""};
}

/// Tiles that need more registers than a thread may have compile, but
/// ptxas spills them to local memory, which is slow; the warning points at
/// the tile that takes the most (once for the specialisations of a kernel).
void warnRegisterPressure(const Kernel &kernel, const Target &target, DiagnosticEngine &diags,
                          std::set<std::pair<uint32_t, uint32_t>> &warnedAt) {
  RegisterPeak peak = peakLiveRegisters(kernel);
  auto [limit, limitedBy] = threadRegisterLimit(kernel, target);
  if (peak.registers <= limit || !peak.largest)
    return;
  const Value *tile = originOf(peak.largest);
  SourceLocation loc = tile->definingOp ? tile->definingOp->loc : kernel.loc;
  if (!warnedAt.insert({loc.line, loc.column}).second)
    return;
  // Where the block's share sets the limit, more warps split the tiles
  // finer but shrink the share as much.
  diags.report(loc, DiagId::RegisterPressure, kernel.sourceName.empty() ? kernel.name : kernel.sourceName,
               peak.registers, limit, limitedBy, tile->nameHint.empty() ? "a tile" : tile->nameHint,
               threadRegisters(peak.largest->type),
               limit < target.maxThreadRegisters ? "use smaller tiles" : "use more warps or smaller tiles");
}

/// Two source kernels whose generated names meet (kernels `k` and `k_error`:
/// `tkc_k_error` is both k's error function and k_error's launcher) would
/// give a file that does not compile, or links the wrong function: the
/// later kernel is reported, naming the earlier.
bool checkFileScopeNames(const std::vector<std::string> &order,
                         const std::map<std::string, std::vector<TargetLaunch>> &launchers, DiagnosticEngine &diags) {
  std::map<std::string, std::string> owner; // generated name -> source kernel
  for (const std::string &source : order) {
    const std::vector<TargetLaunch> &targets = launchers.at(source);
    std::vector<std::string> names = launcherSymbols(source, targets);
    for (const TargetLaunch &launch : targets)
      for (const LaunchVariant &variant : launch.variants)
        names.push_back(variant.functionName);
    for (const std::string &name : names) {
      auto [it, inserted] = owner.emplace(name, source);
      if (!inserted && it->second != source) {
        diags.report(targets.front().variants.front().kernel->loc, DiagId::GeneratedNameClash, source, name,
                     it->second);
        return false;
      }
    }
  }
  return true;
}

/// `text` as a C string literal: quotes, backslashes and every byte outside
/// printable ASCII escaped, so a file name cannot end the directive's line.
std::string stringLiteral(const std::string &text) {
  std::string literal = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\')
      literal += {'\\', static_cast<char>(c)};
    else if (c < 0x20 || c >= 0x7f)
      literal += fmt::format("\\{:03o}", c);
    else
      literal += static_cast<char>(c);
  }
  return literal + "\"";
}

/// Replaces each kLineReset line with the `#line` of the line after it in
/// the generated file.
std::string resolveLineResets(const std::string &text, const std::string &outputLiteral) {
  std::string result;
  size_t lineNumber = 0, start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    std::string_view line(text.data() + start, (end == std::string::npos ? text.size() : end) - start);
    ++lineNumber;
    std::string_view trimmed = line.substr(std::min(line.find_first_not_of(' '), line.size()));
    if (trimmed == kLineReset)
      result += fmt::format("#line {} {}", lineNumber + 1, outputLiteral);
    else
      result += line;
    if (end == std::string::npos)
      break;
    result += '\n';
    start = end + 1;
  }
  return result;
}
} // namespace

bool emitCuda(const std::vector<TargetModule> &modules, const std::string &sourceName, std::string &out,
              DiagnosticEngine &diags, const SourceManager *sources, std::string *header,
              const std::string &headerGuard, const std::string *outputName) {
  std::string file = sourceName;
  if (auto slash = file.find_last_of('/'); slash != std::string::npos)
    file = file.substr(slash + 1);
  std::string targetNames;
  bool hopper = false;
  for (const TargetModule &part : modules) {
    targetNames += (targetNames.empty() ? "" : ", ") + part.target->name;
    hopper = hopper || part.target->hasHopperInstructions();
  }
  std::string generatedFrom = fmt::format("Generated by tkc 0.1.0 from {} for {}.", commentSafe(file), targetNames);
  CodeWriter writer;
  writer.line("// {} Do not edit: edit the .tk source.", generatedFrom);
  writer.line("#include <cstdarg>");
  writer.line("#include <cstdio>");
  writer.line("#include <cstdint>");
  writer.line("#include <algorithm>");
  writer.line("#include <cmath>");
  writer.line("#include <cuda_runtime.h>");
  writer.blank();
  writer.line("#include \"tkc_host.h\"");
  writer.line("#include \"tkc_launch.h\"");
  writer.line("#include \"tkc_runtime.cuh\"");
  if (hopper)
    writer.line("#include \"tkc_hopper.cuh\"");
  writer.blank();

  // The kernels go to their own text first: the wgmma wrappers they call
  // come before them.
  CodeWriter body;
  std::set<WgmmaShape> wgmmaShapes;
  std::map<std::string, std::vector<TargetLaunch>> launchers;
  std::vector<std::string> launcherOrder;
  std::set<std::pair<uint32_t, uint32_t>> warnedAt; // specialisations of a kernel share their tiles
  for (const TargetModule &part : modules) {
    const Target &target = *part.target;
    for (auto &kernel : part.module->kernels) {
      warnRegisterPressure(*kernel, target, diags, warnedAt);
      KernelEmitter emitter(*kernel, target, file, sources, body, wgmmaShapes, diags);
      if (outputName)
        emitter.setLineDirectives(stringLiteral(sourceName));
      if (modules.size() > 1)
        emitter.setSymbolSuffix(fmt::format("_{}", targetSymbol(target)));
      if (!emitter.emit())
        return false;
      body.blank();
      std::string source = kernel->sourceName.empty() ? kernel->name : kernel->sourceName;
      if (!launchers.count(source))
        launcherOrder.push_back(source);
      std::vector<TargetLaunch> &perTarget = launchers[source];
      if (perTarget.empty() || perTarget.back().target != &target)
        perTarget.push_back({&target, {}});
      perTarget.back().variants.push_back({kernel.get(), emitter.functionName(), emitter.sharedMemoryBytes()});
      if (emitter.sharedMemoryBytes() > target.sharedMemoryBytes) {
        diags.report(kernel->loc, DiagId::SharedMemoryExceeded, emitter.sharedMemoryBytes(), target.sharedMemoryBytes);
        return false;
      }
    }
  }
  if (!checkFileScopeNames(launcherOrder, launchers, diags))
    return false;
  // Every target compiles the same source kernels, whose tensors, `where`
  // sets and constants do not depend on the target: one dispatcher calls
  // each target's launcher with the same arguments.
  for (auto &source : launcherOrder) {
    if (!emitLaunchers(source, launchers[source], body, diags))
      return false;
    body.blank();
  }
  emitWgmmaWrappers(wgmmaShapes, writer);
  out = std::move(writer.text()) + body.text();
  if (outputName)
    out = resolveLineResets(out, stringLiteral(*outputName));
  if (header) {
    std::vector<std::pair<std::string, std::vector<TargetLaunch>>> kernels;
    for (auto &source : launcherOrder)
      kernels.push_back({source, launchers[source]});
    CodeWriter headerWriter;
    emitLauncherHeader(generatedFrom, headerGuard, kernels, headerWriter);
    *header = std::move(headerWriter.text());
  }
  return true;
}

bool emitCuda(const Module &module, const Target &target, const std::string &sourceName, std::string &out,
              DiagnosticEngine &diags, const SourceManager *sources) {
  return emitCuda({{&module, &target}}, sourceName, out, diags, sources);
}

} // namespace tkc::codegen
