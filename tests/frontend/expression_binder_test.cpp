// The one binder of expressions (compiler/sema/expression.h): score
// formulas, kernels of distance and settings read the same syntax through
// it, so the same expression gets the same value and the same misuse the
// same located message in each; only names, members, indexing, literals and
// (in settings) booleans differ by context.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "compiler/formula/formula.h"
#include "compiler/parse/parser.h"
#include "compiler/sema/evaluate.h"
#include "compiler/sema/formula.h"
#include "compiler/sema/kernel.h"

using namespace posc;

namespace {

struct Bound {
  bool ok = false;
  double value = 0;      // a constant result
  std::string errors;    // rendered diagnostics
};

enum class Context { Formula, Kernel, Setting };
const char* whatOf(Context c) { return c == Context::Kernel ? "kernel" : c == Context::Formula ? "score formula" : "setting"; }

Bound bind(const std::string& text, Context context) {
  SourceManager sources;
  DiagnosticEngine diags(sources);
  const int32_t id = sources.add("<expr>", text);
  ast::ExprPtr e = parse::parseExpression(id, sources, diags);
  Bound out;
  if (!e) {
    out.errors = diags.render(false);
    return out;
  }
  if (context == Context::Kernel) {
    sema::KernelDefinitions defs;
    sema::ConstantFunctions functions;
    auto v = sema::bindConstant(*e, {defs, functions}, diags);
    out.ok = v.has_value();
    if (v) out.value = *v;
  } else if (context == Context::Formula) {
    sema::Env env;
    std::map<std::string, int> params;
    plan::AttentionPlan attention;
    auto f = sema::compileFormula(*e, {env, params, attention}, diags);
    out.ok = f && f->nodes.size() == 1;
    if (out.ok) out.value = f->nodes[0].value;
  } else {
    sema::Env env;
    auto v = sema::evaluate(*e, env, diags);
    out.ok = v && v->kind == sema::Value::Kind::Number;
    if (out.ok) out.value = v->number;
  }
  out.errors = diags.render(false);
  return out;
}
Bound bind(const std::string& text, bool kernel) { return bind(text, kernel ? Context::Kernel : Context::Formula); }

}  // namespace

TEST(ExpressionBinder, ConstantsBindToTheSameValueInBothContexts) {
  const std::map<std::string, double> cases = {
      {"1 + 2 * 3", 7},
      {"-(2 ^ 3) % 5", -3},
      {"clamp(7, 0, 5) + floor(2.5) + round(2.5) + sign(-3)", 5 + 2 + 2 - 1},
      {"1 < 2 ? log1p(0) : 9", 0},
      {"+4", 4},
      {"(2 && 0) + (2 || 0) + !0", 2},
  };
  for (const auto& [text, want] : cases) {
    for (Context context : {Context::Formula, Context::Kernel, Context::Setting}) {
      // Settings keep booleans a type of their own: 2 && 0 is an error there
      // (SettingsKeepBooleansATypeOfTheirOwn).
      if (context == Context::Setting && text.find("&&") != std::string::npos) continue;
      Bound b = bind(text, context);
      ASSERT_TRUE(b.ok) << text << " (" << whatOf(context) << ")\n" << b.errors;
      EXPECT_EQ(b.value, want) << text;
    }
  }
}

TEST(ExpressionBinder, TheSameMisuseGetsTheSameMessageInBothContexts) {
  struct Case {
    std::string text, message;  // the message with {} for the context's name
  };
  const std::vector<Case> cases = {
      {"clamp(1, 2)", "'clamp' takes 3 arguments, 2 given"},
      {"exp(x = 1)", "'exp' takes positional arguments only"},
      {"1 + \"text\"", "a {} computes a number; a string is not allowed here"},
      {"1 + [1, 2]", "a {} computes a number; a list is not allowed here"},
      {"2 * (0..3)", "a {} computes a number; a range is not allowed here"},
      {"flor(2.5)", "unknown function 'flor' in a {}"},
  };
  for (const Case& c : cases) {
    for (Context context : {Context::Formula, Context::Kernel, Context::Setting}) {
      // A setting's literals are values of their own (SettingsKeepBooleansATypeOfTheirOwn).
      if (context == Context::Setting && c.message.find("is not allowed here") != std::string::npos) continue;
      const std::string what = whatOf(context);
      Bound b = bind(c.text, context);
      EXPECT_FALSE(b.ok) << c.text;
      std::string want = c.message;
      if (auto at = want.find("{}"); at != std::string::npos) want.replace(at, 2, what);
      EXPECT_NE(b.errors.find(want), std::string::npos) << c.text << " (" << what << ")\n" << b.errors;
      EXPECT_NE(b.errors.find("<expr>:1:"), std::string::npos) << b.errors;
    }
  }
  // Suggestions come from the table in both.
  EXPECT_NE(bind("flor(2.5)", true).errors.find("did you mean 'floor'?"), std::string::npos);
  EXPECT_NE(bind("flor(2.5)", false).errors.find("did you mean 'floor'?"), std::string::npos);
  EXPECT_NE(bind("flor(2.5)", Context::Setting).errors.find("did you mean 'floor'?"), std::string::npos);
  // A setting's own functions join the suggestions there.
  EXPECT_NE(bind("linspce(1, 2, 3)", Context::Setting).errors.find("did you mean 'linspace'?"), std::string::npos);
}

TEST(ExpressionBinder, SumsUnrollInEveryContext) {
  const std::map<std::string, double> cases = {
      {"sum(i, 0..4, i * i)", 0 + 1 + 4 + 9},
      {"sum(i, 3..3, 1 / 0)", 0},                                // empty: the term is never bound
      {"sum(i, 0..3, sum(j, 0..i + 1, j))", 0 + 1 + 3},          // nested, the inner range from the outer index
      {"sum(i, 1..3, sum(i, 0..2, 10) + i)", 20 + 1 + 20 + 2},   // an inner index shadows an outer one
      {"sum(pi, 0..2, pi) + pi", 1 + M_PI},                       // and a built-in name, inside the sum only
      {"sum(i, -2..floor(2.5), cos(pi * i))", 1 - 1 + 1 - 1},
  };
  for (const auto& [text, want] : cases)
    for (Context context : {Context::Formula, Context::Kernel, Context::Setting}) {
      Bound b = bind(text, context);
      ASSERT_TRUE(b.ok) << text << " (" << whatOf(context) << ")\n" << b.errors;
      EXPECT_NEAR(b.value, want, 1e-12) << text << " (" << whatOf(context) << ")";
    }
  struct Case {
    std::string text, message;
  };
  const std::vector<Case> misuse = {
      {"sum(i, 0..4)", "<expr>:1:1: error: 'sum' takes 3 arguments, 2 given"},
      {"sum(2, 0..4, 1)", "<expr>:1:5: error: a sum's first argument names its index"},
      {"sum(i, 4, i)", "<expr>:1:8: error: a sum runs over a range lo..hi"},
      {"sum(i, 0..2.5, i)", "<expr>:1:11: error: the ends of a sum's range must be whole numbers known when the file is read"},
      {"sum(i, 0..1e9, i)", "<expr>:1:8: error: this sum of 1e+09 terms unrolls into more operations than posc builds"},
      {"sum(i, 0..2000, sum(j, 0..2000, i * j))", "error: this sum of 2000 terms unrolls into more operations"},
      {"sum(i, 0..2, flor(i))", "unknown function 'flor'"},
  };
  for (const Case& c : misuse)
    for (Context context : {Context::Formula, Context::Kernel, Context::Setting}) {
      Bound b = bind(c.text, context);
      EXPECT_FALSE(b.ok) << c.text;
      EXPECT_NE(b.errors.find(c.message), std::string::npos) << c.text << " (" << whatOf(context) << ")\n" << b.errors;
      EXPECT_EQ(b.errors.find("2 errors"), std::string::npos) << "an error in a term is reported once\n" << b.errors;
    }
  // A range end that is not known while binding: the distance of a kernel.
  SourceManager sources;
  DiagnosticEngine diags(sources);
  ast::ExprPtr e = parse::parseExpression(sources.add("<expr>", "sum(i, 0..d, 1)"), sources, diags);
  ASSERT_TRUE(e);
  sema::KernelDefinitions defs;
  sema::ConstantFunctions functions;
  EXPECT_FALSE(sema::bindKernel(*e, "d", {defs, functions}, diags));
  EXPECT_NE(diags.render(false).find("<expr>:1:11: error: the ends of a sum's range must be whole numbers"),
            std::string::npos)
      << diags.render(false);
}

TEST(ExpressionBinder, SettingsKeepBooleansATypeOfTheirOwn) {
  // Truth is a boolean in settings, so the other contexts' 1 and 0 are errors.
  EXPECT_NE(bind("2 && 3", Context::Setting).errors.find("<expr>:1:1: error: '&&' needs booleans"), std::string::npos);
  EXPECT_NE(bind("!1", Context::Setting).errors.find("'!' needs a boolean, not the number 1"), std::string::npos);
  EXPECT_NE(bind("(1 < 2) + 1", Context::Setting).errors.find("'+' cannot combine"), std::string::npos);
  EXPECT_EQ(bind("2 && 3", Context::Kernel).value, 1);
  // A condition picks its branch while binding: the other is not bound.
  EXPECT_EQ(bind("2 > 1 ? 4 : log(-1)", Context::Setting).value, 4);
  EXPECT_EQ(bind("where(2 > 1, 4, 5)", Context::Setting).value, 4);
  EXPECT_NE(bind("where(1, 4, 5)", Context::Setting).errors.find("a condition must be a boolean, not the number 1"),
            std::string::npos);
  // The table's operations apply elementwise to a list with numbers.
  SourceManager sources;
  DiagnosticEngine diags(sources);
  ast::ExprPtr e = parse::parseExpression(sources.add("<expr>", "clamp(floor(0.5 * [3, 9]), 2, 4) * 2"), sources, diags);
  ASSERT_TRUE(e);
  sema::Env env;
  auto v = sema::evaluate(*e, env, diags);
  ASSERT_TRUE(v) << diags.render(false);
  EXPECT_EQ(v->render(), "[4, 8]");
  // NaN and infinities computed from finite settings are located errors.
  EXPECT_NE(bind("1 + log(-1)", Context::Setting).errors.find("<expr>:1:5: error: this expression is NaN"),
            std::string::npos);
}

TEST(ExpressionBinder, ContextsDecideWhatNamesAndMembersMean) {
  // A channel is a score formula's; a kernel reads the distance instead.
  EXPECT_NE(bind("q.column", true).errors.find("channels (q.column, k.column) are not available here"),
            std::string::npos);
  EXPECT_NE(bind("q.colum", false).errors.find("unknown position channel 'colum'"), std::string::npos);
  // e is a kernel constant, not a score formula's name.
  EXPECT_EQ(bind("e", true).value, std::exp(1.0));
  EXPECT_NE(bind("e", false).errors.find("unknown name 'e' in score formula"), std::string::npos);
}
