// The tile IR parser and verifier on arbitrary bytes: malformed text must be
// a diagnostic, never a crash or hang. A module that parses must also print
// and parse back to the same text (the printer's documented promise).

#include "FuzzSupport.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"

using namespace tkc;

namespace {

std::unique_ptr<ir::Module> parse(SourceManager &sources, DiagnosticEngine &diags, std::string text) {
  uint32_t fileId = sources.addBuffer("fuzz.tkir", std::move(text));
  return ir::parseModule(fileId, sources, diags);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  SourceManager sources;
  DiagnosticEngine diags(sources, fuzz::diagnosticSink());
  std::unique_ptr<ir::Module> module = parse(sources, diags, fuzz::toText(data, size));
  if (!module || diags.hasErrors())
    return 0;
  // Only verified modules are promised a faithful round trip: the verifier
  // is what rules out, say, a value used before it is defined.
  if (!ir::verifyModule(*module, diags))
    return 0;

  ir::PrintOptions options;
  options.locations = true;
  std::string printed = ir::printModule(*module, options);
  DiagnosticEngine reparseDiags(sources, fuzz::diagnosticSink());
  std::unique_ptr<ir::Module> reparsed = parse(sources, reparseDiags, printed);
  if (!reparsed || reparseDiags.hasErrors())
    fuzz::invariantBroken("printed IR does not parse back");
  if (ir::printModule(*reparsed, options) != printed)
    fuzz::invariantBroken("printed IR does not print back identically");
  return 0;
}
