// The analytic controls for position and distance: closed forms that need no
// trained model, each with the explicit computation it abbreviates, so a test
// (and `posc analyze`) can check one against the other.
//
//   rotation:     unit vectors turned by omega * position / s; the inner
//                 product at i, j is cos(omega (i - j) / s) (depends only on
//                 i - j: translation invariance)
//   compression:  neighbouring positions sit 2 |sin(omega / (2 s))| apart
//   linear bias:  a causal key at lag d scores -m d; over lags 0..L-1 the
//                 recent-h mass is (1 - e^(-m h)) / (1 - e^(-m L)), h / L at
//                 m = 0, tending to 1 - e^(-m h) as L grows
//   distractors:  N keys sharing a score `margin` below the relevant one give
//                 it probability 1 / (1 + N e^(-margin)); a target
//                 probability p needs margin log(N p / (1 - p))
#pragma once

#include <array>

namespace posc::analysis {

// Explicit coordinates of the unit vector (1, 0) turned by omega * position / scale.
std::array<double, 2> rotatedUnit(double omega, double position, double scale = 1);

double rotationSimilarity(double omega, double distance, double scale = 1);          // closed form
double rotatedInnerProduct(double omega, double i, double j, double scale = 1);      // from coordinates

double neighbourSeparation(double omega, double scale = 1);                          // closed form
double rotatedNeighbourDistance(double omega, double position, double scale = 1);    // from coordinates

// Recent-h mass of the content-neutral linear-bias distribution over lags 0..L-1.
double recentMass(double slope, double h, double length);     // closed form
double recentMassSum(double slope, long h, long length);       // the finite sums
double recentMassLimit(double slope, double h);                // L -> infinity

double targetProbability(double margin, double distractors);
double marginFor(double probability, double distractors);

}  // namespace posc::analysis
