#pragma once
#include "support/Diagnostics.h"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace tkc {

/// Inputs larger than this are refused: no kernel is that big, and the limit
/// keeps every phase's memory use bounded. It is enforced while reading, so
/// an endless input (/dev/zero, a pipe) stops there too.
constexpr size_t kMaxInputBytes = 16u << 20;

/// The file behind an open descriptor, to tell whether two paths (through
/// links or not) name the same file.
struct FileIdentity {
  unsigned long long device = 0;
  unsigned long long inode = 0;
  bool operator==(const FileIdentity &) const = default;
};

struct InputFile {
  std::string text;
  /// Set when the input is a regular file (a named one or standard input
  /// redirected from one).
  std::optional<FileIdentity> identity;
};

/// Reads `path` (`-`: standard input) up to kMaxInputBytes; reports and
/// returns nullopt if it cannot be read or is larger.
std::optional<InputFile> readInputFile(const std::string &path, DiagnosticEngine &diags);

/// Writes `text` to `path` (`-`: standard output) whole or not at all. A
/// regular file is replaced by renaming a complete temporary over it (through
/// symbolic links: the link stays, its target is replaced); anything else (a
/// device, a FIFO) is written to in place, never replaced. Refuses to write
/// over `input`. Reports and returns false on any failure, leaving an
/// existing output as it was.
bool writeOutputFile(const std::string &path, std::string_view text, const InputFile *input,
                     DiagnosticEngine &diags);

} // namespace tkc
