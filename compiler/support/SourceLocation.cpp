#include "support/SourceLocation.h"

namespace tkc {

uint32_t SourceManager::addBuffer(std::string name, std::string text) {
  Buffer buffer{std::move(name), std::move(text), {0}};
  for (size_t i = 0; i < buffer.text.size(); ++i)
    if (endsLine(buffer.text, i))
      buffer.lineStarts.push_back(i + 1);
  buffers_.push_back(std::move(buffer));
  return static_cast<uint32_t>(buffers_.size() - 1);
}

std::string_view SourceManager::lineText(uint32_t file, uint32_t line) const {
  if (file >= buffers_.size())
    return {};
  const Buffer &buffer = buffers_[file];
  if (line == 0 || line > buffer.lineStarts.size())
    return {};
  size_t begin = buffer.lineStarts[line - 1];
  size_t end = buffer.text.find_first_of("\r\n", begin);
  if (end == std::string::npos)
    end = buffer.text.size();
  return std::string_view(buffer.text).substr(begin, end - begin);
}

} // namespace tkc
