// The protocol's results as researchers read them: one long-format table
// (one row per cell, CSV and Markdown from the same cells), heatmaps of
// accuracy per task (length x depth, pooled over distractor counts; length x
// distractors, pooled over depths), and the release criteria's verdicts.
// Pooling sums correct answers and documents over the pooled cells, so a
// pooled value is the accuracy over all their documents.
#pragma once

#include <string>
#include <vector>

#include "runtime/longctx/protocol.h"
#include "runtime/plot/heatmap.h"
#include "runtime/plot/table.h"

namespace posc::longctx {

// Columns: task, length, depth, distractors, regression, documents, correct,
// accuracy, lower_bound_95, abstained, unsupported, wrong, hop1_accuracy,
// hop2_accuracy, prefill_tokens_per_s, generation_tokens_per_s,
// peak_cache_bytes.
plot::Table cellTable(const std::vector<CellResult>& results);

struct NamedHeatmap {
  std::string name;  // a file stem: "retrieval_accuracy_length_x_depth"
  plot::Heatmap map;
};
// A per-document quantity summed over one cell's documents.
struct PooledValue {
  Cell cell;
  double sum = 0.0;
  int documents = 0;
};
// Two heatmaps per task present (rows: lengths, ascending): the quantity
// `what` ("accuracy", "evidence_mass"; in the title with spaces) pooled over
// distractor counts against depth, and over depths against distractors.
std::vector<NamedHeatmap> pooledHeatmaps(const std::vector<PooledValue>& cells, const std::string& what);
// pooledHeatmaps of the accuracy (correct answers over documents).
std::vector<NamedHeatmap> accuracyHeatmaps(const std::vector<CellResult>& results);

// Columns: requirement, cells, documents, correct, lower_bound_95, threshold, verdict.
plot::Table requirementTable(const std::vector<RequirementResult>& verdicts);

}  // namespace posc::longctx
