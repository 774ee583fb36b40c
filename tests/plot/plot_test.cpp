// Charts and tables: CSV/Markdown hold the same cells, ticks are nice, and
// the SVG is well-formed XML that carries every plotted point.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "runtime/plot/chart.h"
#include "runtime/plot/table.h"

namespace posc::plot {
namespace {

TEST(Table, CsvQuotesAndMarkdownEscapes) {
  Table t{{"digits", "note"}, {}};
  t.addRow({"10", "a,b"});
  t.addRow({"20", "say \"hi\" | bye"});
  EXPECT_EQ(toCsv(t), "digits,note\n10,\"a,b\"\n20,\"say \"\"hi\"\" | bye\"\n");
  EXPECT_EQ(toMarkdown(t), "| digits | note |\n| --- | --- |\n| 10 | a,b |\n| 20 | say \"hi\" \\| bye |\n");
  EXPECT_THROW(t.addRow({"1"}), std::invalid_argument);
}

TEST(Table, FormatNumber) {
  EXPECT_EQ(formatNumber(3), "3");
  EXPECT_EQ(formatNumber(-40), "-40");
  EXPECT_EQ(formatNumber(0.123456, 3), "0.123");
  EXPECT_EQ(formatNumber(19.8123, 3), "19.8");
  EXPECT_EQ(formatNumber(std::nan("")), "nan");
}

TEST(Chart, NiceTicks) {
  EXPECT_EQ(niceTicks(0, 1, 5), (std::vector<double>{0, 0.2, 0.4, 0.6, 0.8, 1.0}));
  EXPECT_EQ(niceTicks(-2000, 2000, 4), (std::vector<double>{-2000, -1000, 0, 1000, 2000}));
  auto t = niceTicks(3, 97, 6);
  ASSERT_FALSE(t.empty());
  EXPECT_GE(t.front(), 3);
  EXPECT_LE(t.back(), 97);
  EXPECT_EQ(t[1] - t[0], 20);
}

TEST(Chart, SvgCarriesSeriesAndParsesAsXml) {
  Chart c;
  c.title = "accuracy <by> length & seed";
  c.x_label = "digits";
  c.y_label = "exact match";
  Series s;
  s.name = "rope";
  s.x = {5, 10, 20};
  s.y = {1.0, 0.5, 0.0};
  s.lo = {0.9, 0.4, 0.0};
  s.hi = {1.0, 0.6, 0.1};
  Series d;
  d.name = "decay";
  d.x = {5, 10, 20};
  d.y = {1.0, 1.0, 0.75};
  d.style = Style::Bars;
  c.series = {s, d};
  c.rules = {{10, true, "trained to 10"}};
  std::string svg = renderSvg(c);
  EXPECT_NE(svg.find("data-name=\"rope\" data-points=\"5,1 10,0.5 20,0\""), std::string::npos) << svg;
  EXPECT_NE(svg.find("data-name=\"decay\" data-points=\"5,1 10,1 20,0.75\""), std::string::npos);
  EXPECT_NE(svg.find("accuracy &lt;by&gt; length &amp; seed"), std::string::npos);
  EXPECT_NE(svg.find("class=\"band\""), std::string::npos);
  EXPECT_NE(svg.find("trained to 10"), std::string::npos);

  // Well-formed XML, checked by an independent parser.
  if (std::system("python3 -c 'import xml' 2>/dev/null") != 0) GTEST_SKIP() << "python3 not installed";
  auto path = std::filesystem::temp_directory_path() / "posc_plot_test.svg";
  std::ofstream(path) << svg;
  std::string cmd = "python3 -c 'import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); "
                    "g = [e for e in r.iter() if e.get(\"class\") == \"series\"]; sys.exit(0 if len(g) == 2 else 3)' " +
                    path.string();
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  std::filesystem::remove(path);
}

TEST(Chart, LogAxisSkipsNonPositiveAndGapsSplitLines) {
  Chart c;
  c.log_x = true;
  Series k;
  k.name = "k";
  k.x = {0, 1, 10, 100, 1000};
  k.y = {1, 2, std::nan(""), 4, 5};
  c.series = {k};
  std::string svg = renderSvg(c);
  // x = 0 is dropped on a log axis; the NaN splits the line in two.
  size_t lines = 0;
  for (size_t p = svg.find("<polyline"); p != std::string::npos; p = svg.find("<polyline", p + 1)) ++lines;
  EXPECT_EQ(lines, 2u);
  EXPECT_NE(svg.find(">1000<"), std::string::npos);  // a decade tick label
}

// A log y axis: a loss from 2.4 down to 4e-8 gets one tick per decade,
// each point sits at its decade's height (hand-computed from the plot area's
// pixels), and a zero loss, which the axis cannot show, splits the line.
TEST(Chart, LogYAxisPlacesDecadesEvenlyAndSkipsNonPositive) {
  Chart c;
  c.log_y = true;
  c.width = 400;
  c.height = 300;
  Series loss;
  loss.name = "loss";
  loss.style = Style::Line;
  loss.x = {0, 1, 2, 3, 4};
  loss.y = {1, 1e-2, 0, 1e-4, 1e-8};
  c.series = {loss};
  const std::string svg = renderSvg(c);
  for (const char* tick : {">1<", ">0.0001<", ">1e-08<"}) EXPECT_NE(svg.find(tick), std::string::npos) << tick;
  EXPECT_EQ(svg.find(">0.5<"), std::string::npos);  // no linear ticks
  size_t lines = 0;
  for (size_t p = svg.find("<polyline"); p != std::string::npos; p = svg.find("<polyline", p + 1)) ++lines;
  EXPECT_EQ(lines, 2u);
  // Untitled: the plot area runs from y = 20 (10^0) to y = 300 - 52 = 248 (10^-8),
  // so 10^-2 is a quarter of the way down: 20 + 228 / 4 = 77.
  EXPECT_NE(svg.find(",20.00 "), std::string::npos) << svg;
  EXPECT_NE(svg.find(",77.00\""), std::string::npos) << svg;
  EXPECT_NE(svg.find(",248.00\""), std::string::npos) << svg;
}

}  // namespace
}  // namespace posc::plot
