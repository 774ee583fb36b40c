// Turning ANTLR's syntax errors into Diagnostics (private to parse/).
#pragma once

#include <antlr4-runtime.h>

#include "compiler/diag/diagnostics.h"

namespace posc::parse {

// Collects lexer and parser errors as located diagnostics.
class SyntaxErrorListener : public antlr4::BaseErrorListener {
 public:
  SyntaxErrorListener(int32_t source, const SourceManager& sources, DiagnosticEngine& diags)
      : source_(source), sources_(sources), diags_(diags) {}

  void syntaxError(antlr4::Recognizer* recognizer, antlr4::Token* offending, size_t line,
                   size_t column, const std::string& message, std::exception_ptr e) override;
  int errors() const { return errors_; }

 private:
  int32_t source_;
  const SourceManager& sources_;
  DiagnosticEngine& diags_;
  int errors_ = 0;
};

// Reports characters the language does not use and unbalanced brackets.
// Returns false if anything was reported.
bool checkTokens(antlr4::CommonTokenStream& tokens, int32_t source, const SourceManager& sources,
                 DiagnosticEngine& diags);

}  // namespace posc::parse
