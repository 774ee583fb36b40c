// Stages 1 and 2 of a run (runtime/run/run_state.h): the request checked
// before anything is written, and the results folder taken, continued,
// refused or cleared.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/jit/compiled.h"
#include "compiler/plan/plan_json.h"
#include "runtime/formats/metrics_log.h"
#include "runtime/longctx/sequence.h"
#include "runtime/model/device.h"
#include "runtime/run/run_state.h"

namespace posc::runtime::stage {
namespace {

fs::path defaultInitRoot(const fs::path& out_dir) {
  fs::path p = out_dir.lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // "runs/x/" -> "runs/x"
  fs::path parent = p.parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

// The first line where the folder's plan.txt and `plan_text` differ:
// "plan line 12: was '...', now '...'".
std::string firstDifference(const fs::path& out_dir, const std::string& plan_text) {
  auto planLines = [](const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
      if (line.rfind("# ", 0) != 0) lines.push_back(line);  // provenance lines differ between builds
    return lines;
  };
  const std::vector<std::string> old_lines = planLines(results::readFileText(out_dir / "plan.txt").value_or(""));
  const std::vector<std::string> new_lines = planLines(plan_text);
  std::string difference = "its plan.txt is missing";
  for (size_t i = 0; i < std::max(old_lines.size(), new_lines.size()); ++i) {
    const std::string was = i < old_lines.size() ? old_lines[i] : "(nothing)";
    const std::string now = i < new_lines.size() ? new_lines[i] : "(nothing)";
    if (was != now) {
      difference = fmt::format("plan line {}: was '{}', now '{}'", i + 1, was, now);
      break;
    }
    if (i + 1 == std::max(old_lines.size(), new_lines.size()))
      difference = "the same plan text, other run options (--device or --jit)";
  }
  return difference;
}

// The training hash of the folder's run. A version before training hashes
// recorded none: a finished run of one gets it from its plan.json, hashed as
// this run hashes its own plan (RunOptions::folder_*), when that gives the
// recorded plan hash: the plan read back is then the one that trained, and
// on this device and kernels. An unfinished one gets none: its resume point
// names the whole plan, which has changed.
std::string recordedTrainingHash(const results::RunStatus& previous, const RunOptions& options) {
  if (!previous.training_hash.empty() || !previous.finished()) return previous.training_hash;
  if (options.folder_plan_hash.empty() || options.folder_plan_hash != previous.plan_hash) return "";
  return options.folder_training_hash;
}

// The refusal to continue an unfinished run of another plan, or to replace a
// finished one, naming the first line where the plans differ.
std::string differentPlan(const fs::path& out_dir, const std::string& plan_text, bool finished) {
  const std::string difference = firstDifference(out_dir, plan_text);
  if (finished)
    return fmt::format("'{}' holds a finished run of another plan ({}); choose another --out, or replace it with "
                       "--fresh (its weights, metrics and probes are deleted)",
                       out_dir.string(), difference);
  return fmt::format("'{}' holds an unfinished run of another plan ({}); continue it with its own settings, "
                     "start over with --fresh, or choose another --out",
                     out_dir.string(), difference);
}

}  // namespace

void writeOrFail(const fs::path& path, std::string_view content) {
  try {
    results::writeFileAtomic(path, content);
  } catch (const std::runtime_error& e) {
    throw UserError(e.what());
  }
}

// Refuses a folder that posc cannot prove is its own (train/run_folder.h)
// before anything is created or written in it; --fresh takes a non-empty
// foreign folder, and then nothing in it is deleted. The root of a file
// system is never a results folder.
results::FolderOwner checkFolderOwner(const fs::path& dir, bool fresh) {
  std::error_code ec;
  const fs::path absolute = fs::absolute(dir, ec).lexically_normal();
  if (!ec && absolute == absolute.root_path())
    throw UserError(fmt::format("--out '{}' is the root of the file system; give a results folder such as runs/NAME",
                                dir.string()));
  const results::FolderOwner owner = results::folderOwner(dir);
  if (owner == results::FolderOwner::Foreign && !fresh && fs::is_directory(dir, ec)) {  // a file: createFolder says so
    const std::vector<std::string> names = results::foreignEntries(dir, 4);
    throw UserError(fmt::format(
        "'{}' is not a posc results folder (it holds {}{}, which posc did not write); choose another --out, or "
        "pass --fresh to write into it anyway (posc then deletes nothing in it)",
        dir.string(), fmt::join(names, ", "), names.size() == 4 ? ", ..." : ""));
  }
  return owner;
}

void createFolder(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw UserError(fmt::format("cannot create results folder '{}': {}", dir.string(),
                                ec ? ec.message() : "a file of that name exists"));
}

// A warm start reads <init_root>/<init_from>[-<preset>]/seed<N>/final.pt: the
// folder `posc run` gives that experiment under the same preset.
fs::path warmStartCheckpoint(const Run& run, uint64_t seed) {
  const plan::ExperimentPlan& plan = run.plan;
  std::string folder = *plan.train.init_from + (plan.preset.empty() ? "" : "-" + plan.preset);
  return run.init_root / folder / fmt::format("seed{}", seed) / "final.pt";
}

// Stage 1: the device, the JIT and the threads the options ask for, and
// every warm-start checkpoint, before anything is written or trained.
void checkRequest(Run& run) {
  const RunOptions& options = run.options;
  run.device = model::resolveDevice(options.device);
  if (options.score_jit && !jit::available())
    throw UserError("--jit on: the score-formula JIT is unavailable (posc was built without LLVM)");
  if (options.score_jit && !run.device.is_cpu())
    throw UserError("--jit on: the fused score-formula kernels run on the CPU only; use --jit off on " +
                    run.device.str());
  model::setThreads(options.threads);
  run.out_dir = options.out_dir.empty() ? fs::path(run.plan.name) : fs::path(options.out_dir);
  run.init_root = options.init_root.empty() ? defaultInitRoot(run.out_dir) : fs::path(options.init_root);
  run.bar = options.progress_bar.value_or(::isatty(fileno(stderr)) != 0);
  run.documents = run.plan.task.kind == plan::TaskKind::Documents;
  if (run.documents) {
    const std::string problem = longctx::checkTrainingSpecs(run.plan.task.documents);
    if (!problem.empty())
      throw UserError(problem + " (lower task.train_distractors or raise task.train_min_length)");
  }
  if (run.plan.train.init_file && !fs::exists(*run.plan.train.init_file))
    throw UserError(fmt::format("warm start: '{}' not found", *run.plan.train.init_file));
  if (!run.plan.train.init_from) return;
  for (uint64_t seed : run.plan.train.seeds) {
    const fs::path ckpt = warmStartCheckpoint(run, seed);
    if (!fs::exists(ckpt))
      throw UserError(fmt::format(
          "warm start: checkpoint '{}' not found; run the experiment '{}' first{}, or pass --init-root "
          "(the folder that holds its results folder)",
          ckpt.string(), *run.plan.train.init_from, run.plan.preset.empty() ? "" : " with --preset " + run.plan.preset));
  }
}

// Stage 2 (the folder is locked): an earlier run in it is continued (same
// plan, unfinished), refused (another plan, finished or not) or cleared
// (finished with the same plan, or --fresh); then the status, plan.txt,
// source.pos and the metrics log.
void openFolder(Run& run) {
  const RunOptions& options = run.options;
  results::removeTemporaryFiles(run.out_dir);
  std::optional<results::RunStatus> previous = results::readStatus(run.out_dir);
  // A status that cannot be read says neither whether the run finished nor
  // where it stopped: starting over silently would throw a run away.
  std::error_code ec;
  if (!previous && !options.fresh && fs::is_regular_file(run.out_dir / "status.json", ec))
    throw UserError(fmt::format("cannot tell whether the run in '{}' finished: its status.json is damaged; restore "
                                "it, or start over with --fresh (the run's outputs are replaced)",
                                run.out_dir.string()));
  run.resuming = previous && !previous->finished() && !options.fresh;
  // Another plan that trains the same weights (only its evaluation or probes
  // differ): the weights and the training log are kept, the seeds evaluated
  // again.
  run.reevaluating = previous && !options.fresh && previous->plan_hash != options.plan_hash &&
                     !options.training_hash.empty() && recordedTrainingHash(*previous, options) == options.training_hash;
  if (run.reevaluating) run.resuming = true;
  if (run.resuming && previous->plan_hash != options.plan_hash && !run.reevaluating)
    throw UserError(differentPlan(run.out_dir, options.plan_text, false));
  // A finished run is replaced by a run of its own plan only: another plan
  // (a quick --steps 20, another --seed) must not delete hours of results.
  if (previous && previous->finished() && !options.fresh && previous->plan_hash != options.plan_hash &&
      !run.reevaluating)
    throw UserError(differentPlan(run.out_dir, options.plan_text, true));
  if (run.reevaluating)
    std::fprintf(stderr, "evaluating the run in %s again: %s; only its evaluation or probes changed (%s), so its "
                 "trained weights are kept (--fresh trains again)\n",
                 run.out_dir.string().c_str(), results::describeStatus(*previous).c_str(),
                 firstDifference(run.out_dir, options.plan_text).c_str());
  else if (run.resuming)
    std::fprintf(stderr, "continuing the run in %s: %s (--fresh starts over)\n", run.out_dir.string().c_str(),
                 results::describeStatus(*previous).c_str());
  else if (run.owner == results::FolderOwner::Posc)
    results::removeRunOutputs(run.out_dir);  // a folder taken with --fresh keeps everything

  run.status = run.resuming ? *previous : results::RunStatus{};
  if (run.reevaluating) {
    // No seed is evaluated under this plan yet: each finished one loads its
    // final.pt and is evaluated again (an unfinished one continues training).
    // The old plan's results go first, so that none is taken for the new one's.
    run.status.seeds_done.clear();
    results::removeEvaluationOutputs(run.out_dir);
  }
  run.status.state = "running";
  run.status.pid = ::getpid();
  run.status.plan_hash = options.plan_hash;
  run.status.training_hash = options.training_hash;
  run.status.message.clear();
  results::writeStatus(run.out_dir, run.status);
  writeOrFail(run.out_dir / "plan.txt", options.plan_text);
  writeOrFail(run.out_dir / "plan.json", plan::planJson(run.plan));
  writeOrFail(run.out_dir / "source.pos", options.source_text);

  if (run.resuming) {
    // The log is carried into the finished run: every line must be a record.
    run.metrics.emplace(results::JsonLinesLog::reopen(run.out_dir / "metrics.jsonl"));
    if (std::optional<size_t> line = formats::firstDamagedLine(run.metrics->lines()))
      throw UserError(fmt::format("cannot continue the run in '{}': line {} of metrics.jsonl is damaged (not a JSON "
                                  "record); restore it, or start over with --fresh",
                                  run.out_dir.string(), *line));
  } else {
    run.metrics.emplace(run.out_dir / "metrics.jsonl");
  }
  try {
    run.events.emplace(run.out_dir / "tensorboard");  // a new file; a resumed run's earlier ones stay
  } catch (const std::runtime_error& e) {
    throw UserError(e.what());
  }
  if (!run.resuming || run.documents) return;  // a document run evaluates its finished seeds again
  // The committed seeds' results; anything later is computed again.
  try {
    for (const auto& r : results::parseAccuracyCsv(results::readFileText(run.out_dir / "accuracy.csv").value_or("")))
      if (run.status.seedDone(r.seed)) run.records.push_back(r);
  } catch (const std::runtime_error& e) {
    throw UserError(fmt::format("cannot continue the run in '{}': accuracy.csv: {}; start over with --fresh",
                                run.out_dir.string(), e.what()));
  }
}

}  // namespace posc::runtime::stage
