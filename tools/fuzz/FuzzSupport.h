#pragma once
// Shared by the fuzz targets: a diagnostics sink and the checks that turn a
// broken compiler invariant into a crash the fuzzer can see.

#include "support/Diagnostics.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace tkc::fuzz {

/// Diagnostics are printed (so their formatting code is exercised too) but
/// into /dev/null: the fuzzer's own output stays readable.
inline std::FILE *diagnosticSink() {
  static std::FILE *sink = std::fopen("/dev/null", "w");
  return sink;
}

/// The fuzzer's bytes as a source buffer. Inputs are small (-max_len), so
/// the driver's 16 MiB limit never matters here.
inline std::string toText(const uint8_t *data, size_t size) {
  return std::string(reinterpret_cast<const char *>(data), size);
}

/// Stops the run with a message: a phase broke a rule the compiler promises
/// (for example, a pass reported success but left IR the verifier rejects).
[[noreturn]] inline void invariantBroken(const char *what) {
  std::fprintf(stderr, "tkc fuzz: invariant broken: %s\n", what);
  std::abort();
}

} // namespace tkc::fuzz
