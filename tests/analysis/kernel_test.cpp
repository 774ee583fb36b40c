// Kernel programs, the two interpreters, sweeps, aliases and windowed maxima.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "runtime/analysis/kernel.h"
#include "runtime/analysis/sweep.h"
#include "runtime/analysis/terminal_plot.h"

namespace {

using namespace posc::analysis;
using Op = KernelNode::Op;

// k(d) = 20 cos(2 pi d / 6) + 5 cos(2 pi d / 40 + 0.3)
KernelProgram twoTerms() { return cosineSum({20, 5}, {2 * M_PI / 6, 2 * M_PI / 40}, {0, 0.3}); }

double twoTermsAt(double d) { return 20 * std::cos(2 * M_PI * d / 6) + 5 * std::cos(2 * M_PI * d / 40 + 0.3); }

TEST(Kernel, InterpretersAgreeWithTheClosedForm) {
  TreeInterpreter tree(twoTerms());
  BlockInterpreter block(twoTerms());
  const std::vector<double> d = distanceGrid(-700, 700, 0.5);  // more than one block, with a tail
  std::vector<double> a(d.size()), b(d.size());
  tree.evaluate(d.data(), a.data(), d.size());
  block.evaluate(d.data(), b.data(), d.size());
  for (size_t i = 0; i < d.size(); ++i) {
    EXPECT_NEAR(a[i], twoTermsAt(d[i]), 1e-10) << d[i];  // 2 pi / 6 folded first
    EXPECT_NEAR(b[i], twoTermsAt(d[i]), 1e-11) << d[i];
  }
}

TEST(Kernel, RotationPathOnEvenGridsMatchesTheTreeInterpreter) {
  // The benchmark's 16-term RoPE-like kernel over the benchmark's range: the
  // block interpreter rotates on these evenly spaced blocks.
  std::vector<double> a, w, phi;
  for (int m = 0; m < 16; ++m) {
    a.push_back(1.0 + 0.25 * m);
    w.push_back(std::pow(10000.0, -m / 16.0));
    phi.push_back(0.1 * m);
  }
  KernelProgram p = cosineSum(a, w, phi);
  TreeInterpreter tree(p);
  BlockInterpreter block(p);
  std::vector<double> d = distanceGrid(-32768, 32767);
  std::vector<double> x(d.size()), y(d.size());
  tree.evaluate(d.data(), x.data(), d.size());
  block.evaluate(d.data(), y.data(), d.size());
  double worst = 0;
  for (size_t i = 0; i < d.size(); ++i) worst = std::max(worst, std::fabs(x[i] - y[i]));
  EXPECT_LT(worst, 1e-9);
  // The same distances out of order take the direct path and agree too.
  for (size_t i = 0; i + 1 < d.size(); i += 2) std::swap(d[i], d[i + 1]);
  tree.evaluate(d.data(), x.data(), d.size());
  block.evaluate(d.data(), y.data(), d.size());
  worst = 0;
  for (size_t i = 0; i < d.size(); ++i) worst = std::max(worst, std::fabs(x[i] - y[i]));
  EXPECT_LT(worst, 1e-9);
  EXPECT_NEAR(tree.at(0), [&] {
    double s = 0;
    for (int m = 0; m < 16; ++m) s += a[m] * std::cos(phi[m]);
    return s;
  }(), 1e-12);
}

// One program using every op: each node reads d so nothing folds away.
KernelProgram everyOp() {
  KernelProgram p;
  int d = p.distance();
  int x = p.binary(Op::Mul, d, p.constant(0.01));
  int acc = x;
  for (Op op : {Op::Neg, Op::Not, Op::Abs, Op::Exp, Op::Sqrt, Op::Cos, Op::Sin, Op::Tanh, Op::Sigmoid, Op::Relu,
                Op::Log1p, Op::Floor, Op::Ceil, Op::Round, Op::Sign})
    acc = p.binary(Op::Add, acc, p.unary(op, op == Op::Sqrt || op == Op::Log1p ? p.unary(Op::Abs, x) : x));
  acc = p.binary(Op::Add, acc, p.unary(Op::Log, p.binary(Op::Add, p.unary(Op::Abs, x), p.constant(1))));
  for (Op op : {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Min, Op::Max, Op::Lt, Op::Le, Op::Gt, Op::Ge, Op::Eq, Op::Ne,
                Op::And, Op::Or, Op::Mod})
    acc = p.binary(Op::Add, acc, p.binary(op, x, p.constant(0.5)));
  acc = p.binary(Op::Add, acc, p.ternary(Op::Clamp, x, p.constant(-1), p.constant(1)));
  acc = p.binary(Op::Add, acc, p.binary(Op::Pow, p.unary(Op::Abs, x), p.constant(1.5)));
  p.select(p.binary(Op::Gt, d, p.constant(0)), acc, p.unary(Op::Neg, acc));
  return p;
}

TEST(Kernel, EveryOperationMatchesBetweenInterpreters) {
  KernelProgram p = everyOp();
  TreeInterpreter tree(p);
  BlockInterpreter block(p);
  const std::vector<double> ds = distanceGrid(-300, 300);
  std::vector<double> a(ds.size()), b(ds.size());
  tree.evaluate(ds.data(), a.data(), ds.size());
  block.evaluate(ds.data(), b.data(), ds.size());
  for (size_t i = 0; i < ds.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-12 * std::max(1.0, std::fabs(a[i]))) << ds[i];
  // Hand value at d = 50 (x = 0.5): spot-check the select branch sign.
  EXPECT_GT(tree.at(50), 0);
}

TEST(Kernel, CompiledKernelMatchesTheTreeInterpreter) {
  std::unique_ptr<KernelEvaluator> compiled = makeCompiledEvaluator(everyOp());
  if (!compiled) GTEST_SKIP() << "built without LLVM";
  TreeInterpreter tree(everyOp());
  const std::vector<double> ds = distanceGrid(-300, 300, 0.25);
  std::vector<double> a(ds.size()), b(ds.size());
  tree.evaluate(ds.data(), a.data(), ds.size());
  compiled->evaluate(ds.data(), b.data(), ds.size());
  // libmvec's documented bound is 4 ulp per call; a few calls feed each value.
  for (size_t i = 0; i < ds.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-12 * std::max(1.0, std::fabs(a[i]))) << ds[i];
  // The two-term kernel against its closed form, through the evaluator the
  // REPL and `posc analyze` get.
  std::unique_ptr<KernelEvaluator> best = makeEvaluator(twoTerms());
  EXPECT_EQ(best->name(), "LLVM-compiled kernel");
  const std::vector<double> d2 = distanceGrid(-2000, 2000);
  std::vector<double> k(d2.size());
  best->evaluate(d2.data(), k.data(), d2.size());
  for (size_t i = 0; i < d2.size(); ++i) EXPECT_NEAR(k[i], twoTermsAt(d2[i]), 1e-11) << d2[i];
}

TEST(Kernel, ConstantsFoldAndInliningSubstitutes) {
  KernelProgram p;
  int c = p.binary(Op::Mul, p.constant(2), p.constant(3));
  EXPECT_TRUE(p.isConstant(c));
  EXPECT_EQ(p.value(c), 6);
  EXPECT_TRUE(p.isConstantKernel());
  // g(d) = k(2 d): inline the two-term kernel at 2 d.
  KernelProgram g;
  int two_d = g.binary(Op::Mul, g.constant(2), g.distance());
  g.inlineProgram(twoTerms(), two_d);
  TreeInterpreter t(g);
  EXPECT_NEAR(t.at(7), twoTermsAt(14), 1e-12);
}

TEST(Sweep, AliasesOfTheTwoTermToy) {
  // Target at d = 0: 20 + 5 cos(0.3) = 24.7767. The fast term's teeth sit at
  // multiples of 6; which of them rise highest is checked by brute force.
  BlockInterpreter k(twoTerms());
  Sweep s = sweep(k, -200, 200);
  EXPECT_NEAR(valueAt(s, 0), 20 + 5 * std::cos(0.3), 1e-12);
  std::vector<Alias> aliases = findAliases(s, 0, 3, 0.9);
  ASSERT_FALSE(aliases.empty());
  // Brute force: the highest local maximum beyond |d| > 3.
  double best = -HUGE_VAL, best_d = 0;
  for (int d = -199; d <= 199; ++d) {
    if (std::abs(d) <= 3) continue;
    const double v = twoTermsAt(d);
    if (v >= twoTermsAt(d - 1) && v > twoTermsAt(d + 1) && v > best) best = v, best_d = d;
  }
  // Teeth 120 apart tie up to rounding: the best one is some repeat of best_d.
  EXPECT_EQ(std::fmod(std::fabs(aliases[0].d - best_d), 120.0), 0.0);
  EXPECT_NEAR(aliases[0].value, best, 1e-9);
  EXPECT_NEAR(aliases[0].fraction, best / twoTermsAt(0), 1e-12);
  for (const Alias& a : aliases) EXPECT_GE(a.value, 0.9 * twoTermsAt(0));
  // The period-120 repeat (lcm of 6 and 40) reproduces the target exactly.
  EXPECT_NEAR(valueAt(s, 120), valueAt(s, 0), 1e-9);
  // A tooth next to that repeat lines the mid term up better than d = 0 does
  // and beats the target itself.
  EXPECT_GT(aliases[0].fraction, 1.0);
}

TEST(Sweep, WindowMaximaAsFractionOfTarget) {
  // k(d) = exp(-|d| / 10): window [10, 19] has its maximum at 10, e^-1 of the target.
  KernelProgram p;
  int d = p.distance();
  p.unary(Op::Exp, p.binary(Op::Div, p.unary(Op::Neg, p.unary(Op::Abs, d)), p.constant(10)));
  TreeInterpreter k(p);
  Sweep s = sweep(k, 0, 99);
  std::vector<WindowMax> w = windowMaxima(s, 0, 10);
  ASSERT_EQ(w.size(), 10u);
  EXPECT_EQ(w[1].lo, 10);
  EXPECT_EQ(w[1].hi, 19);
  EXPECT_EQ(w[1].d, 10);
  EXPECT_NEAR(w[1].fraction, std::exp(-1.0), 1e-15);
  EXPECT_NEAR(w[9].fraction, std::exp(-9.0), 1e-15);
}

TEST(TerminalPlot, DrawsRangeAndZeroLine) {
  // y = x on -10..10, 21 columns, 5 rows: row r holds y with round((10 - y) / 5) = r.
  std::vector<double> x, y;
  for (int i = -10; i <= 10; ++i) x.push_back(i), y.push_back(i);
  EXPECT_EQ(terminalPlot(x, y, 21, 5),
            " 10 |                  ***\n"
            "    |             *****   \n"
            "    |--------*****--------\n"
            "    |   *****             \n"
            "-10 |***                  \n"
            "     -10                10\n");
}

}  // namespace
