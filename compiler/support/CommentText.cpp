#include "support/CommentText.h"

#include <fmt/format.h>

namespace tkc {

namespace {

/// The code point of the well-formed UTF-8 sequence at the start of `s` and
/// its length, or length 0 if the bytes there are not one.
struct CodePoint {
  char32_t value = 0;
  size_t length = 0;
};

CodePoint decodeUtf8(std::string_view s) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  unsigned char lead = byte(0);
  size_t length = lead >= 0xC2 && lead <= 0xDF ? 2 : lead >= 0xE0 && lead <= 0xEF ? 3 : lead >= 0xF0 && lead <= 0xF4 ? 4 : 0;
  if (length == 0 || length > s.size())
    return {};
  char32_t value = lead & (0x7F >> length);
  for (size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xC0) != 0x80)
      return {};
    value = (value << 6) | (byte(i) & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
  static constexpr char32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (value < kSmallest[length] || (value >= 0xD800 && value <= 0xDFFF) || value > 0x10FFFF)
    return {};
  return {value, length};
}

/// Code points that end a line, control the terminal, or reorder how the
/// text is displayed.
bool isHazardous(char32_t c) {
  return (c >= 0x80 && c <= 0x9F) ||     // C1 controls (U+0085 ends a line)
         c == 0x061C ||                  // Arabic letter mark
         (c >= 0x200B && c <= 0x200F) || // zero-width characters, direction marks
         (c >= 0x2028 && c <= 0x202E) || // line and paragraph separators, embeddings, overrides
         (c >= 0x2060 && c <= 0x206F) || // invisible operators, isolates
         c == 0xFEFF;                    // byte order mark
}

void escapeBytes(std::string &out, std::string_view bytes) {
  for (char c : bytes)
    out += fmt::format("\\x{:02X}", static_cast<unsigned char>(c));
}

} // namespace

std::string commentSafe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      // A backslash escapes as well, so no escape can be read as a splice.
      // `??` loses its second `?`: no `??/` trigraph can form.
      bool printable = (c >= 0x20 && c < 0x7F) || c == '\t';
      bool splices = c == '\\' || (c == '?' && !out.empty() && out.back() == '?');
      if (printable && !splices)
        out += static_cast<char>(c);
      else
        escapeBytes(out, text.substr(i, 1));
      ++i;
      continue;
    }
    CodePoint point = decodeUtf8(text.substr(i));
    size_t length = point.length ? point.length : 1;
    if (point.length && !isHazardous(point.value))
      out.append(text.substr(i, length));
    else
      escapeBytes(out, text.substr(i, length));
    i += length;
  }
  return out;
}

} // namespace tkc
