// The comparison page of several runs (`posc report DIR...`, and the end of
// `posc study`): one row per variant, one column per test length, the mean
// and min-max over seeds, the published figures beside them where the source
// gives them at that length, a reach chart with one line and band per
// variant, and links to each run's own report. A variant measured on one
// seed beside others is flagged: its difference to them ranks nothing.
//
// Built from the results folders alone (plan.txt for the experiment, preset
// and published figures; accuracy.csv for the measurements), so it can be
// rebuilt at any time. A run on the document protocol (protocol.csv) gives
// one row per task, "variant · task", its accuracy per prompt length pooled
// over depths and distractor counts, and below it the hardest cells (the
// most distractors) seed by seed with their Wilson lower bounds and the
// evidence-mass margin, and prefill and generation throughput per length;
// addition and document runs are not compared on one page. Written as
// comparison.md, a self-contained comparison.html, comparison.csv (one row
// per variant and length), reach.svg and loss.svg (each variant's training
// loss, the mean over its seeds, overlaid). No LibTorch here.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "compiler/plan/plan.h"
#include "runtime/formats/metrics_log.h"
#include "runtime/plot/chart.h"
#include "runtime/results/tables.h"

namespace posc::report {

// One results folder.
struct RunSummary {
  std::filesystem::path dir;
  std::string variant;  // experiment[-preset] (a study adds its grid point: "rope2d-mini [train.lr=0.001]")
  std::string experiment, preset;  // the plan's name and preset ("" without one)
  std::string task;                // a document run: the task of this summary; else ""
  // The settings the run was given on the command line (`--set`, a study's
  // grid point), in the plan's order, as (key, value); train.seeds left out.
  std::vector<std::pair<std::string, std::string>> settings;
  std::vector<formats::LossPoint> loss;  // metrics.jsonl's training loss, every seed of the folder
  std::vector<results::LengthAccuracy> records;
  std::vector<plan::PublishedAccuracy> published;
  std::string published_source;
  int train_max_digits = 0;  // 0: not recorded (documents: the longest training prompt)
  std::string unit = "digits";  // of LengthAccuracy::digits: "digits" (per operand) or "tokens" (prompt)
  // A document run: the task's hardest cells, those with the most
  // distractors (hardest_distractors; -1 for an addition run), tallied per
  // (seed, prompt length) over depths; and the evidence_mass probe's fitted
  // margin per (seed, length) where the run has one.
  int hardest_distractors = -1;
  std::vector<results::LengthAccuracy> hardest;
  std::map<std::pair<uint64_t, int>, double> margin;
  // A document run: per prompt length, the sums of its cells' prefill and
  // generation tokens/s and how many cells measured each.
  struct Throughput {
    double prefill = 0, generation = 0;
    int prefill_cells = 0, generation_cells = 0;
  };
  std::map<int, Throughput> throughput;
};

// Reads one results folder: an addition run (plan.txt and accuracy.csv) as
// one summary, a document run (plan.txt and protocol.csv) as one per task.
// Throws std::runtime_error naming the folder and the missing or malformed
// file.
std::vector<RunSummary> readRun(const std::filesystem::path& dir);

// The results folders among `roots`: each root that is one, else every
// folder below it that holds accuracy.csv or protocol.csv (a study folder),
// in path order.
// Throws std::runtime_error when a root holds none.
std::vector<RunSummary> collectRuns(const std::vector<std::filesystem::path>& roots);

// Accuracy (percent) of one variant at one length, over its seeds.
struct VariantCell {
  int digits = 0;
  int seeds = 0;
  double mean = 0, min = 0, max = 0;
  double published_mean = -1;  // < 0: the source gives no figure at this length
};

struct VariantRow {
  std::string variant;
  std::string experiment, preset, task;
  std::vector<std::pair<std::string, std::string>> settings;  // of the row's first run
  std::vector<std::filesystem::path> runs;  // one per results folder, in the order given
  std::vector<uint64_t> seeds;
  std::vector<VariantCell> cells;  // ascending digits
  std::vector<plan::PublishedAccuracy> published;
  std::string published_source;
  int train_max_digits = 0;
  std::string unit = "digits";
  // Documents: each seed's tally over the hardest cells per prompt length
  // (length -> seed -> tally) and the evidence_mass margin where measured.
  int hardest_distractors = -1;
  std::map<int, std::map<uint64_t, results::LengthAccuracy>> hardest;
  std::map<std::pair<uint64_t, int>, double> margin;
  std::map<int, RunSummary::Throughput> throughput;  // the sums over every folder of the row
};

// Rows in order of first appearance in `runs`.
std::vector<VariantRow> compareRuns(const std::vector<RunSummary>& runs);

struct ComparisonPage {
  std::string markdown, html, csv, reach_svg;
  std::string loss_svg;  // the runs' training loss, overlaid: loss.svg
};

// Links to the runs are written relative to `page_dir`. Throws
// std::runtime_error when addition and document runs are mixed.
ComparisonPage buildComparison(const std::vector<RunSummary>& runs, const std::filesystem::path& page_dir,
                               const std::string& title = "Comparison");

// The reach chart: accuracy against length, one series per variant (mean,
// with the min-max band over seeds).
plot::Chart reachChart(const std::vector<VariantRow>& rows, const std::string& title);

// The loss chart: one line per variant (a document run's tasks share one), at
// each logged step the mean training loss over the seeds logged there, on a
// log axis when the losses span two decades or more.
plot::Chart lossChart(const std::vector<RunSummary>& runs, const std::string& title);

// Writes comparison.{md,html,csv}, reach.svg and loss.svg into `page_dir` atomically.
void writeComparison(const std::filesystem::path& page_dir, const ComparisonPage& page);

}  // namespace posc::report
