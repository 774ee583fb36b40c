// The analytic controls as commands (runtime/analysis/command.h): rotation
// similarity under compression, the recent mass under a linear distance
// penalty, and the closed forms checked against explicit computation.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "runtime/analysis/command.h"
#include "runtime/analysis/command_parts.h"
#include "runtime/analysis/controls.h"
#include "runtime/analysis/figures.h"

namespace posc::analysis {
namespace {

std::string num(double v) { return plot::formatNumber(v, 6); }

Result rotationCommand(const Values& v, const Limits&) {
  const double omega = v.number("omega"), max_d = v.number("max_distance");
  const std::vector<double>& scales = v.numbers("scales");
  Result r;
  r.figures.push_back({"rotation.svg", plot::renderSvg(rotationFigure(omega, scales, max_d))});
  r.tables.push_back({"rotation", "Rotation similarity under compression", 
                      fmt::format("omega = {:g}; similarity cos(omega d / s) on 0..{:g} (rotation.svg); neighbouring "
                                  "positions sit 2 |sin(omega / (2 s))| apart, checked against explicitly rotated "
                                  "coordinates.",
                                  omega, max_d),
                      rotationTable(omega, scales, max_d)});
  return r;
}

Result recentMassCommand(const Values& v, const Limits&) {
  const double h = v.number("h");
  const std::vector<double>& slopes = v.numbers("slopes");
  const std::vector<double>& lengths = v.numbers("lengths");
  for (size_t i = 0; i < lengths.size(); ++i)
    if (lengths[i] != std::floor(lengths[i]) || lengths[i] > 1e8)
      throw CommandError("lengths", fmt::format("lengths must be whole numbers up to 1e8, not {:g}", lengths[i]), {},
                         static_cast<int>(i));
  Result r;
  r.figures.push_back({"recent_mass.svg", plot::renderSvg(recentMassFigure(h, slopes, lengths))});
  r.tables.push_back({"recent_mass", fmt::format("Recent-{:g} mass under a linear distance penalty", h),
                      "A causal key at lag d scores -m d over lags 0..L-1; closed form (1 - e^(-m h)) / (1 - e^(-m "
                      "L)) beside the finite sum; dashed lines in recent_mass.svg are the limits 1 - e^(-m h).",
                      recentMassTable(h, slopes, lengths)});
  return r;
}

// The companion program's checks: each closed form against the explicit
// computation it abbreviates, as the largest absolute difference.
plot::Table checksTable() {
  plot::Table t;
  t.columns = {"check", "cases", "largest |difference|"};
  double worst = 0;
  int cases = 0;
  for (double w : {0.3, 1.0, 2.5})
    for (double s : {1.0, 4.0})
      for (double i = 0; i < 20; i += 3)
        for (double j = 0; j < 20; j += 5)
          for (double shift : {1.0, 37.0, 1000.0}) {
            worst = std::max(worst, std::fabs(analysis::rotatedInnerProduct(w, i + shift, j + shift, s) -
                                              analysis::rotatedInnerProduct(w, i, j, s)));
            ++cases;
          }
  t.addRow({"translation invariance of the rotated inner product", std::to_string(cases), num(worst)});
  worst = 0, cases = 0;
  for (double w : {0.1, 1.0, 2 * std::numbers::pi / 6, 3.0})
    for (double s : {1.0, 2.0, 4.0, 16.0})
      for (double p : {0.0, 17.0, 1000.0}) {
        worst = std::max(worst, std::fabs(analysis::neighbourSeparation(w, s) - analysis::rotatedNeighbourDistance(w, p, s)));
        ++cases;
      }
  t.addRow({"separation 2|sin(omega/(2s))| against rotated coordinates", std::to_string(cases), num(worst)});
  worst = 0, cases = 0;
  for (double m : {1e-4, 0.01, 0.1, 0.5, 2.0})
    for (long L : {16L, 100L, 4096L})
      for (long h : {1L, 8L, 16L}) {
        worst = std::max(worst, std::fabs(analysis::recentMass(m, h, L) - analysis::recentMassSum(m, h, L)));
        ++cases;
      }
  t.addRow({"recent mass: closed form against the finite sums", std::to_string(cases), num(worst)});
  worst = 0, cases = 0;
  for (long L : {1L, 16L, 1000L})
    for (long h = 0; h <= L; h += std::max(1L, L / 4)) {
      worst = std::max(worst, std::fabs(analysis::recentMass(0, h, L) - static_cast<double>(h) / L));
      ++cases;
    }
  t.addRow({"recent mass at slope 0 equals h / L", std::to_string(cases), num(worst)});
  worst = 0, cases = 0;
  for (double m : {0.0, 0.05, 1.0})
    for (long L : {1L, 16L, 500L}) {
      worst = std::max(worst, std::fabs(analysis::recentMass(m, L, L) - 1.0));
      ++cases;
    }
  t.addRow({"recent mass at h = L equals 1", std::to_string(cases), num(worst)});
  t.addRow({"recent mass at L = 4096 against the limit 1 - e^(-m h), m = 0.05, h = 16", "1",
            num(std::fabs(analysis::recentMass(0.05, 16, 4096) - analysis::recentMassLimit(0.05, 16)))});
  worst = 0, cases = 0;
  for (double n : {1.0, 10.0, 1000.0, 1e6})
    for (double p : {0.5, 0.9, 0.99}) {
      worst = std::max(worst, std::fabs(analysis::targetProbability(analysis::marginFor(p, n), n) - p));
      ++cases;
    }
  t.addRow({"margin log(N p / (1 - p)) gives probability p against N distractors", std::to_string(cases), num(worst)});
  return t;
}

Result checksCommand(const Values&, const Limits&) {
  Result r;
  r.tables.push_back({"checks", "Closed forms against explicit computation", "", checksTable()});
  return r;
}

}  // namespace

std::vector<Command> controlCommands() {
  return {
      {"rotation",
       {},
       {Param::num("omega", 1).atLeast(1e-12), Param::nums("scales", {1, 2, 4, 8}).atLeast(1e-12),
        Param::num("max_distance", 40).atLeast(1e-9)},
       "cos(omega d / s) against d per compression scale s, and the neighbour separation table",
       rotationCommand},
      {"recent_mass",
       {},
       {Param::num("h", 16).atLeast(0).whole(), Param::nums("slopes", {0, 0.01, 0.05, 0.1, 0.25}).atLeast(0),
        Param::nums("lengths", {16, 32, 64, 128, 256, 512, 1024, 2048, 4096}, "[16, 32, 64, ..., 4096]").atLeast(1)},
       "the linear-penalty recent-h mass against context length per slope (closed form and finite sum)",
       recentMassCommand},
      {"checks",
       {},
       {},
       "the closed forms against explicit computation: translation invariance, separation, recent mass, margins",
       checksCommand},
  };
}

const std::vector<Command>& libraryCommands() {
  static const std::vector<Command> all = [] {
    std::vector<Command> out;
    for (auto part : {kernelCommands, ladderCommands, controlCommands})
      for (Command& c : part()) out.push_back(std::move(c));
    return out;
  }();
  return all;
}

}  // namespace posc::analysis
