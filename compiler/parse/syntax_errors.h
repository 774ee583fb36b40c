// Turning ANTLR's syntax errors into Diagnostics (private to parse/).
#pragma once

#include <antlr4-runtime.h>

#include "compiler/diag/diagnostics.h"
#include "compiler/parse/locator.h"

namespace posc::parse {

// Collects lexer and parser errors as located diagnostics.
class SyntaxErrorListener : public antlr4::BaseErrorListener {
 public:
  SyntaxErrorListener(const Locator& locator, DiagnosticEngine& diags) : locator_(locator), diags_(diags) {}

  void syntaxError(antlr4::Recognizer* recognizer, antlr4::Token* offending, size_t line,
                   size_t column, const std::string& message, std::exception_ptr e) override;
  int errors() const { return errors_; }

 private:
  const Locator& locator_;
  DiagnosticEngine& diags_;
  int errors_ = 0;
};

// Limits (besides the source's size, kMaxSourceBytes) that keep the recursive
// parser and every recursive pass over expressions far from the end of the
// stack, whatever the input.
inline constexpr int kMaxBracketNesting = 64;
inline constexpr int kMaxOperatorNesting = 256;
inline constexpr int kMaxExpressionDepth = 512;  // operations on one path of an expression's tree

// Reports characters the language does not use, unbalanced brackets and
// nesting beyond the limits above. Returns false if anything was reported.
bool checkTokens(antlr4::CommonTokenStream& tokens, const Locator& locator, const SourceManager& sources,
                 DiagnosticEngine& diags);

}  // namespace posc::parse
