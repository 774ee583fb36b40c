// A small table type written both as CSV and as a Markdown table, so the two
// always hold the same cells.
#pragma once

#include <string>
#include <vector>

namespace posc::plot {

struct Table {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;  // each row has columns.size() cells

  void addRow(std::vector<std::string> cells);
};

// RFC 4180 CSV: cells with a comma, quote or newline are quoted.
std::string toCsv(const Table& t);
// A GitHub-flavoured Markdown table; '|' in cells is escaped.
std::string toMarkdown(const Table& t);

// Shortest of fixed / general notation with `digits` significant digits;
// integers print without a decimal point; NaN prints as "nan".
std::string formatNumber(double v, int digits = 4);

}  // namespace posc::plot
