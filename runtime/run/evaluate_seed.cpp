// Stages 5 and 6 of a run (runtime/run/run_state.h): each seed evaluated
// (accuracy per length, or the long-context protocol's cells) and its results
// rewritten; then the table and the declared probes.
#include <chrono>
#include <cstdio>

#include <fmt/format.h>

#include "runtime/eval/documents.h"
#include "runtime/eval/greedy.h"
#include "runtime/longctx/protocol_report.h"
#include "runtime/run/run_state.h"

namespace posc::runtime::stage {
namespace {

// The seed is marked done once its final.pt exists.
void markSeedDone(Run& run, uint64_t seed) {
  if (fs::exists(run.out_dir / fmt::format("seed{}", seed) / "final.pt")) {
    if (!run.status.seedDone(seed)) run.status.seeds_done.push_back(seed);  // a document run evaluates again
    run.status.metrics_lines = run.metrics->lines().size();
  }
  run.status.seed.reset();
  run.status.step = 0;
  results::writeStatus(run.out_dir, run.status);
}

// Stage 5 on a document task: every cell of the protocol, one progress line
// per cell, the protocol's files rewritten with every seed so far.
void evaluateSeedDocuments(Run& run, uint64_t seed, model::Gpt& model) {
  const plan::ExperimentPlan& plan = run.plan;
  const auto t0 = std::chrono::steady_clock::now();
  const longctx::CellPlan planned = longctx::planCells(eval::protocolFactors(plan));
  for (const auto& [cell, why] : planned.skipped)
    std::fprintf(stderr, "seed %llu: %s left out: %s\n", static_cast<unsigned long long>(seed),
                 longctx::describe(cell).c_str(), why.c_str());
  size_t done = 0;
  std::vector<longctx::CellResult> cells = eval::evaluateDocuments(model, plan, false, [&](const longctx::CellResult& r) {
    std::fprintf(stderr, "seed %llu cell %zu/%zu: %s: %d/%d correct, lower bound %.3f\n",
                 static_cast<unsigned long long>(seed), ++done, planned.cells.size(), longctx::describe(r.cell).c_str(),
                 r.correct, r.documents, r.lower_bound);
  });
  std::fprintf(stderr, "seed %llu evaluated in %.1fs: %zu cells\n", static_cast<unsigned long long>(seed),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), cells.size());
  run.cells.push_back({seed, std::move(cells)});
  try {
    results::writeProtocolFiles(run.out_dir, plan, run.cells);
  } catch (const std::exception& e) {
    throw UserError(fmt::format("cannot write the protocol's results: {}", e.what()));
  }
  if (!plan.probes.empty()) run.trained.push_back({seed, model});
  markSeedDone(run, seed);
}

}  // namespace

// Stage 5: exact-match accuracy per test length, rewritten into accuracy.csv
// and summary.md; the seed is marked done once its final.pt exists.
void evaluateSeed(Run& run, uint64_t seed, model::Gpt& model) {
  const plan::ExperimentPlan& plan = run.plan;
  if (run.documents) {
    evaluateSeedDocuments(run, seed, model);
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<results::LengthAccuracy> seed_records = eval::evaluateLengths(model, plan, seed);
  const double eval_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string line = fmt::format("seed {} evaluated in {:.1f}s:", seed, eval_s);
  for (const auto& r : seed_records) line += fmt::format(" {}d {:.1f}%", r.digits, 100.0 * r.accuracy());
  std::fprintf(stderr, "%s\n", line.c_str());
  run.records.insert(run.records.end(), seed_records.begin(), seed_records.end());

  writeOrFail(run.out_dir / "accuracy.csv", results::accuracyCsv(run.records));
  writeOrFail(run.out_dir / "summary.md", results::summaryMarkdown(plan.name, run.records, plan.eval));
  if (!plan.probes.empty()) run.trained.push_back({seed, model});
  markSeedDone(run, seed);
}

// Stage 6: the accuracy table, then the declared probes on every seed's model.
void reportAndProbe(Run& run) {
  const plan::ExperimentPlan& plan = run.plan;
  if (run.seconds > 0) std::fprintf(stderr, "training throughput: %.0f tokens/s\n", run.tokens / run.seconds);
  if (run.documents) {
    std::fputs(plot::toMarkdown(results::lengthTable(results::allCells(run.cells))).c_str(), stdout);
    const auto verdicts = results::checkRequirements(plan, run.cells);
    if (!verdicts.empty()) std::fputs(("\n" + plot::toMarkdown(longctx::requirementTable(verdicts))).c_str(), stdout);
    for (const auto& v : verdicts)
      if (!v.met) run.unmet.push_back(v.requirement.text);
  } else {
    std::fputs(results::renderMarkdown(results::accuracySummaryTable(run.records, plan.eval.published)).c_str(), stdout);
  }
  std::fflush(stdout);
  if (!plan.probes.empty()) {
    try {
      probe::runAndWriteProbes(plan, run.trained, fs::path(run.out_dir) / "probes");
    } catch (const std::runtime_error& e) {
      throw UserError(fmt::format("probes: {}", e.what()));
    }
  }
  if (!run.final_errors.empty())
    throw UserError(fmt::format("{} (the evaluation above ran from memory and is written; run the same "
                                "command again once the disk has room: it continues from the resume point)",
                                run.final_errors.front()));
}

}  // namespace posc::runtime::stage
