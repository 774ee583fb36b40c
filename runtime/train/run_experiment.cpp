// runExperiment: the whole run of a compiled plan, seed by seed, into a
// results folder (layout documented in runtime/train/run_experiment.h).
//
// The folder is filled as the run goes: plan.txt and source.pos first,
// metrics.jsonl at every log point, checkpoints during training, and
// accuracy.csv / summary.md rewritten after every seed, so a run stopped
// part-way still leaves complete results for the seeds it finished.
#include <sys/statvfs.h>
#include <unistd.h>

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <sstream>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/eval/documents.h"
#include "runtime/formats/metrics_log.h"
#include "runtime/eval/greedy.h"
#include "runtime/longctx/protocol_report.h"
#include "runtime/longctx/sequence.h"
#include "runtime/probe/probe.h"
#include "runtime/results/atomic_file.h"
#include "runtime/results/protocol_files.h"
#include "runtime/results/tables.h"
#include "compiler/jit/compiled.h"
#include "runtime/model/fused_attention.h"
#include "runtime/train/run_experiment.h"
#include "runtime/distributed/process_group.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/interrupt.h"
#include "runtime/train/run_folder.h"
#include "runtime/train/safetensors.h"
#include "runtime/train/trainer.h"

namespace posc::runtime {
namespace {

namespace fs = std::filesystem;

fs::path defaultInitRoot(const fs::path& out_dir) {
  fs::path p = out_dir.lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // "runs/x/" -> "runs/x"
  fs::path parent = p.parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

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
train::FolderOwner checkFolderOwner(const fs::path& dir, bool fresh) {
  std::error_code ec;
  const fs::path absolute = fs::absolute(dir, ec).lexically_normal();
  if (!ec && absolute == absolute.root_path())
    throw UserError(fmt::format("--out '{}' is the root of the file system; give a results folder such as runs/NAME",
                                dir.string()));
  const train::FolderOwner owner = train::folderOwner(dir);
  if (owner == train::FolderOwner::Foreign && !fresh && fs::is_directory(dir, ec)) {  // a file: createFolder says so
    const std::vector<std::string> names = train::foreignEntries(dir, 4);
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

// Steps between resume points: the checkpoint interval when one is set,
// else a twentieth of training (each point costs one write of the model and
// both AdamW moments).
int resumeInterval(const plan::TrainPlan& train) {
  if (train.checkpoint_every > 0) return train.checkpoint_every;
  return std::max(1, (train.steps + 19) / 20);
}

// The refusal to continue an unfinished run of another plan, naming the
// first line where the plans differ.
std::string differentPlan(const fs::path& out_dir, const std::string& plan_text) {
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
  return fmt::format("'{}' holds an unfinished run of another plan ({}); continue it with its own settings, "
                     "start over with --fresh, or choose another --out",
                     out_dir.string(), difference);
}

// Refuses, before any training, a run whose checkpoints cannot fit on the
// disk: per seed final.pt and every checkpoint_<step>.pt, each with its
// .safetensors copy, and the resume point (the model and two AdamW moments)
// twice, as it is rewritten.
void checkDiskSpace(const plan::ExperimentPlan& plan, torch::nn::Module& model, const fs::path& out_dir) {
  int64_t bytes = 0;
  for (const auto& p : model.parameters()) bytes += p.numel() * static_cast<int64_t>(p.element_size());
  for (const auto& b : model.buffers()) bytes += b.numel() * static_cast<int64_t>(b.element_size());
  const int64_t checkpoints = plan.train.checkpoint_every > 0 ? plan.train.steps / plan.train.checkpoint_every : 0;
  const double need = static_cast<double>(bytes) *
                      (static_cast<double>(plan.train.seeds.size()) * static_cast<double>(1 + checkpoints) * 2 + 2 * 3);
  struct statvfs fs_info {};
  if (::statvfs(out_dir.c_str(), &fs_info) != 0) return;  // unknown: the writes will say
  const double free_bytes = static_cast<double>(fs_info.f_bavail) * static_cast<double>(fs_info.f_frsize);
  if (need > free_bytes)
    throw UserError(fmt::format(
        "not enough disk space in '{}' for this run's checkpoints: about {:.1f} MB needed ({} seed(s) x {} "
        "checkpoint(s) of {:.1f} MB in two formats, and the resume point), {:.1f} MB free",
        out_dir.string(), need / 1e6, plan.train.seeds.size(), 1 + checkpoints, static_cast<double>(bytes) / 1e6,
        free_bytes / 1e6));
}

}  // namespace

namespace {

// One run across its seeds: where it writes, what it has written, and what
// the later stages need.
struct Run {
  Run(const plan::ExperimentPlan& p, const RunOptions& o) : plan(p), options(o) {}
  const plan::ExperimentPlan& plan;
  const RunOptions& options;
  torch::Device device{torch::kCPU};
  fs::path out_dir, init_root;
  train::FolderOwner owner = train::FolderOwner::None;  // before this run marked it
  bool bar = false;  // a progress bar (a terminal), else log lines
  bool resuming = false;
  train::RunStatus status;
  std::optional<results::JsonLinesLog> metrics;
  bool documents = false;                        // the long-context protocol, not test lengths
  std::vector<results::LengthAccuracy> records;  // every evaluated seed's accuracy (addition)
  std::vector<results::SeedCells> cells;         // every evaluated seed's protocol cells (documents)
  double tokens = 0, seconds = 0;                // training throughput
  std::vector<probe::SeedModel> trained;         // for the declared probes
  std::vector<std::string> final_errors;         // final.pt files that could not be written
  std::vector<std::string> unmet;                // release criteria the run did not meet
};

// A warm start reads <init_root>/<init_from>[-<preset>]/seed<N>/final.pt: the
// folder `posc run` gives that experiment under the same preset.
fs::path warmStartCheckpoint(const Run& run, uint64_t seed) {
  const plan::ExperimentPlan& plan = run.plan;
  std::string folder = *plan.train.init_from + (plan.preset.empty() ? "" : "-" + plan.preset);
  return run.init_root / folder / fmt::format("seed{}", seed) / "final.pt";
}

void stopIfAsked(uint64_t seed, int step) {
  if (int signal = train::stopRequested())
    throw Interrupted(fmt::format("stopped by {} after step {} of seed {}", train::signalName(signal), step, seed),
                      signal, step);
}

// Stage 1: the device, the JIT and the threads the options ask for, and
// every warm-start checkpoint, before anything is written or trained.
void checkRequest(Run& run) {
  const RunOptions& options = run.options;
  run.device = train::resolveDevice(options.device);
  if (options.score_jit && !jit::available())
    throw UserError("--jit on: the score-formula JIT is unavailable (posc was built without LLVM)");
  if (options.score_jit && !run.device.is_cpu())
    throw UserError("--jit on: the fused score-formula kernels run on the CPU only; use --jit off on " +
                    run.device.str());
  train::setThreads(options.threads);
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
// plan, unfinished), refused (another plan, unfinished) or cleared (finished,
// or --fresh); then the status, plan.txt, source.pos and the metrics log.
void openFolder(Run& run) {
  const RunOptions& options = run.options;
  train::removeTemporaryFiles(run.out_dir);
  std::optional<train::RunStatus> previous = train::readStatus(run.out_dir);
  // A status that cannot be read says neither whether the run finished nor
  // where it stopped: starting over silently would throw a run away.
  std::error_code ec;
  if (!previous && !options.fresh && fs::is_regular_file(run.out_dir / "status.json", ec))
    throw UserError(fmt::format("cannot tell whether the run in '{}' finished: its status.json is damaged; restore "
                                "it, or start over with --fresh (the run's outputs are replaced)",
                                run.out_dir.string()));
  run.resuming = previous && !previous->finished() && !options.fresh;
  if (run.resuming && previous->plan_hash != options.plan_hash)
    throw UserError(differentPlan(run.out_dir, options.plan_text));
  if (run.resuming)
    std::fprintf(stderr, "continuing the run in %s: %s (--fresh starts over)\n", run.out_dir.string().c_str(),
                 train::describeStatus(*previous).c_str());
  else if (run.owner == train::FolderOwner::Posc)
    train::removeRunOutputs(run.out_dir);  // a folder taken with --fresh keeps everything

  run.status = run.resuming ? *previous : train::RunStatus{};
  run.status.state = "running";
  run.status.pid = ::getpid();
  run.status.plan_hash = options.plan_hash;
  run.status.message.clear();
  train::writeStatus(run.out_dir, run.status);
  writeOrFail(run.out_dir / "plan.txt", options.plan_text);
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

// Stage 3: the seed's model, freshly initialised from the seed.
model::Gpt buildSeedModel(Run& run, uint64_t seed) {
  const plan::ExperimentPlan& plan = run.plan;
  model::Gpt model = train::buildModel(plan, seed, run.device);
  model->setScoreJit(run.options.score_jit);
  if (seed == plan.train.seeds.front()) {
    std::fprintf(stderr, "%s: %lld parameters, %zu seed(s), %d steps each, device %s\n", plan.name.c_str(),
                 static_cast<long long>(model->parameterCount()), plan.train.seeds.size(), plan.train.steps,
                 run.device.str().c_str());
    checkDiskSpace(plan, *model, run.out_dir);
  }
  run.status.seed = seed;
  run.status.step = 0;
  return model;
}

// Evaluation during training, on a document task: the protocol's cells at
// training lengths (the regression set), pooled per task.
void evaluateRegressionSet(Run& run, uint64_t seed, int step, model::Gpt& model) {
  const plot::Table table = results::lengthTable(eval::evaluateDocuments(model, run.plan, true));
  std::string line = fmt::format("seed {} step {} accuracy:", seed, step);
  std::string json = fmt::format(R"({{"seed":{},"step":{},"eval":{{)", seed, step);
  for (size_t i = 0; i < table.rows.size(); ++i) {
    const auto& row = table.rows[i];  // task, length, ..., accuracy (column 6)
    line += fmt::format(" {} {} {}", row[0], row[1], row[6]);
    json += fmt::format(R"({}"{} {}":{})", i ? "," : "", row[0], row[1], row[6]);
  }
  run.metrics->append(json + "}}");
  std::fprintf(stderr, "%s\n", line.c_str());
}

// Under a process group, rank 0 tells the other ranks whether a seed trains
// (1) or was trained by an earlier process (0), then hands them its starting
// weights (fresh, warm-started).
bool shareSeedDecision(dist::ProcessGroup* group, bool trains) {
  if (!group) return trains;
  torch::Tensor flag = torch::full({1}, trains ? 1 : 0, torch::kInt64);
  group->broadcast({flag});
  return flag.item<int64_t>() != 0;
}

void shareStartingWeights(dist::ProcessGroup* group, model::Gpt& model) {
  if (!group) return;
  std::vector<torch::Tensor> state;
  for (auto& p : model->parameters()) state.push_back(p);
  for (auto& b : model->buffers()) state.push_back(b);
  group->broadcast(state);
}

// Stage 4: the seed's weights: loaded from a final.pt an earlier process
// wrote, or trained (from a resume point or the warm start where there is
// one). Returns false when the seed was also evaluated earlier (nothing more
// to do for it).
bool trainSeed(Run& run, uint64_t seed, model::Gpt& model) {
  const plan::ExperimentPlan& plan = run.plan;
  const fs::path seed_dir = run.out_dir / fmt::format("seed{}", seed);
  const fs::path final_file = seed_dir / "final.pt", resume_file = seed_dir / "resume.pt";
  createFolder(seed_dir);
  dist::ProcessGroup* const group = run.options.group;
  // Trained in an earlier process: final.pt is complete (written atomically).
  if (run.resuming && fs::exists(final_file)) {
    shareSeedDecision(group, false);
    try {
      train::loadCheckpoint(*model, final_file);
    } catch (const std::runtime_error& e) {
      throw UserError(fmt::format("{}; start over with --fresh", e.what()));
    }
    if (run.status.seedDone(seed) && !run.documents) {
      std::fprintf(stderr, "seed %llu: trained and evaluated earlier\n", static_cast<unsigned long long>(seed));
      if (!plan.probes.empty()) run.trained.push_back({seed, model});
      return false;
    }
    std::fprintf(stderr, "seed %llu: trained earlier; evaluating %s\n", static_cast<unsigned long long>(seed),
                 final_file.string().c_str());
    return true;
  }
  results::JsonLinesLog& metrics = *run.metrics;
  if (group && fs::exists(resume_file)) {
    // A single process's resume point: the other ranks cannot continue from it.
    std::fprintf(stderr, "seed %llu: a data-parallel run does not continue from %s; training the seed from the start\n",
                 static_cast<unsigned long long>(seed), resume_file.string().c_str());
    std::error_code ec;
    fs::remove(resume_file, ec);
  }
  if (!fs::exists(resume_file)) {
    metrics.truncate(run.status.metrics_lines);  // lines of a seed that had no resume point yet
    if (plan.train.init_from || plan.train.init_file) {
      const fs::path ckpt = plan.train.init_file ? fs::path(*plan.train.init_file) : warmStartCheckpoint(run, seed);
      try {
        const train::WarmStartReport report =
            plan.train.init_file ? train::warmStartSafetensors(*model, ckpt) : train::warmStart(*model, ckpt);
        std::fputs(train::describe(report, ckpt).c_str(), stderr);
      } catch (const std::runtime_error& e) {
        throw UserError(e.what());
      }
    }
  }
  shareSeedDecision(group, true);
  shareStartingWeights(group, model);
  train::TrainContext ctx;
  ctx.seed = seed;
  ctx.device = run.device;
  ctx.seed_dir = seed_dir;
  ctx.metrics = &metrics;
  ctx.progress = run.bar ? train::TrainContext::Progress::Bar : train::TrainContext::Progress::Lines;
  if (!group) {  // the other ranks' optimiser state is not in rank 0's resume point
    ctx.resume_file = resume_file;
    ctx.resume_every = resumeInterval(plan.train);
  }
  ctx.group = group;
  ctx.plan_hash = run.options.plan_hash;
  if (!run.options.dump_dir.empty()) ctx.dump_dir = fs::path(run.options.dump_dir) / fmt::format("seed{}", seed);
  ctx.evaluate = [&](int step) {
    if (run.documents) {
      evaluateRegressionSet(run, seed, step, model);
      return;
    }
    std::string line = fmt::format("seed {} step {} accuracy:", seed, step);
    std::string json = fmt::format(R"({{"seed":{},"step":{},"eval":{{)", seed, step);
    bool first = true;
    for (const auto& r : eval::evaluateLengths(model, plan, seed)) {
      line += fmt::format(" {}d {:.1f}%", r.digits, 100.0 * r.accuracy());
      json += fmt::format(R"({}"{}":{})", first ? "" : ",", r.digits, r.accuracy());
      first = false;
    }
    metrics.append(json + "}}");
    std::fprintf(stderr, "%s\n", line.c_str());
  };
  const train::TrainStats stats = train::trainModel(model, plan, ctx);
  if (stats.resumed_from > 0)
    std::fprintf(stderr, "seed %llu: continued from step %d\n", static_cast<unsigned long long>(seed),
                 stats.resumed_from);
  run.tokens += stats.tokens_per_s * stats.seconds;
  run.seconds += stats.seconds;
  if (stats.final_error.empty()) {
    std::error_code ec;
    fs::remove(resume_file, ec);
  } else {
    std::fprintf(stderr, "posc: error: %s; evaluating the model in memory, keeping the resume point\n",
                 stats.final_error.c_str());
    run.final_errors.push_back(stats.final_error);
  }
  return true;
}

// The seed is marked done once its final.pt exists.
void markSeedDone(Run& run, uint64_t seed) {
  if (fs::exists(run.out_dir / fmt::format("seed{}", seed) / "final.pt")) {
    if (!run.status.seedDone(seed)) run.status.seeds_done.push_back(seed);  // a document run evaluates again
    run.status.metrics_lines = run.metrics->lines().size();
  }
  run.status.seed.reset();
  run.status.step = 0;
  train::writeStatus(run.out_dir, run.status);
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

// The status file says how a run that stopped early ended, and how to go on.
[[noreturn]] void recordInterruption(Run& run, const Interrupted& e) {
  run.status.state = "interrupted";
  run.status.message = train::signalName(e.signal);
  run.status.step = e.step;
  train::writeStatus(run.out_dir, run.status);
  throw Interrupted(fmt::format("{}; continue with: {}", e.what(),
                                run.options.continue_command.empty() ? "the same posc run command"
                                                                     : run.options.continue_command),
                    e.signal, e.step);
}

void recordFailure(Run& run, const std::exception& e) {
  run.status.state = "failed";
  run.status.message = e.what();
  try {
    train::writeStatus(run.out_dir, run.status);
  } catch (const std::exception&) {
    // The original error matters more than the status file.
  }
}

// The run, stage by stage. A newcomer reads the runtime from here: each
// stage is one function above, and the files they write are listed in
// run_experiment.h.
int runSeeds(const plan::ExperimentPlan& plan, const RunOptions& options) {
  Run run(plan, options);
  checkRequest(run);                     // 1. device, JIT, threads, warm starts
  run.owner = checkFolderOwner(run.out_dir, options.fresh);  // posc's own, empty, or --fresh
  createFolder(run.out_dir);
  train::FolderLock lock(run.out_dir);   //    one owner per results folder
  train::markFolder(run.out_dir);
  openFolder(run);                       // 2. continue, refuse or clear; plan.txt
  train::StopOnSignals signals;          //    SIGINT/SIGTERM stop at a step boundary
  try {
    for (uint64_t seed : plan.train.seeds) {
      model::Gpt model = buildSeedModel(run, seed);      // 3. the model
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
  train::writeStatus(run.out_dir, run.status);
  std::fprintf(stderr, "results in %s (plan.txt, metrics.jsonl, %s, summary.md, seed*/final.{pt,safetensors}%s)\n",
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
  const torch::Device device = train::resolveDevice(options.device);
  if (options.score_jit && !jit::available())
    throw UserError("--jit on: the score-formula JIT is unavailable (posc was built without LLVM)");
  train::setThreads(options.threads);
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
