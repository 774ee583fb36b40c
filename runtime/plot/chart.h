// Plots and tables for reports: SVG line charts, CSV and Markdown tables.
//
// Probes, analyses and `posc report` all write the same three artefacts for a
// result: a CSV file (for further processing), a Markdown table (for reading)
// and an SVG chart (for looking). This library renders them from plain
// vectors, without LibTorch, so that any stage can use it.
//
// SVG output is self-contained (no scripts, no external fonts) and carries its
// data: every series is a <g class="series" data-name="..."> group whose
// polyline / circle / rect elements hold the plotted points, so a test or a
// reader can recover the numbers from the file.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace posc::plot {

enum class Style { Line, Points, LineAndPoints, Bars };

struct Series {
  std::string name;
  std::vector<double> x, y;
  // Optional band (e.g. the range across seeds): lo[i] <= y[i] <= hi[i].
  std::vector<double> lo, hi;
  Style style = Style::LineAndPoints;
  std::string color;  // empty: the next colour of the palette
  bool dashed = false;
};

// A horizontal or vertical reference line (e.g. the training length).
struct Rule {
  double at = 0;
  bool vertical = false;
  std::string label;
};

struct Chart {
  std::string title;
  std::string x_label, y_label;
  bool log_x = false;  // positive x only
  bool log_y = false;  // positive y only (a loss that spans decades); ticks at powers of 10
  std::optional<double> x_min, x_max, y_min, y_max;  // default: the data's range
  std::vector<Series> series;
  std::vector<Rule> rules;
  int width = 720, height = 420;
};

// A log y axis when the chart's finite values are positive and span two
// decades or more (a training loss from 2.4 to 4e-8 reads only so), else a
// linear one from 0.
void logYIfDecades(Chart& chart);

// A line series of a single point draws nothing: such series are drawn as
// points instead.
void showSinglePoints(Chart& chart);

// The chart as an SVG document. Non-finite points are skipped.
std::string renderSvg(const Chart& chart);

// "Nice" tick positions covering [lo, hi] (about `target` of them).
std::vector<double> niceTicks(double lo, double hi, int target = 6);

// Escapes &, <, >, " for XML text and attributes.
std::string xmlEscape(const std::string& s);

}  // namespace posc::plot
