// The alias check against closed forms written out here:
//   - two column pairs (periods 6 and 40, the study's two-term toy), aligned:
//     the score at offset o is T (cos(w1 o) + cos(w2 o)) / 2, so the far
//     maximum and where it sits follow by a loop over the offsets;
//   - the same pairs fitted: a ridge fit solved here in the primal form
//     (Phi^T Phi + ridge I) c = Phi^T y, where the check solves the dual;
//   - decay pulls far scores to (numerically) zero; ALiBi and a logarithmic
//     penalty are unbounded; a score that reads q.position is not
//     translation-invariant; no rotation and no term is flat, not flagged;
//   - the sweep is the kernel probe's when one is declared, and stops at the
//     last key before the query (2L + 1 columns after the target, for
//     reversed addition without <bos>: the key of column p sits at position
//     p - 1 and the decision for answer place p at 2L + p).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "runtime/probe/alias_check.h"
#include "tests/runtime/model_test_util.h"

namespace {

using namespace posc;
using model::testing::FormulaBuilder;
using model::testing::Op;
using model::testing::columnPair;

const double kPi = std::acos(-1.0);

// One head of two pairs rotated by column at periods 6 and 40; reversed
// addition trained to 10 digits.
plan::ExperimentPlan twoPairPlan() {
  plan::ExperimentPlan p = model::testing::tinyPlan(1, 4, 1);
  p.task.train_max_digits = 10;
  p.task.test_digits = {10, 20};
  p.attention.rotations = {columnPair(0, 2 * kPi / 6), columnPair(1, 2 * kPi / 40)};
  return p;
}

probe::AliasGeometry geometry(probe::AliasModel model) {
  probe::AliasGeometry g;
  g.length = 10;
  g.place = 5;
  g.sweep_begin = -300;
  g.sweep_end = 301;
  g.window = 10;
  g.far = 60;
  g.trained = 9;  // training problems of up to 10 digits
  g.target_score = 20;
  g.model = model;
  return g;
}

// Best window beyond `far` of f over the offsets [begin, last], as the check
// windows them (aligned at multiples of the width, offset 0 skipped).
struct Far {
  double best = -INFINITY;
  int64_t at = 0;
};
template <class F>
Far farMaximum(F f, int64_t begin, int64_t last, int width, int64_t far) {
  Far r;
  for (int64_t o = begin; o <= last; ++o) {
    if (o == 0) continue;
    const int64_t w0 = o >= 0 ? o / width * width : -((-o + width - 1) / width) * width;
    if (std::min(std::llabs(w0), std::llabs(w0 + width - 1)) < far) continue;
    if (f(o) > r.best) r = {f(o), o};
  }
  return r;
}

TEST(AliasCheck, AlignedPairsGiveTheirCosineSeries) {
  const plan::ExperimentPlan p = twoPairPlan();
  const probe::AliasReport r = probe::checkAliases(p, geometry(probe::AliasModel::Aligned));
  EXPECT_EQ(r.last_causal_offset, 2 * 10 + 1);
  ASSERT_EQ(r.heads.size(), 1u);
  const probe::HeadAliases& h = r.heads[0];
  auto f = [](int64_t o) { return (std::cos(2 * kPi * o / 6) + std::cos(2 * kPi * o / 40)) / 2; };
  const Far far = farMaximum(f, -300, 21, 10, 60);
  EXPECT_NEAR(h.target, 20, 1e-12);
  EXPECT_NEAR(h.far, far.best, 1e-12);
  EXPECT_EQ(h.far_at, far.at);
  EXPECT_NEAR(h.far_score, 20 * far.best, 1e-10);
  // Both periods divide 120: the series comes back to the target's value.
  EXPECT_NEAR(h.far, 1.0, 1e-12);
  EXPECT_EQ(h.far_at % 120, 0);
  EXPECT_TRUE(h.translation_invariant);
  EXPECT_TRUE(h.bounded);
  EXPECT_FALSE(h.flat);
  EXPECT_TRUE(probe::isFarAlias(h));
}

// Solves the 4 x 4 system by Gaussian elimination with partial pivoting.
std::vector<double> solve(std::vector<std::vector<double>> a, std::vector<double> b) {
  const size_t n = b.size();
  for (size_t c = 0; c < n; ++c) {
    size_t pivot = c;
    for (size_t r = c + 1; r < n; ++r)
      if (std::fabs(a[r][c]) > std::fabs(a[pivot][c])) pivot = r;
    std::swap(a[c], a[pivot]);
    std::swap(b[c], b[pivot]);
    for (size_t r = c + 1; r < n; ++r) {
      const double m = a[r][c] / a[c][c];
      for (size_t k = c; k < n; ++k) a[r][k] -= m * a[c][k];
      b[r] -= m * b[c];
    }
  }
  std::vector<double> x(n);
  for (size_t i = n; i-- > 0;) {
    double s = b[i];
    for (size_t k = i + 1; k < n; ++k) s -= a[i][k] * x[k];
    x[i] = s / a[i][i];
  }
  return x;
}

TEST(AliasCheck, FittedPairsAreTheRidgeFitToTheSpike) {
  const plan::ExperimentPlan p = twoPairPlan();
  probe::AliasGeometry g = geometry(probe::AliasModel::Fitted);
  g.ridge = 1e-3;
  const probe::AliasReport r = probe::checkAliases(p, g);
  const probe::HeadAliases& h = r.heads[0];
  // Features cos and sin of each pair's angle; training offsets |o| <= 9.
  const double w[2] = {2 * kPi / 6, 2 * kPi / 40};
  auto features = [&](int64_t o) {
    return std::vector<double>{std::cos(w[0] * o), std::sin(w[0] * o), std::cos(w[1] * o), std::sin(w[1] * o)};
  };
  std::vector<std::vector<double>> gram(4, std::vector<double>(4, 0.0));
  std::vector<double> rhs(4, 0.0);
  for (int64_t o = -9; o <= 9; ++o) {
    const auto phi = features(o);
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 4; ++j) gram[i][j] += phi[i] * phi[j];
      if (o == 0) rhs[i] += phi[i];
    }
  }
  for (int i = 0; i < 4; ++i) gram[i][i] += g.ridge;
  const std::vector<double> c = solve(gram, rhs);
  auto fit = [&](int64_t o) {
    const auto phi = features(o);
    double s = 0;
    for (int i = 0; i < 4; ++i) s += c[i] * phi[i];
    return s;
  };
  EXPECT_NEAR(h.spike, fit(0), 1e-9);
  const Far far = farMaximum([&](int64_t o) { return fit(o) / fit(0); }, -300, 21, 10, 60);
  EXPECT_NEAR(h.far, far.best, 1e-8);
  EXPECT_EQ(h.far_at, far.at);
  EXPECT_NEAR(h.target, 20, 1e-9);
}

TEST(AliasCheck, DecayPullsFarScoresToZero) {
  plan::ExperimentPlan p = twoPairPlan();
  p.attention.params.push_back(model::testing::param("decay.rate", true, false, {0.5}));
  p.attention.score_terms.push_back(model::testing::decayTerm(0));
  for (probe::AliasModel m : {probe::AliasModel::Aligned, probe::AliasModel::Fitted}) {
    const probe::HeadAliases h = probe::checkAliases(p, geometry(m)).heads[0];
    EXPECT_GT(h.target, 0);
    // The nearest far key is 60 columns further than the target at most: at
    // most e^(-0.5 * 50) of it, even where the content is 20 times the target's.
    EXPECT_LT(std::fabs(h.far), 20 * std::exp(-0.5 * 50));
    EXPECT_TRUE(h.bounded);
    EXPECT_TRUE(h.translation_invariant);
    EXPECT_FALSE(probe::isFarAlias(h));
  }
}

// score - coefficient * g(|q.column - k.column|) for g = identity or log1p.
plan::ScoreTerm penalty(double coefficient, bool logarithmic) {
  FormulaBuilder b;
  const int s = b.leaf(Op::Score);
  int d = b.unary(Op::Abs, b.binary(Op::Sub, b.q(plan::Channel::Column), b.k(plan::Channel::Column)));
  if (logarithmic) d = b.unary(Op::Log1p, d);
  b.binary(Op::Sub, s, b.binary(Op::Mul, b.constant(coefficient), d));
  plan::ScoreTerm t;
  t.name = "penalty";
  t.formula = b.f;
  return t;
}

TEST(AliasCheck, LinearAndLogarithmicPenaltiesAreUnbounded) {
  for (bool logarithmic : {false, true}) {
    plan::ExperimentPlan p = twoPairPlan();
    // 0.01 log1p(10^12) = 0.28: far below the target's 20, yet it drifts.
    p.attention.score_terms.push_back(penalty(0.01, logarithmic));
    const probe::HeadAliases h = probe::checkAliases(p, geometry(probe::AliasModel::Aligned)).heads[0];
    EXPECT_FALSE(h.bounded) << (logarithmic ? "log" : "linear");
    EXPECT_TRUE(h.translation_invariant);
  }
}

TEST(AliasCheck, AbsolutePositionInTheScoreIsNotTranslationInvariant) {
  plan::ExperimentPlan p = twoPairPlan();
  FormulaBuilder b;
  b.binary(Op::Add, b.leaf(Op::Score), b.binary(Op::Mul, b.constant(0.1), b.q(plan::Channel::Position)));
  plan::ScoreTerm t;
  t.name = "absolute";
  t.formula = b.f;
  p.attention.score_terms.push_back(t);
  const probe::HeadAliases h = probe::checkAliases(p, geometry(probe::AliasModel::Aligned)).heads[0];
  EXPECT_FALSE(h.translation_invariant);
}

TEST(AliasCheck, NoPositionalComponentIsFlatAndNotFlagged) {
  plan::ExperimentPlan p = twoPairPlan();
  p.attention.rotations.clear();
  for (probe::AliasModel m : {probe::AliasModel::Aligned, probe::AliasModel::Fitted}) {
    const probe::HeadAliases h = probe::checkAliases(p, geometry(m)).heads[0];
    EXPECT_TRUE(h.flat);
    EXPECT_NEAR(h.far, 1.0, 1e-12);
    EXPECT_FALSE(probe::isFarAlias(h));
    EXPECT_EQ(probe::aliasVerdict(h), "no positional signal: every key scores like the target");
  }
}

TEST(AliasCheck, GeometryIsTheKernelProbesOrTheTrainingAndTestLengths) {
  plan::ExperimentPlan p = twoPairPlan();
  probe::AliasGeometry d = probe::aliasGeometry(p, 20);
  EXPECT_EQ(d.length, 20);
  EXPECT_EQ(d.place, 20);
  EXPECT_EQ(d.sweep_begin, -19);
  EXPECT_EQ(d.sweep_end, 1);
  EXPECT_EQ(d.window, 1);
  EXPECT_EQ(d.far, 10);
  EXPECT_EQ(d.trained, 9);
  // Offsets -19..-10 are far; with periods 6 and 40 the best is at -12 (cos(2 pi 12 / 40) = -0.31 ...).
  const probe::HeadAliases dh = probe::checkAliases(p, [&] {
                                  probe::AliasGeometry a = d;
                                  a.model = probe::AliasModel::Aligned;
                                  return a;
                                }()).heads[0];
  const Far expected =
      farMaximum([](int64_t o) { return (std::cos(2 * kPi * o / 6) + std::cos(2 * kPi * o / 40)) / 2; }, -19, 0, 1, 10);
  EXPECT_NEAR(dh.far, expected.best, 1e-12);
  EXPECT_EQ(dh.far_at, expected.at);
  plan::ProbePlan k;
  k.kind = plan::ProbeKind::Kernel;
  k.name = "kernel";
  k.length = 20;
  k.place = 10;
  k.sweep_begin = -2000;
  k.sweep_end = 2001;
  k.window = 10;
  k.far = 100;
  p.probes.push_back(k);
  probe::AliasGeometry g = probe::aliasGeometry(p, 20);
  EXPECT_EQ(g.length, 20);
  EXPECT_EQ(g.place, 10);
  EXPECT_EQ(g.sweep_begin, -2000);
  EXPECT_EQ(g.far, 100);
  EXPECT_EQ(g.from, "the kernel probe 'kernel'");
  const probe::AliasReport r = probe::checkAliases(p, g);
  EXPECT_EQ(r.last_causal_offset, 2 * 20 + 1);
  g.sweep_begin = 1;
  EXPECT_THROW(probe::checkAliases(p, g), std::invalid_argument);
}

TEST(AliasCheck, ColumnsCountTokensOfSeveralDigits) {
  // Three operands of up to 6 digits, two digits a token: 3 columns in
  // training, 6 at the longest test length of 12 digits.
  plan::ExperimentPlan p = twoPairPlan();
  p.task.operands = 3;
  p.task.digits_per_token = 2;
  p.task.train_max_digits = 6;
  p.task.test_digits = {6, 12};
  const probe::AliasGeometry g = probe::aliasGeometry(p, 20);
  EXPECT_EQ(g.place, 6);
  EXPECT_EQ(g.sweep_begin, -5);
  EXPECT_EQ(g.far, 3);
  EXPECT_EQ(g.trained, 2);
  const probe::AliasReport r = probe::checkAliases(p, g);
  ASSERT_EQ(r.heads.size(), 1u);
  EXPECT_TRUE(r.heads[0].has_far);
}

}  // namespace
