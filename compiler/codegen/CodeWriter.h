#pragma once
#include <fmt/format.h>

#include <string>

namespace tkc::codegen {

/// Accumulates C++ text line by line with the current indentation.
class CodeWriter {
public:
  template <typename... Args> void line(fmt::format_string<Args...> format, Args &&...args) {
    text_.append(indent_ * 2, ' ');
    text_ += fmt::format(format, std::forward<Args>(args)...);
    text_ += '\n';
  }
  void blank() { text_ += '\n'; }
  void open(const std::string &header) {
    if (header.empty())
      line("{{");
    else
      line("{} {{", header);
    ++indent_;
  }
  void close(const std::string &trailer = "") {
    --indent_;
    line("}}{}", trailer);
  }
  void indent() { ++indent_; }
  void dedent() { --indent_; }
  std::string &text() { return text_; }

  /// A place in the text, where a line can be inserted later.
  struct Mark {
    size_t offset = std::string::npos;
    int indent = 0;
    bool set() const { return offset != std::string::npos; }
  };
  Mark mark() const { return {text_.size(), indent_}; }
  /// Inserts `code` as a line at `at`; returns how many characters it took
  /// (later marks move by that much).
  size_t insertLine(const Mark &at, const std::string &code) {
    std::string inserted = std::string(at.indent * 2, ' ') + code + '\n';
    text_.insert(at.offset, inserted);
    return inserted.size();
  }

private:
  std::string text_;
  int indent_ = 0;
};

} // namespace tkc::codegen
