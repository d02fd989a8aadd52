#pragma once
#include <string>
#include <string_view>

namespace tkc {

/// `text` (a source line, a file name: anything the user wrote) made safe to
/// print inside a `//` comment of generated C++. The comment must end where
/// the generated line ends, so nothing may end the line early (CR, LF and
/// other control characters, Unicode line separators), join the next line to
/// it (a backslash or the `??/` trigraph before the newline), or make the
/// text read differently from how the compiler sees it (bidirectional
/// overrides, malformed UTF-8). Those bytes are written as `\xNN` escapes;
/// printable ASCII, tabs and well-formed printable UTF-8 stay as they are.
std::string commentSafe(std::string_view text);

} // namespace tkc
