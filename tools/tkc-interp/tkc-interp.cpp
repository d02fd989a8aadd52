// tkc-interp: translation validation. Runs one kernel of a .tk file on the
// CPU with the IR interpreter, right after lowering and again after every
// pass of the pipeline, on the same random inputs, and checks that every
// pass leaves the outputs unchanged (up to rounding).
#include "frontend/Lexer.h"
#include "frontend/Parser.h"
#include "frontend/Sema.h"
#include "interp/Interpreter.h"
#include "ir/Verifier.h"
#include "lowering/LowerToIR.h"
#include "passes/Pass.h"

#include <llvm/Support/CommandLine.h>
#include <llvm/Support/MemoryBuffer.h>

#include <cmath>
#include <cstdio>
#include <random>

using namespace tkc;
namespace cl = llvm::cl;

static cl::opt<std::string> inputPath(cl::Positional, cl::desc("<input .tk file>"), cl::Required);
static cl::opt<std::string> kernelName("kernel", cl::desc("The (specialised) kernel to run, e.g. attn_fwd__D64__causal0"),
                                       cl::Required);
static cl::list<std::string> sizes("size", cl::desc("A symbolic dim and its value, e.g. --size=M=70"),
                                   cl::CommaSeparated);
static cl::opt<std::string> targetName("target", cl::desc("sm_80 (default) or sm_90a"), cl::init("sm_80"));
static cl::opt<unsigned> seed("seed", cl::desc("Random seed for the inputs"), cl::init(1));

namespace {

std::vector<interp::Tensor> makeTensors(const ir::Kernel &kernel, const std::map<std::string, int64_t> &symbols,
                                        std::mt19937 &rng, std::string &error) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<interp::Tensor> tensors;
  for (auto &arg : kernel.body.args) {
    if (!arg->type.isGlobal())
      continue;
    interp::Tensor t;
    t.dtype = arg->type.dtype;
    for (const ir::Dim &d : arg->type.dims) {
      if (d.isStatic()) {
        t.dims.push_back(d.size);
        continue;
      }
      auto it = symbols.find(d.symbol);
      if (it == symbols.end()) {
        error = "no --size given for `" + d.symbol + "`";
        return {};
      }
      t.dims.push_back(it->second);
    }
    int64_t n = 1;
    for (int64_t d : t.dims)
      n *= d;
    t.data.resize(n);
    for (double &v : t.data)
      v = arg->type.isOutput ? NAN : interp::roundTo(t.dtype, normal(rng));
    tensors.push_back(std::move(t));
  }
  return tensors;
}

/// Largest difference relative to the largest reference magnitude; NaN
/// where one side has NaN and the other not.
double compare(const interp::Tensor &reference, const interp::Tensor &got) {
  double scale = 1e-30, worst = 0;
  for (double v : reference.data)
    if (!std::isnan(v))
      scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < got.data.size(); ++i) {
    bool nanRef = std::isnan(reference.data[i]), nanGot = std::isnan(got.data[i]);
    if (nanRef != nanGot)
      return NAN;
    if (!nanRef)
      worst = std::max(worst, std::fabs(reference.data[i] - got.data[i]) / scale);
  }
  return worst;
}

} // namespace

int main(int argc, char **argv) {
  cl::ParseCommandLineOptions(argc, argv, "tkc-interp: checks that every pass preserves a kernel's results\n");
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(inputPath);
  SourceManager sources;
  DiagnosticEngine diags(sources);
  if (!buffer) {
    diags.report({}, DiagId::CannotOpenInput, inputPath.getValue(), buffer.getError().message());
    return 1;
  }
  uint32_t file = sources.addBuffer(inputPath, (*buffer)->getBuffer().str());
  ast::File ast = parseFile(lexBuffer(sources, file, diags), diags);
  if (diags.hasErrors() || !sema::checkFile(ast, diags))
    return 1;
  std::unique_ptr<ir::Module> module = lowerToIR(ast, diags);
  const Target *target = Target::lookup(targetName);
  if (!module || !target)
    return 1;
  ir::Kernel *kernel = nullptr;
  for (auto &k : module->kernels)
    if (k->name == kernelName)
      kernel = k.get();
  if (!kernel) {
    diags.report({}, DiagId::KernelNotFound, kernelName.getValue());
    return 1;
  }
  std::map<std::string, int64_t> symbols;
  for (const std::string &entry : sizes) {
    auto eq = entry.find('=');
    if (eq == std::string::npos) {
      std::fprintf(stderr, "tkc-interp: error: --size expects NAME=VALUE, not `%s`\n", entry.c_str());
      return 1;
    }
    symbols[entry.substr(0, eq)] = std::stoll(entry.substr(eq + 1));
  }
  std::mt19937 rng(seed);
  std::string error;
  std::vector<interp::Tensor> inputs = makeTensors(*kernel, symbols, rng, error);
  if (!error.empty()) {
    std::fprintf(stderr, "tkc-interp: error: %s\n", error.c_str());
    return 1;
  }

  interp::Interpreter interpreter;
  std::vector<interp::Tensor> reference = inputs;
  if (auto failure = interpreter.run(*kernel, reference)) {
    std::fprintf(stderr, "tkc-interp: error: after lower: %s\n", failure->c_str());
    return 1;
  }
  std::printf("lower: reference computed\n");
  bool ok = true;
  for (auto &pass : createPipeline()) {
    if (!pass->run(*module, *target, diags) || !ir::verifyModule(*module, diags))
      return 1;
    std::vector<interp::Tensor> got = inputs;
    if (auto failure = interpreter.run(*kernel, got)) {
      std::printf("%s: not checked (%s)\n", pass->name(), failure->c_str());
      continue;
    }
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i)
      worst = std::max(worst, compare(reference[i], got[i]));
    // Passes may reassociate f32 sums (an accumulating mma) and so move a
    // bf16 result by one rounding step.
    bool same = !std::isnan(worst) && worst <= 1e-2;
    std::printf("%s: %s (largest relative difference %.3g)\n", pass->name(), same ? "same" : "DIFFERENT", worst);
    ok = ok && same;
  }
  return ok ? 0 : 1;
}
