#pragma once
// How names reach the generated CUDA. A source name must never mean
// something else in the output: it must not be a C++ keyword, a macro or
// declaration of the headers the output includes, a name the generated code
// uses for its own locals and temporaries, or another source name. So:
//   - a source name is printed as itself unless it is reserved (below), in
//     which case it is printed as `v_` + itself;
//   - every name a function of the output declares comes from one NameTable
//     per function, which never hands out a name twice (`acc`, `acc_1`, and
//     `v_row` for a source `row` even where the source also has a `v_row`).
#include <map>
#include <set>
#include <string>
#include <string_view>

namespace tkc::codegen {

/// Whether a source name collides, or may collide, with what the output
/// already means: C++ keywords, the headers' macros and declarations, the
/// emitter's own names (`row`, `lane`, `t_3`, `tkc_...`).
bool isReservedIdentifier(std::string_view name);

/// The C++ spelling of a source name.
std::string sourceIdentifier(std::string_view name);

/// The names declared in one function of the output.
class NameTable {
public:
  /// `base` itself if it is free, else `base_1`, `base_2`, ...; `numbered`
  /// starts at `base_0` (temporaries).
  std::string fresh(const std::string &base, bool numbered = false);
  /// Marks a name as taken.
  void reserve(const std::string &name) { used_.insert(name); }
  bool isUsed(const std::string &name) const { return used_.count(name) != 0; }

private:
  std::set<std::string> used_;
  std::map<std::string, int> nextSuffix_; // where the search for a free suffix resumes
};

} // namespace tkc::codegen
