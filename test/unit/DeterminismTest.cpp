// The whole pipeline, run twice in one process on the same source, prints
// the same CUDA: nothing may depend on where values happen to be allocated
// (the order of a set of pointers, say). The fuzzer checks this on random
// inputs; these are inputs where it once failed.

#include "codegen/CudaEmitter.h"
#include "frontend/Lexer.h"
#include "frontend/Parser.h"
#include "frontend/Sema.h"
#include "lowering/LowerToIR.h"
#include "passes/Pass.h"

#include <gtest/gtest.h>

#include <cstdio>

using namespace tkc;

namespace {

/// The CUDA of `source` for `target`, or empty on any error.
std::string compile(const std::string &source, const char *targetName) {
  const Target &target = *Target::lookup(targetName);
  SourceManager sources;
  std::FILE *sink = std::tmpfile();
  DiagnosticEngine diags(sources, sink);
  uint32_t file = sources.addBuffer("test.tk", source);
  std::vector<Token> tokens = lexBuffer(sources, file, diags);
  ast::File tree = parseFile(tokens, diags);
  std::string cuda;
  bool ok = !diags.hasErrors() && sema::checkFile(tree, diags, target.computeCapability) && !diags.hasErrors();
  std::unique_ptr<ir::Module> module = ok ? lowerToIR(tree, diags, target.computeCapability) : nullptr;
  ok = module && !diags.hasErrors();
  for (const auto &pass : ok ? createPipeline() : std::vector<std::unique_ptr<Pass>>{})
    ok = ok && pass->run(*module, target, diags) && !diags.hasErrors();
  ok = ok && codegen::emitCuda(*module, target, "test.tk", cuda, diags, &sources) && !diags.hasErrors();
  std::fclose(sink);
  return ok ? cuda : std::string();
}

// Two loads whose rows end at different limits, summed and reduced over
// rows: the tail pass masks the sum with the smaller limit, min(a, b), whose
// operands once came in the order of the loads' addresses.
const char *kTwoLimits = R"(kernel two_limits(X: f32[N, 64], Y: f32[N, 64], Z: out f32[M, 64])
  grid(cdiv(N, 64)) warps(4)
{
  a = load(X[block.x * 64 +: 64, :])
  b = load(Y[block.x * 96 +: 64, :])
  store(Z[block.x, :], colsum(a + b))
}
)";

TEST(Determinism, SameSourceSameCudaWithinOneProcess) {
  for (const char *target : {"sm_80", "sm_90a"}) {
    std::string first = compile(kTwoLimits, target);
    ASSERT_FALSE(first.empty()) << target;
    ASSERT_NE(first.find("tkc::min("), std::string::npos) << target;
    for (int run = 0; run < 4; ++run)
      EXPECT_EQ(compile(kTwoLimits, target), first) << target << ", run " << run + 2;
  }
}

} // namespace
