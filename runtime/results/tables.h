// Result tables: the per-(seed, length) accuracy records a run produces and
// their renderings as CSV (accuracy.csv, for scripts) and as an aligned
// Markdown table (summary.md and the table printed at the end of a run, for
// people). Free of LibTorch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/plan/plan.h"

namespace posc::results {

// Exact-match accuracy of one seed at one test length.
struct LengthAccuracy {
  uint64_t seed = 0;
  int digits = 0;   // digits per operand
  int correct = 0;
  int total = 0;
  double accuracy() const { return total > 0 ? static_cast<double>(correct) / total : 0.0; }
};

// A rectangular table of already formatted cells.
struct Table {
  std::vector<std::string> header;
  std::vector<bool> right_align;  // per column; missing entries: left
  std::vector<std::vector<std::string>> rows;
};

// RFC 4180 CSV: fields with ',', '"' or newlines are quoted.
std::string renderCsv(const Table& table);
// A GitHub-flavoured Markdown table with columns padded to equal width.
std::string renderMarkdown(const Table& table);

// accuracy.csv: seed,digits,correct,total,accuracy (one row per record, in order).
std::string accuracyCsv(const std::vector<LengthAccuracy>& records);
// The records of an accuracy.csv (as accuracyCsv writes it). Throws
// std::runtime_error naming the line when a row is malformed.
std::vector<LengthAccuracy> parseAccuracyCsv(const std::string& csv);

// Rows = test lengths (ascending), one column per seed (in first-seen order),
// then the mean over seeds and the min-max range, all in percent. A seed with
// no record for a length shows "-" and is left out of mean and range.
// When `published` has figures, a last column shows them ("83 / 98 / 100",
// one per seed) for the lengths they cover.
Table accuracySummaryTable(const std::vector<LengthAccuracy>& records,
                           const std::vector<plan::PublishedAccuracy>& published = {});

// summary.md: a heading naming the experiment, then the summary table (and
// where the published figures come from).
std::string summaryMarkdown(const std::string& experiment, const std::vector<LengthAccuracy>& records,
                            const plan::EvalPlan& eval = {});

}  // namespace posc::results
