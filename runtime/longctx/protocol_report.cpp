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

// Accuracy pooled over the cells of one task that share (row, column).
plot::Heatmap pooled(const std::vector<CellResult>& results, TaskType task, const std::string& column_label,
                     double (*column_of)(const Cell&)) {
  std::vector<int> lengths;
  std::vector<double> columns;
  for (const CellResult& r : results)
    if (r.cell.task == task) {
      lengths.push_back(r.cell.length);
      columns.push_back(column_of(r.cell));
    }
  lengths = sortedUnique(lengths);
  columns = sortedUnique(columns);
  std::map<std::pair<int, double>, std::pair<int, int>> tally;  // (length, column) -> (correct, documents)
  for (const CellResult& r : results)
    if (r.cell.task == task) {
      auto& t = tally[{r.cell.length, column_of(r.cell)}];
      t.first += r.correct;
      t.second += r.documents;
    }
  plot::Heatmap map;
  map.title = fmt::format("{}: accuracy by length and {}", taskTypeName(task), column_label);
  map.row_label = "length";
  map.column_label = column_label;
  for (int l : lengths) map.rows.push_back(std::to_string(l));
  for (double c : columns) map.columns.push_back(formatNumber(c));
  for (int l : lengths) {
    std::vector<double> row;
    for (double c : columns) {
      auto it = tally.find({l, c});
      row.push_back(it == tally.end() || it->second.second == 0
                        ? std::numeric_limits<double>::quiet_NaN()
                        : double(it->second.first) / it->second.second);
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

std::vector<NamedHeatmap> accuracyHeatmaps(const std::vector<CellResult>& results) {
  std::vector<NamedHeatmap> out;
  for (int i = 0; i < kTaskTypeCount; ++i) {
    auto task = static_cast<TaskType>(i);
    bool present = std::any_of(results.begin(), results.end(), [&](const CellResult& r) { return r.cell.task == task; });
    if (!present) continue;
    out.push_back({fmt::format("{}_length_x_depth", taskTypeName(task)),
                   pooled(results, task, "depth", [](const Cell& c) { return c.depth; })});
    out.push_back({fmt::format("{}_length_x_distractors", taskTypeName(task)),
                   pooled(results, task, "distractors", [](const Cell& c) { return double(c.distractors); })});
  }
  return out;
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
