// tkc-interp: translation validation. Runs one kernel of a .tk file on the
// CPU with the IR interpreter, right after lowering and again after every
// pass of the pipeline, on the same random inputs, and checks that every
// pass leaves the outputs unchanged (up to rounding). Of the file it
// compiles only that kernel, so that the others' errors do not stop it.
//
// Given a .tkir file it runs the kernels written there instead, the first
// as the reference for the others: hand-written IR tests what the
// interpreter makes of a broken pipeline.
//
// The interpreter holds every element in a double: the global tensors may
// have at most kMaxTensorElements elements in all, and interp::Limits
// bounds the blocks, ops and tiles of a run, each reported as an error.
//
// --inputs and --outputs read the tensors from files instead of drawing
// them at random, and write the results of the lowered IR (the reference):
// what the GPU harness compares the emitted CUDA with (TensorFiles.h).
#include "TensorFiles.h"
#include "frontend/Lexer.h"
#include "frontend/Parser.h"
#include "frontend/Sema.h"
#include "interp/Interpreter.h"
#include "ir/Parser.h"
#include "ir/Verifier.h"
#include "lowering/LowerToIR.h"
#include "passes/Pass.h"
#include "support/DimExpr.h"
#include "support/FileIO.h"

#include <llvm/Support/CommandLine.h>

#include <fmt/format.h>

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <random>
#include <set>

using namespace tkc;
namespace cl = llvm::cl;

static cl::opt<std::string> inputPath(cl::Positional, cl::desc("<input .tk file>"), cl::Required);
static cl::opt<std::string> kernelName("kernel",
                                       cl::desc("The (specialised) kernel to run, e.g. attn_fwd__D64__causal0 "
                                                "(.tk input; a .tkir input runs all its kernels)"));
static cl::list<std::string> sizes("size",
                                   cl::desc("A symbolic dim and its value, e.g. --size=M=70 (at most 2^31 - 1; "
                                            "the tensors may have 2^26 elements in all)"),
                                   cl::CommaSeparated);
static cl::opt<std::string> targetName("target", cl::desc("sm_80 (default) or sm_90a"), cl::init("sm_80"));
static cl::opt<unsigned> seed("seed", cl::desc("Random seed for the inputs"), cl::init(1));
static cl::list<std::string> intRanges("ints",
                                       cl::desc("An i32 input drawn uniformly from LO to HI (both included) instead "
                                                "of rounded normal values, e.g. --ints=T=-3:70 (indices of a gather, "
                                                "some out of range)"),
                                       cl::CommaSeparated);
static cl::opt<unsigned> numSms("sms",
                                cl::desc("Multiprocessors that `num_sms` reports (sizes persistent grids; at least 1)"),
                                cl::init(3));
static cl::opt<uint64_t> maxSteps("max-steps", cl::desc("Ops a run may execute before it stops with an error"),
                                  cl::init(interp::Limits{}.steps));
static cl::opt<interp::Options::Interleave> interleave(
    "interleave", cl::desc("How the warpgroup roles of a block take turns"),
    cl::values(clEnumValN(interp::Options::Interleave::Coarse, "coarse", "a role runs until it must wait (default)"),
               clEnumValN(interp::Options::Interleave::Fine, "fine",
                          "the next role goes on after every mbarrier, bulk copy, wgmma or barrier op"),
               clEnumValN(interp::Options::Interleave::Release, "release",
                          "the next role goes on after every mbarrier arrival, running as far as it can")),
    cl::init(interp::Options::Interleave::Coarse));
static cl::opt<std::string> inputsDir("inputs", cl::desc("Read every tensor from DIR/NAME.bin (raw little-endian elements) "
                                                         "instead of drawing random ones; outputs too, as their "
                                                         "starting contents"),
                                      cl::value_desc("DIR"));
static cl::opt<std::string> saveInputsDir("save-inputs",
                                          cl::desc("Write every tensor as drawn (or read) before the run to DIR, "
                                                   "as --outputs does"),
                                          cl::value_desc("DIR"));
static cl::opt<std::string> outputsDir("outputs", cl::desc("Write every tensor after the reference run to DIR/NAME.bin, "
                                                           "with DIR/tensors.json (names, element types, sizes)"),
                                       cl::value_desc("DIR"));

namespace {

/// Every element is a double in memory: 2^26 of them take 512 MiB.
constexpr int64_t kMaxTensorElements = int64_t(1) << 26;

/// An inclusive range of --ints.
struct IntRange {
  int64_t lo, hi;
};

/// The --ints entries by tensor name (parsed once, before any kernel runs).
std::map<std::string, IntRange> intRangeOf;

/// Fills `intRangeOf`; false after reporting a malformed entry.
bool parseIntRanges() {
  for (const std::string &entry : intRanges) {
    auto eq = entry.find('='), colon = entry.find(':', eq == std::string::npos ? 0 : eq);
    long long lo = 0, hi = 0;
    bool ok = eq != std::string::npos && eq > 0 && colon != std::string::npos;
    if (ok) {
      char *end = nullptr;
      errno = 0;
      lo = std::strtoll(entry.c_str() + eq + 1, &end, 10);
      ok = end == entry.c_str() + colon && colon > eq + 1 && errno == 0;
      if (ok) {
        hi = std::strtoll(entry.c_str() + colon + 1, &end, 10);
        ok = !*end && end != entry.c_str() + colon + 1 && errno == 0;
      }
    }
    // The values are i32 elements.
    if (!ok || lo > hi || lo < INT32_MIN || hi > INT32_MAX) {
      std::fprintf(stderr, "tkc-interp: error: --ints expects NAME=LO:HI with i32 values LO <= HI, not `%s`\n",
                   entry.c_str());
      return false;
    }
    intRangeOf[entry.substr(0, eq)] = {lo, hi};
  }
  return true;
}

/// A derived dim's size (`cdiv(M, 64)`) from the --size values and the
/// kernel's `where` values. A --size given for its parameter (`Part_dim0`)
/// must agree.
std::optional<int64_t> derivedSize(const ir::Kernel &kernel, const ir::Dim &dim,
                                   const std::map<std::string, int64_t> &symbols, std::set<std::string> &used,
                                   std::string &error) {
  std::optional<DimExpr> expr = parseDimExpr(dim.derived, &error);
  if (!expr)
    return std::nullopt;
  std::string missing, failure;
  std::optional<int64_t> size = evaluateDimExpr(
      *expr,
      [&](const std::string &name) -> std::optional<int64_t> {
        used.insert(name);
        if (auto it = symbols.find(name); it != symbols.end())
          return it->second;
        for (auto &[param, value] : kernel.specialization)
          if (param == name)
            return value;
        if (missing.empty())
          missing = name;
        return std::nullopt;
      },
      &failure);
  if (!size) {
    error = !missing.empty() ? fmt::format("no --size given for `{}`, which `{}` needs", missing, dim.derived)
                             : fmt::format("`{}` {} for these --size values", dim.derived, failure);
    return std::nullopt;
  }
  if (*size < 0 || *size > INT32_MAX) {
    error = fmt::format("`{}` is {} for these --size values, not a size", dim.derived, *size);
    return std::nullopt;
  }
  used.insert(dim.symbol);
  if (auto it = symbols.find(dim.symbol); it != symbols.end() && it->second != *size) {
    error = fmt::format("--size={}={} disagrees with `{}`, which is {}", dim.symbol, it->second, dim.derived, *size);
    return std::nullopt;
  }
  return size;
}

std::vector<interp::Tensor> makeTensors(const ir::Kernel &kernel, const std::map<std::string, int64_t> &symbols,
                                        std::mt19937 &rng, std::string &error) {
  std::normal_distribution<double> normal(0.0, 1.0);
  for (auto &[name, range] : intRangeOf) {
    const ir::Value *arg = nullptr;
    for (auto &a : kernel.body.args)
      if (a->type.isGlobal() && a->nameHint == name)
        arg = a.get();
    if (!arg || arg->type.isOutput || arg->type.dtype != ir::DType::I32) {
      error = fmt::format("--ints names `{}`, which is no i32 input of @{}", name, kernel.name);
      return {};
    }
  }
  // Outputs start as NaN, so that an element the kernel never writes shows;
  // one the kernel adds to (atomic_add) starts random like an input.
  std::set<const ir::Value *> accumulated;
  ir::walk(const_cast<ir::Block &>(kernel.body), [&](ir::Op &op) {
    if (op.kind == ir::OpKind::Store && op.hasAttr("accumulate"))
      accumulated.insert(op.operands[0]);
  });
  std::vector<interp::Tensor> tensors;
  std::set<std::string> used; // the --size names some dim reads
  int64_t total = 0;
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
      if (!d.derived.empty()) {
        std::optional<int64_t> size = derivedSize(kernel, d, symbols, used, error);
        if (!size)
          return {};
        t.dims.push_back(*size);
        continue;
      }
      used.insert(d.symbol);
      auto it = symbols.find(d.symbol);
      if (it == symbols.end()) {
        error = "no --size given for `" + d.symbol + "`";
        return {};
      }
      t.dims.push_back(it->second);
    }
    int64_t n = 1;
    for (int64_t d : t.dims)
      n = d > (kMaxTensorElements - total) / n ? kMaxTensorElements + 1 : n * d;
    if (n > kMaxTensorElements - total) {
      error = fmt::format("the tensors would have more than {} elements in all, the most the interpreter holds; "
                          "give smaller --size values",
                          kMaxTensorElements);
      return {};
    }
    total += n;
    t.data.resize(n);
    if (auto range = intRangeOf.find(arg->nameHint); range != intRangeOf.end()) {
      std::uniform_int_distribution<int64_t> uniform(range->second.lo, range->second.hi);
      for (double &v : t.data)
        v = double(uniform(rng));
    } else {
      for (double &v : t.data)
        v = arg->type.isOutput && !accumulated.count(arg.get()) ? NAN : interp::roundTo(t.dtype, normal(rng));
    }
    tensors.push_back(std::move(t));
  }
  // A --size that no dim reads is a mistake (a name the kernel lost or
  // never had), not something to ignore.
  for (auto &[param, value] : kernel.specialization) {
    auto it = symbols.find(param);
    if (it != symbols.end() && it->second != value) {
      error = fmt::format("--size={}={}, but @{} is specialised for {} = {}", param, it->second, kernel.name, param,
                          value);
      return {};
    }
    used.insert(param);
  }
  for (auto &[name, value] : symbols)
    if (!used.count(name)) {
      error = fmt::format("--size names `{}`, which is no dim of @{}", name, kernel.name);
      return {};
    }
  return tensors;
}

/// The tensors of `kernel`'s global parameters, by name.
std::vector<interp::NamedTensor> namedTensors(const ir::Kernel &kernel, std::vector<interp::Tensor> &tensors) {
  std::vector<interp::NamedTensor> named;
  for (auto &arg : kernel.body.args)
    if (arg->type.isGlobal())
      named.push_back({arg->nameHint, arg->type.isOutput, &tensors[named.size()]});
  return named;
}

/// The kernel's tensors: random, or read from --inputs.
std::vector<interp::Tensor> inputTensors(const ir::Kernel &kernel, const std::map<std::string, int64_t> &symbols,
                                         std::string &error) {
  std::mt19937 rng(seed);
  std::vector<interp::Tensor> tensors = makeTensors(kernel, symbols, rng, error);
  if (error.empty() && !inputsDir.empty())
    error = interp::readTensors(inputsDir, namedTensors(kernel, tensors));
  if (error.empty() && !saveInputsDir.empty())
    error = interp::writeTensors(saveInputsDir, kernel.name, namedTensors(kernel, tensors));
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

bool sameTensors(const std::vector<interp::Tensor> &reference, const std::vector<interp::Tensor> &got,
                 const char *what) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double difference = compare(reference[i], got[i]);
    // (std::max would drop a NaN: it keeps its first argument unless the
    // second compares greater.)
    worst = std::isnan(difference) || std::isnan(worst) ? NAN : std::max(worst, difference);
  }
  // Passes may reassociate f32 sums (an accumulating mma) and so move a
  // bf16 result by one rounding step.
  bool same = !std::isnan(worst) && worst <= 1e-2;
  std::printf("%s: %s (largest relative difference %.3g)\n", what, same ? "same" : "DIFFERENT", worst);
  return same;
}

bool parseSizes(std::map<std::string, int64_t> &symbols) {
  for (const std::string &entry : sizes) {
    auto eq = entry.find('=');
    char *end = nullptr;
    errno = 0;
    long long value = eq == std::string::npos ? 0 : std::strtoll(entry.c_str() + eq + 1, &end, 10);
    if (eq == std::string::npos || !end || *end || end == entry.c_str() + eq + 1 || value <= 0) {
      std::fprintf(stderr, "tkc-interp: error: --size expects NAME=VALUE with a positive VALUE, not `%s`\n",
                   entry.c_str());
      return false;
    }
    // Sizes are the kernel's i32 scalar parameters.
    if (errno == ERANGE || value > INT32_MAX) {
      std::fprintf(stderr, "tkc-interp: error: --size value of `%s` is more than %d, the largest i32\n",
                   entry.substr(0, eq).c_str(), INT32_MAX);
      return false;
    }
    symbols[entry.substr(0, eq)] = value;
  }
  return true;
}

/// The text of a .tk file with every kernel but the one to run (its source
/// kernel: `attn_fwd` for `attn_fwd__D64__causal0`) blanked out, so that
/// errors and warnings of the others neither stop it nor show; all of it
/// blanked where no kernel has that name, and the text as it is where two
/// do (the file's errors then say so). A kernel's text runs from its
/// `kernel` keyword to the next one. Blanking keeps every line break, so
/// that lines and columns, and the lines that diagnostics quote, stay as
/// in the file.
std::string onlyKernelText(const std::string &text, const std::string &name) {
  SourceManager probeSources;
  uint32_t probeFile = probeSources.addBuffer(inputPath, text);
  std::FILE *sink = std::tmpfile(); // the other kernels' lexical errors
  if (!sink)
    return text;
  DiagnosticEngine probeDiags(probeSources, sink);
  std::vector<Token> tokens = lexBuffer(probeSources, probeFile, probeDiags);
  std::fclose(sink);
  std::vector<size_t> lineStarts{0};
  for (size_t i = 0; i < text.size(); ++i)
    if (endsLine(text, i))
      lineStarts.push_back(i + 1);
  auto offsetOf = [&](SourceLocation loc) { return lineStarts[loc.line - 1] + loc.column - 1; };
  // Each kernel: its name and where its text begins; the longest name that
  // is `name` or the source kernel of a specialisation of it.
  std::vector<std::pair<std::string, size_t>> kernels;
  for (size_t i = 0; i + 1 < tokens.size(); ++i)
    if (tokens[i].kind == TokenKind::KwKernel)
      kernels.push_back({tokens[i + 1].kind == TokenKind::Identifier ? tokens[i + 1].text : "",
                         offsetOf(tokens[i].loc)});
  std::optional<size_t> chosen;
  int matches = 0;
  for (size_t k = 0; k < kernels.size(); ++k) {
    const std::string &kernel = kernels[k].first;
    if (kernel.empty() || !(name == kernel || name.rfind(kernel + "__", 0) == 0))
      continue;
    if (!chosen || kernel.size() > kernels[*chosen].first.size()) {
      chosen = k;
      matches = 1;
    } else if (kernel == kernels[*chosen].first) {
      ++matches; // the same name twice: an error of the file
    }
  }
  if (chosen && matches != 1)
    return text;
  // No kernel of that name: nothing is left, and no kernel is found.
  size_t begin = chosen ? kernels[*chosen].second : 0;
  size_t end = !chosen ? 0 : *chosen + 1 < kernels.size() ? kernels[*chosen + 1].second : text.size();
  std::string only = text;
  for (size_t i = 0; i < only.size(); ++i)
    if ((i < begin || i >= end) && only[i] != '\n' && only[i] != '\r')
      only[i] = ' ';
  return only;
}

/// Runs every kernel of a .tkir file on the same inputs; the first is the
/// reference of the others, which must take the same tensors.
int runIRFile(SourceManager &sources, uint32_t file, DiagnosticEngine &diags,
              const std::map<std::string, int64_t> &symbols) {
  std::unique_ptr<ir::Module> module = ir::parseModule(file, sources, diags);
  if (!module || !ir::verifyModule(*module, diags))
    return 1;
  if (module->kernels.empty()) {
    std::fprintf(stderr, "tkc-interp: error: no kernel in the input\n");
    return 1;
  }
  std::string error;
  const ir::Kernel &first = *module->kernels.front();
  std::vector<interp::Tensor> inputs = inputTensors(first, symbols, error);
  if (!error.empty()) {
    std::fprintf(stderr, "tkc-interp: error: %s\n", error.c_str());
    return 1;
  }
  // Hand-written IR claims to be complete, barriers included.
  interp::Interpreter interpreter(diags, {static_cast<int64_t>(numSms), interleave, /*checkBarriers=*/true,
                                         interp::Limits{.steps = maxSteps}});
  std::vector<interp::Tensor> reference;
  bool ok = true;
  for (auto &kernel : module->kernels) {
    std::vector<const ir::Type *> params, firstParams;
    for (auto &arg : kernel->body.args)
      if (arg->type.isGlobal())
        params.push_back(&arg->type);
    for (auto &arg : first.body.args)
      if (arg->type.isGlobal())
        firstParams.push_back(&arg->type);
    bool sameParams = params.size() == firstParams.size();
    for (size_t i = 0; sameParams && i < params.size(); ++i)
      sameParams = *params[i] == *firstParams[i];
    if (!sameParams) {
      std::fprintf(stderr, "tkc-interp: error: @%s takes other tensors than @%s\n", kernel->name.c_str(),
                   first.name.c_str());
      return 1;
    }
    std::vector<interp::Tensor> got = inputs;
    std::string what = "@" + kernel->name;
    if (!interpreter.run(*kernel, got)) {
      std::printf("%s: failed\n", what.c_str());
      ok = false;
      continue;
    }
    if (kernel.get() == &first) {
      std::printf("%s: reference computed\n", what.c_str());
      std::string error =
          outputsDir.empty() ? "" : interp::writeTensors(outputsDir, kernel->name, namedTensors(*kernel, got));
      if (!error.empty()) {
        std::fprintf(stderr, "tkc-interp: error: %s\n", error.c_str());
        return 1;
      }
      reference = std::move(got);
      continue;
    }
    if (reference.empty())
      std::printf("%s: ran (the reference failed, nothing to compare with)\n", what.c_str());
    else
      ok = sameTensors(reference, got, what.c_str()) && ok;
  }
  return ok ? 0 : 1;
}

/// `name` without the constants that the sizes pick (`rows__D64` for
/// `rows__D64__BM128`): the specialisation whose guards hold for the --size
/// values, as the launcher would pick it; null when no kernel is named so,
/// nothing after an error.
std::optional<ir::Kernel *> pickBySizes(ir::Module &module, const std::string &name,
                                        const std::map<std::string, int64_t> &symbols, DiagnosticEngine &diags) {
  for (auto &k : module.kernels) {
    std::string unpicked = k->name;
    bool guarded = false;
    for (auto &op : k->launch.ops)
      if (op->kind == ir::OpKind::VariantGuard) {
        std::string part = fmt::format("__{}{}", op->strAttr("name"), op->intAttr("value"));
        if (size_t at = unpicked.find(part); at != std::string::npos)
          unpicked.erase(at, part.size());
        guarded = true;
      }
    if (!guarded || unpicked != name)
      continue;
    std::string error;
    std::vector<interp::Tensor> tensors = inputTensors(*k, symbols, error);
    if (!error.empty()) {
      std::fprintf(stderr, "tkc-interp: error: %s\n", error.c_str());
      return std::nullopt;
    }
    std::optional<bool> picks = interp::Interpreter(diags).picks(*k, tensors);
    if (!picks)
      return std::nullopt;
    if (*picks) {
      std::printf("picked: @%s\n", k->name.c_str());
      return k.get();
    }
  }
  return nullptr;
}

} // namespace

int main(int argc, char **argv) {
  cl::ParseCommandLineOptions(argc, argv, "tkc-interp: checks that every pass preserves a kernel's results\n");
  std::setvbuf(stdout, nullptr, _IOLBF, 0); // results in order with the diagnostics on stderr
  SourceManager sources;
  DiagnosticEngine diags(sources);
  std::optional<InputFile> input = readInputFile(inputPath, diags);
  if (!input)
    return 1;
  bool tkInput = !llvm::StringRef(inputPath).ends_with(".tkir");
  // Of a .tk file only the kernel to run is compiled: another kernel's
  // errors do not keep it from running.
  if (tkInput && !kernelName.empty())
    input->text = onlyKernelText(input->text, kernelName);
  uint32_t file = sources.addBuffer(inputPath, std::move(input->text));
  std::map<std::string, int64_t> symbols;
  if (!parseSizes(symbols) || !parseIntRanges())
    return 1;
  if (numSms == 0) {
    std::fprintf(stderr, "tkc-interp: error: --sms must be at least 1\n");
    return 1;
  }
  if (maxSteps == 0) {
    std::fprintf(stderr, "tkc-interp: error: --max-steps must be at least 1\n");
    return 1;
  }
  if (!tkInput)
    return runIRFile(sources, file, diags, symbols);

  ast::File ast = parseFile(lexBuffer(sources, file, diags), diags);
  const Target *target = Target::lookup(targetName);
  if (!target) {
    diags.report({}, DiagId::UnknownTarget, targetName.getValue());
    return 1;
  }
  if (diags.hasErrors() || !sema::checkFile(ast, diags, target->computeCapability))
    return 1;
  std::unique_ptr<ir::Module> module = lowerToIR(ast, diags, target->computeCapability);
  if (!module)
    return 1;
  if (kernelName.empty()) {
    std::fprintf(stderr, "tkc-interp: error: a .tk input needs --kernel\n");
    return 1;
  }
  ir::Kernel *kernel = nullptr;
  for (auto &k : module->kernels)
    if (k->name == kernelName)
      kernel = k.get();
  if (!kernel) {
    std::optional<ir::Kernel *> picked = pickBySizes(*module, kernelName, symbols, diags);
    if (!picked)
      return 1;
    kernel = *picked;
  }
  if (!kernel) {
    diags.report({}, DiagId::KernelNotFound, kernelName.getValue());
    return 1;
  }
  std::string error;
  std::vector<interp::Tensor> inputs = inputTensors(*kernel, symbols, error);
  if (!error.empty()) {
    std::fprintf(stderr, "tkc-interp: error: %s\n", error.c_str());
    return 1;
  }

  interp::Options options{static_cast<int64_t>(numSms), interleave, /*checkBarriers=*/false,
                          interp::Limits{.steps = maxSteps}, /*implicitCarriedPadding=*/true};
  std::vector<interp::Tensor> reference = inputs;
  if (!interp::Interpreter(diags, options).run(*kernel, reference)) {
    std::printf("lower: failed\n");
    return 1;
  }
  std::printf("lower: reference computed\n");
  if (!outputsDir.empty()) {
    std::string error = interp::writeTensors(outputsDir, kernel->name, namedTensors(*kernel, reference));
    if (!error.empty()) {
      std::fprintf(stderr, "tkc-interp: error: %s\n", error.c_str());
      return 1;
    }
  }
  bool ok = true;
  for (auto &pass : createPipeline()) {
    if (!pass->run(*module, *target, diags) || !ir::verifyModule(*module, diags))
      return 1;
    // Shared memory accesses are ordered by barriers from the barriers pass on.
    options.checkBarriers = options.checkBarriers || std::string(pass->name()) == "barriers";
    // From tail on, the IR spells out what the carried-padding rule needs.
    options.implicitCarriedPadding = options.implicitCarriedPadding && std::string(pass->name()) != "tail";
    std::vector<interp::Tensor> got = inputs;
    // A pass whose output cannot run is as wrong as one that changes results.
    if (!interp::Interpreter(diags, options).run(*kernel, got)) {
      std::printf("%s: failed\n", pass->name());
      return 1;
    }
    ok = sameTensors(reference, got, pass->name()) && ok;
  }
  return ok ? 0 : 1;
}
