// The one argument matcher (compiler/sema/arguments.h): how a call's
// arguments meet its callee's parameters, directly and through the three
// callers of the language (component uses, attention primitives, probes),
// which must word the same misuse the same way. The REPL's commands use it
// too (tests/repl/session_test.cpp).
#include <gtest/gtest.h>

#include <fstream>

#include "compiler/driver/compile.h"
#include "compiler/parse/parser.h"
#include "compiler/sema/arguments.h"

using namespace posc;

namespace {

struct Matched {
  std::map<std::string, std::string> given;  // parameter -> its argument's text
  bool ok = false;
  std::string errors;
};

// Matches the arguments of the call `text` (e.g. "f(1, b = 2)") to `shape`.
Matched match(const std::string& text, sema::CallShape shape) {
  SourceManager sources;
  DiagnosticEngine diags(sources);
  diags.setErrorLimit(0);
  const int32_t id = sources.add("<call>", text);
  ast::ExprPtr call = parse::parseExpression(id, sources, diags);
  EXPECT_TRUE(call && call->kind == ast::Expr::Kind::Call) << diags.render();
  Matched out;
  if (!call) return out;
  sema::MatchedArguments m = sema::matchArguments(shape, call->args, call->range, diags);
  out.ok = m.ok;
  for (const auto& [name, arg] : m.given) out.given[name] = ast::dumpExpr(*arg->value);
  out.errors = diags.render(false);
  EXPECT_EQ(out.ok, !diags.hasErrors());
  return out;
}

sema::CallShape threeParameters() {
  sema::CallShape s;
  s.callee = "'f'";
  s.parameters = {{"pairs", true, {}}, {"by", true, {}}, {"base", false, {}}};
  s.usage = "usage: f(pairs, by, base)";
  return s;
}

std::string compileErrors(const std::string& attention_and_probes) {
  std::string path = testing::TempDir() + "/arguments_test_input.pos";
  std::ofstream(path) << "import rope\n"
                         "experiment e {\n"
                         "  task { train_max_digits = 5  test_digits = [5, 10] }\n"
                         "  model { layers = 2  width = 64  heads = 2 }\n"
                      << attention_and_probes << "}\n";
  driver::CompileRequest r;
  r.path = path;
  driver::Compilation c;
  EXPECT_FALSE(c.compile(r));
  return c.diags.render(false);
}

}  // namespace

TEST(Arguments, PositionalFillInOrderThenNamesInAnyOrder) {
  Matched m = match("f(0..8, base = 500, by = column)", threeParameters());
  EXPECT_TRUE(m.ok) << m.errors;
  EXPECT_EQ(m.given, (std::map<std::string, std::string>{{"pairs", "0..8"}, {"by", "column"}, {"base", "500"}}));
  Matched optional_left_out = match("f(0..8, column)", threeParameters());
  EXPECT_TRUE(optional_left_out.ok) << optional_left_out.errors;
  EXPECT_EQ(optional_left_out.given.count("base"), 0u);
}

TEST(Arguments, EveryProblemOfACallIsReportedAtItsArgument) {
  // A misspelt name (with a suggestion), a positional argument after a named
  // one, a parameter given twice, and a required one missing: four errors.
  Matched m = match("f(bse = 2, 0..8, pairs = 1..2, base = 3, base = 4)", threeParameters());
  EXPECT_FALSE(m.ok);
  EXPECT_EQ(m.errors,
            "<call>:1:3: error: 'f' has no argument 'bse'\n"
            "    f(bse = 2, 0..8, pairs = 1..2, base = 3, base = 4)\n"
            "      ^~~\n"
            "note: did you mean 'base'?\n"
            "help: usage: f(pairs, by, base)\n"
            "<call>:1:12: error: positional arguments go before named ones\n"
            "    f(bse = 2, 0..8, pairs = 1..2, base = 3, base = 4)\n"
            "               ^~~~\n"
            "help: usage: f(pairs, by, base)\n"
            "<call>:1:42: error: argument 'base' is given twice\n"
            "    f(bse = 2, 0..8, pairs = 1..2, base = 3, base = 4)\n"
            "                                             ^~~~~~~~\n"
            "<call>:1:1: error: 'f' needs the argument 'by'\n"
            "    f(bse = 2, 0..8, pairs = 1..2, base = 3, base = 4)\n"
            "    ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\n"
            "help: usage: f(pairs, by, base)\n"
            "4 errors generated.\n");
  // The arguments that matched are still there for their values' checks.
  EXPECT_EQ(m.given.at("pairs"), "1..2");
  EXPECT_EQ(m.given.at("base"), "3");
}

TEST(Arguments, PositionalBeyondTheParametersAndNamedOnlyCallees) {
  Matched extra = match("f(1, 2, 3, 4)", threeParameters());
  EXPECT_NE(extra.errors.find("<call>:1:12: error: 'f' takes at most 3 positional arguments"), std::string::npos)
      << extra.errors;
  sema::CallShape none;
  none.callee = "'null_slot'";
  EXPECT_NE(match("null_slot(1)", none).errors.find("'null_slot' takes no arguments"), std::string::npos);
  sema::CallShape named = threeParameters();
  named.positional = false;
  Matched m = match("f(0..8, by = column)", named);
  EXPECT_NE(m.errors.find("<call>:1:3: error: 'f' takes its arguments by name: write 'name = value'"),
            std::string::npos)
      << m.errors;
  EXPECT_NE(m.errors.find("'f' needs the argument 'pairs'"), std::string::npos) << m.errors;
}

TEST(Arguments, ComponentsPrimitivesAndProbesWordTheSameMisuseTheSameWay) {
  const std::string errors = compileErrors(
      "  attention {\n"
      "    use rope(pair = 0..8, channel = position, channel = column)\n"
      "    rotate(pair = 8..16, by = column, by = row)\n"
      "  }\n"
      "  probes { reach(lenghts = [5], lengths = [5], lengths = [10]) }\n");
  for (const char* expected : {
           ":6:14: error: component 'rope' has no parameter 'pair'",
           ":6:47: error: argument 'channel' is given twice",
           ":7:12: error: 'rotate' has no argument 'pair'",
           ":7:39: error: argument 'by' is given twice",
           ":7:5: error: 'rotate' needs the argument 'pairs'",
           ":9:18: error: probe 'reach' has no argument 'lenghts'",
           ":9:48: error: argument 'lengths' is given twice",
       })
    EXPECT_NE(errors.find(expected), std::string::npos) << expected << "\n" << errors;
  // Each misspelling gets its suggestion.
  EXPECT_NE(errors.find("note: did you mean 'pairs'?"), std::string::npos) << errors;
  EXPECT_NE(errors.find("note: did you mean 'lengths'?"), std::string::npos) << errors;
}
