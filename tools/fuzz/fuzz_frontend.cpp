// Lexer, parser and semantic checks on arbitrary bytes. Whatever the input,
// they must report problems as diagnostics and return, never crash or hang.

#include "FuzzSupport.h"
#include "frontend/Lexer.h"
#include "frontend/Parser.h"
#include "frontend/Sema.h"

using namespace tkc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  SourceManager sources;
  DiagnosticEngine diags(sources, fuzz::diagnosticSink());
  uint32_t fileId = sources.addBuffer("fuzz.tk", fuzz::toText(data, size));

  std::vector<Token> tokens = lexBuffer(sources, fileId, diags);
  if (tokens.empty() || tokens.back().kind != TokenKind::Eof)
    fuzz::invariantBroken("the lexer's tokens do not end with Eof");
  // The driver stops here too: once the error limit is hit, later phases
  // would only produce dropped diagnostics.
  if (diags.limitReached())
    return 0;
  ast::File file = parseFile(tokens, diags);
  if (diags.hasErrors())
    return 0;
  bool ok = sema::checkFile(file, diags);
  if (ok != !diags.hasErrors())
    fuzz::invariantBroken("checkFile's result disagrees with the errors it reported");
  if (ok)
    (void)ast::dumpAST(file);
  return 0;
}
