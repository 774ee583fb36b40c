// SVG heatmaps (heatmap.h).
#include "runtime/plot/heatmap.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "runtime/plot/chart.h"

namespace posc::plot {
namespace {

// Sequential blues: #f7fbff at lo to #08306b at hi, linear in RGB.
std::string colour(double t) {
  t = std::clamp(t, 0.0, 1.0);
  auto mix = [&](int a, int b) { return static_cast<int>(std::lround(a + (b - a) * t)); };
  return fmt::format("#{:02x}{:02x}{:02x}", mix(0xf7, 0x08), mix(0xfb, 0x30), mix(0xff, 0x6b));
}

}  // namespace

std::string renderHeatmapSvg(const Heatmap& map) {
  const size_t R = map.rows.size(), C = map.columns.size();
  if (map.values.size() != R)
    throw std::invalid_argument(fmt::format("heatmap: {} rows of values for {} row names", map.values.size(), R));
  for (const auto& row : map.values)
    if (row.size() != C)
      throw std::invalid_argument(fmt::format("heatmap: a row of {} values for {} column names", row.size(), C));
  if (!(map.lo < map.hi)) throw std::invalid_argument("heatmap: the colour scale needs lo < hi");

  const int cell_w = 64, cell_h = 32, left = 110, top = 56, legend_w = 90;
  const int width = left + static_cast<int>(C) * cell_w + legend_w + 20;
  const int height = top + static_cast<int>(R) * cell_h + 60;
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n",
      width, height, width, height);
  s += "<defs><pattern id=\"missing\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\">"
       "<rect width=\"6\" height=\"6\" fill=\"#eeeeee\"/><path d=\"M0,6 L6,0\" stroke=\"#bbbbbb\"/></pattern></defs>\n";
  s += fmt::format("<rect width=\"{}\" height=\"{}\" fill=\"white\"/>\n", width, height);
  s += fmt::format("<text x=\"{}\" y=\"22\" font-size=\"15\" text-anchor=\"middle\">{}</text>\n", width / 2,
                   xmlEscape(map.title));
  // Axis titles: columns above the grid, rows to its left.
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", left + static_cast<int>(C) * cell_w / 2,
                   top - 22, xmlEscape(map.column_label));
  s += fmt::format("<text x=\"14\" y=\"{}\" text-anchor=\"middle\" transform=\"rotate(-90 14 {})\">{}</text>\n",
                   top + static_cast<int>(R) * cell_h / 2, top + static_cast<int>(R) * cell_h / 2,
                   xmlEscape(map.row_label));
  for (size_t c = 0; c < C; ++c)
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                     left + static_cast<int>(c) * cell_w + cell_w / 2, top - 6, xmlEscape(map.columns[c]));
  for (size_t r = 0; r < R; ++r) {
    int y = top + static_cast<int>(r) * cell_h;
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", left - 8, y + cell_h / 2 + 4,
                     xmlEscape(map.rows[r]));
    for (size_t c = 0; c < C; ++c) {
      int x = left + static_cast<int>(c) * cell_w;
      double v = map.values[r][c];
      if (!std::isfinite(v)) {
        s += fmt::format("<rect class=\"cell missing\" data-row=\"{}\" data-column=\"{}\" x=\"{}\" y=\"{}\" "
                         "width=\"{}\" height=\"{}\" fill=\"url(#missing)\"/>\n",
                         xmlEscape(map.rows[r]), xmlEscape(map.columns[c]), x, y, cell_w, cell_h);
        continue;
      }
      double t = (v - map.lo) / (map.hi - map.lo);
      s += fmt::format("<rect class=\"cell\" data-row=\"{}\" data-column=\"{}\" data-value=\"{}\" x=\"{}\" y=\"{}\" "
                       "width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"white\"/>\n",
                       xmlEscape(map.rows[r]), xmlEscape(map.columns[c]), v, x, y, cell_w, cell_h, colour(t));
      s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"{}\">{:.{}f}</text>\n", x + cell_w / 2,
                       y + cell_h / 2 + 4, t > 0.55 ? "white" : "black", v, map.value_digits);
    }
  }
  // Legend: the colour scale from lo (bottom) to hi (top).
  const int lx = left + static_cast<int>(C) * cell_w + 24, steps = 10, lh = std::max(80, static_cast<int>(R) * cell_h);
  for (int i = 0; i < steps; ++i) {
    double t = 1.0 - (i + 0.5) / steps;
    s += fmt::format("<rect class=\"legend\" x=\"{}\" y=\"{}\" width=\"16\" height=\"{}\" fill=\"{}\"/>\n", lx,
                     top + i * lh / steps, lh / steps + 1, colour(t));
  }
  s += fmt::format("<text x=\"{}\" y=\"{}\">{:g}</text>\n", lx + 22, top + 10, map.hi);
  s += fmt::format("<text x=\"{}\" y=\"{}\">{:g}</text>\n", lx + 22, top + lh, map.lo);
  s += "</svg>\n";
  return s;
}

}  // namespace posc::plot
