// Sweeps of a kernel over a range of distances, and what the study reads off
// them: aliases (peaks beyond a window around the target that reach a
// fraction of the target's score) and the highest value per window as a
// fraction of the target (the "highest score in each 10-column window"
// figure of the kernel probe).
#pragma once

#include <string>
#include <vector>

#include "runtime/analysis/kernel.h"

namespace posc::analysis {

struct Sweep {
  std::vector<double> d, value;
};

// d = lo, lo + step, ..., up to hi inclusive (within half a step). step > 0.
std::vector<double> distanceGrid(double lo, double hi, double step = 1);
Sweep sweep(const KernelEvaluator& kernel, double lo, double hi, double step = 1);

struct Alias {
  double d = 0;
  double value = 0;
  double fraction = 0;  // value / target value
  double gap = 0;       // target value - value
};

// Local maxima of the sweep at |d - target_d| > window whose value is at
// least `fraction` x the target's value, highest first. The target's value is
// the sweep's value at target_d (which must lie on the grid).
std::vector<Alias> findAliases(const Sweep& s, double target_d, double window, double fraction);

struct WindowMax {
  double lo = 0, hi = 0;  // the window's distances, inclusive
  double d = 0;           // where its highest value is
  double value = 0;
  double fraction = 0;    // value / target value
};

// The sweep cut into consecutive windows of `width` grid points from its
// start; the highest value in each, as a fraction of the value at target_d.
std::vector<WindowMax> windowMaxima(const Sweep& s, double target_d, size_t width);

// The sweep's value at distance d (nearest grid point); throws if outside.
double valueAt(const Sweep& s, double d);

}  // namespace posc::analysis
