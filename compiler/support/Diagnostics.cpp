#include "support/Diagnostics.h"

#include <llvm/Support/ConvertUTF.h>
#include <llvm/Support/Unicode.h>

#include <algorithm>

namespace tkc {

namespace {
struct DiagInfo {
  Severity severity;
  const char *format;
  const char *name;
};

constexpr DiagInfo kDiagnostics[] = {
#define DIAG(Name, Sev, Msg) {Severity::Sev, Msg, #Name},
#include "support/DiagnosticKinds.def"
#undef DIAG
};
/// The blanks that put a caret under byte `column - 1` of `line` on a
/// terminal: tabs stay tabs, and each character takes as many columns as it
/// is wide (one for most, two for CJK, none for combining marks), not as
/// many as it has bytes.
std::string caretIndent(std::string_view line, uint32_t column) {
  std::string indent;
  size_t end = std::min<size_t>(column > 0 ? column - 1 : 0, line.size());
  for (size_t i = 0; i < end;) {
    if (line[i] == '\t') {
      indent += '\t';
      ++i;
      continue;
    }
    auto *bytes = reinterpret_cast<const llvm::UTF8 *>(line.data() + i);
    size_t length = llvm::getNumBytesForUTF8(bytes[0]);
    if (length == 0 || i + length > line.size() || !llvm::isLegalUTF8Sequence(bytes, bytes + length))
      length = 1;
    int width = llvm::sys::unicode::columnWidthUTF8(llvm::StringRef(line.data() + i, length));
    indent.append(width < 0 ? 1 : static_cast<size_t>(width), ' ');
    i += length;
  }
  return indent;
}

} // namespace

Severity severityOf(DiagId id) { return kDiagnostics[static_cast<int>(id)].severity; }
const char *formatOf(DiagId id) { return kDiagnostics[static_cast<int>(id)].format; }
const char *nameOf(DiagId id) { return kDiagnostics[static_cast<int>(id)].name; }

DiagnosticEngine::DiagnosticEngine(const SourceManager &sources, std::FILE *out)
    : sources_(sources), out_(out) {}

void DiagnosticEngine::emit(SourceLocation loc, DiagId id, const std::string &message) {
  Severity severity = severityOf(id);
  if (severity == Severity::Warning && warningsAsErrors_)
    severity = Severity::Error;
  // Notes belong to the diagnostic before them: drop them with it.
  if (severity == Severity::Note && lastWasDropped_)
    return;
  if (limitReached_) {
    lastWasDropped_ = true;
    return;
  }
  if (severity == Severity::Error) {
    ++errors_;
    if (errorLimit_ != 0 && errors_ > errorLimit_) {
      limitReached_ = true;
      lastWasDropped_ = true;
      std::fprintf(out_, "%s: %s\n", color_ ? "\033[1;30mnote\033[0m" : "note",
                   formatOf(DiagId::TooManyErrors));
      return;
    }
  }
  lastWasDropped_ = false;

  const char *label = severity == Severity::Error     ? "error"
                      : severity == Severity::Warning ? "warning"
                                                      : "note";
  const char *labelColor = severity == Severity::Error     ? "\033[1;31m"
                           : severity == Severity::Warning ? "\033[1;35m"
                                                           : "\033[1;36m";
  std::string where;
  if (loc.isValid())
    where = fmt::format("{}:{}:{}: ", sources_.name(loc.file), loc.line, loc.column);
  if (color_)
    std::fprintf(out_, "\033[1m%s%s%s:\033[0m\033[1m %s\033[0m\n", where.c_str(), labelColor, label,
                 message.c_str());
  else
    std::fprintf(out_, "%s%s: %s\n", where.c_str(), label, message.c_str());

  if (!loc.isValid())
    return;
  std::string_view line = sources_.lineText(loc.file, loc.line);
  std::string caretLine = caretIndent(line, loc.column);
  std::fprintf(out_, "%.*s\n%s%s^%s\n", static_cast<int>(line.size()), line.data(), caretLine.c_str(),
               color_ ? "\033[1;32m" : "", color_ ? "\033[0m" : "");
}

} // namespace tkc
