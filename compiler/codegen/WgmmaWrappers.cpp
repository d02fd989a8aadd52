#include "codegen/WgmmaWrappers.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

namespace tkc::codegen {

std::string WgmmaShape::wrapperName() const {
  std::string types = eightBit() ? elementType + "_" + typeOfB() : elementType;
  return fmt::format("wgmma_{}m64n{}k{}_f32_{}", aInRegisters ? "rs_" : "", n, k(), types);
}

namespace {

constexpr int kPerLine = 16;

/// `"{%first, ..., %(first + count - 1)}, "` as C++ string literals, 16
/// operands a line (adjacent literals concatenate to the one PTX list).
void registerList(int first, int count, CodeWriter &out) {
  for (int i = 0; i < count; i += kPerLine) {
    std::string piece = i == 0 ? "{" : "";
    for (int r = i; r < std::min(count, i + kPerLine); ++r)
      piece += fmt::format("%{}{}", first + r, r + 1 < count ? ", " : "}, ");
    out.line("\"{}\"", piece);
  }
}

/// The accumulators as read-write asm operands, 8 a line.
void accumulatorOperands(int count, CodeWriter &out) {
  for (int i = 0; i < count; i += 8) {
    std::string piece = i == 0 ? ": " : "  ";
    for (int r = i; r < std::min(count, i + 8); ++r)
      piece += fmt::format("\"+f\"(d[{}]){}", r, r + 1 == count ? "" : r + 1 == i + 8 ? "," : ", ");
    out.line("{}", piece);
  }
}

/// The body shared by both forms: the predicate for `accumulate` from
/// operand `predicate`, the instruction with the accumulator list, then
/// `operands` (the PTX after that list), the accumulators as asm outputs and
/// `inputs`. Any other register list (A's fragment) is in `operands`.
void asmBody(const WgmmaShape &shape, int predicate, const std::function<void()> &operands, const std::string &inputs,
             CodeWriter &out) {
  int regs = int(shape.n / 2);
  out.indent();
  out.line("asm volatile(");
  out.indent();
  out.indent();
  out.line("\"{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{}, 0;\\n\"", predicate);
  out.line("\"wgmma.mma_async.sync.aligned.m64n{}k{}.f32.{}.{} \"", shape.n, shape.k(), shape.elementType,
           shape.typeOfB());
  registerList(0, regs, out);
  operands();
  accumulatorOperands(regs, out);
  out.line(": {});", inputs);
  out.dedent();
  out.dedent();
  out.close();
}

/// 8-bit floats: both operands K-major, the only form PTX has for them (no
/// transpose operands).
void sharedA8(const WgmmaShape &shape, CodeWriter &out) {
  int regs = int(shape.n / 2);
  out.line("// d (64 x {}) += a (64 x 32, {}) * b (32 x {}, {}), both K-major in shared memory;", shape.n,
           shape.elementType, shape.n, shape.typeOfB());
  out.line("// without `accumulate` d starts from zeros.");
  out.line("__device__ __forceinline__ void {}(float (&d)[{}], uint64_t desc_a, uint64_t desc_b,", shape.wrapperName(),
           regs);
  out.line("    bool accumulate = true) {{");
  asmBody(
      shape, regs + 2, [&] { out.line("\"%{}, %{}, p, 1, 1;\\n}}\\n\"", regs, regs + 1); },
      "\"l\"(desc_a), \"l\"(desc_b), \"r\"(int(accumulate))", out);
}

void sharedA(const WgmmaShape &shape, CodeWriter &out) {
  if (shape.eightBit())
    return sharedA8(shape, out);
  int regs = int(shape.n / 2);
  out.line("// d (64 x {}) += a (64 x 16) * b (16 x {}), {}, a and b in shared memory; without", shape.n, shape.n,
           shape.elementType);
  out.line("// `accumulate` d starts from zeros. TransB = 1 reads b N-major, TransA = 1 reads a M-major.");
  out.line("template <int TransB, int TransA = 0>");
  out.line("__device__ __forceinline__ void {}(float (&d)[{}], uint64_t desc_a, uint64_t desc_b,", shape.wrapperName(),
           regs);
  out.line("    bool accumulate = true) {{");
  asmBody(
      shape, regs + 2,
      [&] { out.line("\"%{}, %{}, p, 1, 1, %{}, %{};\\n}}\\n\"", regs, regs + 1, regs + 4, regs + 3); },
      "\"l\"(desc_a), \"l\"(desc_b), \"r\"(int(accumulate)), \"n\"(TransB), \"n\"(TransA)", out);
}

void registerA(const WgmmaShape &shape, CodeWriter &out) {
  int regs = int(shape.n / 2);
  out.line("// d (64 x {}) += a (64 x 16) * b (16 x {}), {}, a in registers (the warp's mma.sync A", shape.n, shape.n,
           shape.elementType);
  out.line("// fragment a0-a3), b in shared memory; without `accumulate` d starts from zeros.");
  out.line("template <int TransB>");
  out.line("__device__ __forceinline__ void {}(float (&d)[{}], uint32_t a0, uint32_t a1, uint32_t a2,",
           shape.wrapperName(), regs);
  out.line("    uint32_t a3, uint64_t desc_b, bool accumulate = true) {{");
  asmBody(
      shape, regs + 5,
      [&] {
        registerList(regs, 4, out);
        out.line("\"%{}, p, 1, 1, %{};\\n}}\\n\"", regs + 4, regs + 6);
      },
      "\"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), \"l\"(desc_b), \"r\"(int(accumulate)), \"n\"(TransB)", out);
}

} // namespace

void emitWgmmaWrappers(const std::set<WgmmaShape> &shapes, CodeWriter &out) {
  if (shapes.empty())
    return;
  out.line("// wgmma.mma_async in the forms the kernels below use. PTX takes the f32");
  out.line("// accumulators as a list of N / 2 registers, so each width has a wrapper.");
  out.line("namespace tkc {{");
  for (const WgmmaShape &shape : shapes) {
    out.blank();
    if (shape.aInRegisters)
      registerA(shape, out);
    else
      sharedA(shape, out);
  }
  out.blank();
  out.line("}} // namespace tkc");
  out.blank();
}

} // namespace tkc::codegen
