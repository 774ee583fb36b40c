// Sweeps, aliases and windowed maxima (see sweep.h).
#include "runtime/analysis/sweep.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace posc::analysis {

std::vector<double> distanceGrid(double lo, double hi, double step) {
  if (!(step > 0)) throw std::invalid_argument("the sweep step must be positive");
  std::vector<double> d;
  if (hi < lo) return d;
  const size_t n = static_cast<size_t>(std::floor((hi - lo) / step + 0.5)) + 1;
  d.reserve(n);
  for (size_t i = 0; i < n; ++i) d.push_back(lo + static_cast<double>(i) * step);
  return d;
}

Sweep sweep(const KernelEvaluator& kernel, double lo, double hi, double step) {
  Sweep s;
  s.d = distanceGrid(lo, hi, step);
  s.value.resize(s.d.size());
  kernel.evaluateGrid(lo, step, s.value.data(), s.d.size());
  return s;
}

double valueAt(const Sweep& s, double d) {
  if (s.d.empty()) throw std::out_of_range("empty sweep");
  const double step = s.d.size() > 1 ? s.d[1] - s.d[0] : 1.0;
  const double k = std::round((d - s.d.front()) / step);
  if (k < 0 || k >= static_cast<double>(s.d.size()) || std::fabs(s.d[static_cast<size_t>(k)] - d) > 1e-9 * std::max(1.0, std::fabs(d)))
    throw std::out_of_range("distance outside the sweep");
  return s.value[static_cast<size_t>(k)];
}

std::vector<Alias> findAliases(const Sweep& s, double target_d, double window, double fraction) {
  const double target = valueAt(s, target_d);
  std::vector<Alias> out;
  const size_t n = s.value.size();
  for (size_t i = 0; i < n; ++i) {
    if (std::fabs(s.d[i] - target_d) <= window) continue;
    const double v = s.value[i];
    const bool left_ok = i == 0 || v >= s.value[i - 1];
    const bool right_ok = i + 1 == n || v > s.value[i + 1];
    if (!left_ok || !right_ok || !(v >= fraction * target)) continue;
    out.push_back({s.d[i], v, v / target, target - v});
  }
  std::stable_sort(out.begin(), out.end(), [](const Alias& a, const Alias& b) { return a.value > b.value; });
  return out;
}

std::vector<WindowMax> windowMaxima(const Sweep& s, double target_d, size_t width) {
  if (width == 0) throw std::invalid_argument("the window width must be positive");
  const double target = valueAt(s, target_d);
  std::vector<WindowMax> out;
  for (size_t start = 0; start < s.d.size(); start += width) {
    const size_t end = std::min(s.d.size(), start + width);
    // The highest value that is a number (NaN is no score); a window of
    // NaN alone reports its first point, with its NaN.
    size_t best = start;
    for (size_t i = start; i < end; ++i)
      if (!std::isnan(s.value[i]) && (std::isnan(s.value[best]) || s.value[i] > s.value[best])) best = i;
    out.push_back({s.d[start], s.d[end - 1], s.d[best], s.value[best], s.value[best] / target});
  }
  return out;
}

}  // namespace posc::analysis
