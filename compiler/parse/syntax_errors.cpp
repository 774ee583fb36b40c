// Syntax errors as diagnostics, and the bracket check that runs before the
// parser (it explains a missing '}' at the brace that lost its partner).
#include "compiler/parse/syntax_errors.h"

#include <fmt/format.h>

#include "PosLexer.h"

namespace posc::parse {

namespace {

std::string describe(const antlr4::Token* t) {
  if (t == nullptr) return "input";
  if (t->getType() == antlr4::Token::EOF) return "end of file";
  return fmt::format("'{}'", t->getText());
}

std::string expectedList(antlr4::Recognizer* recognizer, const antlr4::misc::IntervalSet& set) {
  std::vector<std::string> names;
  for (size_t t : set.toList()) {
    if (t == antlr4::Token::EOF) { names.push_back("end of file"); continue; }
    std::string name = recognizer->getVocabulary().getDisplayName(t);
    if (name == "ID") name = "a name";
    else if (name == "NUMBER") name = "a number";
    else if (name == "STRING") name = "a string";
    else if (name == "ERROR_CHAR") continue;
    names.push_back(name);
  }
  if (names.empty() || names.size() > 8) return {};
  std::string s;
  for (size_t i = 0; i < names.size(); ++i)
    s += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return s;
}

}  // namespace

void SyntaxErrorListener::syntaxError(antlr4::Recognizer* recognizer, antlr4::Token* offending,
                                      size_t, size_t, const std::string& message,
                                      std::exception_ptr) {
  ++errors_;
  SourceRange range = locator_.token(offending);
  // Past the engine's limit an error is counted, not described, so that the
  // count line says how many there were ("35 errors generated; 15 not shown").
  if (diags_.errorLimit() > 0 && diags_.errorCount() >= diags_.errorLimit()) {
    diags_.error(range, {});
    return;
  }
  std::string msg;
  std::string expected;
  if (auto* parser = dynamic_cast<antlr4::Parser*>(recognizer)) {
    expected = expectedList(recognizer, parser->getExpectedTokens());
  }
  if (message.rfind("missing ", 0) == 0) {
    // "missing '}' at 'x'": the parser wanted a token before `offending`.
    std::string wanted = message.substr(8, message.find(" at ") - 8);
    msg = fmt::format("expected {} before {}", wanted, describe(offending));
  } else {
    msg = fmt::format("unexpected {}", describe(offending));
  }
  Diagnostic& d = diags_.error(range, "syntax error: " + msg);
  if (!expected.empty() && message.rfind("missing ", 0) != 0)
    d.notes.push_back({range, "expected " + expected});
}

bool checkTokens(antlr4::CommonTokenStream& tokens, const Locator& locator, const SourceManager& sources,
                 DiagnosticEngine& diags) {
  const SourceFile& file = sources.file(locator.source());
  bool ok = true;

  // The parser is recursive descent: each open bracket, prefix operator, '^'
  // and '?' still waiting for its operand is a level of recursion. These
  // limits keep any input's recursion far from the end of the stack.
  struct Open {
    const antlr4::Token* token;  // nullptr: the level outside every bracket
    int conditionals = 0;        // '?' since the last '=', ',' or ';' at this level
    int operators = 0;           // prefix operators and '^' since the last binary operator
  };
  std::vector<Open> stack;
  Open outside{nullptr};
  int pending = 0;  // conditionals + operators over all levels
  auto level = [&]() -> Open& { return stack.empty() ? outside : stack.back(); };
  auto resetOperators = [&](bool conditionals_too) {
    Open& l = level();
    pending -= l.operators;
    l.operators = 0;
    if (conditionals_too) {
      pending -= l.conditionals;
      l.conditionals = 0;
    }
  };
  bool after_operand = false;  // the previous token ends an operand (a name, a number, ')' ...)
  const antlr4::Token* suspect = nullptr;  // first '{' closed by a '}' at another indentation

  auto indentation = [&](const antlr4::Token* t) {
    SourceRange r = locator.token(t);
    LineColumn lc = file.lineColumn(r.begin);
    std::string_view line = file.lineText(lc.line);
    size_t n = line.find_first_not_of(" \t");
    return std::make_pair(n == std::string_view::npos ? line.size() : n,
                          n != std::string_view::npos && n + 1 == static_cast<size_t>(lc.column));
  };
  auto closer = [](const std::string& open) {
    return open == "{" ? "}" : open == "(" ? ")" : "]";
  };

  for (antlr4::Token* t : tokens.getTokens()) {
    if (t->getType() == grammar::PosLexer::ERROR_CHAR) {
      std::string text = t->getText();
      Diagnostic& d = diags.error(locator.token(t), fmt::format("unexpected character '{}'", text));
      if (text == "\"") d.hint = "strings must be closed on the same line";
      else if (text == ";" || text == ":") d.hint = "';' may only end an item";
      ok = false;
      continue;
    }
    if (t->getChannel() != antlr4::Token::DEFAULT_CHANNEL) continue;
    std::string text = t->getText();
    const size_t type = t->getType();
    const bool operand_end = type == grammar::PosLexer::ID || type == grammar::PosLexer::NUMBER ||
                             type == grammar::PosLexer::STRING || text == ")" || text == "]";
    const bool prefix_position = !after_operand;
    after_operand = operand_end;
    if (text == "{" || text == "(" || text == "[") {
      if (stack.size() >= static_cast<size_t>(kMaxBracketNesting)) {
        Diagnostic& d = diags.error(locator.token(t), fmt::format("brackets nested more than {} deep",
                                                                  kMaxBracketNesting));
        d.hint = "name the inner parts (a setting, a component argument or a separate score term)";
        return false;
      }
      stack.push_back({t});
    } else if (text == "}" || text == ")" || text == "]") {
      if (stack.empty() || closer(stack.back().token->getText()) != text) {
        Diagnostic& d = diags.error(locator.token(t), fmt::format("unmatched '{}'", text));
        if (!stack.empty())
          d.notes.push_back({locator.token(stack.back().token),
                             fmt::format("the innermost open bracket is this '{}'",
                                         stack.back().token->getText())});
        return false;
      }
      if (text == "}" && suspect == nullptr) {
        auto [open_indent, _] = indentation(stack.back().token);
        auto [close_indent, close_first] = indentation(t);
        if (close_first && open_indent != close_indent) suspect = stack.back().token;
      }
      pending -= stack.back().operators + stack.back().conditionals;
      stack.pop_back();
    } else if (text == "^" || text == "?" || (prefix_position && (text == "-" || text == "+" || text == "!"))) {
      if (text == "?") resetOperators(false);
      ++(text == "?" ? level().conditionals : level().operators);
      if (++pending > kMaxOperatorNesting) {
        Diagnostic& d = diags.error(locator.token(t),
                                    fmt::format("expression nested more than {} deep (prefix operators, "
                                                "'^' and '?:' waiting for their operands)",
                                                kMaxOperatorNesting));
        d.hint = "split the expression into named parts";
        return false;
      }
    } else if (text == "=" || text == "," || text == ";" || text == "+=" ||
               (type >= grammar::PosLexer::IMPORT && type <= grammar::PosLexer::ANALYSIS)) {
      resetOperators(true);
    } else if (!operand_end) {
      resetOperators(false);  // a binary operator, ':' or '.': the pending operands are complete
    }
  }
  if (!stack.empty()) {
    const antlr4::Token* open = stack.back().token;
    if (open->getText() == "{" && suspect != nullptr) open = suspect;
    Diagnostic& d = diags.error(locator.token(open),
                                fmt::format("'{}' is never closed", open->getText()));
    if (open == suspect)
      d.hint = fmt::format("add '}}' to close this block; the '}}' that closes it now is "
                           "indented like an enclosing block");
    else
      d.hint = fmt::format("add '{}' before the end of the file", closer(open->getText()));
    return false;
  }
  return ok;
}

}  // namespace posc::parse
