#pragma once
#include "support/SourceLocation.h"

#include <fmt/format.h>

#include <cstdio>
#include <string>

namespace tkc {

enum class Severity { Note, Warning, Error };

/// One identifier per diagnostic, declared in DiagnosticKinds.def.
enum class DiagId {
#define DIAG(Name, Sev, Msg) Name,
#include "support/DiagnosticKinds.def"
#undef DIAG
};

Severity severityOf(DiagId id);
const char *formatOf(DiagId id);
const char *nameOf(DiagId id);

/// Prints diagnostics as `file:line:col: error: message`, followed by the
/// source line and a caret. Counts errors so that phases can stop early and
/// the driver can exit non-zero.
class DiagnosticEngine {
public:
  explicit DiagnosticEngine(const SourceManager &sources, std::FILE *out = stderr);

  template <typename... Args>
  void report(SourceLocation loc, DiagId id, Args &&...args) {
    emit(loc, id, fmt::format(fmt::runtime(formatOf(id)), std::forward<Args>(args)...));
  }

  unsigned errorCount() const { return errors_; }
  bool hasErrors() const { return errors_ != 0; }
  /// True once the error limit was hit: further reports are dropped.
  bool limitReached() const { return limitReached_; }

  void setColor(bool enabled) { color_ = enabled; }
  void setWarningsAsErrors(bool enabled) { warningsAsErrors_ = enabled; }
  void setErrorLimit(unsigned limit) { errorLimit_ = limit; }

private:
  void emit(SourceLocation loc, DiagId id, const std::string &message);

  const SourceManager &sources_;
  std::FILE *out_;
  unsigned errors_ = 0;
  unsigned errorLimit_ = 20;
  bool limitReached_ = false;
  bool color_ = false;
  bool warningsAsErrors_ = false;
  bool lastWasDropped_ = false;
};

} // namespace tkc
