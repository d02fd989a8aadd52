// tkc: compiles a .tk file to CUDA C++. The phases run in order (lex, parse,
// check, lower, passes, emit), and --emit stops after any of them to print
// its result, so each phase can be tested on its own.

#include "codegen/CudaEmitter.h"
#include "codegen/Identifiers.h"
#include "frontend/AST.h"
#include "frontend/Lexer.h"
#include "frontend/Parser.h"
#include "frontend/Sema.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "lowering/LowerToIR.h"
#include "passes/Pass.h"
#include "support/FileIO.h"
#include "Ptx.h"

#include <fmt/format.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

using namespace tkc;
namespace cl = llvm::cl;

namespace {

enum class EmitKind { Tokens, Ast, Ir, Cuda, Ptx };
enum class ColorMode { Auto, Always, Never };

/// The name --print-after and --stop-after use for lowering itself.
constexpr const char *kLowerPhase = "lower";

cl::OptionCategory tkcCategory("tkc options");

cl::opt<std::string> inputPath(cl::Positional, cl::desc("<input .tk file, or - for stdin>"), cl::Required,
                               cl::cat(tkcCategory));
cl::opt<std::string> outputPath("o",
                                cl::desc("Output file (- for stdout). Default: the input with .tk replaced by .cu "
                                         "for --emit=cuda, stdout otherwise"),
                                cl::value_desc("file"), cl::cat(tkcCategory));
cl::opt<std::string> targetName("target",
                                cl::desc("Target GPU: sm_80 (default) or sm_90a, or a comma-separated list of them "
                                         "for one file holding the code of each (--emit=cuda)"),
                                cl::init("sm_80"), cl::cat(tkcCategory));
cl::opt<std::string> headerPath("emit-header",
                                cl::desc("Also write the C header declaring the launch functions (--emit=cuda)"),
                                cl::value_desc("file"), cl::cat(tkcCategory));
cl::opt<EmitKind> emitKind("emit", cl::desc("What to produce"), cl::init(EmitKind::Cuda),
                           cl::values(clEnumValN(EmitKind::Tokens, "tokens", "one token per line"),
                                      clEnumValN(EmitKind::Ast, "ast", "the checked syntax tree"),
                                      clEnumValN(EmitKind::Ir, "ir", "the tile IR after the passes"),
                                      clEnumValN(EmitKind::Cuda, "cuda", "CUDA C++ (default)"),
                                      clEnumValN(EmitKind::Ptx, "ptx",
                                                 "PTX: the CUDA compiled by nvcc -ptx -lineinfo for the target")),
                           cl::cat(tkcCategory));
cl::opt<std::string> nvccPath("nvcc", cl::desc("The nvcc that --emit=ptx runs (default: $NVCC, then PATH)"),
                              cl::value_desc("path"), cl::cat(tkcCategory));
cl::opt<std::string> passList("passes",
                              cl::desc("Passes to run: `all` (default), `none`, or a comma-separated list"),
                              cl::init("all"), cl::cat(tkcCategory));
cl::list<std::string> printAfter("print-after",
                                 cl::desc("Print the IR to stderr after this pass (or `lower`); repeatable"),
                                 cl::value_desc("pass"), cl::cat(tkcCategory));
cl::opt<bool> printAfterAll("print-after-all", cl::desc("Print the IR to stderr after lowering and every pass"),
                            cl::cat(tkcCategory));
cl::opt<std::string> stopAfter("stop-after", cl::desc("Stop the pipeline after this pass (or `lower`)"),
                               cl::value_desc("pass"), cl::cat(tkcCategory));
cl::opt<std::string> kernelName("kernel", cl::desc("Compile only the kernel with this name"),
                                cl::value_desc("name"), cl::cat(tkcCategory));
cl::opt<bool> printLocations("print-locations", cl::desc("Print `loc(LINE:COL)` after every IR op"),
                             cl::cat(tkcCategory));
cl::opt<bool> noLineDirectives("no-line-directives",
                               cl::desc("Leave out the `#line` directives that map the kernels' code to .tk lines "
                                        "(for nvcc -lineinfo, profilers and debuggers)"),
                               cl::cat(tkcCategory));
cl::opt<bool> verifyEach("verify-each", cl::desc("Verify the IR after every pass (it is always verified after lowering)"),
                         cl::cat(tkcCategory));
cl::opt<bool> warningsAsErrors("Werror", cl::desc("Treat warnings as errors"), cl::cat(tkcCategory));
cl::opt<unsigned> errorLimit("error-limit", cl::desc("Stop after this many errors (0: no limit; default 20)"),
                             cl::init(20), cl::cat(tkcCategory));
// Registered under a placeholder name: LLVM's support library brings its
// own boolean `--color`, which main() replaces with this one.
// For the test that checks that no name of the output can be a source name
// unless it is one.
cl::opt<bool> spellIdentifiers("spell-identifiers",
                               cl::desc("Print `NAME SPELLING` for each word of the input: how a source name NAME "
                                        "is spelled in the generated CUDA"),
                               cl::Hidden, cl::cat(tkcCategory));
cl::opt<ColorMode> colorMode("tkc-color", cl::desc("Colour diagnostics"), cl::init(ColorMode::Auto),
                             cl::values(clEnumValN(ColorMode::Auto, "auto", "when stderr is a terminal and NO_COLOR is unset"),
                                        clEnumValN(ColorMode::Always, "always", "always"),
                                        clEnumValN(ColorMode::Never, "never", "never")),
                             cl::cat(tkcCategory));

bool useColor() {
  switch (colorMode) {
  case ColorMode::Always: return true;
  case ColorMode::Never: return false;
  case ColorMode::Auto: break;
  }
  const char *noColor = std::getenv("NO_COLOR");
  return isatty(STDERR_FILENO) && !(noColor && *noColor);
}

/// Whether the output is the generated code, or compiled from it.
bool emitsCode() { return emitKind == EmitKind::Cuda || emitKind == EmitKind::Ptx; }

/// The input's path without its `.tk`.
std::string inputStem() {
  llvm::StringRef path = inputPath;
  return path.consume_back(".tk") ? path.str() : inputPath.getValue();
}

std::string defaultOutputPath() {
  if (!emitsCode() || inputPath == "-")
    return "-";
  return inputStem() + (emitKind == EmitKind::Ptx ? ".ptx" : ".cu");
}

std::string printTokens(const std::vector<Token> &tokens) {
  std::string out;
  for (const Token &token : tokens)
    out += fmt::format("{}:{} {} '{}'\n", token.loc.line, token.loc.column, tokenKindName(token.kind), token.text);
  return out;
}

std::string printIR(const ir::Module &module) {
  ir::PrintOptions options;
  options.locations = printLocations;
  return ir::printModule(module, options);
}

/// The passes to run, in order, or nullopt after reporting an unknown name.
std::optional<std::vector<std::unique_ptr<Pass>>> selectPasses(DiagnosticEngine &diags) {
  std::vector<std::unique_ptr<Pass>> passes;
  if (passList == "all")
    return createPipeline();
  if (passList == "none")
    return passes;
  bool ok = true;
  llvm::SmallVector<llvm::StringRef> names;
  llvm::StringRef(passList).split(names, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef name : names) {
    if (auto pass = createPass(name.trim().str()))
      passes.push_back(std::move(pass));
    else {
      diags.report({}, DiagId::UnknownPass, name.trim().str());
      ok = false;
    }
  }
  if (!ok)
    return std::nullopt;
  return passes;
}

/// --print-after and --stop-after name lowering or a pass of the pipeline.
bool checkPhaseNames(DiagnosticEngine &diags) {
  bool ok = true;
  auto check = [&](const std::string &name) {
    if (name != kLowerPhase && !createPass(name)) {
      diags.report({}, DiagId::UnknownPass, name);
      ok = false;
    }
  };
  for (const std::string &name : printAfter)
    check(name);
  if (!stopAfter.empty())
    check(stopAfter);
  return ok;
}

bool shouldPrintAfter(const std::string &phase) {
  if (printAfterAll)
    return true;
  for (const std::string &name : printAfter)
    if (name == phase)
      return true;
  return false;
}

void printAfterPhase(const std::string &phase, const ir::Module &module) {
  if (!shouldPrintAfter(phase))
    return;
  std::string text = fmt::format("// -----// IR after {} //----- //\n", phase) + printIR(module);
  std::fwrite(text.data(), 1, text.size(), stderr);
}

/// The targets --target names, or an empty list after reporting why.
std::vector<const Target *> selectTargets(DiagnosticEngine &diags) {
  std::vector<const Target *> targets;
  llvm::SmallVector<llvm::StringRef> names;
  llvm::StringRef(targetName).split(names, ',', -1, /*KeepEmpty=*/true);
  bool ok = true;
  for (llvm::StringRef name : names) {
    const Target *target = Target::lookup(name.trim().str());
    if (!target) {
      diags.report({}, DiagId::UnknownTarget, name.trim().str());
      ok = false;
    } else if (std::find(targets.begin(), targets.end(), target) != targets.end()) {
      diags.report({}, DiagId::DuplicateTarget, target->name);
      ok = false;
    } else {
      targets.push_back(target);
    }
  }
  if (ok && targets.size() > 1 && emitKind != EmitKind::Cuda)
    diags.report({}, DiagId::OptionNeedsCuda, "more than one target");
  if (nvccPath.getNumOccurrences() && emitKind != EmitKind::Ptx)
    diags.report({}, DiagId::OptionNeedsPtx, "`--nvcc`");
  if (!headerPath.empty() && emitKind != EmitKind::Cuda)
    diags.report({}, DiagId::OptionNeedsCuda, "`--emit-header`");
  return ok ? targets : std::vector<const Target *>{};
}

/// `TKC_ATTENTION_FWD_H` for `out/attention_fwd.h`.
std::string headerGuard(const std::string &path) {
  std::string name = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  std::string guard = "TKC_";
  for (char c : name)
    guard += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : '_';
  return guard;
}

/// Checks, lowers and optimises `file` for one target. Returns the module,
/// or null; for --emit=ast and --emit=ir, the text to print in `printed`.
std::unique_ptr<ir::Module> lowerForTarget(ast::File &file, const Target &target, DiagnosticEngine &diags,
                                           std::optional<std::string> &printed) {
  // The other kernels are dropped before the checks: their errors do not
  // stop the one asked for.
  if (!kernelName.empty()) {
    std::erase_if(file.kernels, [](const ast::Kernel &kernel) { return kernel.name != kernelName.getValue(); });
    if (file.kernels.empty()) {
      diags.report({}, DiagId::KernelNotFound, kernelName.getValue());
      return nullptr;
    }
  }
  if (!sema::checkFile(file, diags, target.computeCapability) || diags.hasErrors())
    return nullptr;
  if (emitKind == EmitKind::Ast) {
    printed = ast::dumpAST(file);
    return nullptr;
  }

  // Every pass is needed for correct CUDA: without tail, smem-plan or
  // barriers the output compiles but computes the wrong thing.
  if (emitsCode() && (passList != "all" || !stopAfter.empty())) {
    diags.report({}, DiagId::PartialPipelineForCuda, passList != "all" ? "--passes" : "--stop-after");
    return nullptr;
  }
  auto passes = selectPasses(diags);
  if (!passes)
    return nullptr;
  std::unique_ptr<ir::Module> module = lowerToIR(file, diags, target.computeCapability);
  if (!module || diags.hasErrors() || !ir::verifyModule(*module, diags))
    return nullptr;
  printAfterPhase(kLowerPhase, *module);
  if (stopAfter != kLowerPhase) {
    for (const auto &pass : *passes) {
      if (!pass->run(*module, target, diags) || diags.hasErrors())
        return nullptr;
      if (verifyEach && !ir::verifyModule(*module, diags))
        return nullptr;
      printAfterPhase(pass->name(), *module);
      if (stopAfter == pass->name())
        break;
    }
  }

  if (emitKind == EmitKind::Ir) {
    printed = printIR(*module);
    return nullptr;
  }
  return module;
}

/// Runs everything after lexing, once per target; returns the text to
/// write (and the header's in `header` where asked for), or nullopt.
std::optional<std::string> compile(const std::vector<Token> &tokens, const std::vector<const Target *> &targets,
                                   DiagnosticEngine &diags, const SourceManager &sources, std::string &header) {
  std::vector<std::unique_ptr<ir::Module>> modules;
  std::vector<codegen::TargetModule> parts;
  for (const Target *target : targets) {
    ast::File file = parseFile(tokens, diags);
    if (diags.hasErrors())
      return std::nullopt;
    std::optional<std::string> printed;
    std::unique_ptr<ir::Module> module = lowerForTarget(file, *target, diags, printed);
    if (printed || !module)
      return printed;
    parts.push_back({module.get(), target});
    modules.push_back(std::move(module));
  }
  std::string cuda;
  // What the #line directives call the CUDA itself: the output, or for
  // --emit=ptx the file `tkc --emit=cuda` would have written.
  std::string outputName = outputPath.empty() ? defaultOutputPath() : outputPath.getValue();
  if (emitKind == EmitKind::Ptx)
    outputName = inputPath == "-" ? "<stdin>.cu" : inputStem() + ".cu";
  else if (outputName == "-")
    outputName = "<stdout>";
  if (!codegen::emitCuda(parts, inputPath == "-" ? "<stdin>" : inputPath.getValue(), cuda, diags, &sources,
                         headerPath.empty() ? nullptr : &header, headerGuard(headerPath),
                         noLineDirectives ? nullptr : &outputName) ||
      diags.hasErrors())
    return std::nullopt;
  if (emitKind == EmitKind::Ptx)
    return compileToPtx(cuda, {nvccPath, targets.front()->name}, diags);
  return cuda;
}

/// An option that takes one value, given twice, is an error rather than the
/// last one silently winning (`-o a -o b`: which file did the user mean?).
bool checkRepeatedOptions(DiagnosticEngine &diags) {
  bool ok = true;
  for (auto &entry : cl::getRegisteredOptions()) {
    cl::Option *option = entry.second;
    bool ours = llvm::is_contained(option->Categories, &tkcCategory);
    if (ours && option->getNumOccurrencesFlag() == cl::Optional && option->getNumOccurrences() > 1 &&
        entry.first() == option->ArgStr) {
      diags.report({}, DiagId::RepeatedOption, (option->ArgStr.size() == 1 ? "-" : "--") + option->ArgStr.str());
      ok = false;
    }
  }
  return ok;
}

/// Takes the option name `color` over from LLVM's own colour switch.
void claimColorOption() {
  llvm::StringMap<cl::Option *> &options = cl::getRegisteredOptions();
  if (auto it = options.find("color"); it != options.end() && it->second != &colorMode)
    it->second->removeArgument();
  colorMode.setArgStr("color");
}

} // namespace

int main(int argc, char **argv) {
  claimColorOption();
  cl::HideUnrelatedOptions(tkcCategory);
  cl::SetVersionPrinter([](llvm::raw_ostream &os) { os << "tkc 0.1.0\n"; });
  // On a bad option llvm::cl prints its message and exits with status 1.
  cl::ParseCommandLineOptions(argc, argv, "tkc: compiles tile kernels (.tk) to CUDA C++\n");

  if (spellIdentifiers) {
    auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(inputPath);
    if (!buffer) {
      std::fprintf(stderr, "tkc: error: cannot read %s\n", inputPath.c_str());
      return 1;
    }
    llvm::SmallVector<llvm::StringRef> words;
    (*buffer)->getBuffer().split(words, '\n', -1, false);
    for (llvm::StringRef word : words)
      if (!word.trim().empty())
        std::printf("%s %s\n", word.trim().str().c_str(), codegen::sourceIdentifier(word.trim().str()).c_str());
    return 0;
  }

  SourceManager sources;
  DiagnosticEngine diags(sources);
  diags.setColor(useColor());
  diags.setWarningsAsErrors(warningsAsErrors);
  diags.setErrorLimit(errorLimit);

  std::vector<const Target *> targets = selectTargets(diags);
  checkPhaseNames(diags);
  checkRepeatedOptions(diags);
  if (diags.hasErrors())
    return 1;

  std::optional<InputFile> input = readInputFile(inputPath, diags);
  if (!input)
    return 1;
  uint32_t fileId = sources.addBuffer(inputPath == "-" ? "<stdin>" : inputPath.getValue(), std::move(input->text));

  std::vector<Token> tokens = lexBuffer(sources, fileId, diags);
  std::optional<std::string> output;
  std::string header;
  if (emitKind == EmitKind::Tokens) {
    if (!diags.hasErrors())
      output = printTokens(tokens);
  } else if (!diags.limitReached()) {
    output = compile(tokens, targets, diags, sources, header);
  }
  if (!output || diags.hasErrors())
    return 1;
  std::string path = outputPath.empty() ? defaultOutputPath() : outputPath.getValue();
  if (!writeOutputFile(path, *output, &*input, diags))
    return 1;
  return headerPath.empty() || writeOutputFile(headerPath, header, &*input, diags) ? 0 : 1;
}
