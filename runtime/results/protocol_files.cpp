// The document protocol's result files; see protocol_files.h.
#include "runtime/results/protocol_files.h"

#include <fmt/format.h>

#include <map>

#include "runtime/longctx/protocol_report.h"
#include "runtime/plot/heatmap.h"
#include "runtime/results/atomic_file.h"

namespace posc::results {

std::vector<longctx::CellResult> allCells(const std::vector<SeedCells>& seeds) {
  std::vector<longctx::CellResult> out;
  for (const SeedCells& s : seeds) out.insert(out.end(), s.cells.begin(), s.cells.end());
  return out;
}

plot::Table lengthTable(const std::vector<longctx::CellResult>& cells) {
  struct Tally {
    bool regression = false;
    int cells = 0, documents = 0, correct = 0;
    int64_t prefill_tokens = 0, generated_tokens = 0;
    double prefill_seconds = 0, generation_seconds = 0;
  };
  std::map<std::pair<int, int>, Tally> tally;  // (task, length)
  for (const longctx::CellResult& r : cells) {
    Tally& t = tally[{static_cast<int>(r.cell.task), r.cell.length}];
    t.regression = r.regression;
    ++t.cells;
    t.documents += r.documents;
    t.correct += r.correct;
    if (r.prefill_tokens_per_s > 0) {
      t.prefill_tokens += r.prefill_tokens;
      t.prefill_seconds += static_cast<double>(r.prefill_tokens) / r.prefill_tokens_per_s;
    }
    if (r.generation_tokens_per_s > 0) {
      t.generated_tokens += r.generated_tokens;
      t.generation_seconds += static_cast<double>(r.generated_tokens) / r.generation_tokens_per_s;
    }
  }
  plot::Table out;
  out.columns = {"task",     "length",         "regression",           "cells",
                 "documents", "correct",       "accuracy",             "lower_bound_95",
                 "prefill_tokens_per_s",       "generation_tokens_per_s"};
  auto rate = [](int64_t tokens, double seconds) {
    return seconds > 0 ? plot::formatNumber(static_cast<double>(tokens) / seconds, 5) : std::string();
  };
  for (const auto& [key, t] : tally)
    out.addRow({longctx::taskTypeName(static_cast<longctx::TaskType>(key.first)), std::to_string(key.second),
                t.regression ? "yes" : "no", std::to_string(t.cells), std::to_string(t.documents),
                std::to_string(t.correct),
                plot::formatNumber(t.documents ? static_cast<double>(t.correct) / t.documents : 0.0),
                plot::formatNumber(longctx::wilsonLowerBound(t.correct, t.documents)),
                rate(t.prefill_tokens, t.prefill_seconds), rate(t.generated_tokens, t.generation_seconds)});
  return out;
}

std::vector<longctx::RequirementResult> checkRequirements(const plan::ExperimentPlan& plan,
                                                          const std::vector<SeedCells>& seeds) {
  const std::vector<longctx::CellResult> cells = allCells(seeds);
  std::vector<longctx::RequirementResult> out;
  for (const plan::DocumentRequirement& r : plan.eval.documents.requirements) out.push_back(longctx::check(r, cells));
  return out;
}

void writeProtocolFiles(const std::filesystem::path& out_dir, const plan::ExperimentPlan& plan,
                        const std::vector<SeedCells>& seeds) {
  plot::Table per_seed;
  for (const SeedCells& s : seeds) {
    plot::Table t = longctx::cellTable(s.cells);
    if (per_seed.columns.empty()) {
      per_seed.columns = t.columns;
      per_seed.columns.insert(per_seed.columns.begin(), "seed");
    }
    for (auto& row : t.rows) {
      row.insert(row.begin(), std::to_string(s.seed));
      per_seed.rows.push_back(std::move(row));
    }
  }
  writeFileAtomic(out_dir / "protocol.csv", plot::toCsv(per_seed));

  const std::vector<longctx::RequirementResult> verdicts = checkRequirements(plan, seeds);
  const plot::Table requirements = longctx::requirementTable(verdicts);
  writeFileAtomic(out_dir / "requirements.csv", plot::toCsv(requirements));

  const std::vector<longctx::CellResult> cells = allCells(seeds);
  std::string figures;
  std::filesystem::create_directories(out_dir / "heatmaps");
  for (const longctx::NamedHeatmap& h : longctx::accuracyHeatmaps(cells)) {
    writeFileAtomic(out_dir / "heatmaps" / (h.name + ".svg"), plot::renderHeatmapSvg(h.map));
    figures += fmt::format("![{}](heatmaps/{}.svg)\n", h.map.title, h.name);
  }

  std::string seeds_text;
  for (const SeedCells& s : seeds) seeds_text += (seeds_text.empty() ? "" : ", ") + std::to_string(s.seed);
  std::string md = fmt::format("# {}: the long-context protocol\n\nSeeds {}. Accuracy over documents; lower bounds are "
                               "Wilson 95% over the pooled documents; regression rows are at or below the longest "
                               "training length ({} tokens).\n\n",
                               plan.name, seeds_text, plan.task.documents.train_max_length);
  if (!verdicts.empty()) md += "## Release criteria\n\n" + plot::toMarkdown(requirements) + "\n";
  md += "## Accuracy by task and length\n\n" + plot::toMarkdown(lengthTable(cells)) + "\n";
  md += "## Heatmaps\n\n" + figures + "\n";
  md += "## Every cell\n\n" + plot::toMarkdown(per_seed);
  writeFileAtomic(out_dir / "summary.md", md);
}

}  // namespace posc::results
