// Tables and heatmaps of the protocol's results (protocol_report.h).
#include "runtime/longctx/protocol_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace posc::longctx {
namespace {

using plot::formatNumber;

template <typename T>
std::vector<T> sortedUnique(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// One task's values pooled over the cells that share (length, column).
plot::Heatmap pooled(const std::vector<PooledValue>& cells, TaskType task, const std::string& what,
                     const std::string& column_label, double (*column_of)(const Cell&)) {
  std::vector<int> lengths;
  std::vector<double> columns;
  std::map<std::pair<int, double>, std::pair<double, int>> tally;  // (length, column) -> (sum, documents)
  for (const PooledValue& v : cells) {
    if (v.cell.task != task) continue;
    lengths.push_back(v.cell.length);
    columns.push_back(column_of(v.cell));
    auto& t = tally[{v.cell.length, column_of(v.cell)}];
    t.first += v.sum;
    t.second += v.documents;
  }
  lengths = sortedUnique(lengths);
  columns = sortedUnique(columns);
  plot::Heatmap map;
  std::string words = what;
  std::replace(words.begin(), words.end(), '_', ' ');
  map.title = fmt::format("{}: {} by length and {}", taskTypeName(task), words, column_label);
  map.row_label = "length";
  map.column_label = column_label;
  for (int l : lengths) map.rows.push_back(std::to_string(l));
  for (double c : columns) map.columns.push_back(formatNumber(c));
  for (int l : lengths) {
    std::vector<double> row;
    for (double c : columns) {
      auto it = tally.find({l, c});
      row.push_back(it == tally.end() || it->second.second == 0 ? std::numeric_limits<double>::quiet_NaN()
                                                                 : it->second.first / it->second.second);
    }
    map.values.push_back(row);
  }
  return map;
}

std::string rateCell(double v) { return v > 0 ? formatNumber(v, 5) : ""; }

}  // namespace

plot::Table cellTable(const std::vector<CellResult>& results) {
  plot::Table t;
  t.columns = {"task",        "length",        "depth",         "distractors",          "regression",
               "documents",   "correct",       "accuracy",      "lower_bound_95",       "abstained",
               "unsupported", "wrong",         "hop1_accuracy", "hop2_accuracy",        "prefill_tokens_per_s",
               "generation_tokens_per_s", "peak_cache_bytes"};
  for (const CellResult& r : results) {
    auto optional = [](double v) { return std::isnan(v) ? std::string() : formatNumber(v); };
    t.addRow({taskTypeName(r.cell.task), std::to_string(r.cell.length), formatNumber(r.cell.depth),
              std::to_string(r.cell.distractors), r.regression ? "yes" : "no", std::to_string(r.documents),
              std::to_string(r.correct), formatNumber(r.accuracy), formatNumber(r.lower_bound),
              std::to_string(r.abstained), std::to_string(r.unsupported), std::to_string(r.wrong),
              optional(r.hop1_accuracy), optional(r.hop2_accuracy), rateCell(r.prefill_tokens_per_s),
              rateCell(r.generation_tokens_per_s), r.peak_cache_bytes ? std::to_string(r.peak_cache_bytes) : ""});
  }
  return t;
}

std::vector<NamedHeatmap> pooledHeatmaps(const std::vector<PooledValue>& cells, const std::string& what) {
  std::vector<NamedHeatmap> out;
  for (int i = 0; i < kTaskTypeCount; ++i) {
    auto task = static_cast<TaskType>(i);
    bool present = std::any_of(cells.begin(), cells.end(), [&](const PooledValue& v) { return v.cell.task == task; });
    if (!present) continue;
    out.push_back({fmt::format("{}_{}_length_x_depth", taskTypeName(task), what),
                   pooled(cells, task, what, "depth", [](const Cell& c) { return c.depth; })});
    out.push_back({fmt::format("{}_{}_length_x_distractors", taskTypeName(task), what),
                   pooled(cells, task, what, "distractors", [](const Cell& c) { return double(c.distractors); })});
  }
  return out;
}

std::vector<NamedHeatmap> accuracyHeatmaps(const std::vector<CellResult>& results) {
  std::vector<PooledValue> cells;
  for (const CellResult& r : results) cells.push_back({r.cell, double(r.correct), r.documents});
  return pooledHeatmaps(cells, "accuracy");
}

plot::Table requirementTable(const std::vector<RequirementResult>& verdicts) {
  plot::Table t;
  t.columns = {"requirement", "cells", "documents", "correct", "lower_bound_95", "threshold", "verdict"};
  for (const RequirementResult& v : verdicts)
    t.addRow({v.requirement.text, std::to_string(v.cells), std::to_string(v.documents), std::to_string(v.correct),
              formatNumber(v.lower_bound), formatNumber(v.requirement.threshold),
              v.cells == 0 ? "no matching cell" : v.met ? "met" : "not met"});
  return t;
}

}  // namespace posc::longctx
