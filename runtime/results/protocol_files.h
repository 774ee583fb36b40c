// The result files of a run on the document protocol, written as the run
// goes (after every seed, atomically):
//
//   protocol.csv           one row per (seed, cell): the protocol's long
//                          format (longctx::cellTable) with a seed column
//   requirements.csv       each release criterion over every seed's cells
//   heatmaps/<task>_accuracy_length_x_depth.svg
//   heatmaps/<task>_accuracy_length_x_distractors.svg
//                          accuracy pooled over seeds (and over the other
//                          factor)
//   summary.md             the criteria, accuracy by task and length, the
//                          heatmaps and every cell
//
// Pooling sums correct answers and documents, so a pooled accuracy or lower
// bound is over all the pooled documents. Free of LibTorch.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "compiler/plan/plan.h"
#include "runtime/longctx/protocol.h"
#include "runtime/plot/table.h"

namespace posc::results {

struct SeedCells {
  uint64_t seed = 0;
  std::vector<longctx::CellResult> cells;
};

// Every seed's cells in one list (for pooling).
std::vector<longctx::CellResult> allCells(const std::vector<SeedCells>& seeds);

// Columns: task, length, regression, cells, documents, correct, accuracy,
// lower_bound_95, prefill_tokens_per_s, generation_tokens_per_s: one row per
// (task, length), pooled over depths, distractor counts and seeds; the rates
// are token-weighted over the pooled cells.
plot::Table lengthTable(const std::vector<longctx::CellResult>& cells);

// Each of the plan's release criteria checked on every seed's cells.
std::vector<longctx::RequirementResult> checkRequirements(const plan::ExperimentPlan& plan,
                                                          const std::vector<SeedCells>& seeds);

// Writes the files above into `out_dir`; throws std::runtime_error when one
// cannot be written.
void writeProtocolFiles(const std::filesystem::path& out_dir, const plan::ExperimentPlan& plan,
                        const std::vector<SeedCells>& seeds);

}  // namespace posc::results
