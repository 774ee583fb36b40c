// Running an experiment: the one entry point the CLI calls after compiling.
//
// For each seed of the plan: build the model, train it (optionally warm-started
// from another run's checkpoint), evaluate exact-match accuracy per test length
// with greedy KV-cache decoding, and write a results folder:
//
//   <out>/plan.txt          the resolved plan (posc emit plan), with version and source hash
//   <out>/source.pos        the experiment's source text
//   <out>/metrics.jsonl     {"seed","step","loss","lr","tokens_per_s"} per logged step
//   <out>/accuracy.csv      seed,digits,correct,total,accuracy
//   <out>/seed<N>/checkpoint_<step>.pt, <out>/seed<N>/final.pt
//   <out>/summary.md        the per-length accuracy table printed at the end
//   <out>/probes/<name>.{csv,md,svg}  the declared probes, run after the last seed
//                           (runtime/probe); `posc report` adds report.md / report.html
//
// Every file is written to a temporary name and renamed, so an interrupted run
// never leaves a half-written file behind.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "compiler/plan/plan.h"

namespace posc::runtime {

// An error the user can fix (no CUDA device, missing warm-start checkpoint,
// unwritable folder). The CLI prints its message and exits with 2.
struct UserError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

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
};

// Returns 0 on success. Throws UserError for user-fixable problems.
int runExperiment(const plan::ExperimentPlan& plan, const RunOptions& options);

}  // namespace posc::runtime
