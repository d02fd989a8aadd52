#include "codegen/Identifiers.h"

#include <algorithm>
#include <cctype>

namespace tkc::codegen {

namespace {

/// C++20 keywords and alternative tokens.
const std::set<std::string_view> kKeywords = {
    "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch",
    "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval", "constexpr",
    "constinit", "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype", "default", "delete",
    "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "float", "for",
    "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
    "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register", "reinterpret_cast",
    "requires", "return", "short", "signed", "sizeof", "static", "static_assert", "static_cast", "struct",
    "switch", "template", "this", "thread_local", "throw", "true", "try", "typedef", "typeid", "typename",
    "union", "unsigned", "using", "virtual", "void", "volatile", "wchar_t", "while", "final", "override", "main"};

/// Names of the headers the output includes that it refers to, or that are
/// object-like macros in lower case (upper-case macros are reserved by
/// pattern).
const std::set<std::string_view> kLibraryNames = {
    "std", "size_t", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t",
    "uintptr_t", "intptr_t", "ptrdiff_t", "va_list", "va_start", "va_end", "va_arg", "va_copy", "vsnprintf",
    "snprintf", "printf", "stderr", "stdin", "stdout", "math_errhandling", "offsetof", "assert", "alloca",
    "L_tmpnam", "L_ctermid", "L_cuserid", "P_tmpdir",
    "dim3", "uint2", "uint4", "int4", "float2", "float4", "half", "half2", "nv_bfloat16", "nv_bfloat162", "threadIdx",
    "blockIdx", "blockDim", "gridDim", "warpSize", "min", "max", "abs", "fabsf", "fmaxf", "fminf", "fmodf",
    "expf", "exp2f", "logf", "log2f", "sqrtf", "rsqrtf", "tanhf", "erff", "exp", "exp2", "log", "log2",
    "sqrt", "tanh", "isnan", "isinf", "make_uint4", "make_float2", "memcpy", "memset"};

/// The emitter's own locals: loop counters, fragment and address helpers,
/// launcher locals. A source name spelled like one would be shadowed by it.
const std::set<std::string_view> kEmitterNames = {
    "at", "c", "dd", "e", "f", "g", "h", "i", "j", "kk", "r", "x", "y", "p", "v", "pair",
    "hi", "lo", "warp", "lane", "warp_m", "warp_n", "row", "col", "first_row", "src", "dst", "to", "from",
    "chunk", "piece", "pieces", "parts", "inside", "it", "a_frag", "b_frag", "a_lane", "b_lane", "a_swz",
    "b_swz", "a_desc", "b_desc", "desc_a", "desc_b", "round_stride", "smem_base", "kept_smem_address",
    "first_panel", "grid", "status", "configured", "args", "format", "stream", "cuda_stream", "device",
    "multiprocessors", "whole", "accumulate", "TransA", "TransB", "variant", "capability", "info",
    "shared_memory_allowed"};

bool startsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

/// MACRO_STYLE names of three characters or more: the headers define
/// hundreds (INFINITY, INT_MAX, EOF, CUDART_VERSION, ...).
bool isMacroStyle(std::string_view name) {
  return name.size() >= 3 && std::all_of(name.begin(), name.end(), [](char c) {
           return std::isupper(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
                  c == '_';
         });
}

} // namespace

bool isReservedIdentifier(std::string_view name) {
  if (name.empty() || name[0] == '_' || isMacroStyle(name))
    return true;
  // Prefixes of the CUDA and C headers' names (cudaMalloc, cuMemAlloc,
  // NV_HAS_FEATURE_SM_90a, nvtxRangePushA), of the runtime and launchers (tkc_...) and of
  // the wgmma wrappers.
  for (std::string_view prefix : {"cuda", "CU", "tkc", "TKC", "NV_", "nvtx", "wgmma"})
    if (startsWith(name, prefix))
      return true;
  // <math.h>'s constants: M_PI, M_1_PI, M_LN2f, ...
  if (startsWith(name, "M_") && name.size() > 2 &&
      (std::isupper(static_cast<unsigned char>(name[2])) || std::isdigit(static_cast<unsigned char>(name[2]))))
    return true;
  if (startsWith(name, "cu") && name.size() > 2 && std::isupper(static_cast<unsigned char>(name[2])))
    return true;
  // Kernel functions (gemm_kernel, attn_fwd__D64_kernel) and names C++
  // reserves.
  if (name.find("__") != std::string_view::npos ||
      (name.size() >= 7 && name.substr(name.size() - 7) == "_kernel"))
    return true;
  // The launcher's grid terms: g0, g1, ...
  if (name.size() > 1 && name[0] == 'g' &&
      std::all_of(name.begin() + 1, name.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return true;
  // Spelled like a temporary (t_3), a source name would read as one.
  if (startsWith(name, "t_") && name.size() > 2 && std::isdigit(static_cast<unsigned char>(name[2])))
    return true;
  return kKeywords.count(name) || kLibraryNames.count(name) || kEmitterNames.count(name);
}

std::string sourceIdentifier(std::string_view name) {
  return isReservedIdentifier(name) ? "v_" + std::string(name) : std::string(name);
}

std::string NameTable::fresh(const std::string &base, bool numbered) {
  if (!numbered && used_.insert(base).second)
    return base;
  int &next = nextSuffix_[base];
  if (!numbered && next == 0)
    next = 1;
  for (;; ++next) {
    std::string candidate = base + "_" + std::to_string(next);
    if (used_.insert(candidate).second)
      return candidate;
  }
}

} // namespace tkc::codegen
