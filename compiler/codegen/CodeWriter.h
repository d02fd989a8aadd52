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

private:
  std::string text_;
  int indent_ = 0;
};

} // namespace tkc::codegen
