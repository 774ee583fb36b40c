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
// the user's file. Like a C compiler's -ferror-limit, only the first errors
// (20 by default) are kept and shown; the rest are counted, so a file of a
// million bad lines costs a counter, not a million messages.
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
  explicit DiagnosticEngine(const SourceManager& sources)
      : sources_(sources), error_limit_(default_error_limit_) {}

  // The limit new engines start with (`posc --error-limit N`).
  static void setDefaultErrorLimit(int limit) { default_error_limit_ = limit; }
  static int defaultErrorLimit() { return default_error_limit_; }

  Diagnostic& error(SourceRange range, std::string message);
  Diagnostic& warning(SourceRange range, std::string message);

  // Errors kept after this many are counted only; 0 keeps every error.
  void setErrorLimit(int limit) { error_limit_ = limit; }
  int errorLimit() const { return error_limit_; }

  bool hasErrors() const { return errors_ > 0; }
  int errorCount() const { return errors_; }
  const std::vector<Diagnostic>& all() const { return diagnostics_; }

  // All kept diagnostics, rendered in report order, followed by a count line
  // when there were errors ("2 errors generated.", or "25 errors generated;
  // 5 not shown (the limit is 20).").
  std::string render(bool color = false) const;
  std::string render(const Diagnostic& d, bool color = false) const;

 private:
  const SourceManager& sources_;
  std::vector<Diagnostic> diagnostics_;
  int errors_ = 0;
  int error_limit_;
  static inline int default_error_limit_ = 20;
  Diagnostic dropped_;  // what error() returns once the limit is reached
};

// "did you mean 'x'?" support: the closest candidate by edit distance, or
// empty if none is close enough to be a plausible typo.
std::string closestMatch(std::string_view word, const std::vector<std::string>& candidates);
// Adds a "did you mean" note (at the diagnostic's own range) when a close match exists.
void suggest(Diagnostic& d, std::string_view word, const std::vector<std::string>& candidates);

}  // namespace posc
