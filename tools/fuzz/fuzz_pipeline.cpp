// The whole compiler on arbitrary bytes, as the driver runs it: lex, parse,
// check, lower, verify, every pass, emit CUDA; once per target. Besides
// crashes it catches a pass that reports success but leaves IR the verifier
// rejects, and output that differs between two runs on the same input.

#include "FuzzSupport.h"
#include "codegen/CudaEmitter.h"
#include "frontend/Lexer.h"
#include "frontend/Parser.h"
#include "frontend/Sema.h"
#include "ir/Verifier.h"
#include "lowering/LowerToIR.h"
#include "passes/Pass.h"

using namespace tkc;

namespace {

/// Lowers, transforms and emits for one target; the CUDA text, or empty
/// when a phase reported an error.
std::string compileFor(const ast::File &file, const Target &target, SourceManager &sources) {
  DiagnosticEngine diags(sources, fuzz::diagnosticSink());
  std::unique_ptr<ir::Module> module = lowerToIR(file, diags);
  if (!module || diags.hasErrors())
    return {};
  if (!ir::verifyModule(*module, diags))
    fuzz::invariantBroken("lowering produced IR the verifier rejects");
  for (const auto &pass : createPipeline()) {
    if (!pass->run(*module, target, diags) || diags.hasErrors())
      return {};
    if (!ir::verifyModule(*module, diags))
      fuzz::invariantBroken("a pass produced IR the verifier rejects");
  }
  std::string cuda;
  if (!codegen::emitCuda(*module, target, "fuzz.tk", cuda, diags, &sources) || diags.hasErrors())
    return {};
  return cuda;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  SourceManager sources;
  DiagnosticEngine diags(sources, fuzz::diagnosticSink());
  uint32_t fileId = sources.addBuffer("fuzz.tk", fuzz::toText(data, size));
  std::vector<Token> tokens = lexBuffer(sources, fileId, diags);
  if (diags.hasErrors())
    return 0;
  ast::File file = parseFile(tokens, diags);
  if (diags.hasErrors() || !sema::checkFile(file, diags) || diags.hasErrors())
    return 0;

  for (const char *targetName : {"sm_80", "sm_90a"}) {
    const Target *target = Target::lookup(targetName);
    std::string first = compileFor(file, *target, sources);
    // Lowering reads the tree without changing it, so a second run must
    // give the same bytes; a difference means the output depends on, say,
    // pointer order in a hash map.
    if (!first.empty() && compileFor(file, *target, sources) != first)
      fuzz::invariantBroken("two compilations of the same input differ");
  }
  return 0;
}
