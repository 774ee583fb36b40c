// The analytic-controls figures and the ridge-fit table as runtime/plot
// charts and tables, shared by `posc repl` and `posc analyze` so the two
// write identical artefacts.
//
//   rotation figure:  cos(omega d / s) against distance d, one series per
//                     compression scale s (first figure of the controls study)
//   recent-mass figure: the recent-h mass against context length L, one
//                     series per slope m, with the L -> infinity limits as
//                     dashed rules (second figure)
//   ridge table:      ladder, terms, peak, worst side bump, highest value
//                     beyond training (and its multiple of the peak)
//   sweep figure:     a kernel's score against distance, and its table
//                     (d, score) at full precision
#pragma once

#include <vector>

#include "runtime/analysis/ladder.h"
#include "runtime/analysis/sweep.h"
#include "runtime/plot/chart.h"
#include "runtime/plot/table.h"

namespace posc::analysis {

plot::Chart rotationFigure(double omega, const std::vector<double>& scales, double max_distance);
plot::Table rotationTable(double omega, const std::vector<double>& scales, double max_distance);

plot::Chart recentMassFigure(double h, const std::vector<double>& slopes, const std::vector<double>& lengths);
plot::Table recentMassTable(double h, const std::vector<double>& slopes, const std::vector<double>& lengths);

plot::Table ridgeTable(const std::vector<FitResult>& fits);
plot::Chart ridgeFigure(const FitResult& fit);

plot::Chart sweepFigure(const std::string& label, const Sweep& s);
plot::Table sweepTable(const Sweep& s);

}  // namespace posc::analysis
