// runExperiment: the whole run of a compiled plan, seed by seed, into a
// results folder (layout documented in runtime/run/run_experiment.h).
//
// The folder is filled as the run goes: plan.txt and source.pos first,
// metrics.jsonl at every log point, checkpoints during training, and
// accuracy.csv / summary.md rewritten after every seed, so a run stopped
// part-way still leaves complete results for the seeds it finished.
//
// A newcomer reads the runtime from runSeeds below: each stage is one call,
// defined in the file runtime/run/run_state.h names beside it.
#include <cstdio>

#include <fmt/format.h>

#include "compiler/jit/compiled.h"
#include "runtime/model/device.h"
#include "runtime/model/fused_attention.h"
#include "runtime/run/run_state.h"
#include "runtime/train/interrupt.h"
#include "runtime/train/trainer.h"

namespace posc::runtime {
namespace {

using namespace stage;

void stopIfAsked(uint64_t seed, int step) {
  if (int signal = train::stopRequested())
    throw Interrupted(fmt::format("stopped by {} after step {} of seed {}", train::signalName(signal), step, seed),
                      signal, step);
}

// The status file says how a run that stopped early ended, and how to go on.
[[noreturn]] void recordInterruption(Run& run, const Interrupted& e) {
  run.status.state = "interrupted";
  run.status.message = train::signalName(e.signal);
  run.status.step = e.step;
  results::writeStatus(run.out_dir, run.status);
  throw Interrupted(fmt::format("{}; continue with: {}", e.what(),
                                run.options.continue_command.empty() ? "the same posc run command"
                                                                     : run.options.continue_command),
                    e.signal, e.step);
}

void recordFailure(Run& run, const std::exception& e) {
  run.status.state = "failed";
  run.status.message = e.what();
  try {
    results::writeStatus(run.out_dir, run.status);
  } catch (const std::exception&) {
    // The original error matters more than the status file.
  }
}

// The run, stage by stage. A newcomer reads the runtime from here: each
// stage is one function above, and the files they write are listed in
// run_experiment.h.
int runSeeds(const plan::ExperimentPlan& plan, const RunOptions& options) {
  stage::Run run(plan, options);
  checkRequest(run);                     // 1. device, JIT, threads, warm starts
  run.owner = checkFolderOwner(run.out_dir, options.fresh);  // posc's own, empty, or --fresh
  createFolder(run.out_dir);
  results::FolderLock lock(run.out_dir);   //    one owner per results folder
  results::markFolder(run.out_dir);
  openFolder(run);                       // 2. continue, refuse or clear; plan.txt
  train::StopOnSignals signals;          //    SIGINT/SIGTERM stop at a step boundary
  try {
    for (uint64_t seed : plan.train.seeds) {
      model::Gpt model = buildSeedModel(run, seed);      // 3. the model
      compileKernels(model);                        //    the JIT
      if (!trainSeed(run, seed, model)) continue;        // 4. train (or continue, or load)
      stopIfAsked(seed, plan.train.steps);
      evaluateSeed(run, seed, model);                    // 5. evaluate, write accuracy
      stopIfAsked(seed, plan.train.steps);
    }
    reportAndProbe(run);                                 // 6. the table, the probes
  } catch (const Interrupted& e) {
    recordInterruption(run, e);
  } catch (const std::exception& e) {
    recordFailure(run, e);
    throw;
  }
  run.status.state = "finished";                         // 7. done
  run.status.seed.reset();
  results::writeStatus(run.out_dir, run.status);
  std::fprintf(stderr, "results in %s (plan.txt, plan.json, metrics.jsonl, tensorboard/, %s, summary.md, seed*/final.{pt,safetensors}%s)\n",
               run.out_dir.string().c_str(),
               run.documents ? "protocol.csv, requirements.csv, heatmaps/" : "accuracy.csv",
               plan.probes.empty() ? "" : ", probes/");
  for (const std::string& r : run.unmet) std::fprintf(stderr, "posc: release criterion not met: %s\n", r.c_str());
  return run.unmet.empty() ? 0 : kUnmetRequirement;
}

// A rank other than 0 of a process group: the same seeds, models and
// training steps as rank 0, nothing written; rank 0 decides per seed whether
// it trains and supplies its starting weights.
int runOtherRank(const plan::ExperimentPlan& plan, const RunOptions& options) {
  dist::ProcessGroup* const group = options.group;
  const torch::Device device = model::resolveDevice(options.device);
  if (options.score_jit && !jit::available())
    throw UserError("--jit on: the score-formula JIT is unavailable (posc was built without LLVM)");
  model::setThreads(options.threads);
  train::StopOnSignals signals;
  for (uint64_t seed : plan.train.seeds) {
    model::Gpt model = train::buildModel(plan, seed, device);
    model->setScoreJit(options.score_jit);
    if (!shareSeedDecision(group, false)) continue;
    shareStartingWeights(group, model);
    train::TrainContext ctx;
    ctx.seed = seed;
    ctx.device = device;
    ctx.progress = train::TrainContext::Progress::None;
    ctx.group = group;
    train::trainModel(model, plan, ctx);
  }
  return 0;
}

}  // namespace

int runExperiment(const plan::ExperimentPlan& plan, const RunOptions& options) {
  try {
    if (options.group && options.group->rank() != 0) return runOtherRank(plan, options);
    return runSeeds(plan, options);
  } catch (const model::NonFiniteScores& e) {
    throw UserError(fmt::format("training diverged: {}", e.what()));
  }
}

}  // namespace posc::runtime
