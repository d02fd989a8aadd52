// The tile IR built in C++: Builder, printer, parser and verifier together.

#include "ir/IR.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>

using namespace tkc;
using namespace tkc::ir;

namespace {

/// Collects diagnostics in memory so that tests can look at them.
class DiagnosticCapture {
public:
  DiagnosticCapture() : file_(std::tmpfile()), engine_(sources_, file_) {}
  ~DiagnosticCapture() { std::fclose(file_); }

  SourceManager &sources() { return sources_; }
  DiagnosticEngine &engine() { return engine_; }
  std::string text() {
    std::fflush(file_);
    std::rewind(file_);
    std::string out;
    char buffer[512];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof(buffer), file_)) > 0)
      out.append(buffer, n);
    return out;
  }

private:
  SourceManager sources_;
  std::FILE *file_;
  DiagnosticEngine engine_;
};

std::unique_ptr<Module> parse(DiagnosticCapture &diags, const std::string &text) {
  uint32_t file = diags.sources().addBuffer("test.tkir", text);
  return parseModule(file, diags.sources(), diags.engine());
}

/// A kernel with parameters %X: global<f32[N]> and %N: i32, whose launch
/// block is `grid %N, %N, %N`.
Kernel &addKernel(Module &module, const std::string &name) {
  module.kernels.push_back(std::make_unique<Kernel>());
  Kernel &kernel = *module.kernels.back();
  kernel.name = name;
  kernel.body.addArg(Type::global(DType::F32, {Dim{-1, "N"}}, /*isOutput=*/true), "X");
  kernel.body.addArg(Type::scalar(DType::I32), "N");
  Value *n = kernel.launch.addArg(Type::scalar(DType::I32), "N");
  Builder(kernel.launch).create(OpKind::Grid, {n, n, n}, {});
  return kernel;
}

TEST(IRPrinter, BuilderModulePrintsWithHintsAndNumbers) {
  Module module;
  Kernel &kernel = addKernel(module, "k");
  Value *x = kernel.body.args[0].get(), *n = kernel.body.args[1].get();
  Builder b(kernel.body);
  Value *zero = b.constInt(0);
  Value *half = b.constFloat(0.5);
  Value *tile = b.value(OpKind::Fill, {}, Type::tile(DType::F32, {64}), {{"value", Attr(1.0)}});
  tile->nameHint = "acc";
  Value *scaled = b.value(OpKind::Mul, {tile, half}, tile->type);
  scaled->nameHint = "acc"; // taken: becomes acc.1
  Value *odd = b.value(OpKind::Neg, {scaled}, tile->type);
  odd->nameHint = "not an identifier"; // printed as a number
  b.create(OpKind::Store, {x, odd, zero}, {}, {{"sizes", Attr(std::vector<int64_t>{64})}});
  Value *big = b.value(OpKind::Add, {n, zero}, Type::scalar(DType::I32));
  big->nameHint = "N"; // a parameter's name: becomes N.1
  (void)big;

  EXPECT_EQ(printModule(module), "kernel @k(%X: global<out f32[N]>, %N: i32) warps(4) {\n"
                                 "launch:\n"
                                 "  grid %N, %N, %N\n"
                                 "body:\n"
                                 "  %0 = const {value = 0} : i32\n"
                                 "  %1 = const {value = 0.5} : f32\n"
                                 "  %acc = fill {value = 1.0} : tile<f32[64]>\n"
                                 "  %acc.1 = mul %acc, %1 : tile<f32[64]>\n"
                                 "  %2 = neg %acc.1 : tile<f32[64]>\n"
                                 "  store %X, %2, %0 {sizes = [64]}\n"
                                 "  %N.1 = add %N, %0 : i32\n"
                                 "}\n");
  DiagnosticCapture diags;
  EXPECT_TRUE(verifyModule(module, diags.engine())) << diags.text();
}

TEST(IRPrinter, LoopPrintsNestedWithTwoSpaces) {
  Module module;
  Kernel &kernel = addKernel(module, "loop");
  Value *n = kernel.body.args[1].get();
  Builder b(kernel.body);
  Value *zero = b.constInt(0);
  zero->nameHint = "zero";
  Op *loop = b.create(OpKind::For, {zero, n, n, zero}, {Type::scalar(DType::I32)}, {{"stages", Attr(int64_t(2))}});
  loop->results[0]->nameHint = "sum";
  loop->body = std::make_unique<Block>();
  loop->body->parentOp = loop;
  Value *iv = loop->body->addArg(Type::scalar(DType::I32), "i");
  Value *carried = loop->body->addArg(Type::scalar(DType::I32), "sum");
  Builder inner(*loop->body);
  Value *next = inner.value(OpKind::Add, {carried, iv}, Type::scalar(DType::I32));
  inner.create(OpKind::Yield, {next}, {});

  EXPECT_EQ(printModule(module), "kernel @loop(%X: global<out f32[N]>, %N: i32) warps(4) {\n"
                                 "launch:\n"
                                 "  grid %N, %N, %N\n"
                                 "body:\n"
                                 "  %zero = const {value = 0} : i32\n"
                                 "  %sum = for %i = %zero to %N step %N iter_args(%sum.1 = %zero) {stages = 2} -> (i32) {\n"
                                 "    %0 = add %sum.1, %i : i32\n"
                                 "    yield %0\n"
                                 "  }\n"
                                 "}\n");
  DiagnosticCapture diags;
  EXPECT_TRUE(verifyModule(module, diags.engine())) << diags.text();
}

TEST(IRPrinter, FloatAttributesReadBackExactly) {
  EXPECT_EQ(printAttr(Attr(0.0)), "0.0");
  EXPECT_EQ(printAttr(Attr(1.5)), "1.5");
  EXPECT_EQ(printAttr(Attr(1e-05)), "1e-05");
  EXPECT_EQ(printAttr(Attr(100.0)), "100.0");
  EXPECT_EQ(printAttr(Attr(std::numeric_limits<double>::infinity())), "inf");
  EXPECT_EQ(printAttr(Attr(-std::numeric_limits<double>::infinity())), "-inf");
  EXPECT_EQ(printAttr(Attr(int64_t(3))), "3");
  EXPECT_EQ(printAttr(Attr(std::vector<int64_t>{1, -2})), "[1, -2]");
  EXPECT_EQ(printAttr(Attr(std::string("a\"b"))), "\"a\\\"b\"");

  std::mt19937_64 random(42);
  for (int i = 0; i < 10000; ++i) {
    uint64_t bits = random();
    double value;
    std::memcpy(&value, &bits, sizeof(value));
    if (std::isnan(value))
      continue;
    std::string text = printAttr(Attr(value));
    ASSERT_NE(text.find_first_of(".ei"), std::string::npos) << text; // never reads as an integer
    EXPECT_EQ(std::strtod(text.c_str(), nullptr), value) << text;
  }
}

TEST(IRPrinter, PrintingIsDeterministicAndRoundTrips) {
  const char *text = "kernel @k(%X: global<out f32[N]>, %N: i32) warps(4) {\n"
                     "launch:\n"
                     "  grid %N, %N, %N\n"
                     "body:\n"
                     "  %a = const {value = 0} : i32\n"
                     "  %t = fill {value = -inf} : reg<f32[64, 64], #acc<2x2>>\n"
                     "  %s = convert %t : smem<f32[64, 64], #swizzle>\n"
                     "  %r = for %i = %a to %N step %N iter_args(%c = %t) -> (reg<f32[64, 64], #acc<2x2>>) {\n"
                     "    %m = mask %c, %i {axis = 1, fill = 0.0} : reg<f32[64, 64], #acc<2x2>>\n"
                     "    yield %m\n"
                     "  }\n"
                     "}\n";
  DiagnosticCapture diags;
  auto module = parse(diags, text);
  ASSERT_TRUE(module) << diags.text();
  EXPECT_TRUE(verifyModule(*module, diags.engine())) << diags.text();
  std::string first = printModule(*module);
  EXPECT_EQ(first, text);
  EXPECT_EQ(printModule(*module), first);
  auto again = parse(diags, first);
  ASSERT_TRUE(again);
  EXPECT_EQ(printModule(*again), first);
}

TEST(IRParser, OpsRecordTheirPositionOrTheirLoc) {
  DiagnosticCapture diags;
  auto module = parse(diags, "kernel @k(%N: i32) warps(4) {\n"
                             "launch:\n"
                             "  grid %N, %N, %N\n"
                             "body:\n"
                             "    %a = neg %N : i32\n"
                             "  %b = neg %a : i32 loc(40:7)\n"
                             "}\n");
  ASSERT_TRUE(module) << diags.text();
  Kernel &kernel = *module->kernels[0];
  EXPECT_EQ(kernel.loc.line, 1u);
  EXPECT_EQ(kernel.launch.ops.front()->loc.line, 3u);
  EXPECT_EQ(kernel.launch.ops.front()->loc.column, 3u);
  auto op = kernel.body.ops.begin();
  EXPECT_EQ((*op)->loc.line, 5u);
  EXPECT_EQ((*op)->loc.column, 5u);
  ++op;
  EXPECT_EQ((*op)->loc.line, 40u);
  EXPECT_EQ((*op)->loc.column, 7u);
  // Parsed IR is linked like built IR.
  EXPECT_EQ((*op)->parent, &kernel.body);
  EXPECT_EQ((*op)->operands[0]->definingOp, kernel.body.ops.front().get());
  EXPECT_EQ(kernel.launch.args.size(), 1u);
  EXPECT_NE(kernel.launch.args[0].get(), kernel.body.args[0].get());
}

TEST(IRParser, NeverCrashesOnDamagedInput) {
  const std::string text = "kernel @k(%A: global<bf16[M, 64]>, %M: i32) warps(4) from @g where(D = 1) {\n"
                           "launch:\n"
                           "  %c = const {value = 64} : i32\n"
                           "  grid %c, %M, %M\n"
                           "body:\n"
                           "  %z = const {value = 0} : i32\n"
                           "  %t = load %A, %z, %z {checked = [1, 0], sizes = [64, 64]} : smem<bf16[64, 64], #swizzle>\n"
                           "  %r = for %i = %z to %M step %c iter_args(%a = %t) {s = \"x\\n\"} -> (smem<bf16[64, 64], "
                           "#swizzle>) {\n"
                           "    yield %a // done\n"
                           "  } loc(3:4)\n"
                           "}\n";
  std::mt19937 random(7);
  const char bytes[] = "%@#{}[]()<>,:=-.0123456789ax\"\\\n /";
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    DiagnosticCapture diags;
    auto module = parse(diags, text.substr(0, cut));
    if (module)
      verifyModule(*module, diags.engine());
  }
  for (int round = 0; round < 3000; ++round) {
    std::string damaged = text;
    for (int edits = 1 + round % 3; edits > 0; --edits)
      damaged[random() % damaged.size()] = bytes[random() % (sizeof(bytes) - 1)];
    DiagnosticCapture diags;
    auto module = parse(diags, damaged);
    if (module) {
      verifyModule(*module, diags.engine());
      printModule(*module);
    } else {
      EXPECT_TRUE(diags.engine().hasErrors()) << damaged;
    }
  }
}

TEST(IRVerifier, RejectsUseBeforeDefinition) {
  Module module;
  Kernel &kernel = addKernel(module, "k");
  Value *n = kernel.body.args[1].get();
  Builder b(kernel.body);
  Value *later = b.value(OpKind::Neg, {n}, Type::scalar(DType::I32));
  Builder before(kernel.body, kernel.body.ops.begin());
  before.value(OpKind::Neg, {later}, Type::scalar(DType::I32));
  DiagnosticCapture diags;
  EXPECT_FALSE(verifyModule(module, diags.engine()));
  EXPECT_NE(diags.text().find("'neg' op operand #0 is not defined before this use"), std::string::npos)
      << diags.text();
}

TEST(IRVerifier, RejectsUseOutsideTheDefiningLoop) {
  Module module;
  Kernel &kernel = addKernel(module, "k");
  Value *n = kernel.body.args[1].get();
  Builder b(kernel.body);
  Op *loop = b.create(OpKind::For, {n, n, n}, {});
  loop->body = std::make_unique<Block>();
  loop->body->parentOp = loop;
  loop->body->addArg(Type::scalar(DType::I32), "i");
  Builder inner(*loop->body);
  Value *insideValue = inner.value(OpKind::Neg, {n}, Type::scalar(DType::I32));
  inner.create(OpKind::Yield, {}, {});
  b.value(OpKind::Neg, {insideValue}, Type::scalar(DType::I32));
  DiagnosticCapture diags;
  EXPECT_FALSE(verifyModule(module, diags.engine()));
  EXPECT_NE(diags.text().find("is not defined before this use"), std::string::npos) << diags.text();
}

TEST(IRVerifier, RejectsBrokenLinks) {
  Module module;
  Kernel &kernel = addKernel(module, "k");
  Value *n = kernel.body.args[1].get();
  Builder b(kernel.body);
  Op *op = b.create(OpKind::Neg, {n}, {Type::scalar(DType::I32)});
  op->parent = &kernel.launch;
  DiagnosticCapture diags;
  EXPECT_FALSE(verifyModule(module, diags.engine()));
  EXPECT_NE(diags.text().find("'neg' op has a stale parent pointer"), std::string::npos) << diags.text();

  op->parent = &kernel.body;
  op->operands[0] = nullptr;
  DiagnosticCapture nullDiags;
  EXPECT_FALSE(verifyModule(module, nullDiags.engine()));
  EXPECT_NE(nullDiags.text().find("'neg' op operand #0 is null"), std::string::npos) << nullDiags.text();
  EXPECT_NE(printModule(module).find("%<<null>>"), std::string::npos);
}

TEST(IRVerifier, LaunchArgumentsAreTheScalarParameters) {
  Module module;
  Kernel &kernel = addKernel(module, "k");
  kernel.launch.args[0]->nameHint = "M";
  DiagnosticCapture diags;
  EXPECT_FALSE(verifyModule(module, diags.engine()));
  EXPECT_NE(diags.text().find("kernel `@k` has `launch` arguments that are not its scalar parameters"),
            std::string::npos)
      << diags.text();
}

TEST(IRVerifier, StripLayoutsUseOneWarpCount) {
  Module module;
  Kernel &kernel = addKernel(module, "k");
  Builder b(kernel.body);
  Layout strip{LayoutKind::Strip, 2, 2}; // prints as #strip<2>: not representable
  b.value(OpKind::Fill, {}, Type::tile(DType::F32, {64, 64}, MemSpace::Register, strip), {{"value", Attr(0.0)}});
  DiagnosticCapture diags;
  EXPECT_FALSE(verifyModule(module, diags.engine()));
  EXPECT_NE(diags.text().find("invalid warp counts 2x2"), std::string::npos) << diags.text();
}

} // namespace
