#include "runtime/plot/table.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace posc::plot {

void Table::addRow(std::vector<std::string> cells) {
  if (cells.size() != columns.size())
    throw std::invalid_argument(fmt::format("table row has {} cells, expected {}", cells.size(), columns.size()));
  rows.push_back(std::move(cells));
}

namespace {

std::string csvCell(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string mdCell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n') out += ' ';
    else out += c;
  }
  return out;
}

}  // namespace

std::string toCsv(const Table& t) {
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) out += (i ? "," : "") + csvCell(cells[i]);
    out += '\n';
  };
  line(t.columns);
  for (const auto& r : t.rows) line(r);
  return out;
}

std::string toMarkdown(const Table& t) {
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    out += '|';
    for (const auto& c : cells) out += ' ' + mdCell(c) + " |";
    out += '\n';
  };
  line(t.columns);
  out += '|';
  for (size_t i = 0; i < t.columns.size(); ++i) out += " --- |";
  out += '\n';
  for (const auto& r : t.rows) line(r);
  return out;
}

std::string formatNumber(double v, int digits) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  return fmt::format("{:.{}g}", v, digits);
}

}  // namespace posc::plot
