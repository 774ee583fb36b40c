// The formula IR: hash-consing, folding, symbolic derivatives checked against
// central finite differences of the interpreter.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/formula/affine.h"
#include "compiler/formula/formula.h"

using namespace posc::formula;

TEST(FormulaIr, EqualSubexpressionsAreOneNode) {
  Graph g;
  NodeId q = g.leaf(Op::QChannel, 1), k = g.leaf(Op::KChannel, 1);
  NodeId d1 = g.unary(Op::Abs, g.binary(Op::Sub, q, k));
  NodeId d2 = g.unary(Op::Abs, g.binary(Op::Sub, g.leaf(Op::QChannel, 1), g.leaf(Op::KChannel, 1)));
  EXPECT_EQ(d1, d2);
  // Commutative operands are ordered, so a + b and b + a coincide.
  EXPECT_EQ(g.binary(Op::Add, q, k), g.binary(Op::Add, k, q));
  EXPECT_NE(g.binary(Op::Sub, q, k), g.binary(Op::Sub, k, q));
}

TEST(FormulaIr, FoldsConstantsAndIdentities) {
  Graph g;
  NodeId s = g.leaf(Op::Score);
  NodeId c = g.binary(Op::Mul, g.constant(2.0), g.unary(Op::Exp, g.constant(0.0)));
  ASSERT_TRUE(g.isConst(c, 2.0));
  EXPECT_EQ(g.binary(Op::Add, s, g.constant(0.0)), s);
  EXPECT_EQ(g.binary(Op::Mul, g.constant(1.0), s), s);
  EXPECT_EQ(g.unary(Op::Neg, g.unary(Op::Neg, s)), s);
  EXPECT_EQ(g.select(g.constant(1.0), s, c), s);
  // Identities that hold for finite values only stay out of formulas (s * 0
  // and s - s are NaN at s = inf) ...
  EXPECT_FALSE(g.isConst(g.binary(Op::Mul, s, g.constant(0.0))));
  EXPECT_FALSE(g.isConst(g.binary(Op::Sub, s, s)));
  // ... and are what keeps derivatives finite: d/ds s^2 = 2 s, without the
  // s^2 log(s) * 0 term, which would be NaN at s < 0.
  NodeId d = g.derivative(g.binary(Op::Pow, s, g.constant(2.0)), Wrt::score());
  Env env;
  env.score = -3.0;
  EXPECT_EQ(evaluate(g, d, env), -6.0);
}

TEST(FormulaIr, DecayDerivativesHaveTheirClosedForms) {
  // f = s * exp(-r * |q - k|): df/ds = exp(-r d), df/dr = -s d exp(-r d).
  Graph g;
  NodeId s = g.leaf(Op::Score), r = g.leaf(Op::Param, 0);
  NodeId dist = g.unary(Op::Abs, g.binary(Op::Sub, g.leaf(Op::QChannel, 1), g.leaf(Op::KChannel, 1)));
  NodeId f = g.binary(Op::Mul, s, g.unary(Op::Exp, g.unary(Op::Neg, g.binary(Op::Mul, r, dist))));
  NodeId ds = g.derivative(f, Wrt::score()), dr = g.derivative(f, Wrt::param(0));
  Env env;
  env.score = 1.7;
  env.q_channel[1] = 9;
  env.k_channel[1] = 4;
  env.params = {0.3};
  EXPECT_NEAR(evaluate(g, ds, env), std::exp(-1.5), 1e-15);
  EXPECT_NEAR(evaluate(g, dr, env), -1.7 * 5 * std::exp(-1.5), 1e-14);
  // Memoised: asking again gives the same node.
  EXPECT_EQ(g.derivative(f, Wrt::score()), ds);
}

// Every operation of the table (compiler/expr/ops.def), each operand in
// turn, away from kinks and jumps: the `grad` column against central
// differences of the `fold` column.
TEST(FormulaIr, EveryOperationMatchesFiniteDifferences) {
  for (double x : {0.37, 1.9, 3.3}) {
    for (int i = 0; i < posc::expr::kOpCount; ++i) {
      const Op op = static_cast<Op>(i);
      const int n = arity(op);
      if (!posc::expr::isElementwise(op)) continue;  // leaves, and reads (Lookup: tests below)
      Graph g;
      // The first operand through 1.3 * x, to exercise the chain rule.
      Node node;
      node.op = op;
      node.a = g.binary(Op::Mul, g.constant(1.3), g.leaf(Op::Var, 0));
      if (n >= 2) node.b = g.leaf(Op::Var, 1);
      if (n >= 3) node.c = g.leaf(Op::Var, 2);
      NodeId f = g.make(node);
      for (int wrt = 0; wrt < n; ++wrt) {
        NodeId d = g.derivative(f, Wrt::var(wrt));
        Env e;
        e.vars = {x, 1.15, 2.0};
        const double h = 1e-6;
        Env ep = e, em = e;
        ep.vars[static_cast<size_t>(wrt)] += h;
        em.vars[static_cast<size_t>(wrt)] -= h;
        double fd = (interpret(g, f, ep) - interpret(g, f, em)) / (2 * h);
        EXPECT_NEAR(evaluate(g, d, e), fd, 1e-6 * (1 + std::fabs(fd)))
            << opName(op) << " d/dx" << wrt << " at " << x;
      }
    }
  }
}

TEST(FormulaIr, ImportsPlanFormulasAndRendersThem) {
  using P = posc::plan::FormulaNode;
  posc::plan::Formula f;
  auto push = [&](P n) {
    f.nodes.push_back(n);
    return static_cast<int>(f.nodes.size() - 1);
  };
  P n;
  n.op = P::Op::Score;
  int s = push(n);
  n = {};
  n.op = P::Op::Param;
  n.param = 0;
  int p = push(n);
  n = {};
  n.op = P::Op::QChannel;
  n.channel = posc::plan::Channel::Position;
  int q = push(n);
  n = {};
  n.op = P::Op::KChannel;
  n.channel = posc::plan::Channel::Position;
  int k = push(n);
  n = {};
  n.op = P::Op::Sub;
  n.a = q;
  n.b = k;
  int d = push(n);
  n = {};
  n.op = P::Op::Abs;
  n.a = d;
  int ad = push(n);
  n = {};
  n.op = P::Op::Mul;
  n.a = p;
  n.b = ad;
  int m = push(n);
  n = {};
  n.op = P::Op::Sub;
  n.a = s;
  n.b = m;
  push(n);
  Graph g;
  NodeId root = g.import(f);
  EXPECT_EQ(g.render(root), "(s - (p0 * abs((q.position - k.position))))");
  Env e;
  e.score = 2.0;
  e.params = {0.25};
  e.q_channel[0] = 7;
  e.k_channel[0] = 3;
  EXPECT_DOUBLE_EQ(interpret(g, root, e), 1.0);
}

// Table reads: the entry lookupEntry picks (rounded down, clamped, NaN for a
// NaN index) in both interpreters and in tableSelect's chain of selects,
// never folded, with derivative 0 in the index and 1 in the entry read.
TEST(FormulaIr, LookupReadsTheEntryAtTheRoundedDownClampedIndex) {
  const std::vector<double> table = {10, 11, 12, 13};
  const double nan = std::nan("");
  const std::vector<std::pair<double, double>> cases = {
      {0, 10}, {0.99, 10}, {1, 11}, {2.5, 12}, {3, 13}, {3.99, 13}, {7, 13}, {1e300, 13},
      {-0.5, 10}, {-7, 10}, {-INFINITY, 10}, {INFINITY, 13}, {nan, nan}};
  Graph g;
  NodeId x = g.leaf(Op::Var, 0);
  NodeId read = g.lookup(0, x);
  NodeId chain = tableSelect(g, table, x);
  EXPECT_EQ(g.node(g.lookup(0, g.constant(2.0))).op, Op::Lookup);  // entries are not constants of the graph
  EXPECT_EQ(g.render(read), "p0[x0]");
  Env env;
  env.tables = {table};
  for (auto [index, want] : cases) {
    env.vars = {index};
    const int e = posc::expr::lookupEntry(index, 4);
    if (std::isnan(want)) {
      EXPECT_EQ(e, -1);
      EXPECT_TRUE(std::isnan(evaluate(g, read, env)));
      EXPECT_TRUE(std::isnan(interpret(g, read, env)));
      EXPECT_TRUE(std::isnan(evaluate(g, chain, env)));
      continue;
    }
    EXPECT_EQ(table.at(static_cast<size_t>(e)), want) << index;
    EXPECT_EQ(evaluate(g, read, env), want) << index;
    EXPECT_EQ(interpret(g, read, env), want) << index;
    EXPECT_EQ(evaluate(g, chain, env), want) << index;
  }
  // f = s * t[x]: df/ds = t[x], df/dx = 0, df/d(the read entry) = s.
  NodeId s = g.leaf(Op::Score);
  NodeId f = g.binary(Op::Mul, s, read);
  env.score = 1.5;
  env.vars = {2.2};
  EXPECT_EQ(evaluate(g, g.derivative(f, Wrt::score()), env), 12.0);
  EXPECT_TRUE(g.isConst(g.derivative(f, Wrt::var(0)), 0.0));
  EXPECT_TRUE(g.isConst(g.derivative(f, Wrt::param(0)), 0.0));  // a table's entries are Wrt::node
  EXPECT_EQ(evaluate(g, g.derivative(f, Wrt::node(read)), env), 1.5);
}

// d(a ^ b)/db = a ^ b log(a), taken as 0 at a = 0 for b >= 0 (as torch.pow's
// backward does), so a learned exponent of a distance has a finite gradient
// where the distance is 0 (KERPLE's power kernel on the diagonal).
TEST(FormulaIr, PowerGradientInTheExponentIsZeroAtABaseOfZero) {
  Graph g;
  NodeId a = g.leaf(Op::Var, 0), b = g.leaf(Op::Var, 1);
  NodeId db = g.derivative(g.binary(Op::Pow, a, b), Wrt::var(1));
  Env env;
  env.vars = {0.0, 1.5};
  EXPECT_EQ(evaluate(g, db, env), 0.0);
  env.vars = {0.0, 0.0};
  EXPECT_EQ(evaluate(g, db, env), 0.0);
  env.vars = {2.0, 1.5};
  EXPECT_NEAR(evaluate(g, db, env), std::pow(2.0, 1.5) * std::log(2.0), 1e-15);
  env.vars = {0.0, -1.0};  // 0 ^ -1 is infinite: no mask, as in torch
  EXPECT_TRUE(std::isinf(evaluate(g, db, env)) || std::isnan(evaluate(g, db, env)));
}

// The affine-in-d recogniser that the JIT's grid kernels and the analysis
// block interpreter share (compiler/formula/affine.h).
TEST(FormulaIr, AffineInTheVariableWithConstantCoefficients) {
  Graph g;
  AffineInVariable affine(g);
  const NodeId d = g.leaf(Op::Var, 0);
  const double w = 2 * M_PI / 6;
  auto expect = [&](NodeId id, double slope, double offset) {
    const auto a = affine(id);
    ASSERT_TRUE(a) << g.render(id);
    EXPECT_EQ(a->slope, slope) << g.render(id);
    EXPECT_EQ(a->offset, offset) << g.render(id);
  };
  expect(d, 1, 0);
  expect(g.constant(4), 0, 4);
  expect(g.binary(Op::Add, g.binary(Op::Mul, g.constant(w), d), g.constant(0.3)), w, 0.3);
  expect(g.binary(Op::Mul, d, g.constant(3)), 3, 0);
  expect(g.binary(Op::Div, g.unary(Op::Neg, g.binary(Op::Sub, d, g.constant(1))), g.constant(2)), -0.5, 0.5);
  for (NodeId id : {g.binary(Op::Mul, d, d), g.binary(Op::Div, g.constant(1), d), g.binary(Op::Div, d, g.constant(0)),
                    g.unary(Op::Cos, d), g.leaf(Op::Var, 1), g.binary(Op::Add, d, g.leaf(Op::Var, 1)),
                    g.leaf(Op::QChannel, 0), g.binary(Op::Max, d, g.constant(0))})
    EXPECT_FALSE(affine(id)) << g.render(id);
}
