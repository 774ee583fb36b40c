// Probes: measurements on trained checkpoints that explain length
// generalisation, without retraining (the declared `probes { }` of a plan).
//
// Each probe turns the models of a run (one per seed) into a ProbeResult:
// tables (CSV, and Markdown for the ones meant for reading), one SVG chart
// and a few findings in words. writeProbeResult puts them under
// <run>/probes/<name>.{csv,md,svg} with atomic files; `posc report` gathers
// them into one page. The numeric cores of each probe are declared in their
// own headers (kernel.h, sink_share.h, teacher_forced.h, stop_attention.h) so tests can run
// them on hand-set weights.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "compiler/plan/plan.h"
#include "runtime/model/gpt.h"
#include "runtime/plot/chart.h"
#include "runtime/plot/table.h"

namespace posc::probe {

// A trained model of one seed.
struct SeedModel {
  uint64_t seed = 0;
  model::Gpt model{nullptr};
};

struct NamedTable {
  std::string title;      // heading in the Markdown file
  std::string suffix;     // empty: <name>.csv; else <name>-<suffix>.csv
  plot::Table table;
  bool markdown = true;   // false: too long to read; CSV only, named in the Markdown
  // The CSV's own rows where they differ from the page's: a tidy (long) form
  // with full precision, one observation per row, for scripts. Default: the
  // table above.
  std::optional<plot::Table> csv = std::nullopt;
};

struct ProbeResult {
  std::string name;                   // file stem: the probe kind's name
  std::string title;                  // heading of the Markdown file
  std::string description;            // plan::describeProbe
  std::vector<std::string> findings;  // one sentence each, with numbers
  std::vector<NamedTable> tables;     // the first is <name>.csv
  plot::Chart chart;                  // <name>.svg
};

// Runs one probe on every seed's model (all on the same device, in eval mode).
ProbeResult runReach(const plan::ProbePlan& probe, const plan::ExperimentPlan& plan, std::vector<SeedModel>& models);
ProbeResult runSinkShare(const plan::ProbePlan& probe, const plan::ExperimentPlan& plan, std::vector<SeedModel>& models);
ProbeResult runKernel(const plan::ProbePlan& probe, const plan::ExperimentPlan& plan, std::vector<SeedModel>& models);
ProbeResult runBands(const plan::ProbePlan& probe, const plan::ExperimentPlan& plan, std::vector<SeedModel>& models);
ProbeResult runTeacherForced(const plan::ProbePlan& probe, const plan::ExperimentPlan& plan,
                             std::vector<SeedModel>& models);
ProbeResult runStop(const plan::ProbePlan& probe, const plan::ExperimentPlan& plan, std::vector<SeedModel>& models);
ProbeResult runEvidenceMass(const plan::ProbePlan& probe, const plan::ExperimentPlan& plan,
                            std::vector<SeedModel>& models);
ProbeResult runProbe(const plan::ProbePlan& probe, const plan::ExperimentPlan& plan, std::vector<SeedModel>& models);

// The Markdown page of one result (title, settings, findings, tables, a link to the SVG).
std::string probeMarkdown(const ProbeResult& result);

// Writes <dir>/<name>.csv, <name>-<suffix>.csv, <name>.md and <name>.svg
// atomically; creates `dir` if needed. Throws std::runtime_error on failure.
void writeProbeResult(const std::filesystem::path& dir, const ProbeResult& result);

// Runs the plan's probes (all, or only the one named `only`) and writes them
// into `dir` (a run's <run>/probes, or `posc probe --out`); prints one line
// per probe to stderr. Returns the results in plan order.
std::vector<ProbeResult> runAndWriteProbes(const plan::ExperimentPlan& plan, std::vector<SeedModel>& models,
                                           const std::filesystem::path& dir, const std::string& only = "");

}  // namespace posc::probe
