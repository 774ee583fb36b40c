// A kernel plotted in the terminal: a character grid with the y range on the
// left, the x range below and the zero line drawn when it is in view, so a
// REPL user sees the comb of a kernel without leaving the session.
#pragma once

#include <string>
#include <vector>

namespace posc::analysis {

// `width` x `height` characters of plot area; each column shows the highest
// and lowest value of the points that fall into it (so narrow teeth survive).
std::string terminalPlot(const std::vector<double>& x, const std::vector<double>& y, int width = 72,
                         int height = 16);

}  // namespace posc::analysis
