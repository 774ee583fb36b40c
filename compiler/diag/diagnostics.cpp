// Rendering of diagnostics with the source line and a caret range, and the
// edit-distance suggestions behind "did you mean".
#include "compiler/diag/diagnostics.h"

#include <fmt/format.h>

#include "compiler/source/encoding.h"

#include <algorithm>
#include <set>

namespace posc {

Diagnostic& DiagnosticEngine::error(SourceRange range, std::string message) {
  ++errors_;
  if (error_limit_ > 0 && errors_ > error_limit_) {
    dropped_ = {Severity::Error, range, {}, {}, {}};
    return dropped_;
  }
  diagnostics_.push_back({Severity::Error, range, std::move(message), {}, {}});
  return diagnostics_.back();
}

Diagnostic& DiagnosticEngine::warning(SourceRange range, std::string message) {
  diagnostics_.push_back({Severity::Warning, range, std::move(message), {}, {}});
  return diagnostics_.back();
}

namespace {

const char* severityName(Severity s) {
  switch (s) {
    case Severity::Error: return "error";
    case Severity::Warning: return "warning";
    case Severity::Note: return "note";
  }
  return "?";
}

const char* severityColor(Severity s) {
  switch (s) {
    case Severity::Error: return "\033[1;31m";
    case Severity::Warning: return "\033[1;35m";
    case Severity::Note: return "\033[1;36m";
  }
  return "";
}

// "path:line:col: severity: message\n<line>\n<caret>\n"
void renderOne(std::string& out, const SourceManager& sources, Severity severity,
               const SourceRange& range, const std::string& message, bool color) {
  const char* bold = color ? "\033[1m" : "";
  const char* reset = color ? "\033[0m" : "";
  const char* sev = color ? severityColor(severity) : "";
  // The message quotes the user's text (names, values, paths): shown escaped and bounded.
  const std::string shown_message = displayText(message);
  if (!range.valid()) {
    out += fmt::format("{}posc:{} {}{}:{} {}{}{}\n", bold, reset, sev, severityName(severity),
                       reset, bold, shown_message, reset);
    return;
  }
  const SourceFile& file = sources.file(range.file);
  LineColumn at = file.lineColumn(range.begin);
  out += fmt::format("{}{}:{}:{}:{} {}{}:{} {}{}{}\n", bold, displayText(file.path()), at.line, at.column,
                     reset, sev, severityName(severity), reset, bold, shown_message, reset);
  std::string_view full = file.lineText(at.line);
  // Long lines (generated files, a pasted wall of text) are shown as a window
  // around the caret, cut at character boundaries and marked with "...".
  constexpr size_t kWindow = 160, kBefore = 60;
  size_t begin = 0, caret = static_cast<size_t>(at.column - 1);
  if (full.size() > kWindow && caret > kBefore) begin = caret - kBefore;
  size_t end = std::min(full.size(), begin + kWindow);
  auto continuation = [&](size_t i) { return i < full.size() && (static_cast<unsigned char>(full[i]) & 0xC0) == 0x80; };
  for (int k = 0; k < 3 && continuation(begin); ++k) ++begin;
  for (int k = 0; k < 3 && continuation(end); ++k) ++end;
  const std::string lead = begin > 0 ? "..." : "", tail = end < full.size() ? "..." : "";
  std::string_view line = full.substr(begin, end - begin);
  // The line as shown (bad bytes escaped) and a caret line that keeps its tabs.
  DisplayLine shown = displayLine(line);
  out += fmt::format("    {}{}{}\n", lead, shown.text, tail);
  auto cell = [&](size_t offset_in_full) {
    size_t i = offset_in_full < begin ? 0 : std::min(offset_in_full - begin, line.size());
    return shown.column_of[i];
  };
  uint32_t first = cell(caret);
  std::string marker(lead.size(), ' ');
  for (uint32_t c = 0; c < first; ++c) marker += c < shown.tabs.size() && shown.tabs[c] ? '\t' : ' ';
  size_t width = 1;
  if (range.end > range.begin) {
    LineColumn last = file.lineColumn(range.end - 1);
    uint32_t stop = last.line == at.line ? cell(static_cast<size_t>(last.column)) : cell(full.size());
    width = std::max<size_t>(1, stop - first);
  }
  marker += '^';
  if (width > 1) marker += std::string(width - 1, '~');
  out += fmt::format("    {}{}{}\n", color ? "\033[1;32m" : "", marker, reset);
}

}  // namespace

std::string DiagnosticEngine::render(const Diagnostic& d, bool color) const {
  std::string out;
  renderOne(out, sources_, d.severity, d.range, d.message, color);
  for (const DiagnosticNote& n : d.notes) {
    if (n.range.valid() && !(n.range.file == d.range.file && n.range.begin == d.range.begin &&
                             n.range.end == d.range.end)) {
      renderOne(out, sources_, Severity::Note, n.range, n.message, color);
    } else {
      out += fmt::format("{}note:{} {}\n", color ? severityColor(Severity::Note) : "",
                         color ? "\033[0m" : "", displayText(n.message));
    }
  }
  if (!d.hint.empty()) out += fmt::format("{}help:{} {}\n", color ? "\033[1;36m" : "",
                                          color ? "\033[0m" : "", displayText(d.hint));
  return out;
}

std::string DiagnosticEngine::render(bool color) const {
  // A diagnostic raised again word for word (an error in a base experiment,
  // met once for every experiment that extends it) is shown and counted once.
  std::string out;
  std::set<std::string> shown;
  int repeated = 0;
  for (const Diagnostic& d : diagnostics_) {
    std::string text = render(d, color);
    if (!shown.insert(text).second) {
      repeated += d.severity == Severity::Error ? 1 : 0;
      continue;
    }
    out += text;
  }
  const int errors = errors_ - repeated;
  if (errors > 0) {
    out += fmt::format("{} error{} generated", errors, errors == 1 ? "" : "s");
    if (error_limit_ > 0 && errors_ > error_limit_)
      out += fmt::format("; {} not shown (the limit is {}; --error-limit N changes it, 0 shows all)",
                         errors_ - error_limit_, error_limit_);
    out += ".\n";
  }
  return out;
}

namespace {

size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      size_t substitute = diagonal + (std::tolower(a[i - 1]) == std::tolower(b[j - 1]) ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitute});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string closestMatch(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = SIZE_MAX;
  for (const std::string& c : candidates) {
    if (c == word) continue;
    size_t d = editDistance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  // A plausible typo: at most a third of the word changed (and at least one edit allowed).
  size_t limit = std::max<size_t>(1, (std::max(word.size(), best.size()) + 2) / 3);
  return best_distance <= limit ? best : std::string();
}

void suggest(Diagnostic& d, std::string_view word, const std::vector<std::string>& candidates) {
  std::string match = closestMatch(word, candidates);
  if (!match.empty()) d.notes.push_back({d.range, fmt::format("did you mean '{}'?", match)});
}

}  // namespace posc
