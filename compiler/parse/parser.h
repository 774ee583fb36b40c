// Parsing: .pos text -> ast::File, with located syntax errors.
//
// ANTLR's console error listeners are removed; syntax errors become
// Diagnostics. Before parsing, a bracket check finds unclosed or unmatched
// braces and points at the brace that is most likely wrong (using
// indentation), which reads far better than ANTLR's "missing '}' at <EOF>".
#pragma once

#include <optional>

#include "compiler/ast/ast.h"
#include "compiler/diag/diagnostics.h"

namespace posc::parse {

// Returns nullopt if there were syntax errors (already reported).
std::optional<ast::File> parseFile(int32_t source, const SourceManager& sources,
                                   DiagnosticEngine& diags);

// Parses a whole source as one expression (used for `--set key=value`).
ast::ExprPtr parseExpression(int32_t source, const SourceManager& sources,
                             DiagnosticEngine& diags);

// Parses a whole source as one `posc repl` input (a command, a definition or
// an expression). Returns nullopt after reporting syntax errors.
std::optional<ast::ReplLine> parseReplLine(int32_t source, const SourceManager& sources,
                                           DiagnosticEngine& diags);

}  // namespace posc::parse
