// Figures and tables of the analytic controls and the ridge fits (see figures.h).
#include "runtime/analysis/figures.h"

#include <fmt/format.h>

#include <cmath>

#include "runtime/analysis/controls.h"

namespace posc::analysis {

plot::Chart rotationFigure(double omega, const std::vector<double>& scales, double max_distance) {
  plot::Chart c;
  c.title = fmt::format("Rotation similarity cos(omega d / s), omega = {:g}", omega);
  c.x_label = "distance d";
  c.y_label = "similarity";
  c.y_min = -1.05;
  c.y_max = 1.05;
  for (double s : scales) {
    plot::Series series;
    series.name = fmt::format("s = {:g} (neighbour separation {:.4f})", s, neighbourSeparation(omega, s));
    series.style = plot::Style::Line;
    const int steps = 400;
    for (int i = 0; i <= steps; ++i) {
      const double d = max_distance * i / steps;
      series.x.push_back(d);
      series.y.push_back(rotationSimilarity(omega, d, s));
    }
    c.series.push_back(std::move(series));
  }
  return c;
}

plot::Table rotationTable(double omega, const std::vector<double>& scales, double max_distance) {
  plot::Table t;
  t.columns = {"scale s", "neighbour separation 2|sin(omega/(2s))|", "explicit rotated distance",
               "similarity at d = max", "period in positions"};
  for (double s : scales)
    t.addRow({plot::formatNumber(s), plot::formatNumber(neighbourSeparation(omega, s), 6),
              plot::formatNumber(rotatedNeighbourDistance(omega, 0, s), 6),
              plot::formatNumber(rotationSimilarity(omega, max_distance, s), 6),
              plot::formatNumber(2 * M_PI * s / omega, 6)});
  return t;
}

plot::Chart recentMassFigure(double h, const std::vector<double>& slopes, const std::vector<double>& lengths) {
  plot::Chart c;
  c.title = fmt::format("Mass on the most recent {:g} positions under a linear distance penalty", h);
  c.x_label = "context length L";
  c.y_label = "recent mass";
  c.log_x = true;
  c.y_min = 0;
  c.y_max = 1.02;
  for (double m : slopes) {
    plot::Series series;
    series.name = fmt::format("slope m = {:g}", m);
    for (double L : lengths) {
      series.x.push_back(L);
      series.y.push_back(recentMass(m, h, L));
    }
    c.series.push_back(std::move(series));
    if (m > 0) c.rules.push_back({recentMassLimit(m, h), false, fmt::format("1 - e^(-{:g} x {:g})", m, h)});
  }
  return c;
}

plot::Table recentMassTable(double h, const std::vector<double>& slopes, const std::vector<double>& lengths) {
  plot::Table t;
  t.columns = {"slope m", "length L", "recent mass (closed form)", "recent mass (finite sum)", "limit 1 - e^(-m h)"};
  for (double m : slopes)
    for (double L : lengths)
      t.addRow({plot::formatNumber(m), plot::formatNumber(L), plot::formatNumber(recentMass(m, h, L), 8),
                plot::formatNumber(recentMassSum(m, static_cast<long>(h), static_cast<long>(L)), 8),
                plot::formatNumber(recentMassLimit(m, h), 8)});
  return t;
}

namespace {

// Two decimals, and "0.00" rather than "-0.00" for values that round to zero.
std::string twoDecimals(double v) {
  std::string s = fmt::format("{:.2f}", v);
  return s == "-0.00" ? "0.00" : s;
}

}  // namespace

plot::Table ridgeTable(const std::vector<FitResult>& fits) {
  plot::Table t;
  t.columns = {"frequency ladder", "terms", "peak (ideal 1)", "worst side bump in range",
               "highest value beyond training", "beyond / peak", "at distance", "training distances", "ridge",
               "evaluated on"};
  for (const FitResult& f : fits) {
    const double ratio = f.peak != 0 ? f.beyond / f.peak : NAN;
    t.addRow({f.ladder.describe(), std::to_string(f.ladder.terms), twoDecimals(f.peak), twoDecimals(f.side_bump),
              twoDecimals(f.beyond), std::fabs(ratio) < 0.5 ? "-" : fmt::format("{:.0f}x", ratio),
              plot::formatNumber(f.beyond_at), fmt::format("-{0}..{0}", f.settings.train), fmt::format("{:g}", f.settings.ridge),
              fmt::format("-{0}..{0}", f.settings.range)});
  }
  return t;
}

plot::Chart ridgeFigure(const FitResult& fit) {
  plot::Chart c;
  c.title = fmt::format("{} ladder, {} terms, fitted to a spike on -{}..{}", fit.ladder.describe(), fit.ladder.terms,
                        fit.settings.train, fit.settings.train);
  c.x_label = "distance d";
  c.y_label = "fitted kernel";
  plot::Series s;
  s.name = "fitted kernel";
  s.style = plot::Style::Line;
  s.x = fit.d;
  s.y = fit.value;
  c.series.push_back(std::move(s));
  c.rules.push_back({-static_cast<double>(fit.settings.train), true, "training"});
  c.rules.push_back({static_cast<double>(fit.settings.train), true, ""});
  return c;
}

plot::Chart sweepFigure(const std::string& label, const Sweep& s) {
  plot::Chart chart;
  chart.title = label;
  chart.x_label = "distance d";
  chart.y_label = "score";
  plot::Series series;
  series.name = label;
  series.style = plot::Style::Line;
  series.x = s.d;
  series.y = s.value;
  chart.series.push_back(std::move(series));
  return chart;
}

plot::Table sweepTable(const Sweep& s) {
  plot::Table t;
  t.columns = {"d", "score"};
  for (size_t i = 0; i < s.d.size(); ++i) t.addRow({fmt::format("{:.17g}", s.d[i]), fmt::format("{:.17g}", s.value[i])});
  return t;
}

}  // namespace posc::analysis
