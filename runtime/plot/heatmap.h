// SVG heatmaps: a grid of cells coloured by a value in [lo, hi], for tables
// with two factors (accuracy over context length x evidence depth, or length
// x distractor count).
//
// Like the line charts (chart.h), the SVG carries its data: each cell is a
// <rect class="cell" data-row="..." data-column="..." data-value="..."> with
// its value printed on it, so a test or a reader recovers the numbers from the
// file. Missing cells (NaN) are drawn hatched grey with no value. The colour
// scale runs from a light to a dark blue (sequential, readable in greyscale
// and by colour-blind readers); a legend shows it.
#pragma once

#include <string>
#include <vector>

namespace posc::plot {

struct Heatmap {
  std::string title;
  std::string row_label, column_label;  // axis titles: "length", "depth"
  std::vector<std::string> rows;        // row names, top to bottom
  std::vector<std::string> columns;     // column names, left to right
  std::vector<std::vector<double>> values;  // values[row][column]; NaN: missing
  double lo = 0.0, hi = 1.0;            // the colour scale's ends (values are clamped)
  int value_digits = 2;                 // digits after the point printed in each cell
};

// The heatmap as an SVG document. Throws std::invalid_argument when `values`
// does not have rows x columns entries or lo >= hi.
std::string renderHeatmapSvg(const Heatmap& map);

}  // namespace posc::plot
