// The CUDA emitter on hand-written IR, for ops that no example reaches.

#include "codegen/CudaEmitter.h"
#include "ir/Parser.h"
#include "ir/Verifier.h"

#include <gtest/gtest.h>

#include <cstdio>

using namespace tkc;

namespace {

/// The CUDA of a one-kernel module given as IR text; empty on any error.
std::string cudaOf(const std::string &irText, const char *target) {
  SourceManager sources;
  std::FILE *sink = std::tmpfile();
  DiagnosticEngine diags(sources, sink);
  uint32_t file = sources.addBuffer("test.tkir", irText);
  std::unique_ptr<ir::Module> module = ir::parseModule(file, sources, diags);
  std::string out;
  bool ok = module && ir::verifyModule(*module, diags) &&
            codegen::emitCuda(*module, *Target::lookup(target), "test.tkir", out, diags);
  std::fclose(sink);
  return ok ? out : std::string();
}

const char *kOperandFill = R"(kernel @k(%C: global<out f32[M, M]>, %M: i32) warps(4) {
launch:
  %one = const {value = 1} : i32
  grid %one, %one, %one
body:
  %a = fill {value = 0.5} : reg<bf16[64, 32], #opa<4x1>>
  %u = undef : reg<bf16[64, 32], #opa<4x1>>
}
)";

TEST(Codegen, OperandFillSetsEveryRegisterToTwoValues) {
  std::string cuda = cudaOf(kOperandFill, "sm_90a");
  ASSERT_FALSE(cuda.empty());
  // 64 x 32 over four warps: 16 x 32 per warp, 16 values per thread, two to a register.
  EXPECT_NE(cuda.find("uint32_t a[8];"), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("TKC_UNROLL for (int x = 0; x < 8; ++x) a[x] = tkc::pack_bf16(0.5f, 0.5f);"), std::string::npos)
      << cuda;
}

TEST(Codegen, UndefIsDeclaredAndNeverWritten) {
  std::string cuda = cudaOf(kOperandFill, "sm_90a");
  ASSERT_FALSE(cuda.empty());
  EXPECT_NE(cuda.find("uint32_t u[8];"), std::string::npos) << cuda;
  EXPECT_EQ(cuda.find("u[x] ="), std::string::npos) << cuda;
}

} // namespace
