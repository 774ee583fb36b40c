// Running an experiment: the one entry point the CLI calls after compiling.
//
// For each seed of the plan: build the model, train it (optionally warm-started
// from another run's checkpoint), evaluate exact-match accuracy per test length
// (or, on a document task, every cell of the long-context protocol) with
// greedy KV-cache decoding, and write a results folder:
//
//   <out>/plan.txt          the resolved plan (posc emit plan), with version and source hash
//   <out>/plan.json         the same plan, every field, for programs (compiler/plan/plan_json.h)
//   <out>/source.pos        the experiment's source text
//   <out>/metrics.jsonl     {"seed","step","loss","lr","tokens_per_s"} per logged step
//   <out>/tensorboard/      the same scalars (and accuracy during training) as
//                           TensorBoard event files (runtime/formats/tensorboard_events.h)
//   <out>/accuracy.csv      seed,digits,correct,total,accuracy
//   <out>/seed<N>/checkpoint_<step>.pt, <out>/seed<N>/final.pt (and a
//   .safetensors copy of each)
//   <out>/seed<N>/resume.pt the seed's resume point while it trains (train/resume.h)
//   <out>/status.json       running / interrupted / failed / finished (train/run_folder.h)
//   <out>/.lock             held by the process that runs into the folder
//   <out>/summary.md        the per-length accuracy table printed at the end
//   <out>/protocol.csv, requirements.csv, heatmaps/*.svg
//                           document tasks, instead of accuracy.csv
//                           (runtime/results/protocol_files.h)
//   <out>/probes/<name>.{csv,md,svg}  the declared probes, run after the last seed
//                           (runtime/probe); `posc report` adds report.md / report.html
//
// Every file is written to a temporary name and renamed, so an interrupted run
// never leaves a half-written file behind. One process owns the folder at a
// time (a lock); an unfinished run of the same plan is continued from its
// resume points and ends with the weights an uninterrupted run would have.
// A run whose plan differs from the folder's in its evaluation or probes
// alone (the same training hash) keeps the trained weights and training log,
// and evaluates and probes every seed again (or continues an unfinished run's
// training, then evaluates every seed with the new plan).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "compiler/plan/plan.h"
#include "runtime/results/errors.h"

namespace posc::dist {
class ProcessGroup;
}

namespace posc::runtime {

struct RunOptions {
  std::string out_dir;              // results folder (created)
  std::string device = "cpu";       // "cpu" or "cuda"
  int threads = 0;                  // intra-op threads; 0 = LibTorch default
  std::string plan_text;            // dumpPlan(plan) plus provenance header
  std::string source_text;          // the .pos source, copied into the folder
  std::string version;              // posc version string
  // Root folder under which warm-start experiments are found:
  // <init_root>/<init_from>/seed<N>/final.pt. Default: parent of out_dir.
  std::string init_root;
  std::optional<bool> progress_bar; // default: when stderr is a terminal
  // Score terms + mask + softmax through fused JIT kernels (CPU only; the
  // tensor-op lowering otherwise). runExperiment throws UserError when this is
  // set but the JIT is unavailable or the device is not the CPU.
  bool score_jit = false;
  // The run's identity: a hash of the plan and of the options that change
  // its numbers (device, kernels). A folder holding an unfinished run of the
  // same identity is continued; of another, refused unless `fresh`.
  std::string plan_hash;
  // The same for what the run trains (plan::dumpTrainingIdentity and the
  // device and kernels): a folder whose run differs only in its evaluation
  // or probes is evaluated again with its trained weights.
  std::string training_hash;
  // The folder's plan.json as this run would hash it (plan hash, training
  // hash; empty when there is none): a finished run of a version before
  // training hashes, which recorded none, gets its training hash from these
  // when their plan hash is the one its status recorded (runtime/run/prepare.cpp).
  std::string folder_plan_hash, folder_training_hash;
  bool fresh = false;             // discard an unfinished run in out_dir and start over
  std::string continue_command;   // printed when a run is interrupted
  // Data-parallel training (runtime/distributed/process_group.h). Rank 0
  // does everything above; every other rank only trains: it takes each
  // seed's starting weights from rank 0, writes nothing, and returns when the
  // last seed is trained. Under a group no resume points are written: a
  // stopped run continues from the seeds it finished. Null: one process.
  dist::ProcessGroup* group = nullptr;
  // TrainContext::dump_dir, per seed: <dump_dir>/seed<N>/. Empty: no record.
  std::string dump_dir;
};

// runExperiment's status when a document run finished but missed one of its
// release criteria (eval { require(...) }); every result is written.
inline constexpr int kUnmetRequirement = 3;

// Returns 0 on success, kUnmetRequirement as above. Throws UserError for
// user-fixable problems.
int runExperiment(const plan::ExperimentPlan& plan, const RunOptions& options);

}  // namespace posc::runtime
