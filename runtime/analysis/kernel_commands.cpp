// The commands over one kernel of the distance d (runtime/analysis/command.h):
// table, sweep, aliases and windows, and the REPL's renderings of a sweep
// (plot in the terminal, svg to a file).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

#include "runtime/analysis/command.h"
#include "runtime/analysis/command_parts.h"
#include "runtime/analysis/figures.h"
#include "runtime/analysis/sweep.h"
#include "runtime/analysis/terminal_plot.h"

namespace posc::analysis {
namespace {

std::string num(double v) { return plot::formatNumber(v, 6); }

// "0.00" rather than "-0.00" for values that round to zero.
std::string fraction(double v) {
  if (std::isnan(v)) return "nan";
  std::string s = fmt::format("{:.3f}", v);
  return s == "-0.000" ? "0.000" : s;
}

// The kernel swept over the call's range (`over`) at its step (1 when the
// command has none), within the front door's limit on points.
struct Swept {
  const KernelValue* kernel;
  Sweep sweep;
  std::string evaluator;
  double seconds = 0;
  std::pair<double, double> over;
  double step = 1;
  // Files in an analysis folder: <stem>_sweep.csv etc., after the kernel's
  // name, or "kernel" for an expression.
  std::string stem() const { return kernel->named ? kernel->label : "kernel"; }
};

Swept sweepOver(const Values& v, const Limits& limits, bool has_step) {
  Swept s;
  s.kernel = v.kernel("kernel");
  s.over = v.range("over");
  s.step = has_step ? v.number("step") : 1.0;
  const double points = std::floor((s.over.second - s.over.first) / s.step + 0.5) + 1;
  if (points > limits.max_points)
    throw CommandError("over", fmt::format("{:g} points is more than this session sweeps at once ({:g})", points, limits.max_points),
                       "use a larger step or a smaller range");
  std::unique_ptr<KernelEvaluator> eval = makeEvaluator(s.kernel->program);
  const auto start = std::chrono::steady_clock::now();
  s.sweep = sweep(*eval, s.over.first, s.over.second, s.step);
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  s.evaluator = eval->name();
  return s;
}

// The sweep's value at the call's target distance.
double targetValue(const Swept& s, const Values& v) {
  try {
    return valueAt(s.sweep, v.number("target"));
  } catch (const std::exception&) {
    throw CommandError(v.given("target") ? "target" : "over",
                       fmt::format("the target distance {} is not on the swept grid", num(v.number("target"))));
  }
}

std::vector<Param> kernelAndRange(const char* example) {
  Param over = Param::distances("over");
  over.shown = example;
  return {Param::kernel("kernel"), over};
}

Result table(const Values& v, const Limits& limits) {
  const Swept s = sweepOver(v, limits, true);
  if (s.sweep.d.size() > 2000)
    throw CommandError("over", fmt::format("{} rows is too many to print", s.sweep.d.size()),
                       "use sweep, plot or svg for long ranges, or a larger step");
  Result r;
  plot::Table t;
  t.columns = {"d", s.kernel->label};
  for (size_t i = 0; i < s.sweep.d.size(); ++i) t.addRow({num(s.sweep.d[i]), num(s.sweep.value[i])});
  r.tables.push_back({s.stem() + "_table", "Values of " + s.kernel->label, "", std::move(t)});
  return r;
}

Result sweepCommand(const Values& v, const Limits& limits) {
  const Swept s = sweepOver(v, limits, true);
  // Extremes over the points that are numbers; NaN points are counted apart.
  std::optional<size_t> lo, hi, first_nan;
  size_t nans = 0;
  const std::vector<double>& value = s.sweep.value;
  for (size_t i = 0; i < value.size(); ++i) {
    if (std::isnan(value[i])) {
      if (nans++ == 0) first_nan = i;
      continue;
    }
    if (!lo || value[i] < value[*lo]) lo = i;
    if (!hi || value[i] > value[*hi]) hi = i;
  }
  auto extreme = [&](const char* what, std::optional<size_t> at) {
    return at ? fmt::format("  {} {} at d = {}\n", what, num(value[*at]), num(s.sweep.d[*at]))
              : fmt::format("  {}: none, every point is NaN\n", what);
  };
  Result r;
  r.text = fmt::format("{}: {} points on {}..{} (step {})\n{}{}{}", s.kernel->label, value.size(), num(s.over.first),
                       num(s.over.second), num(s.step), extreme("max", hi), extreme("min", lo),
                       nans ? fmt::format("  {} of {} points are NaN, the first at d = {}\n", nans, value.size(),
                                          num(s.sweep.d[*first_nan]))
                            : "");
  r.timing = fmt::format("  {} in {:.3g} ms ({:.3g} evaluations/s)\n", s.evaluator, s.seconds * 1e3,
                         static_cast<double>(value.size()) / std::max(s.seconds, 1e-9));
  r.figures.push_back({s.stem() + "_sweep.svg", plot::renderSvg(sweepFigure(s.kernel->label, s.sweep))});
  Result::Table t{s.stem() + "_sweep", "Sweep of " + s.kernel->label, "", sweepTable(s.sweep)};
  t.print = false;  // thousands of rows: a file, not a terminal's
  r.tables.push_back(std::move(t));
  return r;
}

Result aliases(const Values& v, const Limits& limits) {
  const Swept s = sweepOver(v, limits, false);
  const double target = v.number("target"), window = v.number("window"), share = v.number("fraction");
  const size_t top = static_cast<size_t>(v.number("top"));
  const double target_value = targetValue(s, v);
  const std::vector<Alias> found = findAliases(s.sweep, target, window, share);
  Result r;
  r.text = fmt::format("target: {} at d = {} is {}; {} peak{} beyond |d - {}| > {} reach {} of it{}\n",
                       s.kernel->label, num(target), num(target_value), found.size(), found.size() == 1 ? "" : "s",
                       num(target), num(window), num(share),
                       found.size() > top ? fmt::format(" (highest {} shown)", top) : "");
  plot::Table t;
  t.columns = {"d", "score", "fraction of target", "gap to target"};
  for (size_t i = 0; i < found.size() && i < top; ++i)
    t.addRow({num(found[i].d), num(found[i].value), fraction(found[i].fraction), num(found[i].gap)});
  r.tables.push_back({s.stem() + "_aliases", "Aliases of " + s.kernel->label,
                      fmt::format("Target: d = {} scores {}. Peaks on {}..{} with |d - {}| > {} scoring at least {} "
                                  "of it, highest first{}.",
                                  num(target), num(target_value), num(s.over.first), num(s.over.second), num(target),
                                  num(window), num(share),
                                  found.size() > top ? fmt::format(" (the highest {} of {})", top, found.size()) : ""),
                      std::move(t)});
  return r;
}

Result windows(const Values& v, const Limits& limits) {
  const Swept s = sweepOver(v, limits, false);
  const double target = v.number("target");
  const auto width = static_cast<size_t>(v.number("width"));
  const double target_value = targetValue(s, v);
  const std::vector<WindowMax> w = windowMaxima(s.sweep, target, width);
  if (w.size() > 2000)
    throw CommandError("over", fmt::format("{} windows is too many to print", w.size()), "use a wider window");
  Result r;
  r.text = fmt::format("target: {} at d = {} is {}\n", s.kernel->label, num(target), num(target_value));
  plot::Table t;
  t.columns = {"window start", "window end", "highest at", "score", "fraction of target"};
  plot::Chart chart;
  chart.title = fmt::format("Highest score per {}-point window as a fraction of the target, {}", width,
                            s.kernel->label);
  chart.x_label = "distance d (window start)";
  chart.y_label = "fraction of target";
  plot::Series bars;
  bars.name = "highest / target";
  bars.style = plot::Style::Bars;
  for (const auto& x : w) {
    t.addRow({num(x.lo), num(x.hi), num(x.d), num(x.value), fraction(x.fraction)});
    bars.x.push_back(x.lo);
    bars.y.push_back(x.fraction);
  }
  chart.series.push_back(std::move(bars));
  r.figures.push_back({s.stem() + "_windows.svg", plot::renderSvg(chart)});
  r.tables.push_back({s.stem() + "_windows", "Windowed maxima of " + s.kernel->label,
                      fmt::format("Target: d = {} scores {}.", num(target), num(target_value)), std::move(t)});
  return r;
}

Result terminalPlotCommand(const Values& v, const Limits& limits) {
  const Swept s = sweepOver(v, limits, true);
  Result r;
  r.text = s.kernel->label + "\n" +
           terminalPlot(s.sweep.d, s.sweep.value, static_cast<int>(v.number("width")),
                        static_cast<int>(v.number("height")));
  return r;
}

Result svgCommand(const Values& v, const Limits& limits) {
  const Swept s = sweepOver(v, limits, true);
  const std::string& file = v.text("file");
  std::string csv = file;
  if (csv.size() > 4 && csv.substr(csv.size() - 4) == ".svg") csv.resize(csv.size() - 4);
  csv += ".csv";
  Result r;
  r.files.push_back({"file", file, plot::renderSvg(sweepFigure(s.kernel->label, s.sweep))});
  r.files.push_back({"file", csv, plot::toCsv(sweepTable(s.sweep))});
  return r;
}

}  // namespace

std::vector<Command> kernelCommands() {
  std::vector<Command> out;
  {
    Command c{"table", {}, kernelAndRange("-10..10"), "the kernel's value at each distance", table};
    c.params.push_back(Param::num("step", 1).atLeast(1e-9));
    out.push_back(std::move(c));
  }
  {
    Command c{"sweep", {}, kernelAndRange("-2000..2000"),
              "the kernel over a range: extremes and evaluation speed (files: its CSV and SVG)", sweepCommand};
    c.params.push_back(Param::num("step", 1).atLeast(1e-9));
    out.push_back(std::move(c));
  }
  {
    Command c{"aliases", {}, kernelAndRange("-2000..2000"),
              "peaks beyond the window around the target that reach the fraction of its score", aliases};
    c.params.push_back(Param::num("window", 3).atLeast(0));
    c.params.push_back(Param::num("fraction", 0.5));
    c.params.push_back(Param::num("target", 0));
    c.params.push_back(Param::num("top", 10).atLeast(1).whole().atMost(1e6));
    out.push_back(std::move(c));
  }
  {
    Command c{"windows", {}, kernelAndRange("-2000..2000"),
              "the highest value in each window as a fraction of the target's (files: a bar chart)", windows};
    c.params.push_back(Param::num("width", 10).atLeast(1).whole().atMost(1e9));  // grid points
    c.params.push_back(Param::num("target", 0));
    out.push_back(std::move(c));
  }
  {
    Command c{"plot", {}, kernelAndRange("-50..50"), "plot in the terminal", terminalPlotCommand};
    c.params.push_back(Param::num("step", 1).atLeast(1e-9));
    c.params.push_back(Param::num("width", 72).atLeast(8).whole().atMost(1000));
    c.params.push_back(Param::num("height", 16).atLeast(4).whole().atMost(200));
    c.repl_only = true;
    out.push_back(std::move(c));
  }
  {
    Command c{"svg", {}, kernelAndRange("-50..50"), "plot to an SVG file (and its data to a CSV beside it)",
              svgCommand};
    c.params.push_back(Param::str("file", true));
    c.params.push_back(Param::num("step", 1).atLeast(1e-9));
    c.repl_only = true;
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace posc::analysis
