// Facts the passes share with files outside the compiler.

#include "passes/Pass.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

using namespace tkc;

namespace {

/// The widths in `WIDTHS = (32, 48, ...)` of tools/gen_wgmma.py, which
/// writes the runtime's wgmma wrappers (runtime/tkc_wgmma.cuh); empty if
/// the line is missing.
std::set<int64_t> generatedWgmmaWidths() {
  std::ifstream in(TKC_SOURCE_DIR "/tools/gen_wgmma.py");
  std::set<int64_t> widths;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("WIDTHS = (", 0) != 0)
      continue;
    std::string list = line.substr(line.find('(') + 1, line.find(')') - line.find('(') - 1);
    std::stringstream items(list);
    for (std::string item; std::getline(items, item, ',');)
      widths.insert(std::stoll(item));
  }
  return widths;
}

} // namespace

// hopper-layout sends a product to wgmma only at a width the runtime has a
// wrapper for: the two lists must agree.
TEST(Passes, WgmmaWidthsAreTheGeneratedOnes) {
  std::set<int64_t> generated = generatedWgmmaWidths();
  ASSERT_FALSE(generated.empty());
  std::set<int64_t> accepted;
  for (int64_t n = 1; n <= 512; ++n)
    if (isWgmmaWidth(n))
      accepted.insert(n);
  EXPECT_EQ(generated, accepted);
}
