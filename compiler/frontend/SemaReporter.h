#pragma once
#include "support/Diagnostics.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace tkc::sema {

/// Collects the diagnostics of one kernel while it is checked under each of
/// its specialisations, so that a problem common to all of them is reported
/// once, and one that depends on the `where` values says under which.
class SpecializationReporter {
public:
  /// A disabled reporter drops everything (used when re-deriving facts).
  explicit SpecializationReporter(bool enabled) : enabled_(enabled) {}

  void setSpecialization(size_t index) { current_ = index; }

  template <typename... Args> void report(SourceLocation loc, DiagId id, Args &&...args) {
    if (!enabled_)
      return;
    Entry entry{loc, id, {fmt::format("{}", std::forward<Args>(args))...}, {}, {}};
    if (severityOf(id) == Severity::Note) {
      // Notes ride along with the diagnostic just reported, and only the
      // first time it is seen.
      if (attachNotes_ && !entries_.empty())
        entries_.back().notes.push_back(std::move(entry));
      return;
    }
    Key key{loc.file, loc.line, loc.column, id, fmt::format("{}", fmt::join(entry.args, "\x1f"))};
    auto [it, inserted] = index_.emplace(key, entries_.size());
    attachNotes_ = inserted;
    if (inserted)
      entries_.push_back(std::move(entry));
    entries_[it->second].specializations.insert(current_);
  }

  /// Hands every collected diagnostic to `diags`, in first-seen order.
  /// `describeSpecialization(i)` names specialisation i for the note added
  /// to diagnostics that did not occur under all `total` of them.
  template <typename Describe>
  void flush(DiagnosticEngine &diags, const std::string &kernelName, size_t total, Describe &&describeSpecialization) {
    // In source order; at one place, in the order of the specialisations.
    std::stable_sort(entries_.begin(), entries_.end(), [](const Entry &a, const Entry &b) {
      return std::tie(a.loc.line, a.loc.column) < std::tie(b.loc.line, b.loc.column);
    });
    for (const Entry &entry : entries_) {
      emit(diags, entry);
      for (const Entry &note : entry.notes)
        emit(diags, note);
      if (total > 1 && entry.specializations.size() < total)
        diags.report(SourceLocation{}, DiagId::InSpecialization, kernelName,
                     describeSpecialization(*entry.specializations.begin()));
    }
    entries_.clear();
    index_.clear();
  }

private:
  struct Entry {
    SourceLocation loc;
    DiagId id;
    std::vector<std::string> args;
    std::vector<Entry> notes;
    std::set<size_t> specializations;
  };
  using Key = std::tuple<uint32_t, uint32_t, uint32_t, DiagId, std::string>;

  static void emit(DiagnosticEngine &diags, const Entry &entry) {
    const auto &a = entry.args;
    switch (a.size()) {
    case 0: diags.report(entry.loc, entry.id); break;
    case 1: diags.report(entry.loc, entry.id, a[0]); break;
    case 2: diags.report(entry.loc, entry.id, a[0], a[1]); break;
    case 3: diags.report(entry.loc, entry.id, a[0], a[1], a[2]); break;
    default: diags.report(entry.loc, entry.id, a[0], a[1], a[2], a[3]); break;
    }
  }

  bool enabled_;
  bool attachNotes_ = false;
  size_t current_ = 0;
  std::vector<Entry> entries_;
  std::map<Key, size_t> index_;
};

} // namespace tkc::sema
