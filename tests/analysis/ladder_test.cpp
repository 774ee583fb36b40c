// Ridge fits of frequency ladders: the solver, and the study's table.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/analysis/ladder.h"

namespace {

using namespace posc::analysis;

TEST(Ridge, CholeskySolvesAHandSystem) {
  // [[4, 2], [2, 3]] x = [2, 1]  ->  x = [0.5, 0]
  std::vector<double> x = solveCholesky({4, 2, 2, 3}, {2, 1}, 2);
  EXPECT_NEAR(x[0], 0.5, 1e-15);
  EXPECT_NEAR(x[1], 0.0, 1e-15);
  EXPECT_THROW(solveCholesky({1, 2, 2, 1}, {1, 1}, 2), std::runtime_error);
}

TEST(Ridge, PrimalAndDualFormsAgree) {
  // 16 terms = 32 features on 41 distances (primal form) and 24 terms = 48
  // features on 41 (dual form): both fit an exactly representable target, a
  // two-term cosine sum with frequencies on the ladder, on the training
  // distances; the overdetermined primal fit recovers it everywhere.
  for (int terms : {16, 24}) {
    Ladder l{Ladder::Kind::Harmonic, terms, 10000, 40};  // near-orthogonal on -20..20
    const std::vector<double> w = l.omegas();
    KernelProgram target = cosineSum({1.0, 0.5}, {w[2], w[5]}, {0.0, 0.7});
    TreeInterpreter t(target);
    FitSettings s;
    s.train = 20;
    s.range = 200;
    s.ridge = 1e-9;
    s.target = &t;
    FitResult r = fitLadder(l, s);
    EXPECT_LT(r.fit_residual, 1e-6) << terms;
    for (size_t i = 0; i < r.d.size(); ++i)
      if (terms == 16 || std::fabs(r.d[i]) <= 20) {
        EXPECT_NEAR(r.value[i], t.at(r.d[i]), 1e-4) << terms << " " << r.d[i];
      }
    // The fitted program reproduces the fitted values.
    TreeInterpreter fitted(r.program());
    EXPECT_NEAR(fitted.at(113), r.value[113 + 200], 1e-9);
  }
}

}  // namespace

namespace {

using namespace posc::analysis;

// The study's ridge-fit table, with the fit settings this project states:
// spike target on -20..20, ridge 1e-5, evaluated on -2000..2000.
TEST(Ridge, StudyTableGeometricSixteenTermsBlowsUpBeyondTraining) {
  Ladder l{Ladder::Kind::Geometric, 16, 10000, 4000};
  FitResult r = fitLadder(l, FitSettings{});
  EXPECT_GT(r.peak, 0.1);
  EXPECT_LT(r.peak, 0.5);  // 16 terms cannot make a sharp spike
  EXPECT_LT(r.side_bump, r.peak);
  EXPECT_GT(r.beyond, 10 * r.peak);  // "many times its peak"
  EXPECT_GT(std::fabs(r.beyond_at), 20);
}

TEST(Ridge, StudyTableCompleteHarmonicBasisIsExact) {
  Ladder l{Ladder::Kind::Harmonic, 2000, 10000, 4000};
  FitResult r = fitLadder(l, FitSettings{});
  // peak 1.00, side bump 0.00, beyond 0.00 to two decimals.
  EXPECT_NEAR(r.peak, 1.0, 0.005);
  EXPECT_LT(std::fabs(r.side_bump), 0.005);
  EXPECT_LT(std::fabs(r.beyond), 0.005);
  double worst = 0;
  for (size_t i = 0; i < r.d.size(); ++i)
    if (r.d[i] != 0) worst = std::max(worst, std::fabs(r.value[i]));
  EXPECT_LT(worst, 0.005);  // and nothing below -0.005 either
}

}  // namespace
