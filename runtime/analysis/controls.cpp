// The analytic controls (see controls.h).
#include "runtime/analysis/controls.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace posc::analysis {

std::array<double, 2> rotatedUnit(double omega, double position, double scale) {
  const double angle = omega * position / scale;
  return {std::cos(angle), std::sin(angle)};
}

double rotationSimilarity(double omega, double distance, double scale) { return std::cos(omega * distance / scale); }

double rotatedInnerProduct(double omega, double i, double j, double scale) {
  const auto a = rotatedUnit(omega, i, scale), b = rotatedUnit(omega, j, scale);
  return a[0] * b[0] + a[1] * b[1];
}

double neighbourSeparation(double omega, double scale) { return 2 * std::fabs(std::sin(omega / (2 * scale))); }

double rotatedNeighbourDistance(double omega, double position, double scale) {
  const auto a = rotatedUnit(omega, position, scale), b = rotatedUnit(omega, position + 1, scale);
  return std::hypot(a[0] - b[0], a[1] - b[1]);
}

double recentMass(double slope, double h, double length) {
  if (!(length > 0) || h < 0) throw std::invalid_argument("recent mass needs L > 0 and h >= 0");
  if (h >= length) return 1.0;
  if (slope == 0) return h / length;
  // expm1 keeps small slopes accurate: (1 - e^(-m h)) / (1 - e^(-m L)).
  return std::expm1(-slope * h) / std::expm1(-slope * length);
}

double recentMassSum(double slope, long h, long length) {
  if (length <= 0 || h < 0) throw std::invalid_argument("recent mass needs L > 0 and h >= 0");
  double recent = 0, total = 0;
  for (long d = length - 1; d >= 0; --d) {  // smallest terms first
    const double w = std::exp(-slope * static_cast<double>(d));
    total += w;
    if (d < h) recent += w;
  }
  return recent / total;
}

double recentMassLimit(double slope, double h) { return -std::expm1(-slope * h); }

double targetProbability(double margin, double distractors) { return 1.0 / (1.0 + distractors * std::exp(-margin)); }

double marginFor(double probability, double distractors) {
  if (!(probability > 0 && probability < 1)) throw std::invalid_argument("the target probability must lie in (0, 1)");
  return std::log(distractors * probability / (1 - probability));
}

}  // namespace posc::analysis
