// The CUDA emitter on hand-written IR, for ops that no example reaches.

#include "codegen/CudaEmitter.h"
#include "codegen/Fragments.h"
#include "codegen/WgmmaWrappers.h"
#include "ir/Parser.h"
#include "ir/Registers.h"
#include "ir/Verifier.h"

#include <gtest/gtest.h>

#include <cstdio>

using namespace tkc;

namespace {

/// The CUDA of a one-kernel module given as IR text; empty on any error,
/// whose diagnostics go to `messages` if given.
std::string cudaOf(const std::string &irText, const char *target, std::string *messages = nullptr) {
  SourceManager sources;
  std::FILE *sink = std::tmpfile();
  DiagnosticEngine diags(sources, sink);
  uint32_t file = sources.addBuffer("test.tkir", irText);
  std::unique_ptr<ir::Module> module = ir::parseModule(file, sources, diags);
  std::string out;
  bool ok = module && ir::verifyModule(*module, diags) &&
            codegen::emitCuda(*module, *Target::lookup(target), "test.tkir", out, diags);
  if (messages) {
    std::rewind(sink);
    char buffer[4096];
    for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, sink)) > 0;)
      messages->append(buffer, n);
  }
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

// A producer warp copying a vector on an mbarrier (issuers = 32), and a
// consumer reading its columns' values; with issuers = 1 the copy has no
// lanes to share it.
const char *kWarpCopy = R"(kernel @k(%L: global<f32[B, N]>, %B: i32, %N: i32) warps(8) {
launch:
  %c1 = const {value = 1} : i32
  grid %c1, %c1, %c1
body:
  %zero = const {value = 0} : i32
  %true = const {value = 1} : i1
  %L_buf = smem_alloc {offset = 0} : smem<f32[64], stages = 2>
  %full = smem_alloc {offset = 512} : smem<i32[2, 2], #mbarrier>
  mbarrier_init %full {count = 33}
  barrier
  warpgroup_role {issuers = ISSUERS, regs = 24, role = "producer", warpgroups = 1}
  warp_copy %L_buf, %zero, %full, %L, %zero, %zero {checked = [0, 1], sizes = [0, 64]}
  mbarrier_expect_tx %full, %zero {bytes = 0}
  warpgroup_role {regs = 240, role = "consumer", warpgroups = 1}
  mbarrier_wait %full, %zero {release = 0}
  %l = stage_view %L_buf, %zero : smem<f32[64]>
  %lr = convert %l : reg<f32[64], #acccol<4x1>>
  mbarrier_arrive %full, %zero, %true {all_lanes = 1}
  warpgroup_role_end
}
)";

std::string withIssuers(const char *issuers) {
  std::string text = kWarpCopy;
  text.replace(text.find("ISSUERS"), 7, issuers);
  return text;
}

TEST(Codegen, WarpCopySharesTheElementsAmongTheLanesOfTheProducerWarp) {
  std::string cuda = cudaOf(withIssuers("32"), "sm_90a");
  ASSERT_FALSE(cuda.empty());
  EXPECT_NE(cuda.find("if (warp % 4 == 0) {"), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("TKC_UNROLL for (int col = lane; col < 64; col += 32) {"), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("tkc::cp_async_4(L_buf + (0) % 2 * 256 + col * 4, col < N ? src + int64_t(col) * 1 : L, "
                      "col < N ? 4 : 0);"),
            std::string::npos)
      << cuda;
  EXPECT_NE(cuda.find("tkc::cp_async_mbarrier_arrive_noinc(full + (0) % 2 * 8);"), std::string::npos) << cuda;
  // What one thread must issue, lane 0 issues.
  EXPECT_NE(cuda.find("if (lane == 0) tkc::mbarrier_arrive_expect_tx(full + (0) % 2 * 8, 0);"), std::string::npos)
      << cuda;
  // The consumer reads pairs of columns, and every lane arrives.
  EXPECT_NE(cuda.find("tkc::ld_shared_f32x2(l + (warp_n * 64 + j * 8 + lane % 4 * 2 + e) * 4, lr[x], lr[x + 1]);"),
            std::string::npos)
      << cuda;
  EXPECT_NE(cuda.find("tkc::mbarrier_arrive(full + (0) % 2 * 8);\n"), std::string::npos) << cuda;
  EXPECT_EQ(cuda.find("&& lane == 0) tkc::mbarrier_arrive(full"), std::string::npos) << cuda;
}

TEST(Codegen, WarpCopyNeedsAWarpOfIssuers) {
  std::string messages;
  EXPECT_TRUE(cudaOf(withIssuers("1"), "sm_90a", &messages).empty());
  EXPECT_NE(messages.find("error: a vector copy outside a warp's producer role is not supported on target sm_90a"),
            std::string::npos)
      << messages;
}

} // namespace

// Every width hopper-layout may choose gets a wrapper whose brace list holds
// N / 2 accumulators, with the other operands numbered after them.
TEST(Codegen, WgmmaWrapperForEveryWidth) {
  int widths = 0;
  for (int64_t n = 1; n <= 512; ++n) {
    if (!Target::isWgmmaWidth(n))
      continue;
    ++widths;
    int64_t regs = n / 2;
    for (const char *type : {"bf16", "f16"}) {
      for (bool aInRegisters : {false, true}) {
        codegen::WgmmaShape shape{n, type, aInRegisters};
        codegen::CodeWriter out;
        codegen::emitWgmmaWrappers({shape}, out);
        const std::string &text = out.text();
        SCOPED_TRACE(shape.wrapperName());
        EXPECT_NE(text.find(fmt::format("void {}(float (&d)[{}]", shape.wrapperName(), regs)), std::string::npos);
        EXPECT_NE(text.find(fmt::format("wgmma.mma_async.sync.aligned.m64n{}k16.f32.{}.{} ", n, type, type)),
                  std::string::npos);
        EXPECT_NE(text.find(fmt::format("\"{{%0, %1, ")), std::string::npos);
        EXPECT_NE(text.find(fmt::format("%{}}}, \"", regs - 1)), std::string::npos);
        EXPECT_NE(text.find(fmt::format("\"+f\"(d[{}])\n", regs - 1)), std::string::npos);
        EXPECT_EQ(text.find(fmt::format("d[{}]", regs)), std::string::npos);
        if (aInRegisters) {
          EXPECT_NE(text.find(fmt::format("setp.ne.b32 p, %{}, 0;", regs + 5)), std::string::npos);
          EXPECT_NE(text.find(fmt::format("\"{{%{}, %{}, %{}, %{}}}, \"", regs, regs + 1, regs + 2, regs + 3)),
                    std::string::npos);
          EXPECT_NE(text.find(fmt::format("\"%{}, p, 1, 1, %{};", regs + 4, regs + 6)), std::string::npos);
        } else {
          EXPECT_NE(text.find(fmt::format("setp.ne.b32 p, %{}, 0;", regs + 2)), std::string::npos);
          EXPECT_NE(text.find(fmt::format("\"%{}, %{}, p, 1, 1, %{}, %{};", regs, regs + 1, regs + 4, regs + 3)),
                    std::string::npos);
        }
      }
    }
  }
  EXPECT_EQ(widths, 15);
}

// The register model that the passes and the register-pressure warning
// count with is what the emitter declares: a thread's fragment.
TEST(Codegen, ThreadRegistersMatchFragments) {
  using ir::LayoutKind;
  int checked = 0;
  for (ir::DType dtype : {ir::DType::F32, ir::DType::BF16})
    for (int warpsM : {1, 2, 4, 8})
      for (int warpsN : {1, 2})
        for (int64_t rows : {64, 128, 256})
          for (int64_t cols : {64, 128, 256}) {
            for (LayoutKind kind : {LayoutKind::Acc, LayoutKind::OperandA}) {
              ir::Type tile = ir::Type::tile(dtype, {rows, cols}).withLayout(ir::MemSpace::Register, {kind, warpsM, warpsN});
              int64_t elements = kind == LayoutKind::OperandA ? codegen::operandACount(tile) * 2
                                                              : codegen::fragmentOf(tile).count();
              EXPECT_EQ(ir::threadRegisters(tile), elements * ir::dtypeBytes(dtype) / 4) << tile.str();
              ++checked;
            }
            for (int lanes : {8, 32}) {
              ir::Type strip = ir::Type::tile(dtype, {rows, cols})
                                   .withLayout(ir::MemSpace::Register, {LayoutKind::Strip, warpsM, 1, lanes});
              ir::Type rowVector = ir::Type::tile(dtype, {rows})
                                       .withLayout(ir::MemSpace::Register, {LayoutKind::StripRow, warpsM, 1, lanes});
              ir::Type colVector = ir::Type::tile(dtype, {cols})
                                       .withLayout(ir::MemSpace::Register, {LayoutKind::StripCol, warpsM, 1, lanes});
              for (const ir::Type &t : {strip, rowVector, colVector}) {
                EXPECT_EQ(ir::threadRegisters(t), codegen::fragmentOf(t).count() * ir::dtypeBytes(dtype) / 4)
                    << t.str();
                ++checked;
              }
            }
            ir::Type accRow = ir::Type::tile(dtype, {rows}).withLayout(ir::MemSpace::Register,
                                                                        {LayoutKind::AccRow, warpsM, warpsN});
            ir::Type accCol = ir::Type::tile(dtype, {cols}).withLayout(ir::MemSpace::Register,
                                                                        {LayoutKind::AccCol, warpsM, warpsN});
            for (const ir::Type &t : {accRow, accCol}) {
              EXPECT_EQ(ir::threadRegisters(t), codegen::fragmentOf(t).count() * ir::dtypeBytes(dtype) / 4) << t.str();
              ++checked;
            }
          }
  // Strips of 32 lanes in chunks of 4 or 2 elements (rows of 384, 640 or
  // 192, 320 columns) hold a 32nd of each row a thread.
  for (ir::DType dtype : {ir::DType::F32, ir::DType::BF16})
    for (auto [cols, chunk] : {std::pair{384, 4}, {640, 4}, {192, 2}, {320, 2}}) {
      ir::Layout layout{LayoutKind::Strip, 4, 1, 32, chunk};
      ir::Type strip = ir::Type::tile(dtype, {8, cols}).withLayout(ir::MemSpace::Register, layout);
      layout.kind = LayoutKind::StripCol;
      ir::Type colVector = ir::Type::tile(dtype, {cols}).withLayout(ir::MemSpace::Register, layout);
      EXPECT_EQ(codegen::fragmentOf(strip).count(), 2 * cols / 32) << strip.str();
      EXPECT_EQ(codegen::fragmentOf(colVector).count(), cols / 32) << colVector.str();
      for (const ir::Type &t : {strip, colVector}) {
        EXPECT_EQ(ir::threadRegisters(t), codegen::fragmentOf(t).count() * ir::dtypeBytes(dtype) / 4) << t.str();
        ++checked;
      }
    }
  EXPECT_GT(checked, 0);
  // Nothing outside registers.
  EXPECT_EQ(ir::threadRegisters(ir::Type::tile(ir::DType::F32, {64, 64}, ir::MemSpace::Shared)), 0);
}
