// tkc-opt: reads textual tile IR, runs the named passes in order, verifies
// the IR after parsing and after every pass, and prints the result. Each
// pass is tested alone with it.

#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "passes/Pass.h"
#include "support/FileIO.h"

#include <llvm/Support/CommandLine.h>

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

using namespace tkc;
namespace cl = llvm::cl;

namespace {

cl::opt<std::string> inputPath(cl::Positional, cl::desc("<input .tkir file, or - for stdin>"), cl::init("-"));
cl::list<std::string> passNames("pass", cl::desc("Run the named pass (repeatable; runs in the order given)"),
                                cl::value_desc("name"));
cl::opt<std::string> targetName("target", cl::desc("Target GPU: sm_80 or sm_90a"), cl::init("sm_80"));
cl::opt<bool> splitInputFile("split-input-file",
                             cl::desc("Process each chunk between `// -----` lines as a separate input"));
cl::opt<bool> printLocations("print-locations", cl::desc("Print `loc(LINE:COL)` after every op"));
cl::opt<bool> verifyEach("verify-each", cl::desc("Verify the IR after every pass"), cl::init(true));

/// One piece of the input: its text and the line of the input it starts on.
struct Chunk {
  std::string_view text;
  unsigned firstLine = 1;
};

bool isSplitMarker(std::string_view line) {
  size_t start = line.find_first_not_of(" \t");
  return start != std::string_view::npos && line.substr(start).starts_with("// -----");
}

std::vector<Chunk> splitInput(std::string_view text, bool split) {
  if (!split)
    return {{text, 1}};
  std::vector<Chunk> chunks;
  size_t chunkStart = 0;
  unsigned chunkLine = 1, line = 1;
  for (size_t lineStart = 0; lineStart < text.size(); ++line) {
    size_t newline = text.find('\n', lineStart);
    size_t lineEnd = newline == std::string_view::npos ? text.size() : newline + 1;
    if (isSplitMarker(text.substr(lineStart, lineEnd - lineStart))) {
      chunks.push_back({text.substr(chunkStart, lineStart - chunkStart), chunkLine});
      chunkStart = lineEnd;
      chunkLine = line + 1;
    }
    lineStart = lineEnd;
  }
  chunks.push_back({text.substr(chunkStart), chunkLine});
  return chunks;
}

/// Parses, transforms and prints one chunk; false if anything failed.
bool processChunk(const Chunk &chunk, const std::string &bufferName, const Target &target, SourceManager &sources,
                  std::string &output) {
  // Blank lines in front keep diagnostics at the line numbers of the input.
  uint32_t fileId = sources.addBuffer(bufferName, std::string(chunk.firstLine - 1, '\n') + std::string(chunk.text));
  DiagnosticEngine diags(sources);
  std::unique_ptr<ir::Module> module = ir::parseModule(fileId, sources, diags);
  if (!module || diags.hasErrors() || !ir::verifyModule(*module, diags))
    return false;
  for (const std::string &name : passNames) {
    std::unique_ptr<Pass> pass = createPass(name);
    if (!pass->run(*module, target, diags) || diags.hasErrors())
      return false;
    if (verifyEach && !ir::verifyModule(*module, diags))
      return false;
  }
  ir::PrintOptions options;
  options.locations = printLocations;
  ir::printModule(*module, output, options);
  return true;
}

} // namespace

int main(int argc, char **argv) {
  cl::ParseCommandLineOptions(argc, argv, "tkc-opt: runs tile IR passes for testing\n");

  SourceManager sources;
  DiagnosticEngine driverDiags(sources);
  const Target *target = Target::lookup(targetName);
  if (!target)
    driverDiags.report({}, DiagId::UnknownTarget, targetName.getValue());
  for (const std::string &name : passNames)
    if (!createPass(name))
      driverDiags.report({}, DiagId::UnknownPass, name);
  if (driverDiags.hasErrors())
    return 1;
  std::optional<InputFile> input = readInputFile(inputPath, driverDiags);
  if (!input)
    return 1;

  std::string bufferName = inputPath == "-" ? "<stdin>" : inputPath.getValue();
  std::string_view text(input->text);
  bool ok = true;
  std::string output;
  std::vector<Chunk> chunks = splitInput(text, splitInputFile);
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (i)
      output += "// -----\n";
    ok &= processChunk(chunks[i], bufferName, *target, sources, output);
  }
  std::fwrite(output.data(), 1, output.size(), stdout);
  return ok ? 0 : 1;
}
