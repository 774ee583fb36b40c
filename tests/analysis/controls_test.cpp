// The analytic controls against their closed forms and explicit computations.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/analysis/controls.h"

namespace {

using namespace posc::analysis;

TEST(Controls, RecentMassIsHOverLAtSlopeZero) {
  for (long L : {1L, 7L, 64L, 1000L})
    for (long h : {0L, 1L, 5L, 16L})
      if (h <= L) {
        EXPECT_NEAR(recentMass(0, h, L), static_cast<double>(h) / L, 1e-15) << h << " " << L;
        EXPECT_NEAR(recentMassSum(0, h, L), static_cast<double>(h) / L, 1e-13) << h << " " << L;
      }
}

TEST(Controls, RecentMassIsOneAtHEqualsL) {
  for (double m : {0.0, 0.01, 0.5, 3.0})
    for (long L : {1L, 16L, 500L}) {
      EXPECT_DOUBLE_EQ(recentMass(m, L, L), 1.0);
      EXPECT_NEAR(recentMassSum(m, L, L), 1.0, 1e-15);
    }
}

TEST(Controls, ClosedFormEqualsFiniteSum) {
  for (double m : {1e-4, 0.01, 0.1, 0.5, 2.0})
    for (long L : {16L, 100L, 4096L})
      for (long h : {1L, 8L, 16L})
        EXPECT_NEAR(recentMass(m, h, L), recentMassSum(m, h, L), 1e-12) << m << " " << h << " " << L;
}

TEST(Controls, RecentMassApproachesItsLimitAsLGrows) {
  const double m = 0.05, h = 16, limit = 1 - std::exp(-m * h);
  double previous_gap = HUGE_VAL;
  for (double L : {32.0, 64.0, 128.0, 256.0, 512.0}) {
    const double gap = recentMass(m, h, L) - limit;
    EXPECT_GT(gap, 0) << L;  // a truncated distribution puts more mass on the recent lags
    EXPECT_LT(gap, previous_gap) << L;
    // Hand-derived: mass - limit = limit * e^(-m L) / (1 - e^(-m L)).
    EXPECT_NEAR(gap, limit * std::exp(-m * L) / (1 - std::exp(-m * L)), 1e-14) << L;
    previous_gap = gap;
  }
  EXPECT_NEAR(recentMass(m, h, 4096), limit, 1e-12);
  EXPECT_DOUBLE_EQ(recentMassLimit(m, h), limit);
}

TEST(Controls, SeparationEqualsExplicitRotatedDistance) {
  for (double w : {0.1, 1.0, 2 * M_PI / 6, 3.0})
    for (double s : {1.0, 2.0, 4.0, 16.0})
      for (double p : {0.0, 1.0, 17.0, 1000.0})
        EXPECT_NEAR(neighbourSeparation(w, s), rotatedNeighbourDistance(w, p, s), 1e-12) << w << " " << s << " " << p;
  // Hand value: omega = pi / 3, s = 1: 2 sin(pi/6) = 1.
  EXPECT_NEAR(neighbourSeparation(M_PI / 3, 1), 1.0, 1e-15);
}

TEST(Controls, RotatedInnerProductIsTranslationInvariant) {
  for (double w : {0.3, 1.0, 2.5})
    for (double s : {1.0, 4.0})
      for (double i : {0.0, 3.0, 11.0})
        for (double j : {0.0, 5.0, 40.0}) {
          const double base = rotatedInnerProduct(w, i, j, s);
          EXPECT_NEAR(base, rotationSimilarity(w, i - j, s), 1e-12);
          for (double t : {1.0, 7.0, 123.0, 1000.0})
            EXPECT_NEAR(rotatedInnerProduct(w, i + t, j + t, s), base, 1e-12) << w << " " << i << " " << j << " " << t;
        }
}

TEST(Controls, MarginAgainstDistractors) {
  // p = 1 / (1 + N e^-margin); the margin for p grows like log N.
  for (double n : {1.0, 10.0, 1000.0}) {
    const double margin = marginFor(0.9, n);
    EXPECT_NEAR(targetProbability(margin, n), 0.9, 1e-14);
    EXPECT_NEAR(margin, std::log(9 * n), 1e-12);
  }
  EXPECT_NEAR(marginFor(0.5, 100) - marginFor(0.5, 10), std::log(10.0), 1e-12);
  EXPECT_DOUBLE_EQ(targetProbability(0, 1), 0.5);
}

}  // namespace
