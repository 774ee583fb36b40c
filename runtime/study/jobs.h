// A study as a list of jobs: every (experiment, seed, grid point) of a set of
// experiment files, each one `posc run` of one seed into its own results
// folder. A grid is a set of settings with several values each
// (`--set train.lr=1e-3,3e-3`); every combination of values is a grid point.
//
// The job list is kept apart from how jobs are executed (executor.h runs them
// as local processes; a cluster back end takes the same list), so expansion,
// ordering and the "already finished" test are defined once.
//
// Layout under the study folder OUT:
//
//   OUT/seed<N>/<experiment>[-<preset>]/   one job: `posc run FILE --seed N --out ...`
//   OUT/seed<N>/<experiment>[-<preset>]/job.json   written when the job ends
//   OUT/<point>/seed<N>/...                 the same per grid point, when there is a
//                                           grid: <point> is "train.lr=0.001" (several
//                                           settings joined by '+')
//
// Each seed gets the folder layout `posc run` uses by default under runs/, so
// a warm start (`train.init_from = X`) finds OUT/seed<N>/X[-<preset>]/ as its
// init root without any new option. A job that warm-starts from another job
// of the study (same seed, same grid point) runs after it; one whose source is not part of the study must
// find that run's checkpoint already in place: in its own folder's layout, or, on a grid, in the study
// folder's (OUT/seed<N>/X[-<preset>]/), so a sweep over the warm start's own settings (`--set
// attention.alibi.slopes=0.125,0.5`) continues from one set of runs made without the grid.
//
// A job is finished when its job.json says "done" with the job's plan hash: a
// hash of the resolved plan without its source locations (plan::dumpIdentity),
// of where it runs (a --device or --jit given to the study) and of the plan
// hash of the job it warm-starts from. Editing a comment changes nothing, even
// one that moves the lines below it; changing a setting, a seed or the run a
// warm start comes from re-runs the job. A job whose training hash (the same
// for plan::dumpTrainingIdentity, chained through the warm starts' training
// hashes) is still the record's is only evaluated again: a new test length or
// probe does not retrain hours of runs. No LibTorch here.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "compiler/sema/experiment.h"

namespace posc::study {

// A study that cannot be laid out (a warm start from a run that is neither in
// the study nor on disk, two files naming the same experiment, ...).
struct StudyError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One setting of a grid and its values, as source text: {"train.lr", {"1e-3", "3e-3"}}.
struct GridAxis {
  std::string key;
  std::vector<std::string> values;
};

// Splits an override's value at its top-level commas (outside brackets,
// parentheses and quotes): "1e-3,3e-3" -> two values, "[1, 2]" -> one.
std::vector<std::string> splitGridValues(const std::string& value);

struct StudyRequest {
  std::vector<std::string> files;                   // experiment files, in the order given
  std::optional<std::string> preset;                // applied to every file
  std::vector<sema::Override> overrides;            // --set, applied to every file
  std::vector<GridAxis> grid;                       // --set KEY=A,B: one job per combination
  std::optional<std::vector<uint64_t>> seeds;       // default: each plan's train.seeds
  std::filesystem::path out = "runs/study";         // the study folder
  std::string posc_binary = "posc";                 // the program each job runs
  // Passed to every posc run, and not part of a job's plan hash: a run
  // continues on any number of threads.
  std::vector<std::string> run_options = {"--threads", "1", "--no-progress"};
  // Where each run trains (--device cuda, --jit off) as typed: passed to
  // posc run. Part of each job's plan hash as posc run sees it: the defaults
  // (--device cpu, --jit on) and the order of the flags do not count.
  std::vector<std::string> placement;
};

// The arithmetic of one run (one seed), for a cluster's time request:
// floating-point operations of training (forward and backward, 6 per weight
// per token plus the attention scores) and of the final evaluation (greedy
// decoding: 2 per weight per token plus attention over the cache), and the
// optimiser steps (each has a fixed cost on a GPU).
struct ComputeEstimate {
  double train_flops = 0;
  double eval_flops = 0;
  int64_t steps = 0;
};

struct Job {
  std::string experiment;  // the plan's name
  std::string preset;      // empty: none
  std::string file;
  uint64_t seed = 0;
  std::string point;                 // the grid point, "train.lr=1e-3 model.width=64"; empty: no grid
  std::string point_folder;          // its folder under the study folder; empty: no grid
  std::filesystem::path out_dir;
  int64_t memory_mb = 0;             // an estimate of the run's peak memory (a cluster's request)
  ComputeEstimate compute;           // an estimate of its arithmetic (a cluster's time request)
  std::optional<size_t> after;       // the job this one warm-starts from (index in the list)
  std::string plan_hash;             // 16 hex digits
  std::string training_hash;         // what it trains: 16 hex digits (see the top of this file)
  std::string placement;             // what both hashes add to the plan's identity for --device/--jit
  // Job records written before the thread count left the hash (posc study
  // before 2026-12-07) hashed "\nposc run" + the placement flags as typed +
  // " --threads N". The text before " --threads N" of this job, then of each
  // job it warm-starts from, and the first one's warm start from outside the
  // study ("" if none): enough to recognise such a record (legacyPlanHash).
  std::vector<std::string> legacy_chain;
  std::string legacy_external;
  // The content hash (16 hex digits) of the file the job warm-starts from
  // when that file is outside the study: another study's final.pt or a
  // train.init_file; "" otherwise, or when the file is missing. The plan hash
  // names such a file by its path only, so a file replaced at the same path
  // is caught by this digest, which job.json keeps (jobState).
  std::string warm_start_digest;
  std::vector<std::string> command;  // argv, program first
  // "rope2d_decay-mini seed 0" ("rope2d_decay-mini [train.lr=1e-3] seed 0"
  // on a grid): for progress lines and the job list.
  std::string label() const;
  // "rope2d_decay-mini": the folder name.
  std::string variant() const;
  // The comparison page's row: the variant, and the grid point if any.
  std::string row() const;
  // "seed0/rope2d_decay-mini" ("train.lr=1e-3/seed0/..."): the results
  // folder relative to the study folder; names the job on a cluster.
  std::string id() const;
};

// Compiles every file (once per seed, with the seed set) and lays out the
// jobs: files in the order given, seeds ascending within a file, then sorted
// so that every job comes after the job it warm-starts from. Returns nullopt
// when a file does not compile; `diagnostics` then holds the rendered errors
// (file:line:col with the source line), as `posc check` prints them.
// Throws StudyError for a study that cannot be laid out.
//
// On a grid, the same for every grid point (points in the order the axes
// and values are given, the last axis fastest), with that point's values
// added to the overrides.
std::optional<std::vector<Job>> expandStudy(const StudyRequest& request, std::string& diagnostics,
                                            bool color = false);

// A plan's peak memory in MB, as a cluster request: a fixed 1 GB for the
// process (LibTorch, the JIT, evaluation) plus weights, gradients and both
// AdamW moments plus the training batch's activations and attention
// matrices. An estimate, generous for the small models of these studies.
int64_t estimateMemoryMb(const plan::ExperimentPlan& plan);

// A plan's arithmetic per seed (see ComputeEstimate); coarse, like the memory
// estimate: the weights counted as in estimateMemoryMb, sequences at their
// longest training and test lengths.
ComputeEstimate estimateCompute(const plan::ExperimentPlan& plan);

// A wall-time limit for a run of `compute` on `threads` CPU threads or one
// GPU, in whole minutes: the arithmetic at an assumed 20 GFLOP/s per CPU
// thread (well below posc's measured throughputs, which are 80-130 GFLOP/s
// per thread by this count) or 5 TFLOP/s plus 5 ms a step on a GPU,
// doubled, plus 15 minutes for start-up, checkpoints and probes, rounded up
// to a quarter hour. Generous on purpose: a task Slurm kills at its limit
// resumes from its last resume point when submitted again, but loses the
// steps since.
int64_t timeLimitMinutes(const ComputeEstimate& compute, int threads, bool gpu);

// Jobs reordered so that each comes after the job it warm-starts from
// (stable otherwise); `after` indices are remapped. Throws StudyError on a
// cycle.
std::vector<Job> orderByWarmStart(std::vector<Job> jobs);

enum class JobState {
  Pending,  // never finished
  Done,     // finished with this plan hash
  Stale,    // last run with another plan or from another warm-start file
            // (it runs again, unless progressAtRisk)
  // Finished, or stopped, with another plan that trains the same weights
  // (only the evaluation or probes differ): posc run keeps the trained
  // weights and evaluates them again (an unfinished run goes on training).
  // A finished run of a version before training hashes counts when it has
  // no warm start and its plan.json gives the record's plan hash.
  Reevaluate,
  Failed,   // the last attempt failed
  // The last attempt was stopped by SIGINT or SIGTERM (its own or the
  // study's) at a resume point: the next call continues it from there.
  Interrupted,
};
JobState jobState(const Job& job);
const char* describe(JobState state);

// The hash a study before 2026-12-07 gave the job when run with `threads`
// threads per run.
std::string legacyPlanHash(const Job& job, int threads);

// What starting the job's run over would throw away: when its folder holds
// an unfinished run (or one whose status.json cannot be read) with trained
// weights (a resume point, a checkpoint, a finished seed's final.pt), its
// state and those files; nullopt otherwise. A study never starts such a run
// over unasked when its plan or its warm start has changed.
std::optional<std::string> progressAtRisk(const Job& job);

// What job.json records when a job ends.
struct JobRecord {
  bool done = false;
  int exit_code = 0;
  double wall_s = 0;
  std::string plan_hash;
  bool interrupted = false;  // not done: stopped by SIGINT/SIGTERM, to be continued
  std::string warm_start_digest;  // the job's warm_start_digest when it ran ("" in records before 2026-12-07)
  std::string training_hash;      // the job's training_hash when it ran ("" in records before 2026-12-07)
};
void writeJobRecord(const Job& job, const JobRecord& record);
std::optional<JobRecord> readJobRecord(const std::filesystem::path& out_dir);

}  // namespace posc::study
