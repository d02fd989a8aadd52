// Support code whose cases are hard to reach through whole files.

#include "support/CommentText.h"
#include "support/SourceLocation.h"

#include <gtest/gtest.h>

using namespace tkc;

namespace {

TEST(CommentSafe, KeepsPrintableText) {
  EXPECT_EQ(commentSafe("x = load(X[0 +: 4]) // note"), "x = load(X[0 +: 4]) // note");
  EXPECT_EQ(commentSafe("\tα = β * 漢"), "\tα = β * 漢");
  EXPECT_EQ(commentSafe("a ? b : c"), "a ? b : c");
}

TEST(CommentSafe, EscapesLineEndsAndControls) {
  EXPECT_EQ(commentSafe("a\nb\rc"), "a\\x0Ab\\x0Dc");
  EXPECT_EQ(commentSafe(std::string_view("\0\x1b[2J\x7f", 6)), "\\x00\\x1B[2J\\x7F");
  EXPECT_EQ(commentSafe("\f\v"), "\\x0C\\x0B");
}

TEST(CommentSafe, NothingSplicesTheNextLine) {
  EXPECT_EQ(commentSafe("x \\"), "x \\x5C");
  EXPECT_EQ(commentSafe("x \\ "), "x \\x5C ");
  EXPECT_EQ(commentSafe("?" "?/"), "?\\x3F/");
  EXPECT_EQ(commentSafe("??" "?/"), "?\\x3F?/");
  // An escape never ends in a backslash, so escaping twice stays safe.
  std::string twice = commentSafe(commentSafe("\\\r\n"));
  EXPECT_NE(twice.back(), '\\');
}

TEST(CommentSafe, EscapesUnicodeLineEndsAndDirectionControls) {
  EXPECT_EQ(commentSafe("a\u2028b"), "a\\xE2\\x80\\xA8b");        // line separator
  EXPECT_EQ(commentSafe("a\u202Eb"), "a\\xE2\\x80\\xAEb");        // right-to-left override
  EXPECT_EQ(commentSafe("a\u2066b"), "a\\xE2\\x81\\xA6b");        // left-to-right isolate
  EXPECT_EQ(commentSafe("a\xc2\x85" "b"), "a\\xC2\\x85b");        // next line (C1)
  EXPECT_EQ(commentSafe("\xef\xbb\xbfk"), "\\xEF\\xBB\\xBFk");     // byte order mark
}

TEST(CommentSafe, EscapesMalformedUtf8) {
  EXPECT_EQ(commentSafe("\xff"), "\\xFF");
  EXPECT_EQ(commentSafe("\xc3"), "\\xC3");                 // truncated
  EXPECT_EQ(commentSafe("\xc0\xaf"), "\\xC0\\xAF");        // overlong `/`
  EXPECT_EQ(commentSafe("\xed\xa0\x80"), "\\xED\\xA0\\x80"); // surrogate
  EXPECT_EQ(commentSafe("\xe2\x28\xa1"), "\\xE2(\\xA1");
}

TEST(SourceManager, LineEnds) {
  SourceManager sources;
  uint32_t file = sources.addBuffer("x.tk", "a\nb\r\nc\rd\r\re");
  const char *lines[] = {"a", "b", "c", "d", "", "e"};
  for (uint32_t line = 1; line <= 6; ++line)
    EXPECT_EQ(sources.lineText(file, line), lines[line - 1]) << "line " << line;
  EXPECT_EQ(sources.lineText(file, 7), "");
}

} // namespace
