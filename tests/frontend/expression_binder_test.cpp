// The one binder of numeric expressions (compiler/sema/expression.h): score
// formulas and kernels of distance read the same syntax through it, so the
// same expression gets the same value and the same misuse the same located
// message in both; only names, members and indexing differ by context.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "compiler/formula/formula.h"
#include "compiler/parse/parser.h"
#include "compiler/sema/formula.h"
#include "compiler/sema/kernel.h"

using namespace posc;

namespace {

struct Bound {
  bool ok = false;
  double value = 0;      // a constant result
  std::string errors;    // rendered diagnostics
};

Bound bind(const std::string& text, bool kernel) {
  SourceManager sources;
  DiagnosticEngine diags(sources);
  const int32_t id = sources.add("<expr>", text);
  ast::ExprPtr e = parse::parseExpression(id, sources, diags);
  Bound out;
  if (!e) {
    out.errors = diags.render(false);
    return out;
  }
  if (kernel) {
    sema::KernelDefinitions defs;
    sema::ConstantFunctions functions;
    auto v = sema::bindConstant(*e, {defs, functions}, diags);
    out.ok = v.has_value();
    if (v) out.value = *v;
  } else {
    sema::Env env;
    std::map<std::string, int> params;
    plan::AttentionPlan attention;
    auto f = sema::compileFormula(*e, {env, params, attention}, diags);
    out.ok = f && f->nodes.size() == 1;
    if (out.ok) out.value = f->nodes[0].value;
  }
  out.errors = diags.render(false);
  return out;
}

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
    for (bool kernel : {false, true}) {
      Bound b = bind(text, kernel);
      ASSERT_TRUE(b.ok) << text << (kernel ? " (kernel)\n" : " (score formula)\n") << b.errors;
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
    for (bool kernel : {false, true}) {
      const std::string what = kernel ? "kernel" : "score formula";
      Bound b = bind(c.text, kernel);
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
