#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tkc {

/// A position in a source buffer. `file` indexes SourceManager's buffers;
/// line and column are 1-based. An invalid location has line 0.
struct SourceLocation {
  uint32_t file = 0;
  uint32_t line = 0;
  uint32_t column = 0;
  bool isValid() const { return line != 0; }
};

/// Whether the byte at `offset` ends a line. LF, CRLF and a lone CR (old Mac
/// files) all end one; of CRLF the LF counts, so that the pair is one end.
/// The lexer and the line table both use this, so that diagnostics and the
/// source quoted in the output agree on line numbers.
inline bool endsLine(std::string_view text, size_t offset) {
  return text[offset] == '\n' || (text[offset] == '\r' && (offset + 1 == text.size() || text[offset + 1] != '\n'));
}

/// Owns the text of every file the compiler reads so that diagnostics can
/// quote the offending line long after the lexer has moved on.
class SourceManager {
public:
  /// Registers a buffer and returns its id.
  uint32_t addBuffer(std::string name, std::string text);
  const std::string &name(uint32_t file) const { return buffers_[file].name; }
  std::string_view text(uint32_t file) const { return buffers_[file].text; }
  /// The text of one line, without its line end.
  std::string_view lineText(uint32_t file, uint32_t line) const;

private:
  struct Buffer {
    std::string name;
    std::string text;
    std::vector<size_t> lineStarts;
  };
  std::vector<Buffer> buffers_;
};

} // namespace tkc
