// Every operation of the expression language (compiler/expr/ops.def), on a
// grid of operands that includes NaN, both infinities, both zeros, negative
// and half-integer values, in every evaluator posc has: the definition
// (expr::fold), the formula graph's constant folding, tree interpreter and
// topological evaluator, the analysis tree and block interpreters, the JIT's
// elementwise map and fused attention kernel, and the tensor path. With
// finite operands, the three binders (score formulas, settings, REPL kernels)
// read the operation's written form and must fold it to the same value.
//
// Values must agree exactly, except where an evaluator computes a
// transcendental function with other code (libmvec in the JIT, LibTorch's
// vector kernels): there within a relative 1e-13. NaN must meet NaN.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compiler/expr/ops.h"
#include "compiler/formula/formula.h"
#include "compiler/jit/compiled.h"
#include "compiler/parse/parser.h"
#include "compiler/sema/evaluate.h"
#include "compiler/sema/formula.h"
#include "runtime/analysis/kernel.h"
#include "runtime/model/score_formula.h"
#include "tests/common/transcendental_ops.h"
#include "tools/posc/repl/lower.h"

using namespace posc;
using expr::Op;

namespace {

const std::vector<double>& operands() {
  static const std::vector<double> v = {NAN, -INFINITY, -2.5, -1.0, -0.5, -0.0, 0.0,
                                        0.5, 1.5,       2.5,  3.0,  INFINITY};
  return v;
}

std::vector<Op> operations() {
  std::vector<Op> ops;
  for (int i = 0; i < expr::kOpCount; ++i)
    if (expr::isElementwise(static_cast<Op>(i))) ops.push_back(static_cast<Op>(i));
  return ops;
}

struct Case {
  Op op;
  double a, b, c;
  std::string text() const {
    const int n = expr::arity(op);
    return fmt::format("{}({}{}{})", expr::opName(op), a, n >= 2 ? fmt::format(", {}", b) : "",
                       n >= 3 ? fmt::format(", {}", c) : "");
  }
};

std::vector<Case> cases() {
  std::vector<Case> out;
  const auto& v = operands();
  for (Op op : operations()) {
    const int n = expr::arity(op);
    for (double a : v)
      for (double b : n >= 2 ? v : std::vector<double>{0.0})
        for (double c : n >= 3 ? std::vector<double>{NAN, -1.0, 0.0, 2.5, INFINITY} : std::vector<double>{0.0})
          out.push_back({op, a, b, c});
  }
  return out;
}

using posc::testing::transcendental;

// Expects `got` to be the definition's value `want`.
void expectSame(const Case& k, double want, double got, const char* evaluator) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << evaluator << ": " << k.text() << " = " << got << ", want NaN";
    return;
  }
  if (transcendental(k.op) && std::isfinite(want)) {
    EXPECT_NEAR(got, want, 1e-13 * std::fabs(want) + 1e-300) << evaluator << ": " << k.text();
    return;
  }
  EXPECT_EQ(got, want) << evaluator << ": " << k.text();
}

formula::NodeId graphOf(formula::Graph& g, const Case& k, bool constants) {
  auto operand = [&](int i, double v) { return constants ? g.constant(v) : g.leaf(Op::Var, i); };
  formula::Node n;
  n.op = k.op;
  n.a = operand(0, k.a);
  if (expr::arity(k.op) >= 2) n.b = operand(1, k.b);
  if (expr::arity(k.op) >= 3) n.c = operand(2, k.c);
  return g.make(n);
}

TEST(OpsConsistency, EveryEvaluatorComputesTheDefinition) {
  for (const Case& k : cases()) {
    const double want = expr::fold(k.op, k.a, k.b, k.c);
    const int n = expr::arity(k.op);
    {  // formula graph: folding, tree interpreter, topological evaluator
      formula::Graph g;
      formula::NodeId folded = graphOf(g, k, true);
      ASSERT_TRUE(g.isConst(folded)) << k.text();
      expectSame(k, want, g.node(folded).value, "graph folding");
      formula::NodeId root = graphOf(g, k, false);
      formula::Env env;
      env.vars = {k.a, k.b, k.c};
      expectSame(k, want, formula::interpret(g, root, env), "formula interpreter");
      expectSame(k, want, formula::evaluate(g, root, env), "formula evaluator");
    }
    {  // analysis kernels: a of the distance, b and c constants
      analysis::KernelProgram p;
      const int d = p.distance();
      const int b = p.constant(k.b), c = p.constant(k.c);
      if (n == 1) p.unary(k.op, d);
      else if (n == 2) p.binary(k.op, d, b);
      else p.ternary(k.op, d, b, c);
      // 19 points, not evenly spaced, so the block interpreter runs its
      // vector loops without the rotation shortcut.
      std::vector<double> xs(19, k.a), out(19, -7.0);
      for (size_t i = 1; i < xs.size(); i += 2) xs[i] = 0.25 + 0.01 * static_cast<double>(i * i);
      analysis::TreeInterpreter tree(p);
      expectSame(k, want, tree.at(k.a), "analysis tree interpreter");
      analysis::BlockInterpreter block(p);
      block.evaluate(xs.data(), out.data(), xs.size());
      for (size_t i = 0; i < xs.size(); i += 2) expectSame(k, want, out[i], "block interpreter");
      if (n == 2) {  // the constant first: 0 * d is NaN at d = inf, not 0
        analysis::KernelProgram q;
        q.binary(k.op, q.constant(k.a), q.distance());
        expectSame(k, want, analysis::TreeInterpreter(q).at(k.b), "analysis tree interpreter, constant first");
      }
    }
  }
}

TEST(OpsConsistency, JitMapComputesTheDefinition) {
  if (!jit::available()) GTEST_SKIP() << "this build has no LLVM";
  for (Op op : operations()) {
    formula::Graph g;
    formula::Node n;
    n.op = op;
    n.a = g.leaf(Op::Var, 0);
    if (expr::arity(op) >= 2) n.b = g.leaf(Op::Var, 1);
    if (expr::arity(op) >= 3) n.c = g.leaf(Op::Var, 2);
    const formula::NodeId root = g.make(n);
    const auto& map = jit::compileMap(g, root, expr::arity(op));
    // All of this operation's cases in one call: vector loops and a remainder.
    std::vector<Case> mine;
    for (const Case& k : cases())
      if (k.op == op) mine.push_back(k);
    std::vector<double> a, b, c, out(mine.size(), -7.0);
    for (const Case& k : mine) a.push_back(k.a), b.push_back(k.b), c.push_back(k.c);
    const double* vars[3] = {a.data(), b.data(), c.data()};
    map.fn(vars, out.data(), static_cast<int64_t>(mine.size()));
    for (size_t i = 0; i < mine.size(); ++i)
      expectSame(mine[i], expr::fold(op, mine[i].a, mine[i].b, mine[i].c), out[i], "JIT map");
  }
}

// One score term op(s, p0, p1) on one query and one key, with a null slot
// (score 0): the key's probability is sigmoid(f), so f = log(p / p_null).
TEST(OpsConsistency, JitAttentionKernelComputesTheDefinition) {
  if (!jit::available()) GTEST_SKIP() << "this build has no LLVM";
  for (Op op : operations()) {
    plan::ScoreTerm term;
    term.name = expr::opName(op);
    auto push = [&](plan::FormulaNode node) {
      term.formula.nodes.push_back(node);
      return static_cast<int>(term.formula.nodes.size() - 1);
    };
    plan::FormulaNode s, p0, p1, r;
    s.op = Op::Score;
    p0.op = Op::Param, p0.param = 0;
    p1.op = Op::Param, p1.param = 1;
    r.op = op;
    r.a = push(s);
    r.b = push(p0);
    r.c = push(p1);
    if (expr::arity(op) < 2) r.b = -1;
    if (expr::arity(op) < 3) r.c = -1;
    push(r);
    jit::AttentionSpec spec;
    spec.dtype = jit::DType::F64;
    spec.null_slot = true;
    spec.terms = {term};
    spec.learned = {false, false};
    const auto& kernel = jit::compileAttention(spec);
    auto forward = reinterpret_cast<jit::ForwardFn<double>>(kernel.forward());
    for (const Case& k : cases()) {
      if (k.op != op) continue;
      const double want = expr::fold(op, k.a, k.b, k.c);
      double probs[2] = {-1, -1};
      const double channels[plan::kChannelCount] = {0, 0, 0, 0};
      const double params[2] = {k.b, k.c};
      const int64_t bad = forward(&k.a, probs, channels, channels, params, 1, 1, 0);
      if (std::isnan(want)) {
        EXPECT_TRUE(bad > 0 || std::isnan(probs[0])) << "JIT attention: " << k.text();
      } else if (std::isinf(want)) {
        EXPECT_TRUE(bad > 0 || probs[0] == (want > 0 ? 1.0 : 0.0)) << "JIT attention: " << k.text();
      } else if (std::fabs(want) < 30) {
        ASSERT_EQ(bad, 0) << "JIT attention: " << k.text();
        EXPECT_NEAR(std::log(probs[0] / probs[1]), want, 1e-12 * (1 + std::fabs(want))) << "JIT attention: " << k.text();
      }
    }
  }
}

TEST(OpsConsistency, TensorPathComputesTheDefinition) {
  const auto f64 = torch::TensorOptions().dtype(torch::kDouble);
  for (Op op : operations()) {
    plan::Formula f;
    plan::FormulaNode s, p0, p1, r;
    s.op = Op::Score;
    p0.op = Op::Param, p0.param = 0;
    p1.op = Op::Param, p1.param = 1;
    f.nodes = {s, p0, p1};
    r.op = op;
    r.a = 0;
    r.b = expr::arity(op) >= 2 ? 1 : -1;
    r.c = expr::arity(op) >= 3 ? 2 : -1;
    f.nodes.push_back(r);
    std::vector<Case> mine;
    for (const Case& k : cases())
      if (k.op == op) mine.push_back(k);
    // The operands as broadcast tensors: a along keys, b and c per case
    // through a head-sized parameter would need one head per case, so one
    // evaluation per case.
    const auto channels = torch::zeros({plan::kChannelCount, 1, 1}, f64);
    for (const Case& k : mine) {
      auto scores = torch::full({1, 1, 1, 1}, k.a, f64);
      auto out = model::evalFormula(f, scores, channels, channels,
                                    {torch::scalar_tensor(k.b, f64), torch::scalar_tensor(k.c, f64)});
      expectSame(k, expr::fold(op, k.a, k.b, k.c), out.reshape({-1})[0].item<double>(), "tensor path");
    }
  }
}

// The operation's written form with numbers: `a + b`, `-a`, `c ? a : b`, `f(a, b)`.
std::string spelled(const Case& k) {
  const expr::OpInfo& info = expr::info(k.op);
  auto num = [](double v) { return v < 0 || (v == 0 && std::signbit(v)) ? fmt::format("(-{})", -v) : fmt::format("{}", v); };
  if (info.symbol && info.arity == 1) return fmt::format("{}{}", info.symbol, num(k.a));
  if (info.symbol && info.arity == 2) return fmt::format("{} {} {}", num(k.a), info.symbol, num(k.b));
  if (info.symbol && info.arity == 3) return fmt::format("{} ? {} : {}", num(k.a), num(k.b), num(k.c));
  if (info.arity == 1) return fmt::format("{}({})", info.function, num(k.a));
  if (info.arity == 2) return fmt::format("{}({}, {})", info.function, num(k.a), num(k.b));
  return fmt::format("{}({}, {}, {})", info.function, num(k.a), num(k.b), num(k.c));
}

TEST(OpsConsistency, BindersReadEveryOperationAlike) {
  int checked = 0;
  for (const Case& k : cases()) {
    if (!std::isfinite(k.a) || !std::isfinite(k.b) || !std::isfinite(k.c)) continue;
    const double want = expr::fold(k.op, k.a, k.b, k.c);
    const std::string text = spelled(k);
    SourceManager sources;
    DiagnosticEngine diags(sources);
    const int32_t id = sources.add("<test>", text);
    ast::ExprPtr e = parse::parseExpression(id, sources, diags);
    ASSERT_TRUE(e) << text;
    // Score formulas: folded by sema, located errors for NaN and infinities.
    {
      DiagnosticEngine d(sources);
      sema::Env env;
      std::map<std::string, int> params;
      plan::AttentionPlan attention;
      auto f = sema::compileFormula(*e, {env, params, attention}, d);
      if (std::isfinite(want)) {
        ASSERT_TRUE(f && f->nodes.size() == 1) << "score formula: " << text << "\n" << d.render();
        expectSame(k, want, f->nodes[0].value, "score formula");
      } else {
        EXPECT_TRUE(d.hasErrors()) << "score formula: " << text << " should be refused";
      }
    }
    // REPL kernels and analyses.
    if (std::isfinite(want)) {
      DiagnosticEngine d(sources);
      auto v = repl::lowerConstant(*e, {}, d);
      ASSERT_TRUE(v) << "repl: " << text << "\n" << d.render();
      expectSame(k, want, *v, "repl");
    }
    // Settings: truth-valued operations give booleans; && || ! and the
    // condition of ?: take booleans only (documented in ops.def).
    if (!expr::takesTruth(k.op)) {
      DiagnosticEngine d(sources);
      sema::Env env;
      auto v = sema::evaluate(*e, env, d);
      if (!std::isfinite(want)) {
        EXPECT_FALSE(v) << "setting: " << text << " should be refused";
      } else if (k.op == Op::Div && k.b == 0) {
        EXPECT_FALSE(v) << "setting: " << text << " (division by zero) should be refused";
      } else {
        ASSERT_TRUE(v) << "setting: " << text << "\n" << d.render();
        if (expr::givesTruth(k.op)) {
          ASSERT_EQ(v->kind, sema::Value::Kind::Bool) << text;
          EXPECT_EQ(v->boolean ? 1.0 : 0.0, want) << "setting: " << text;
        } else {
          ASSERT_EQ(v->kind, sema::Value::Kind::Number) << text;
          expectSame(k, want, v->number, "setting");
        }
      }
    }
    ++checked;
  }
  EXPECT_GT(checked, 1000);
}

// The table's own facts: every operation has a spelling, and each spelling
// names one operation.
TEST(OpsTable, SpellingsAreUniqueAndFindTheirOperation) {
  for (Op op : operations()) {
    const expr::OpInfo& info = expr::info(op);
    EXPECT_TRUE(info.symbol || info.function) << info.name;
    Op found;
    if (info.function) {
      ASSERT_TRUE(expr::findFunction(info.function, found)) << info.name;
      EXPECT_EQ(found, op) << info.function;
    }
    if (info.symbol) {
      ASSERT_TRUE(expr::findSymbol(info.symbol, info.arity, found)) << info.name;
      EXPECT_EQ(found, op) << info.symbol;
    }
  }
  Op found;
  EXPECT_TRUE(expr::findSymbol("-", 1, found) && found == Op::Neg);
  EXPECT_TRUE(expr::findSymbol("-", 2, found) && found == Op::Sub);
  EXPECT_FALSE(expr::findFunction("frobnicate", found));
}

// The type column: comparisons and logic give truth values; logic and the
// condition of a choice take them; everything else is numbers to a number.
TEST(OpsTable, TypeRules) {
  for (Op op : operations()) {
    const bool compare = op == Op::Lt || op == Op::Le || op == Op::Gt || op == Op::Ge || op == Op::Eq || op == Op::Ne;
    const bool logic = op == Op::Not || op == Op::And || op == Op::Or;
    EXPECT_EQ(expr::givesTruth(op), compare || logic) << expr::opName(op);
    EXPECT_EQ(expr::takesTruth(op), logic || op == Op::Select) << expr::opName(op);
  }
  EXPECT_EQ(expr::info(Op::Select).type, expr::TypeRule::Choose);
  EXPECT_EQ(expr::info(Op::Const).type, expr::TypeRule::Number);
}

// Truth, as ops.def defines it: a number is true when it is not 0, NaN
// included; && and || give 1 or 0 (before, score formulas planned `a && 3`
// as a * 3 and `a || b` as max(a, b)).
TEST(OpsTable, TruthOfNumbers) {
  EXPECT_EQ(expr::fold(Op::And, 2, 3), 1.0);
  EXPECT_EQ(expr::fold(Op::Or, -1, 0), 1.0);
  EXPECT_EQ(expr::fold(Op::Or, 0, 0), 0.0);
  EXPECT_EQ(expr::fold(Op::And, NAN, 1), 1.0);
  EXPECT_EQ(expr::fold(Op::Not, NAN), 0.0);
  EXPECT_EQ(expr::fold(Op::Select, NAN, 1, 2), 1.0);
  EXPECT_TRUE(std::isnan(expr::fold(Op::Min, NAN, 1)));
  EXPECT_TRUE(std::isnan(expr::fold(Op::Max, 1, NAN)));
  EXPECT_TRUE(std::isnan(expr::fold(Op::Relu, NAN)));
  EXPECT_EQ(expr::fold(Op::Round, 2.5), 2.0);
  EXPECT_EQ(expr::fold(Op::Round, -0.5), -0.0);
  EXPECT_EQ(expr::fold(Op::Round, 3.5), 4.0);
  EXPECT_EQ(expr::fold(Op::Clamp, 5, 0, 2), 2.0);
  EXPECT_EQ(expr::fold(Op::Clamp, -5, 0, 2), 0.0);
}

}  // namespace
