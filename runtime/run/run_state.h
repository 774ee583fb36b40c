// One run as it passes through the stages of runtime/run/run_experiment.cpp:
// what it writes where, what it has written, and what the later stages need.
// Private to runtime/run/: each stage is one function, defined in the file
// named beside it, and the orchestrator (runSeeds) calls them in order.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/plan/plan.h"
#include "runtime/formats/tensorboard_events.h"
#include "runtime/model/gpt.h"
#include "runtime/probe/probe.h"
#include "runtime/results/atomic_file.h"
#include "runtime/results/protocol_files.h"
#include "runtime/results/run_folder.h"
#include "runtime/results/tables.h"
#include "runtime/run/run_experiment.h"

namespace posc::dist {
class ProcessGroup;
}

namespace posc::runtime::stage {

namespace fs = std::filesystem;

// One run across its seeds: where it writes, what it has written, and what
// the later stages need.
struct Run {
  Run(const plan::ExperimentPlan& p, const RunOptions& o) : plan(p), options(o) {}
  const plan::ExperimentPlan& plan;
  const RunOptions& options;
  torch::Device device{torch::kCPU};
  fs::path out_dir, init_root;
  results::FolderOwner owner = results::FolderOwner::None;  // before this run marked it
  bool bar = false;  // a progress bar (a terminal), else log lines
  bool resuming = false;
  // Another plan with the same training hash: the trained seeds are loaded
  // and evaluated again (resuming is set too).
  bool reevaluating = false;
  results::RunStatus status;
  std::optional<results::JsonLinesLog> metrics;
  std::optional<formats::EventWriter> events;    // <out>/tensorboard/
  bool documents = false;                        // the long-context protocol, not test lengths
  std::vector<results::LengthAccuracy> records;  // every evaluated seed's accuracy (addition)
  std::vector<results::SeedCells> cells;         // every evaluated seed's protocol cells (documents)
  double tokens = 0, seconds = 0;                // training throughput
  std::vector<probe::SeedModel> trained;         // for the declared probes
  std::vector<std::string> final_errors;         // final.pt files that could not be written
  std::vector<std::string> unmet;                // release criteria the run did not meet
};

// prepare.cpp: the request and the results folder, before any training.
void checkRequest(Run& run);  // 1. device, JIT, threads, warm starts
// 2. posc's own folder, an empty one, or --fresh; the folder, then (locked)
// continue, refuse or clear it and write plan.txt.
results::FolderOwner checkFolderOwner(const fs::path& dir, bool fresh);
void createFolder(const fs::path& dir);
void openFolder(Run& run);
// The checkpoint a warm start reads for `seed`.
fs::path warmStartCheckpoint(const Run& run, uint64_t seed);
// Writes a results file atomically; a failure is the user's (UserError).
void writeOrFail(const fs::path& path, std::string_view content);

// train_seed.cpp: one seed's model and weights.
model::Gpt buildSeedModel(Run& run, uint64_t seed);   // 3. the model
void compileKernels(model::Gpt& model);                //    the JIT's fused kernels
bool trainSeed(Run& run, uint64_t seed, model::Gpt& model);  // 4. train, continue or load
// Under a process group (null: one process): whether rank 0 trains the seed,
// and its starting weights, handed to every rank.
bool shareSeedDecision(dist::ProcessGroup* group, bool trains);
void shareStartingWeights(dist::ProcessGroup* group, model::Gpt& model);

// evaluate_seed.cpp: results.
void evaluateSeed(Run& run, uint64_t seed, model::Gpt& model);  // 5. evaluate, write accuracy
void reportAndProbe(Run& run);                                   // 6. the table, the probes

}  // namespace posc::runtime::stage
