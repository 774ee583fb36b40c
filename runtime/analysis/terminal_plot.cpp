// Terminal plots (see terminal_plot.h).
#include "runtime/analysis/terminal_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace posc::analysis {

std::string terminalPlot(const std::vector<double>& x, const std::vector<double>& y, int width, int height) {
  width = std::max(width, 8);
  height = std::max(height, 4);
  double lo = HUGE_VAL, hi = -HUGE_VAL;
  for (double v : y)
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  if (x.empty() || !(hi >= lo)) return "(nothing to plot: no finite values)\n";
  if (hi == lo) hi = lo + 1, lo = lo - 1;
  const double x0 = x.front(), x1 = x.back();
  std::vector<std::string> grid(static_cast<size_t>(height), std::string(static_cast<size_t>(width), ' '));
  auto rowOf = [&](double v) {
    int r = static_cast<int>(std::lround((hi - v) / (hi - lo) * (height - 1)));
    return std::clamp(r, 0, height - 1);
  };
  if (lo < 0 && hi > 0) std::fill(grid[static_cast<size_t>(rowOf(0))].begin(), grid[static_cast<size_t>(rowOf(0))].end(), '-');
  std::vector<double> cmin(static_cast<size_t>(width), HUGE_VAL), cmax(static_cast<size_t>(width), -HUGE_VAL);
  for (size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(y[i])) continue;
    int c = x1 == x0 ? 0 : static_cast<int>(std::lround((x[i] - x0) / (x1 - x0) * (width - 1)));
    c = std::clamp(c, 0, width - 1);
    cmin[static_cast<size_t>(c)] = std::min(cmin[static_cast<size_t>(c)], y[i]);
    cmax[static_cast<size_t>(c)] = std::max(cmax[static_cast<size_t>(c)], y[i]);
  }
  for (int c = 0; c < width; ++c) {
    if (cmax[static_cast<size_t>(c)] < cmin[static_cast<size_t>(c)]) continue;
    for (int r = rowOf(cmax[static_cast<size_t>(c)]); r <= rowOf(cmin[static_cast<size_t>(c)]); ++r)
      grid[static_cast<size_t>(r)][static_cast<size_t>(c)] = '*';
  }
  const std::string top = fmt::format("{:.4g}", hi), bottom = fmt::format("{:.4g}", lo);
  const size_t margin = std::max(top.size(), bottom.size());
  std::string out;
  for (int r = 0; r < height; ++r) {
    std::string label = r == 0 ? top : r == height - 1 ? bottom : "";
    out += fmt::format("{:>{}} |{}\n", label, margin, grid[static_cast<size_t>(r)]);
  }
  const std::string left = fmt::format("{:g}", x0), right = fmt::format("{:g}", x1);
  const int gap = std::max(1, width - static_cast<int>(left.size() + right.size()));
  out += fmt::format("{:>{}}  {}{:{}}{}\n", "", margin, left, "", gap, right);
  return out;
}

}  // namespace posc::analysis
