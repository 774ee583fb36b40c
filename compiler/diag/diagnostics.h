// Diagnostics: located, human errors.
//
//   decay.pos:12:24: error: unknown position channel 'colum'
//       use rope(channel = colum, pairs = 8..32)
//                          ^~~~~
//   decay.pos:12:24: note: did you mean 'column'?
//
// Every stage reports through a DiagnosticEngine and keeps going where it
// can, so one run shows several independent errors. User errors make the
// CLI exit with 2; internal errors are labelled as such and never blamed on
// the user's file.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "compiler/source/source.h"

namespace posc {

enum class Severity { Error, Warning, Note };

struct DiagnosticNote {
  SourceRange range;  // may be invalid: a note without a location
  std::string message;
};

struct Diagnostic {
  Severity severity = Severity::Error;
  SourceRange range;
  std::string message;
  std::vector<DiagnosticNote> notes;
  std::string hint;  // printed as "help: ..."
};

class DiagnosticEngine {
 public:
  explicit DiagnosticEngine(const SourceManager& sources) : sources_(sources) {}

  Diagnostic& error(SourceRange range, std::string message);
  Diagnostic& warning(SourceRange range, std::string message);

  bool hasErrors() const { return errors_ > 0; }
  int errorCount() const { return errors_; }
  const std::vector<Diagnostic>& all() const { return diagnostics_; }

  // All diagnostics, rendered in report order, followed by a count line when
  // there were errors ("2 errors generated.").
  std::string render(bool color = false) const;
  std::string render(const Diagnostic& d, bool color = false) const;

 private:
  const SourceManager& sources_;
  std::vector<Diagnostic> diagnostics_;
  int errors_ = 0;
};

// "did you mean 'x'?" support: the closest candidate by edit distance, or
// empty if none is close enough to be a plausible typo.
std::string closestMatch(std::string_view word, const std::vector<std::string>& candidates);
// Adds a "did you mean" note (at the diagnostic's own range) when a close match exists.
void suggest(Diagnostic& d, std::string_view word, const std::vector<std::string>& candidates);

}  // namespace posc
